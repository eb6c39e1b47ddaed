"""Every answer of a run in one interactive table: report/samples.html, the side-by-side
comparison of two models (compare.html), and the same table in a notebook cell.

One row per (sample, model, scorer) of scores.parquet, joined by ``sample_id`` with the sample's
grouping fields (task, scenario, length, expression, variable, scalar ``meta`` fields such as
ManyIFEval's instruction count), its instruction, the scored answer (responses.jsonl, the same
response scoring read), the value, the rubric items with their points (``Score.parts`` /
``Score.points``) and the scorer's explanation; the context is shown by its head and tail with
its length in tokens (of the run's tiktoken encoding) and characters, the full text one click
away (a UTF-8 ``.txt`` file under ``contexts/`` beside the page).

The table is itables' offline DataTables bundle (no CDN: the page works with no network):
search, sort, filter by any grouping field (SearchPanes) and by value (SearchBuilder). A search
term that is exactly a task code (case-sensitive) filters the task column only, so typing
``OR`` leaves LIFBench's OR rows and not every answer holding "or".

Model output is hostile input: every text is HTML-escaped here (the table is rendered with
``allow_html`` only for the markup this module writes), lone surrogates become U+FFFD, and long
texts are cut to a bounded size with their full length shown, so a megabyte answer or an answer
``<script>...</script>`` stays inert text and the page stays small.
"""

from __future__ import annotations

import functools
import hashlib
import html
import json
import math
import re
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup

from lceval import registry
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, atomic_open
from lceval.core.records import sample_hashes
from lceval.core.store import ResponseStore

PREVIEW_CHARS = 160
"""Characters of an instruction, answer or explanation shown before a click."""
ANSWER_CHARS = 3000
"""Characters of an answer kept on the page (the rest is cut, its length shown)."""
INSTRUCTION_CHARS = 1500
"""Characters of an instruction kept on the page."""
EXPLANATION_CHARS = 1000
"""Characters of a scorer's explanation kept on the page."""
CONTEXT_EDGE_CHARS = 200
"""Characters of a context's head and of its tail shown in the table."""
MAX_RUBRIC_ITEMS = 40
"""Rubric items shown per row (ManyIFEval's strict and loose checks of 10 instructions fit)."""
GROUPING = ("scenario", "length", "expression", "variable")
"""Sample grouping fields shown as columns (``expression``/``variable``: the sample's
``expression_id``/``variable_id``, LIFBench's IFS perspectives), then scalar ``meta`` fields."""
PANES = ("benchmark", "task", "model", "scorer", "scenario", "length")
"""Columns offered as SearchPanes filters when present."""

_CSS = """
body{font-family:sans-serif;margin:1.5em;font-size:13px}
table.dataTable td{vertical-align:top}
.txt{white-space:pre-wrap;word-break:break-word;max-width:38em}
td.answer{min-width:32em}td.answer .txt{max-width:48em}
table.dataTable td.key,table.dataTable th.key{background:#fafafa}
td details{min-width:18em}
.full{white-space:pre-wrap;word-break:break-word;max-height:24em;overflow:auto;
 background:#f7f7f7;padding:4px;max-width:50em}
.len,.cut{color:#777;font-style:italic}
.lost{color:#b00}.got{color:#070}
.ctx{max-width:30em;white-space:pre-wrap;word-break:break-word}
.dots{color:#999}
td.expl .txt{max-width:22em}
.lc-closed .dtsp-panesContainer,.lc-closed .dtsb-searchBuilder{display:none}
.lc-bar{margin:.3em 0}.lc-bar button,.lc-bar select{margin-right:1em}
"""


def clean(text: Any) -> str:
    """``text`` as a string that can be written as UTF-8: lone surrogates become U+FFFD."""
    s = text if isinstance(text, str) else "" if text is None else str(text)
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        s = s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return s


def esc(text: Any) -> str:
    """HTML-escaped :func:`clean` text (``& < > " '``)."""
    return html.escape(clean(text), quote=True)


