"""report/index.html: a real LIFBench report opened in a real headless browser (Debian's Chromium
through chromedriver): every table and image renders and the page is not blank."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

import lceval.report
import lceval.run
from lceval.core.io import RunDir, new_meta

FIXTURE = Path(__file__).parents[1] / "fixtures" / "regression" / "lifbench"


def _report_run(tmp_path: Path) -> RunDir:
    run = RunDir("idx", tmp_path).create()
    for name in ("samples.jsonl", "contexts.jsonl", "responses.jsonl"):
        shutil.copy(FIXTURE / name, run.path / name)
    run.write_meta(new_meta("idx", models={"m0": {"backend": "hf", "dtype": "float32"}}))
    lceval.run.score("idx", root=tmp_path, progress=False)
    lceval.report.write_report("idx", root=tmp_path)
    return run


def test_index_lists_provenance_tables_and_figures(tmp_path):
    run = _report_run(tmp_path)
    page = (run.report / "index.html").read_text(encoding="utf-8")
    assert "Provenance" in page and "<td>m0</td><td>hf</td><td>float32</td>" in page
    csvs = list(run.report.glob("*.csv"))
    pngs = list(run.figures.glob("*.png"))
    assert csvs and pngs
    assert all(f"{p.stem}.csv</code>" in page for p in csvs)  # every table, captioned
    assert page.count("<table") == page.count("<figcaption>") - page.count("<img")
    assert "id='reproduction'" in page and "<td style='text-align:left'>Fig. 3</td>" in page
    assert "ManyIFEval" not in page  # only the run's benchmarks' rows
    assert all(f"figures/{p.name}" in page for p in pngs)


@pytest.mark.browser
def test_index_renders_in_a_headless_browser(tmp_path, chromium, keep_artifact):
    from PIL import Image

    run = _report_run(tmp_path)
    chromium.set_window_size(1280, 2000)
    chromium.get((run.report / "index.html").as_uri())
    images = chromium.execute_script(
        "return Array.from(document.images).map(i => [i.src, i.complete, i.naturalWidth]);"
    )
    tables = chromium.execute_script("return document.querySelectorAll('table').length;")
    shot = tmp_path / "index.png"
    chromium.save_screenshot(str(shot))
    assert images and all(done and width > 0 for _, done, width in images), images
    assert tables >= len(list(run.report.glob("*.csv"))) + 2  # + headline, provenance, ...
    img = Image.open(shot).convert("L")
    lo, hi = img.getextrema()
    assert hi - lo > 100  # not a blank page
    keep_artifact(shot, "report_index.png")


def test_responses_frame_leaves_out_stale_responses(tmp_path, capsys):
    """The responses table (notebook 02, inference_summary) shows what scoring scores: a
    response stamped with another sample hash (the run was rebuilt) is left out; one without a
    hash counts as current."""
    from lceval.core.io import write_jsonl
    from lceval.core.records import Context, Response, Sample, sample_hash
    from lceval.report.reporting import inference_summary, responses_frame

    run = RunDir("rf", tmp_path).create()
    ctx = Context(id="c", text="long text", n_tokens=2, encoding="o200k_base")
    s1 = Sample(id="s1", benchmark="lifbench", task="LSI", instruction="I", context_id="c")
    s2 = Sample(id="s2", benchmark="lifbench", task="LSI", instruction="J")
    run.write_samples([s1, s2], [ctx])

    def resp(sample_id: str, h: str | None, text: str) -> Response:
        return Response(sample_id=sample_id, model="m", text=text, config_hash="c0", sample_hash=h)

    stale, current = resp("s1", "0" * 16, "old"), resp("s1", sample_hash(s1, ctx), "new")
    write_jsonl(run.responses, [stale, current, resp("s2", None, "legacy")])
    frame = responses_frame("rf", tmp_path)
    assert sorted(zip(frame["sample_id"], frame["text"], strict=True)) == [
        ("s1", "new"),
        ("s2", "legacy"),
    ]
    assert set(frame["task"]) == {"LSI"} and frame.attrs["stale"] == 1
    err = capsys.readouterr().err
    assert "1 response(s)" in err and "left out" in err and "\n" == err[-1] and err.count("\n") == 1
    assert int(inference_summary(frame)["responses"].sum()) == 2

    write_jsonl(run.responses, [stale])  # every response is stale: an empty table, same columns
    frame = responses_frame("rf", tmp_path)
    assert frame.empty and {"sample_id", "model", "task", "text"} <= set(frame.columns)
    assert inference_summary(frame).empty


def test_responses_frame_counts_a_retried_error_once(tmp_path):
    """An error replaced by a successful retry: one row, the success, as scoring reads it."""
    from lceval.core.io import RunDir, new_meta
    from lceval.core.records import Response, Sample
    from lceval.core.store import ResponseStore
    from lceval.report.reporting import inference_summary, responses_frame

    run = RunDir("r", tmp_path).create()
    run.write_samples([Sample("a", "echo", "T", "q"), Sample("b", "echo", "T", "q")], [])
    run.write_meta(new_meta("r"))
    store = ResponseStore(run.responses)
    err = Response("a", "m", "", "h", finish_reason="error", error="RuntimeError: oom")
    store.append([err, Response("b", "m", "ok", "h")])
    store.append([Response("a", "m", "retried", "h")])
    frame = responses_frame("r", tmp_path)
    pairs = sorted(zip(frame["sample_id"], frame["text"], strict=True))
    assert pairs == [("a", "retried"), ("b", "ok")]
    assert int(inference_summary(frame)["errors"].sum()) == 0


@pytest.mark.parametrize("key", ["ruler", "leval"])
def test_index_shows_tables_a_report_writes_in_its_own_folder(regression_report, key):
    """RULER and L-Eval write their tables under report/<key>/: each is on the page under the
    benchmark's title, with a caption."""
    run = regression_report(key)
    page = (run.report / "index.html").read_text(encoding="utf-8")
    csvs = sorted((run.report / key).glob("*.csv"))
    assert csvs and all(f"{key}/{p.stem}.csv</code>" in page for p in csvs)
    assert f"<h2 id='{key}'>" in page
    assert page.count("<table") == page.count("<figcaption>") - page.count("<img")


