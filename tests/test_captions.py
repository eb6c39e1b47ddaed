"""Every table and figure a benchmark's report writes has a declared caption (the report module's
``CAPTIONS``, shown by report/index.html), filed under an item of that paper: reports built from
the regression fixtures' responses (no model inference)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lceval.report.index_page import _bench_of, _captions
from lceval.report.reproduction import read_file

FIXTURES = Path(__file__).parent / "fixtures" / "regression"
BENCHMARKS = ["lifbench", "longgenbench", "ruler", "manyifeval", "leval", "cifbench"]
NOT_PAPER_ITEMS = {"Headline", "Check", "Beyond the paper"}
"""Items a caption may name besides the paper's own (reproduction.yaml)."""


@pytest.mark.parametrize("key", BENCHMARKS)
def test_every_report_table_and_figure_has_a_caption(regression_report, key):
    run = regression_report(key)
    report = Path(run.report)
    csvs = [*report.glob("*.csv"), *report.glob("*/*.csv")]
    pngs = list(Path(run.figures).glob("*.png"))
    mine = [p for p in [*csvs, *pngs] if _bench_of(p, report) == key]
    assert len(mine) >= 5  # the report wrote its tables and figures
    captions = _captions(key)
    missing = []
    for path in mine:
        name = path.relative_to(report).with_suffix("").as_posix()
        if path.suffix == ".png":
            name = path.stem
        if name not in captions and path.stem not in captions:
            missing.append(name)
    assert not missing, f"{key}: no caption declared for {missing}"
    page = (report / "index.html").read_text(encoding="utf-8")
    assert "no caption declared" not in page


@pytest.mark.parametrize("key", BENCHMARKS)
def test_captions_name_a_paper_item_and_what_the_numbers_are(key):
    """Each caption is filed under an item of the paper (reproduction.yaml's numbering) or
    Headline / Check / Beyond the paper, and says its unit or range or what is compared."""
    captions = _captions(key)
    assert captions, f"{key}: report module declares no CAPTIONS"
    yaml = Path(__file__).parents[1] / "lceval" / "benchmarks" / key / "reproduction.yaml"
    items = {str(e["item"]) for e in read_file(yaml)} | NOT_PAPER_ITEMS
    for name, (item, caption) in captions.items():
        assert item in items, f"{key}: {name!r} filed under {item!r}, not an item of the paper"
        assert len(caption) > 40 and "\n" not in caption, f"{key}: {name!r} caption too thin"


@pytest.mark.parametrize(("key", "paper"), [("ntk", "leval"), ("reasoning", None), ("cost", None)])
def test_study_and_reasoning_captions_are_found_and_filed(key, paper):
    """The NTK sweep's files (prefix ``ntk_``, L-Eval's NTK item) and the reasoning files belong
    to no registered benchmark; index.html still finds their captions."""
    captions = _captions(key)
    assert captions, f"index.html finds no CAPTIONS for {key}_ files"
    items = set(NOT_PAPER_ITEMS)
    if paper:
        yaml = Path(__file__).parents[1] / "lceval" / "benchmarks" / paper / "reproduction.yaml"
        items |= {str(e["item"]) for e in read_file(yaml)}
    assert all(item in items for item, _ in captions.values())