class Texts:
    """The full texts of one page, each stored once (an instruction or context shared by many
    rows), written as one inert JSON block; a cell's ``<details>`` is filled from it when first
    opened, by setting ``textContent`` (never parsed as HTML). Keeps the table's own data small,
    so a 10,000-row page opens fast (``bench/bench_samples_page.py``)."""

    def __init__(self) -> None:
        self.id = f"lceval-texts-{uuid.uuid4().hex[:12]}"
        self.texts: list[str] = []
        self._index: dict[str, int] = {}

    def add(self, text: str) -> int:
        """Index of ``text`` (cleaned) in the block, adding it when new."""
        k = self._index.get(text)
        if k is None:
            k = self._index[text] = len(self.texts)
            self.texts.append(text)
        return k

    def html(self) -> str:
        """The JSON block (``<`` written ``\\u003c``: no text can close the script element) and
        the script that fills a ``<details>`` when it is opened."""
        data = json.dumps(self.texts, ensure_ascii=False).replace("<", "\\u003c")
        return f"<script type='application/json' id='{self.id}'>{data}</script>" + _LAZY_SCRIPT

    def cell(self, text: str, summary: str, note: str = "") -> str:
        """A ``<details>`` whose body is ``text`` (filled on opening), after ``summary``
        (HTML the caller escaped) and before ``note`` (HTML)."""
        k = self.add(text)
        return (
            f"<details data-s='{self.id}' data-k='{k}'><summary>{summary}</summary>"
            f"<div class='full'></div>{note}</details>"
        )


_LAZY_SCRIPT = """<script>
if (!window.__lcevalTexts) {
  window.__lcevalTexts = {};
  document.addEventListener("toggle", ev => {
    const d = ev.target;
    if (!(d instanceof HTMLDetailsElement) || !d.open || !d.dataset.s) return;
    const div = d.querySelector(".full");
    if (!div || div.dataset.done) return;
    const all = window.__lcevalTexts;
    all[d.dataset.s] ||= JSON.parse(document.getElementById(d.dataset.s).textContent);
    div.textContent = all[d.dataset.s][Number(d.dataset.k)];
    div.dataset.done = "1";
  }, true);
}
</script>"""


def _lines(escaped: str) -> str:
    """Line breaks of an escaped text as ``<br>``: the table's data travels as JSON through
    itables, which would show a raw newline as the two characters ``\\n``; the answer's line
    layout is what LIFBench's format rubric judges."""
    return escaped.replace("\r\n", "\n").replace("\n", "<br>")


def text_cell(
    text: Any,
    limit: int,
    store: Texts,
    *,
    preview: int = PREVIEW_CHARS,
    total: int | None = None,
) -> str:
    """One escaped text as a table cell: short texts in full; longer ones as a preview whose full
    text (the first ``limit`` characters) is one click away in ``<details>`` (from ``store``); a
    text over ``limit`` characters says how many were cut and its length in characters
    (``total``: the length of the whole text when ``text`` was already cut)."""
    t = clean(text)
    n = max(len(t), total or 0)
    if n <= preview:
        return f"<span class='txt'>{_lines(esc(t))}</span>"
    cut = (
        f"<span class='cut'> … [cut: {n - limit:,} more characters; {n:,} in all]</span>"
        if n > limit
        else ""
    )
    summary = (
        f"<span class='txt'>{_lines(esc(t[:preview]))}</span>… "
        f"<span class='len'>({n:,} characters)</span>"
    )
    return store.cell(t[:limit], summary, cut)


def rubric_cell(parts: Mapping[str, Any], points: Mapping[str, Any]) -> str:
    """Rubric items as ``name got/max`` (items below their maximum marked lost), then items
    without a maximum (diagnostics such as counts) as ``name=value``."""
    items = []
    for name, got in list(parts.items())[:MAX_RUBRIC_ITEMS]:
        value = _num(got)
        if name in points:
            top = _num(points[name])
            cls = "lost" if value < top or math.isnan(value) else "got"
            items.append(f"<span class='{cls}'>{esc(name)} {_fmt(value)}/{_fmt(top)}</span>")
        else:
            items.append(f"<span class='len'>{esc(name)}={_fmt(value)}</span>")
    more = len(parts) - MAX_RUBRIC_ITEMS
    if more > 0:
        items.append(f"<span class='cut'>… {more} more items</span>")
    return "<br>".join(items)