OVERFLOW_JS = """
const W = document.documentElement.clientWidth, out = [];
for (const t of document.querySelectorAll('table')) {
  if (!t.offsetParent) continue;  // not shown (a folded <details>, a hidden pane)
  const where = (t.closest('figure')?.querySelector('figcaption')?.textContent
                 || t.id || 'table').slice(0, 70);
  const right = t.getBoundingClientRect().right;
  if (right > W + 1) out.push(`${where}: right edge ${Math.round(right)} px > ${W} px`);
  for (let p = t.parentElement; p; p = p.parentElement)
    if (p.scrollWidth > p.clientWidth + 1 && getComputedStyle(p).overflowX !== 'visible')
      out.push(`${where}: scrolls in ${p.className} (${p.scrollWidth} > ${p.clientWidth})`);
  for (const c of t.querySelectorAll('td,th'))
    if (c.scrollWidth > c.clientWidth + 1)
      out.push(`${where}: cell '${c.textContent.slice(0, 30)}' cut`);
}
return out;
"""


@pytest.mark.browser
def test_no_table_of_the_report_overflows_1400_px(tmp_path, chromium):
    """Issue 49: at 1,400 px the headline's coverage column, Table 4's source and the samples
    pages' right columns were cut. In headless Chromium at 1,400 px, every table shown on
    index.html, samples.html and compare.html of the LIFBench report (8 models) ends inside
    the window, scrolls in no box and cuts no cell."""
    run = _report_run(tmp_path)
    found = {}
    for page in ("index.html", "samples.html", "compare.html"):
        chromium.get((run.report / page).as_uri())
        chromium.implicitly_wait(0)
        for _ in range(50):  # the samples tables are drawn by DataTables after load
            if chromium.execute_script("return document.querySelectorAll('tbody tr').length"):
                break
            time.sleep(0.2)
        found[page] = chromium.execute_script(OVERFLOW_JS)
    assert found == {"index.html": [], "samples.html": [], "compare.html": []}, found


def test_the_printed_headline_carries_its_scale(tmp_path):
    """Issue 49: scales differ across papers (RULER and LongGenBench 0..100, LIFBench and
    ManyIFEval 0..1); what lceval report and eval print says which, as the page does."""
    from lceval.report.index_page import report_summary

    run = _report_run(tmp_path)
    lines = report_summary(run, {}).splitlines()
    assert lines[0].startswith("lifbench m0: ARS (Eq. 3) (0..1) 0.000 ["), lines[0]
    page = (run.report / "index.html").read_text(encoding="utf-8")
    assert "ARS (Eq. 3) (0..1)" in page
