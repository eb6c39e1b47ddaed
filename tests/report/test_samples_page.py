"""report/samples.html and compare.html (lceval.report.samples_page), show_samples, and
``lceval compare --samples``: the rows and cells, hostile answers kept inert text, and the page
in a real headless Chromium (search by task code, rows with answers and rubric items)."""

from __future__ import annotations

import html
import json
import re
import shutil
import time
from pathlib import Path

import markupsafe
import pandas as pd
import pytest

import lceval.report
import lceval.run
from lceval.cli import main
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, new_meta, read_records, write_jsonl
from lceval.core.records import Response
from lceval.report import compare_page, samples_page

FIXTURE = Path(__file__).parents[1] / "fixtures" / "regression" / "lifbench"
MODELS = ("m1", "m2")


def _lifbench_run(root: Path, run_id: str, responses: list[Response] | None = None) -> RunDir:
    """LIFBench's regression fixture (22 samples, 11 tasks) with two of its models' answers (or
    ``responses``), scored."""
    run = RunDir(run_id, root).create()
    for name in ("samples.jsonl", "contexts.jsonl"):
        shutil.copy(FIXTURE / name, run.path / name)
    if responses is None:
        responses = [
            r for r in read_records(FIXTURE / "responses.jsonl", Response) if r.model in MODELS
        ]
    write_jsonl(run.responses, responses)
    run.write_meta(new_meta(run_id, models={m: {"backend": "hf"} for m in MODELS}))
    lceval.run.score(run_id, root=root, progress=False)
    return run


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    root = tmp_path_factory.mktemp("samples")
    run = _lifbench_run(root, "sp")
    lceval.report.write_report("sp", root=root)
    return run