def _num(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def _fmt(x: float) -> str:
    return "NaN" if math.isnan(x) else f"{x:.4g}"


def _json_map(text: Any) -> dict[str, Any]:
    try:
        out = json.loads(text) if isinstance(text, str) else dict(text or {})
    except (ValueError, TypeError):
        return {}
    return out if isinstance(out, dict) else {}


def _context_files(
    folder: Path, contexts: Mapping[str, Any], used: Iterable[str]
) -> dict[str, str]:
    """Write each used context as ``<folder>/contexts/<sha256[:16]>.txt`` (UTF-8 with a BOM, so
    a browser opening the file reads it as UTF-8 plain text); returns context id -> relative
    link. A file already there with that name holds the same text and is kept."""
    links: dict[str, str] = {}
    for cid in sorted(set(used)):
        ctx = contexts.get(cid)
        if ctx is None:
            continue
        text = clean(ctx.text)
        name = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] + ".txt"
        path = folder / "contexts" / name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_open(path, "wb") as f:
                f.write(b"\xef\xbb\xbf" + text.encode("utf-8"))
        links[cid] = f"contexts/{name}"
    return links


def context_cell(ctx: Any, link: str | None, store: Texts) -> str:
    """A context's length in tokens (its tiktoken encoding) and characters, its head and tail
    (:data:`CONTEXT_EDGE_CHARS` each) one click away, and a link to its full text."""
    if ctx is None:
        return "<span class='len'>no context</span>"
    text = clean(ctx.text)
    n = len(text)
    size = f"{ctx.n_tokens:,} tokens ({esc(ctx.encoding)}), {n:,} characters"
    full = f" <a href='{esc(link)}' target='_blank'>full text</a>" if link else ""
    if n <= 2 * CONTEXT_EDGE_CHARS:
        edges = text
    else:
        edges = f"{text[:CONTEXT_EDGE_CHARS]}\n[… {n - 2 * CONTEXT_EDGE_CHARS:,} characters …]\n"
        edges += text[-CONTEXT_EDGE_CHARS:]
    head = f"<span class='len'>{size}</span>{full}"
    return head + store.cell(edges, "<span class='len'>head and tail</span>")


def _answers(run: RunDir) -> tuple[dict[tuple[str, str], Any], list[Any], dict[str, Any]]:
    """(sample id, model label) -> the stored answer scoring read (its text cut to
    :data:`ANSWER_CHARS` so megabyte answers are not all kept), the raw samples and the
    contexts. Model labels follow scoring: ``<model>@<config hash[:8]>`` for a model answering
    under several generation configs."""
    raw = run.read_samples()
    contexts = run.read_contexts()
    hashes = sample_hashes(raw, contexts)
    out: dict[tuple[str, str], Any] = {}
    if run.responses.exists():
        store = ResponseStore(run.responses)
        split = {m for m, c in store.configs(hashes).items() if len(c) > 1}
        for r in store:
            if not r.answers(hashes.get(r.sample_id)):
                continue
            label = f"{r.model}@{r.config_hash[:8]}" if r.model in split else r.model
            out[r.sample_id, label] = (
                r.text[:ANSWER_CHARS],
                len(r.text),
                r.finish_reason,
                r.completion_tokens,
                r.error,
                _thinking(r),
            )
    return out, raw, contexts


def _thinking(r: Any) -> tuple[str, int, int, bool] | None:
    """A response's thinking as (text cut to :data:`ANSWER_CHARS`, characters, tokens, no
    answer within the budget); None for a response without thinking."""
    if r.reasoning is None and not r.thinking_unfinished:
        return None
    t = r.reasoning or ""
    return (t[:ANSWER_CHARS], len(t), int(r.reasoning_tokens), bool(r.thinking_unfinished))


