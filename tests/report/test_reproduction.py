"""The reproduction index (lceval/reproduction.py): every numbered table and figure of the five
papers has a status, every test it names exists, docs/reproduction.md and the reports show it."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from lceval.benchmarks import registry
from lceval.core.errors import LcevalError
from lceval.report import reproduction as R
from lceval.report.samples_page import render
from tests import papers

ROOT = Path(__file__).resolve().parents[2]


# Read from the papers' texts: every "Table N:" and "Figure N:" caption, declared
# per benchmark in ``tests/papers.py`` as ``items`` (with ``paper``, the name
# reproduction.yaml uses). The L-Eval text (004_*) is a summary whose tables are not numbered: its
# items are named by their heading there. LongGenBench's Fig. 3 has two panels the text cites
# apart (3a: task settings, 3b: the RULER correlation); an item "Fig. 3" covers both.
EXPECTED: dict[str, set[str]] = {
    t.paper: set(t.items)
    for t in (papers.of(k) for k in registry.BENCHMARKS)
    if t.paper is not None
}


@pytest.fixture(scope="module")
def index() -> pd.DataFrame:
    return R.load_index()


def _covered(present: set[str], item: str) -> bool:
    parent = re.sub(r"^(Fig\. \d+)[a-z]$", r"\1", item)
    return item in present or parent in present


@pytest.mark.parametrize("paper", sorted(EXPECTED))
def test_every_numbered_table_and_figure_of_the_paper_has_a_status(index, paper) -> None:
    present = set(index.loc[index["paper"] == paper, "item"])
    missing = sorted(i for i in EXPECTED[paper] if not _covered(present, i))
    assert not missing, f"{paper}: no reproduction index entry for {missing}"
    assert index["status"].isin(R.STATUSES).all()


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        names |= {f"{cls.name}::{n.name}" for n in cls.body if isinstance(n, ast.FunctionDef)}
    return names


def test_every_named_test_exists(index) -> None:
    missing = []
    for node in index["test"].dropna():
        file, _, name = node.partition("::")
        path = ROOT / file
        if not path.is_file() or name.split("[")[0] not in _test_names(path):
            missing.append(node)
    assert not missing, f"tests named in the reproduction index that do not exist: {missing}"


def test_reproduced_items_name_a_test_and_a_place(index) -> None:
    done = index[index["status"].isin(["reproduced", "recomputed"])]
    assert done["test"].notna().all(), list(done.loc[done["test"].isna(), "item"])
    assert done["where"].notna().all(), list(done.loc[done["where"].isna(), "item"])
    unsourced = index[(index["from"] == "none") & (index["status"] != "not_reproducible")]
    assert unsourced.empty, list(unsourced["item"])


def _resolves(dotted: str) -> bool:
    """A module, or an attribute of one (a function, a class, a constant)."""
    try:
        importlib.import_module(dotted)
        return True
    except ImportError:
        module, _, attr = dotted.rpartition(".")
        try:
            return hasattr(importlib.import_module(module), attr)
        except ImportError:
            return False


def test_every_notebook_and_function_named_exists(index) -> None:
    bad = []
    for where in index["where"].dropna():
        notebooks = re.findall(r"[\w.-]+\.ipynb", where)
        bad += [nb for nb in notebooks if not (ROOT / "notebooks" / nb).is_file()]
        names = [n.rstrip(".") for n in re.findall(r"\blceval(?:\.\w+)+", where)]
        bad += [name for name in names if not _resolves(name)]
        assert notebooks or names or where.startswith(("params/", "CLI")), where
    assert not bad, f"unknown notebooks or functions in the reproduction index: {bad}"


def test_docs_hold_the_rendered_index(index) -> None:
    page = (ROOT / "docs" / "reproduction.md").read_text(encoding="utf-8")
    assert R.readme_section(page, index) == page, "run `python -m lceval.report.reproduction`"
    assert R.to_markdown(index) in page


def test_a_bad_entry_is_one_line_naming_the_file_and_the_item(tmp_path) -> None:
    good = {
        "paper": "P",
        "caption": "c",
        "status": "reproduced",
        "from": "run",
        "where": "x.ipynb",
        "test": None,
    }
    cases = [
        ({**good, "status": "done"}, r"item 2 \(P Table 2\): status: 'done' is not one of"),
        ({**good, "status": "partial"}, r"item 2 \(P Table 2\): .*'why' is a required property"),
        ({**good, "test": "test_x.py"}, r"item 2 \(P Table 2\): test: 'test_x.py' does not match"),
        ({**good, "colour": "red"}, r"item 2 \(P Table 2\): .*'colour' was unexpected"),
        ({**good, "item": "Figure 2"}, r"item 2 \(P Figure 2\): item: 'Figure 2' does not match"),
        ("just text", r"item 2: item: 'just text' is not of type 'object'"),
    ]
    good = {"item": "Table 1", **good}
    for entry, message in cases:
        second = {"item": "Table 2", **entry} if isinstance(entry, dict) else entry
        path = tmp_path / "reproduction.yaml"
        path.write_text(yaml.safe_dump([good, second]), encoding="utf-8")
        with pytest.raises(LcevalError, match=message) as err:
            R.read_file(path)
        assert str(path) in str(err.value) and "\n" not in str(err.value)
    path.write_text("- [unclosed", encoding="utf-8")
    with pytest.raises(LcevalError, match="cannot read the reproduction index"):
        R.read_file(path)
    path.write_text("paper: P", encoding="utf-8")
    with pytest.raises(LcevalError, match="must be a YAML list"):
        R.read_file(path)


def test_html_section_lists_only_the_benchmarks_asked(index) -> None:
    rows = R.load_index(["lifbench"]).to_dict("records")  # index.html's section
    page = render("reproduction.html.j2", reproduction=rows, columns=R.REPRODUCTION_COLUMNS)
    assert "id='reproduction'" in page and "LIFBench" in page and "ManyIFEval" not in page
    assert page.count("<tr>") == 1 + len(index[index["benchmark"] == "lifbench"])


def test_the_index_and_the_report_page_list_items_in_one_order() -> None:
    from lceval.report import index_page

    items = ["NTK base sweep", "Fig. 10", "Sec. 4", "Table 10", "Fig. 3b", "Headline", "Fig. 3"]
    items += ["Table 2", "Closed-ended table"]
    expected = ["Headline", "Table 2", "Table 10", "Fig. 3", "Fig. 3b", "Fig. 10", "Sec. 4"]
    expected += ["Closed-ended table", "NTK base sweep"]
    assert sorted(items, key=R.item_order) == expected
    assert index_page.item_order is R.item_order  # the page sorts its blocks by the same key