def test_report_writes_and_links_the_pages(reported):
    report = reported.report
    index = (report / "index.html").read_text(encoding="utf-8")
    for name in ("samples.html", "compare.html", "results.json"):
        assert (report / name).exists() and f"href='{name}'" in index
    assert not list(reported.path.glob(".report.*"))  # the staged folder was swapped in whole
    page = (report / "samples.html").read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]*\ssrc=|<link\b|import\s*\(?\s*['\"]http", page)  # offline
    assert "href='compare.html'" in page and "href='index.html'" in page


def test_rows_carry_grouping_fields_answer_rubric_and_context(reported):
    scores = reported.read_scores()
    frame = samples_page.sample_rows(reported, links=False)
    assert len(frame) == len(scores) == 2 * 22
    for col in ("task", "model", "scorer", "scenario", "length", "expression", "variable"):
        assert col in frame.columns
    row = frame[(frame["sample_id"] == "lifbench/LSI/4k/e0/v5") & (frame["model"] == "m2")]
    (row,) = row.to_dict("records")
    answer = next(
        r.text
        for r in read_records(reported.responses, Response)
        if r.sample_id == "lifbench/LSI/4k/e0/v5" and r.model == "m2"
    )
    texts = frame.attrs["texts"].texts  # full texts, filled into <details> when opened
    assert html.escape(answer[: samples_page.PREVIEW_CHARS]) in row["answer"]
    assert len(answer) <= samples_page.PREVIEW_CHARS or answer in texts
    assert "format " in row["rubric"] and "correct " in row["rubric"] and "/2" in row["rubric"]
    assert row["length"] == 3072 and row["expression"] == 0 and row["variable"] == 5
    assert "tokens (o200k_base)" in row["context"] and "characters" in row["context"]
    score = scores[(scores["sample_id"] == "lifbench/LSI/4k/e0/v5") & (scores["model"] == "m2")]
    assert row["value"] == pytest.approx(float(score["value"].iloc[0]))


def test_context_files_hold_the_full_text(reported):
    links = {
        c.split("href='", 1)[1].split("'", 1)[0]
        for c in samples_page.sample_rows(reported)["context"]
        if "href='" in c
    }
    texts = {c.text for c in reported.read_contexts().values()}
    assert links and all(link.startswith("contexts/") for link in links)
    for link in links:
        raw = (reported.report / link).read_bytes()
        assert raw.startswith(b"\xef\xbb\xbf") and raw[3:].decode("utf-8") in texts


def test_compare_rows_pair_two_models_with_the_difference(reported):
    frame = compare_page.compare_rows(reported, reported)
    assert len(frame) == 22  # one pair (m1, m2), each sample once
    assert set(frame["model A"]) == {"m1"} and set(frame["model B"]) == {"m2"}
    assert (frame["diff"] == frame["value A"] - frame["value B"]).all()
    diffs = frame["diff"].abs().to_numpy()
    assert all(diffs[i] >= diffs[i + 1] for i in range(len(diffs) - 1))
    with pytest.raises(LcevalError, match="no model 'zz'"):
        compare_page.compare_rows(reported, reported, model_a="zz")


def test_compare_cli_writes_the_paired_page(reported, tmp_path, capsys):
    root = str(reported.path.parent)
    out = tmp_path / "pair.html"
    args = ["--outputs", root, "compare", "sp", "sp", "--no-tasks", "--samples", str(out)]
    assert main([*args, "--model-a", "m1", "--model-b", "m2"]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    assert "value A" in page and "diff" in page and (tmp_path / "contexts").is_dir()
    assert main(["--outputs", root, "compare", "sp", "sp", "--samples", "x.txt"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lceval: --samples must name a .html file") and err.count("\n") == 1


def test_show_samples_gives_the_worst_rows(reported):
    from lceval.report.samples_page import show_samples

    shown = show_samples(reported, worst=5, model="m1")
    assert "<table" in shown.data and "dt_bundle" not in shown.data
    heads = list(dict.fromkeys(re.findall(r"<th>([^<]*)</th>", shown.data)))
    # what was answered and how it scored, not the grouping fields (a notebook cell is narrow)
    assert heads[:6] == ["task", "model", "value", "answer", "explanation", "rubric"]
    assert "instruction" not in heads and "expression" not in heads
    scores = reported.read_scores()
    picked = samples_page.worst(scores, model="m1", n=5)
    assert len(picked) == 5 and picked["value"].max() <= scores["value"].max()
    m1 = scores[scores["model"] == "m1"]["value"]
    assert sorted(picked["value"]) == sorted(m1.sort_values().head(5))
    only = samples_page.worst(scores, task="OR")
    assert set(only["task"]) == {"OR"} and len(only) == 4
    with pytest.raises(LcevalError, match="no task 'NOPE'.*LSI"):
        show_samples(reported, task="NOPE")
    with pytest.raises(LcevalError, match="worst must be >= 1"):
        show_samples(reported, worst=0)


# -- hostile answers --------------------------------------------------------------------------
HOSTILE = (
    "<script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=2">',
    "</script><script>window.__pwned=3</script><!--",
    "'\"><svg onload=window.__pwned=4>",
    "lone \ud800 surrogate \udfff and <b>bold</b>",
    "A" * 1_000_000 + "<script>window.__pwned=5</script>",
)


def _hostile_run(root: Path) -> RunDir:
    samples = [json.loads(line)["id"] for line in open(FIXTURE / "samples.jsonl")]
    responses = [
        Response(sample_id=sid, model="evil", text=HOSTILE[i % len(HOSTILE)], config_hash="c")
        for i, sid in enumerate(samples)
    ]
    run = _lifbench_run(root, "evil", responses)
    samples_page.write_samples_page(run)
    return run


def test_hostile_answers_are_escaped_and_bounded(tmp_path):
    run = _hostile_run(tmp_path)
    page = (run.report / "samples.html").read_text(encoding="utf-8")
    for raw in ("<script>window", "<img src=x", "<svg onload", "</script><script>window"):
        assert raw not in page
    for text in HOSTILE[:4]:
        assert str(markupsafe.escape(text)) in page  # shown as text (jinja2's escape)
    assert "1,000,033 characters" in page  # the megabyte answer: cut, its length shown
    assert len(page.encode("utf-8")) < 3_000_000
    assert "\ufffd" in page  # lone surrogates replaced


def _wait_for_table(driver, timeout: float = 30.0) -> str:
    t0 = time.time()
    while time.time() - t0 < timeout:
        info = driver.execute_script(
            "const e = document.querySelector('.dt-info'); return e && e.textContent;"
        )
        if info:
            return str(info)
        time.sleep(0.1)
    raise AssertionError("the table did not initialise")


MAIN = "table.dataTable[id^=itables]"  # the page's table (the filter panes are tables too)


@pytest.mark.browser
def test_hostile_answers_run_no_script_in_chromium(tmp_path, chromium):
    run = _hostile_run(tmp_path)
    chromium.get((run.report / "samples.html").as_uri())
    info = _wait_for_table(chromium)
    chromium.find_element("css selector", "details summary").click()  # a click opens one
    chromium.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
    time.sleep(0.5)
    filled = chromium.execute_script(
        "return Array.from(document.querySelectorAll('details .full'))"
        ".filter(d => d.textContent.length > 0).length;"
    )
    pwned = chromium.execute_script("return window.__pwned === undefined ? null : 1;")
    text = chromium.execute_script("return document.body.innerText;")
    assert "of 22 entries" in info  # every row is there
    assert pwned is None and filled > 0
    assert "<script>window.__pwned=1</script>" in text  # shown as text
    assert "A" * 3000 in text and "<script>window.__pwned=5" not in text  # the cut megabyte


@pytest.mark.browser
def test_search_by_task_code_and_rows_show_answers_and_rubric(reported, chromium):
    scores = reported.read_scores()
    n_or = int((scores["task"] == "OR").sum())
    chromium.get((reported.report / "samples.html").as_uri())
    _wait_for_table(chromium)
    chromium.find_element("css selector", ".dt-search input").send_keys("OR")
    time.sleep(0.5)
    info = chromium.execute_script("return document.querySelector('.dt-info').textContent;")
    cells = chromium.execute_script(
        f"return Array.from(document.querySelectorAll('{MAIN} tbody tr'))"
        ".map(r => Array.from(r.children).map(c => c.innerText));"
    )
    heads = chromium.execute_script(
        f"return Array.from(document.querySelectorAll('{MAIN} thead th'))"
        ".map(h => h.innerText.trim());"
    )
    assert f"of {n_or} entries" in info and "filtered from 44" in info
    task, answer, rubric = heads.index("task"), heads.index("answer"), heads.index("rubric")
    assert len(cells) == n_or and {row[task] for row in cells} == {"OR"}
    row = next(r for r in cells if "characters" in r[answer] and r[answer].count("\n") >= 1)
    assert "format" in row[rubric] and "/" in row[rubric]
    responses = {(r.sample_id, r.model): r.text for r in read_records(reported.responses, Response)}
    shown = pd.Series([r[answer] for r in cells])
    first = [t[:40] for (sid, _), t in responses.items() if "/OR/" in sid and t.strip()]
    assert any(any(f.split("\n")[0] in s for s in shown) for f in first)


def test_value_column_stays_when_no_score_was_computed(reported):
    scores = reported.read_scores().assign(value=float("nan"), explanation="judge failed")
    frame = samples_page.sample_rows(reported, scores=scores, links=False)
    assert "value" in frame.columns and frame["value"].isna().all()


def _visible(driver, selector: str) -> list[dict]:
    """Each header cell of the page's table: its text, and whether it lies inside the first
    screen (the window at 1,400 px wide, not scrolled)."""
    return driver.execute_script(
        f"""return Array.from(document.querySelectorAll('{selector} thead th')).map(h => {{
          const r = h.getBoundingClientRect();
          return {{text: h.innerText.trim(), seen: r.left >= 0 && r.right <= innerWidth + 1
                   && r.top >= 0 && r.top < innerHeight && r.width > 0}};
        }});"""
    )


@pytest.mark.browser
def test_first_screen_shows_answers_with_one_scorer_at_a_time(reported, tmp_path, chromium):
    """samples.html and compare.html at 1,400 px: the answer, its value and explanation in the
    first screen, the filters collapsed; with two scorers, one at a time behind a switch."""
    run = RunDir("two", tmp_path)
    shutil.copytree(reported.path, run.path)
    meta = json.loads(run.run_json.read_text(encoding="utf-8"))  # a renamed run says its name
    run.run_json.write_text(json.dumps({**meta, "run_id": "two"}), encoding="utf-8")
    lceval.run.score("two", root=tmp_path, scorer="lifbench:strict", progress=False)
    samples_page.write_samples_page(run)
    compare_page.write_run_compare_page(run)
    seen = {}
    for name in ("samples.html", "compare.html"):
        chromium.get((run.report / name).as_uri())
        _wait_for_table(chromium)
        time.sleep(0.3)
        seen[name] = {
            "heads": _visible(chromium, MAIN),
            "info": chromium.execute_script(
                "return document.querySelector('.dt-info').textContent;"
            ),
            "panes": chromium.execute_script(
                "const p = document.querySelector('.dtsp-panesContainer');"
                "return !!p && p.offsetParent !== null;"
            ),
            "switch": chromium.execute_script(
                "return Array.from(document.querySelectorAll('select.lc-scorer option'))"
                ".map(o => o.textContent);"
            ),
        }
    chromium.find_element("css selector", ".lc-bar button").click()  # filters open
    time.sleep(0.3)
    opened = chromium.execute_script(  # the panes (built on opening) and the builder shown
        "const p = document.querySelector('.dtsp-panesContainer');"
        "return [p.offsetParent !== null, p.querySelectorAll('.dtsp-searchPane').length,"
        " !!document.querySelector('.dtsb-searchBuilder')];"
    )
    first = {h["text"] for h in seen["samples.html"]["heads"] if h["seen"]}
    assert {"answer", "value", "explanation"} <= first, seen["samples.html"]["heads"]
    first = {h["text"] for h in seen["compare.html"]["heads"] if h["seen"]}
    assert {"answer A", "answer B", "diff", "explanation A"} <= first, seen["compare.html"]
    for name, n in (("samples.html", 44), ("compare.html", 22)):  # one scorer of two
        assert f"of {n} entries" in seen[name]["info"] and f"from {2 * n}" in seen[name]["info"]
        assert seen[name]["panes"] is False  # collapsed
        assert seen[name]["switch"][:2] == ["scorer: lifbench", "scorer: lifbench:strict"]
    assert opened[0] and opened[1] >= 2 and opened[2], opened