def sample_rows(
    run: RunDir,
    *,
    scores: pd.DataFrame | None = None,
    links: bool = True,
    folder: str | Path | None = None,
    store: Texts | None = None,
) -> pd.DataFrame:
    """The tidy table behind samples.html: one row per score row, plain values and page cells.

    Columns: ``benchmark, task, model``, ``value`` (0..1, NaN when not computed), ``answer``,
    ``explanation``, ``rubric``, ``scorer``, the grouping fields present in the run
    (:data:`GROUPING`, then scalar ``meta`` fields), ``instruction``, ``context`` (escaped HTML
    cells), ``sample_id``, and ``answer_chars`` / ``context_tokens`` (numbers). With ``links``
    the contexts are written under ``<folder>/contexts/`` (default: the run's report folder, so
    pages written there link them) and linked from the context cells.

    Args:
        run: a run folder with samples and scores.
        scores: score rows to show (default: every row of scores.parquet).
        links: write the context files and link them.
        folder: the folder of the page the rows go to (where ``contexts/`` is written).
        store: where the cells' full texts go (default: a new one); the frame's
            ``attrs["texts"]`` holds it, for :func:`table_html`.

    Raises:
        LcevalError: no samples or scores; a score row of a sample the run does not hold.
    """
    if scores is None:
        scores = run.read_scores()
    answers, raw, contexts = _answers(run)
    by_id = {s.id: s for s in raw}
    unknown = sorted(set(scores["sample_id"]) - set(by_id))
    if unknown:
        raise LcevalError(
            f"{run.scores} scores sample {unknown[0]!r}, which {run.samples} does not hold; "
            f"score the run again (lceval score {run.run_id})"
        )
    used = [by_id[i].context_id for i in scores["sample_id"] if by_id[i].context_id]
    where = Path(folder) if folder is not None else Path(run.report)
    hrefs = _context_files(where, contexts, used) if links else {}
    store = store if store is not None else Texts()
    rows = []
    for r in scores.itertuples(index=False):
        s = by_id[r.sample_id]
        text, n_chars, finish, completion, error, thought = answers.get(
            (r.sample_id, r.model), (None, 0, None, 0, None, None)
        )
        ctx = contexts.get(s.context_id) if s.context_id else None
        row = {  # the answer, its value and the explanation in the first screen
            "benchmark": esc(r.benchmark),
            "task": esc(r.task),
            "model": esc(r.model),
            "value": float(r.value),
            "answer": _thinking_cell(thought, store)
            + _answer_cell(text, n_chars, finish, completion, error, store),
            "explanation": text_cell(r.explanation, EXPLANATION_CHARS, store),
            "rubric": rubric_cell(_json_map(r.parts), _json_map(r.points)),
            "scorer": esc(r.scorer),
            **_grouping(s),
            "instruction": text_cell(s.instruction, INSTRUCTION_CHARS, store),
            "context": context_cell(ctx, hrefs.get(s.context_id or ""), store),
            "sample_id": esc(r.sample_id),
            "answer_chars": n_chars,
            "context_tokens": ctx.n_tokens if ctx is not None else 0,
        }
        rows.append(row)
    frame = pd.DataFrame(rows)
    if not frame.empty:
        empty = [c for c in frame.columns if c != "value" and frame[c].isna().all()]
        frame = frame.drop(columns=empty)
    frame.attrs["texts"] = store
    return frame


def _grouping(s: Any) -> dict[str, Any]:
    """A sample's grouping fields as escaped text (NaN-free: absent fields are None)."""
    out: dict[str, Any] = {
        "scenario": esc(s.scenario) if s.scenario else None,
        "length": s.length,
        "expression": s.expression_id,
        "variable": s.variable_id,
    }
    for k, v in (s.meta or {}).items():
        key = f"meta {clean(k)}"[:40]
        if isinstance(v, bool | int | float):
            out[esc(key)] = v
        elif isinstance(v, str) and len(v) <= 80:
            out[esc(key)] = esc(v)
    return out


def _answer_cell(
    text: str | None,
    n_chars: int,
    finish: str | None,
    completion: int,
    error: str | None,
    store: Texts,
) -> str:
    """The answer with its length in characters and generated tokens and its finish reason."""
    if text is None:
        return "<span class='len'>no stored answer</span>"
    head = f"<span class='len'>{n_chars:,} characters, {completion:,} tokens, {esc(finish)}"
    head += f": {esc(clean(error)[:300])}</span>" if error else "</span>"
    return f"{head}<br>{text_cell(text, ANSWER_CHARS, store, total=n_chars)}"


def _thinking_cell(thought: tuple[str, int, int, bool] | None, store: Texts) -> str:
    """A reasoning model's thinking, folded above its answer (one click opens it); '' for a
    response without thinking. The thinking is never scored (``lceval.models.thinking``)."""
    if thought is None:
        return ""
    text, n_chars, tokens, unfinished = thought
    note = "; no answer within the thinking budget" if unfinished else ""
    cut = (
        f"<span class='cut'> … [cut: {n_chars - ANSWER_CHARS:,} more characters]</span>"
        if n_chars > ANSWER_CHARS
        else ""
    )
    summary = f"<span class='len'>thinking: {tokens:,} tokens, {n_chars:,} characters{note}</span>"
    return store.cell(text, summary, cut) + "<br>"


def table_html(
    frame: pd.DataFrame,
    texts: Texts | None = None,
    *,
    table_id: str | None = None,
    page_length: int = 25,
) -> str:
    """The itables (DataTables) HTML of a :func:`sample_rows`-like frame, with the offline
    bundle, SearchPanes over the grouping columns, SearchBuilder, the exact-task-code search
    and the full texts of its cells (``texts``; default ``frame.attrs["texts"]``).

    The frame's text cells must already be escaped (this renders them as HTML).
    """
    if texts is None:
        texts = frame.attrs.get("texts") or Texts()
    # here, not at the top: loads itables
    import itables
    from itables.javascript import generate_init_offline_itables_html

    frame = frame.reset_index(drop=True)
    cols = list(frame.columns)
    panes = [i for i, c in enumerate(cols) if c in PANES]
    text_cols = [i for i, c in enumerate(cols) if not pd.api.types.is_numeric_dtype(frame[c])]
    marked = [
        i for i in text_cols if frame[cols[i]].astype(str).str.contains("<", regex=False).any()
    ]
    plain = [i for i in text_cols if i not in marked]
    types = [{"type": "html", "targets": marked}] if marked else []
    types += [{"type": "string", "targets": plain}] if plain else []
    opts: dict[str, Any] = {
        "connected": False,
        "allow_html": True,
        "showIndex": False,
        "maxBytes": 0,
        "pageLength": page_length,
        "lengthMenu": [10, 25, 50, 100, 500],
        "order": [],
        "classes": "display compact cell-border",
        # the filter panes and the condition builder are built on first opening (the hook
        # below): a 10,000-row page opens without computing them
        "columnDefs": types,
        "autoWidth": False,
        "deferRender": True,
        # the answer column wide, the key columns (benchmark, task, model) frozen on the left
        # while the table scrolls sideways (DataTables FixedColumns, in itables' offline bundle)
        "scrollX": True,
        "fixedColumns": {"left": _frozen(cols)},
    }
    answers = [i for i, c in enumerate(cols) if c in ("answer", "answer A", "answer B")]
    if answers:  # two answers side by side (compare.html) share the first screen
        width = "32em" if len(answers) == 1 else "24em"
        types.append({"targets": answers, "className": "answer", "width": width})
    expl = [i for i, c in enumerate(cols) if c.startswith("explanation")]
    if expl:
        types.append({"targets": expl, "className": "expl"})
    if table_id is not None:
        opts["table_id"] = table_id
    body = itables.to_html_datatable(frame, **opts)
    tid = _table_id(body)
    task_col = cols.index("task") if "task" in cols else -1
    codes = sorted({html.unescape(str(t)) for t in frame["task"]}) if task_col >= 0 else []
    hook = _TASK_SEARCH.replace("TABLE_ID", json.dumps(tid)).replace("TASK_COL", str(task_col))
    hook = hook.replace("TASK_CODES", json.dumps(codes).replace("<", "\\u003c"))
    switch = scorer_choices(frame) if "scorer" in cols else []
    hook = hook.replace("PANE_COLS", json.dumps(panes))
    hook = hook.replace("SCORER_COL", str(cols.index("scorer") if switch else -1))
    hook = hook.replace("SCORER_CHOICES", json.dumps(switch).replace("<", "\\u003c"))
    hook = hook.replace("ITABLES_NAME", json.dumps(f"_itables_{_underscore(itables.__version__)}"))
    hook = hook.replace("ITABLES_EVENT", json.dumps(f"itables-{itables.__version__}-ready"))
    # here, not at the top: loads itables
    from itables import options as itables_options

    return (
        f"<style>{_CSS}</style>"
        + generate_init_offline_itables_html(itables_options.dt_bundle)
        + f"<div class='lc-closed' id='{tid}-box'>{body}</div>"
        + texts.html()
        + hook
    )


def scorer_choices(frame: pd.DataFrame) -> list[list[str]]:
    """The scorer switch of a page whose rows hold several scorers of one benchmark (L-Eval's
    ``leval`` and ``leval:judge``): ``[label, regex on the scorer column]`` pairs, the first
    (shown on opening) each benchmark's default scorer, then each other scorer alone, then every
    scorer; ``[]`` when every benchmark has one scorer (nothing to switch)."""
    pairs = frame[["benchmark", "scorer"]].drop_duplicates()
    names = pairs.groupby("benchmark", sort=False)["scorer"].agg(list)
    if all(len(n) == 1 for n in names):
        return []
    first = [_default_scorer(html.unescape(b), n) for b, n in names.items()]

    def only(names: Iterable[str]) -> str:
        return "^(" + "|".join(_regex(html.unescape(n)) for n in names) + ")$"

    firsts = list(dict.fromkeys(first))
    label = "scorer: " + ", ".join(html.unescape(n) for n in firsts)
    out = [[label, only(firsts)]]
    others = [n for n in dict.fromkeys(pairs["scorer"]) if n not in firsts]
    out += [[f"scorer: {html.unescape(n)}", only([n])] for n in others]
    return [*out, ["every scorer (rows repeat per scorer)", ""]]


def _default_scorer(benchmark: str, names: list[str]) -> str:
    """The benchmark's default scorer when the rows hold it (``Benchmark.default_scorer``),
    else the first of ``names`` (escaped cells)."""
    try:
        default = esc(registry.get(benchmark).default_scorer)
    except LcevalError:  # a benchmark no longer registered: the rows' order
        return names[0]
    return default if default in names else names[0]


def _regex(text: str) -> str:
    return re.escape(text)


KEY_COLUMNS = ("benchmark", "task", "model")
"""Columns frozen on the left of samples.html while it scrolls sideways (when they lead)."""


def _frozen(cols: list[str]) -> int:
    """How many leading columns are key columns (:data:`KEY_COLUMNS`)."""
    n = 0
    while n < len(cols) and cols[n] in KEY_COLUMNS:
        n += 1
    return n


def _underscore(version: str) -> str:
    return version.replace(".", "_").replace("-", "_")


def _table_id(body: str) -> str:
    m = re.search(r'<table id="([^"]+)"', body)
    if m is None:  # pragma: no cover - itables always names its table
        raise LcevalError("itables wrote a table without an id")
    return m.group(1)


_TASK_SEARCH = """<script type="module">
(async () => {
  const name = ITABLES_NAME;
  const ready = r => window.addEventListener(ITABLES_EVENT, r, {once: true});
  if (!window[name]) await new Promise(ready);
  const { jQuery: $ } = await window[name];
  const el = document.getElementById(TABLE_ID);
  if (!el) return;
  if (!$.fn.dataTable.isDataTable(el)) await new Promise(r => $(el).one("init.dt", r));
  const api = $(el).DataTable();
  // filters collapsed: the panes and the condition builder open with a button
  const wrap = document.getElementById(TABLE_ID + "-box");
  const bar = document.createElement("div");
  bar.className = "lc-bar";
  const btn = document.createElement("button");
  btn.textContent = "Show filters";
  let built = false;
  btn.onclick = () => {
    if (!built) {  // filters built on first opening, above the table
      built = true;
      const DT = $.fn.dataTable;
      new DT.SearchBuilder(api, {});
      new DT.SearchPanes(api, {columns: PANE_COLS, cascadePanes: false, initCollapsed: true});
      bar.after(api.searchPanes.container()[0], api.searchBuilder.container()[0]);
    }
    const closed = wrap.classList.toggle("lc-closed");
    btn.textContent = closed ? "Show filters" : "Hide filters";
  };
  bar.append(btn);
  // one scorer at a time: a switch over the scorer column
  const choices = SCORER_CHOICES;
  if (SCORER_COL >= 0 && choices.length) {
    const sel = document.createElement("select");
    sel.className = "lc-scorer";
    choices.forEach(([label], i) => sel.add(new Option(label, String(i))));
    const pick = () => api.column(SCORER_COL)
      .search(choices[Number(sel.value)][1], true, false).draw();
    sel.onchange = pick;
    bar.append(sel);
    pick();
  }
  const top = el.closest(".dt-container");
  top.insertBefore(bar, top.firstChild);
  if (TASK_COL < 0) return;
  const codes = new Set(TASK_CODES);
  const col = api.column(TASK_COL);
  const box = el.closest(".dt-container").querySelector(".dt-search input");
  if (!box) return;
  const esc = s => s.replace(/[.*+?^${}()|[\\]\\\\]/g, "\\\\$&");
  const onEvent = ev => {
    if (ev.target !== box) return;
    const v = box.value.trim();
    if (codes.has(v)) {
      ev.stopImmediatePropagation();
      api.search("");
      col.search("^" + esc(v) + "$", true, false).draw();
    } else if (col.search()) {
      col.search("");
      api.search(box.value).draw();
    }
  };
  for (const t of ["keyup", "input", "search", "paste", "cut"])
    box.parentNode.addEventListener(t, onEvent, true);
})();
</script>"""


@functools.cache
def _templates() -> Environment:
    templates = FileSystemLoader(Path(__file__).parent / "templates")
    return Environment(loader=templates, autoescape=True)


def render(template: str, **context: Any) -> str:
    """``lceval/report/templates/<template>`` rendered with ``context`` (jinja2, autoescaped: a
    value is text unless it is ``markupsafe.Markup``)."""
    return _templates().get_template(template).render(**context)


def page(title: str, intro: str, frame: pd.DataFrame | None, texts: Texts | None = None) -> str:
    """A whole HTML page (``templates/page.html.j2``): a heading, an introduction (HTML the caller
    escaped) and the table (:func:`table_html`; none when ``frame`` is None)."""
    table = "" if frame is None else table_html(frame, texts)
    return render("page.html.j2", title=clean(title), intro=Markup(intro), table=Markup(table))


def write_page(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically; a folder that cannot be written is one line."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(path) as f:
            f.write(text)
    except OSError as exc:
        raise LcevalError(f"cannot write {path}: {exc.strerror}") from None
    return path


def write_samples_page(run: RunDir) -> Path | None:
    """Write ``<run.report>/samples.html`` (and ``contexts/``); None when the run has no scores.

    Returns:
        The page's path, or None.

    Raises:
        LcevalError: a score of an unknown sample; the folder cannot be written.
    """
    if not run.scores.exists():
        return None
    frame = sample_rows(run)
    if frame.empty:
        return None
    n_models = int(frame["model"].nunique())
    link = (
        "<p>Two models side by side, with the paired difference: "
        "<a href='compare.html'>compare.html</a>.</p>"
        if n_models > 1
        else ""
    )
    intro = (
        f"<p>Run <code>{esc(run.run_id)}</code>: {len(frame):,} rows, one per (sample, model, "
        "scorer). <a href='index.html'>Back to the report</a>.</p>"
        f"{link}<p class='len'>{GUIDE}</p>"
    )
    path = Path(run.report) / "samples.html"
    return write_page(path, page("Every answer", intro, frame, frame.attrs["texts"]))


GUIDE = (
    "Search looks in every column; a term that is exactly a task code filters the task column. "
    "Filter by grouping fields with the panes, by value with the condition builder; click a "
    "header to sort. Context lengths are in tokens of the run's tiktoken encoding and in "
    "characters; long texts are cut with their length shown (full answers in responses.jsonl)."
)


def worst(
    scores: pd.DataFrame,
    *,
    task: str | None = None,
    model: str | None = None,
    scorer: str | None = None,
    n: int | None = None,
) -> pd.DataFrame:
    """Score rows (scores.parquet as read) of one task / model / scorer, lowest value first
    (NaN, a score that could not be computed, last); the first ``n`` when given.

    Raises:
        LcevalError: a task, model or scorer the scores do not hold; ``n`` below 1.
    """
    if n is not None and n < 1:
        raise LcevalError(f"worst must be >= 1, got {n}")
    out = scores
    for col, want in (("task", task), ("model", model), ("scorer", scorer)):
        if want is None:
            continue
        have = sorted(set(out[col].astype(str)))
        if want not in have:
            raise LcevalError(f"no {col} {want!r} in the scores; {col}s: {', '.join(have)}")
        out = out[out[col].astype(str) == want]
    out = out.sort_values("value", kind="stable", na_position="last")
    return out.head(n) if n is not None else out


_worst_rows = worst  # show_samples' parameter `worst` shadows the function


def show_samples(
    run: str | Any,
    *,
    task: str | None = None,
    worst: int | None = 20,
    model: str | None = None,
    scorer: str | None = None,
    outputs_root: str | Path | None = None,
) -> Any:
    """The per-sample table of report/samples.html in a notebook cell, narrowed to what fits a
    cell: one row per (sample, model, scorer) with the task, model, value (0..1), answer,
    explanation, rubric items and length (:data:`NOTEBOOK_COLUMNS`), the lowest values first.
    itables' offline DataTables bundle: it renders with no network, searchable and sortable
    (:mod:`lceval.report.samples_page`).

    Args:
        run: a run id or ``lceval.core.io.RunDir`` (scored).
        task, model, scorer: only these rows (task code, model name, scorer name).
        worst: the ``worst`` lowest-valued rows (NaN last); None: every row.
        outputs_root: folder of run folders (with a run id).

    Returns:
        An ``IPython.display.HTML`` object (shown when it ends a cell).

    Raises:
        LcevalError: the run has no scores; an unknown task, model or scorer; ``worst`` not a
            whole number >= 1 (``"3"`` included) or None.
    """
    # here, not at the top: loads IPython
    from IPython.display import HTML

    if worst is not None and (isinstance(worst, bool) or not isinstance(worst, int)):
        raise LcevalError(f"worst must be a whole number >= 1 or None, got {worst!r}")
    for name, value in (("task", task), ("model", model), ("scorer", scorer)):
        if value is not None and not isinstance(value, str):
            raise LcevalError(f"{name} must be text or None, got {value!r}")
    folder = run if isinstance(run, RunDir) else RunDir(str(run), outputs_root)
    rows = _worst_rows(folder.read_scores(), task=task, model=model, scorer=scorer, n=worst)
    frame = sample_rows(folder, scores=rows, links=False)
    if frame.empty:
        raise LcevalError(f"run {folder.run_id} has no scores to show")
    texts = frame.attrs["texts"]
    keep = [c for c in NOTEBOOK_COLUMNS if c in frame.columns]
    if "scorer" in frame.columns and frame["scorer"].nunique() > 1:
        keep.insert(keep.index("value"), "scorer")
    return HTML(table_html(frame[keep], texts, page_length=25))


NOTEBOOK_COLUMNS = (
    "task",
    "model",
    "value",
    "answer",
    "explanation",
    "rubric",
    "length",
    "sample_id",
)
"""The columns :func:`show_samples` shows (a notebook cell is narrow): what was answered and how
it scored; the scorer too when the rows hold several, ``sample_id`` last. The grouping fields,
instruction and context are on samples.html."""
