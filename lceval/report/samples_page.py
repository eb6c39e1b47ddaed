"""Every answer of a run in one interactive table (itables' offline DataTables bundle):
report/samples.html, compare.html's rows and :func:`show_samples` in a notebook. Model output is
hostile input: cells are the autoescaped macros of ``templates/cells.html.j2``, lone surrogates
become U+FFFD, long texts are cut with their length shown."""

from __future__ import annotations

import dataclasses
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

import itables
import pandas as pd
from itables import options as itables_options
from itables.javascript import generate_init_offline_itables_html
from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup, escape

from lceval.benchmarks import registry
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, atomic_open, without_surrogates
from lceval.core.records import sample_hashes
from lceval.core.store import ResponseStore

# characters kept on the page (the rest cut, its length shown); PREVIEW_CHARS before a click
PREVIEW_CHARS, ANSWER_CHARS, INSTRUCTION_CHARS, EXPLANATION_CHARS = 160, 3000, 1500, 1000
CONTEXT_EDGE_CHARS = 200  # of a context's head and of its tail
MAX_RUBRIC_ITEMS = 40  # ManyIFEval's strict and loose checks of 10 instructions fit
PANES = ("benchmark", "task", "model", "scorer", "scenario", "length")  # SearchPanes filters
NOTEBOOK_COLUMNS = ("task", "model", "value", "answer", "explanation", "rubric", "length")


@functools.cache
def _templates() -> Environment:
    folder = FileSystemLoader(Path(__file__).parent / "templates")
    env = Environment(loader=folder, autoescape=True, auto_reload=False)
    env.filters["commas"] = "{:,}".format
    # a column name breaks after its underscores (``Expression_rank``): headers wrap, tables fit
    env.filters["breakable"] = lambda v: Markup(str(escape(str(v))).replace("_", "_<wbr>"))
    env.filters["g4"] = lambda x: "NaN" if math.isnan(x) else f"{x:.4g}"
    env.filters["f3"] = lambda x: "n/a" if x is None else f"{float(x):.3f}"
    env.filters["cell"] = lambda v: (
        (f"{v:.4g}" if v == v else "") if isinstance(v, float) else str(v)
    )
    env.policies["json.dumps_kwargs"] = {"ensure_ascii": False}
    return env


def render(template: str, **context: Any) -> str:
    """``templates/<template>`` rendered with ``context`` (autoescaped unless ``Markup``)."""
    return _templates().get_template(template).render(**context)


@functools.cache
def _cells() -> Any:  # the macros of cells.html.j2
    return _templates().get_template("cells.html.j2").module


def clean(text: Any) -> str:
    """``text`` as a string that can be written as UTF-8: lone surrogates become U+FFFD."""
    return without_surrogates("" if text is None else str(text))


def esc(text: Any) -> str:
    """HTML-escaped :func:`clean` text."""
    return str(escape(clean(text)))


class Texts(dict[str, int]):
    """The full texts of one page (text -> its index), each stored once, written as one inert
    JSON block; a cell's ``<details>`` is filled from it when first opened, so the table's own
    data stays small."""

    def __init__(self) -> None:
        super().__init__()
        self.id = f"lceval-texts-{uuid.uuid4().hex[:12]}"

    @property
    def texts(self) -> list[str]:
        return list(self)  # dicts keep insertion order: a text's index is its position

    def add(self, text: str) -> int:
        """Index of ``text`` in the block, adding it when new."""
        return self.setdefault(text, len(self))


def _text_cell(text: Any, limit: int, store: Texts) -> str:
    return str(_cells().text(clean(text), limit, store, PREVIEW_CHARS))


def _num(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def _rubric_cell(parts: Mapping[str, Any], points: Mapping[str, Any]) -> str:
    """Rubric items as ``name got/max`` (below the maximum: lost), else ``name=value``."""
    shown = list(parts.items())[:MAX_RUBRIC_ITEMS]
    items = [(k, _num(v), _num(points[k]) if k in points else None) for k, v in shown]
    return str(_cells().rubric(items, len(parts) - MAX_RUBRIC_ITEMS))


def _json_map(text: Any) -> dict[str, Any]:
    try:
        out = json.loads(text) if isinstance(text, str) else dict(text or {})
    except (ValueError, TypeError):
        return {}
    return out if isinstance(out, dict) else {}


def _context_files(
    folder: Path, contexts: Mapping[str, Any], used: Iterable[str]
) -> dict[str, str]:
    """Each used context as ``<folder>/contexts/<sha256[:16]>.txt`` (UTF-8 with a BOM, so a
    browser reads it as UTF-8): context id -> relative link."""
    links: dict[str, str] = {}
    for cid in sorted(set(used)):
        ctx = contexts.get(cid)
        if ctx is None:
            continue
        text = clean(ctx.text)
        name = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] + ".txt"
        path = folder / "contexts" / name
        if not path.exists():  # the same name holds the same text
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_open(path, "wb") as f:
                f.write(b"\xef\xbb\xbf" + text.encode("utf-8"))
        links[cid] = f"contexts/{name}"
    return links


def _answers(run: RunDir) -> tuple[dict[tuple[str, str], Any], list[Any], dict[str, Any]]:
    """(sample id, model label as scoring names it) -> (the response scoring read, texts cut;
    the answer's and the thinking's length), the raw samples and the contexts."""
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
            cut = dataclasses.replace(
                r,
                text=clean(r.text[:ANSWER_CHARS]),
                reasoning=None if r.reasoning is None else clean(r.reasoning[:ANSWER_CHARS]),
                error=clean(r.error) if r.error else None,
            )
            out[r.sample_id, label] = (cut, len(r.text), len(r.reasoning or ""))
    return out, raw, contexts


def sample_rows(
    run: RunDir,
    *,
    scores: pd.DataFrame | None = None,
    links: bool = True,
    folder: str | Path | None = None,
    store: Texts | None = None,
) -> pd.DataFrame:
    """The table behind samples.html, one row per row of ``scores`` (default scores.parquet's).

    Columns: ``benchmark, task, model``, ``value`` (0..1, NaN when not computed), ``answer,
    explanation, rubric, scorer``, the grouping fields present (then scalar ``meta`` fields),
    ``instruction, context, sample_id`` (escaped HTML cells), ``answer_chars`` and
    ``context_tokens``. With ``links`` the contexts are written under ``<folder>/contexts/``
    (default the run's report folder) and linked; the cells' full texts go to ``store``
    (``frame.attrs["texts"]``).

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
    cells = _cells()
    rows = []
    for r in scores.itertuples(index=False):
        s = by_id[r.sample_id]
        answer, n_chars, n_thought = answers.get((r.sample_id, r.model), (None, 0, 0))
        ctx = contexts.get(s.context_id) if s.context_id else None
        rows.append(
            {  # the answer, its value and the explanation in the first screen
                "benchmark": esc(r.benchmark),
                "task": esc(r.task),
                "model": esc(r.model),
                "value": float(r.value),
                "answer": str(
                    cells.answer(answer, n_chars, n_thought, store, ANSWER_CHARS, PREVIEW_CHARS)
                ),
                "explanation": _text_cell(r.explanation, EXPLANATION_CHARS, store),
                "rubric": _rubric_cell(_json_map(r.parts), _json_map(r.points)),
                "scorer": esc(r.scorer),
                **_grouping(s),
                "instruction": _text_cell(s.instruction, INSTRUCTION_CHARS, store),
                "context": str(
                    cells.context(
                        ctx,
                        ctx and clean(ctx.text),
                        hrefs.get(s.context_id or ""),
                        store,
                        CONTEXT_EDGE_CHARS,
                    )
                ),
                "sample_id": esc(r.sample_id),
                "answer_chars": n_chars,
                "context_tokens": ctx.n_tokens if ctx is not None else 0,
            }
        )
    frame = pd.DataFrame(rows)
    if not frame.empty:
        empty = [c for c in frame.columns if c != "value" and frame[c].isna().all()]
        frame = frame.drop(columns=empty)
    frame.attrs["texts"] = store
    return frame


def _grouping(s: Any) -> dict[str, Any]:
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


def table_html(frame: pd.DataFrame, texts: Texts | None = None, *, page_length: int = 25) -> str:
    """The itables HTML of a :func:`sample_rows`-like frame (text cells already escaped), with the
    offline bundle, filters, the exact-task-code search, the scorer switch and the full texts
    (``texts``, default ``frame.attrs["texts"]``): ``templates/table.html.j2``."""
    if texts is None:
        texts = frame.attrs.get("texts") or Texts()
    frame = frame.reset_index(drop=True)
    cols = list(frame.columns)
    text_cols = [i for i, c in enumerate(cols) if not pd.api.types.is_numeric_dtype(frame[c])]
    marked = [i for i in text_cols if frame[cols[i]].astype(str).str.contains("<").any()]
    answers = [i for i, c in enumerate(cols) if c in ("answer", "answer A", "answer B")]
    types: list[
        dict[str, Any]
    ] = [  # two answers side by side (compare.html) share the first screen
        {"type": "html", "targets": marked},
        {"type": "string", "targets": [i for i in text_cols if i not in marked]},
        {
            "targets": answers,
            "className": "answer",
            "width": "32em" if len(answers) == 1 else "18em",
        },
        {
            "targets": [i for i, c in enumerate(cols) if c.startswith("explanation")],
            "className": "expl",
        },
    ]
    # the secondary columns (sample metadata, prompt parts, ids, counts) start hidden, behind
    # a button: the rest fits a 1,400 px window, nothing cut off at its right edge (issue 49)
    paired = "answer A" in cols
    more = [i for i, c in enumerate(cols) if secondary(c, paired)]
    types.append({"targets": more, "visible": False})
    tid = f"itables_{uuid.uuid4().hex}"  # itables' own naming
    opts: dict[str, Any] = {
        "table_id": tid,
        "connected": False,
        "allow_html": True,
        "showIndex": False,
        "maxBytes": 0,
        "pageLength": page_length,
        "lengthMenu": [10, 25, 50, 100, 500],
        "order": [],
        "classes": "display compact cell-border",
        "columnDefs": [t for t in types if t["targets"]],
        "autoWidth": False,
        "deferRender": True,
        # no horizontal scroll: the cells wrap (long tokens too) so the table fits its window
        "scrollX": False,
    }
    body = itables.to_html_datatable(frame, **opts)
    switch = scorer_choices(frame) if "scorer" in cols else []
    version = itables.__version__
    return render(
        "table.html.j2",
        bundle=Markup(generate_init_offline_itables_html(itables_options.dt_bundle)),
        body=Markup(body),
        tid=tid,
        texts=texts,
        panes=[i for i, c in enumerate(cols) if c in PANES],
        more=more,
        more_names=[cols[i] for i in more],
        choices=switch,
        scorer_col=cols.index("scorer") if switch else -1,
        task_col=cols.index("task") if "task" in cols else -1,
        codes=sorted({html.unescape(str(t)) for t in frame["task"]}) if "task" in cols else [],
        itables_name="_itables_" + re.sub(r"[.-]", "_", version),
        itables_event=f"itables-{version}-ready",
    )


def secondary(column: str, paired: bool = False) -> bool:
    """Whether a samples table's column starts hidden (:func:`table_html`): the sample's
    ``meta`` fields, its instruction and context, its id, and the length counts; on a paired
    page (two answers side by side, compare.html) also the rubrics and the grouping fields
    that are not among the filters' :data:`PANES`."""
    base = column.removesuffix(" A").removesuffix(" B")
    if paired and base not in (*PANES, "diff", "value", "answer", "explanation"):
        return True
    return (
        base.startswith("meta ")
        or base in ("instruction", "context", "sample_id")
        or base.endswith(("_chars", "_tokens"))
    )


def scorer_choices(frame: pd.DataFrame) -> list[list[str]]:
    """The scorer switch of rows holding several scorers of one benchmark: ``[label, regex on
    the scorer column]`` for the default scorers, each other one, then every scorer (or ``[]``)."""
    pairs = frame[["benchmark", "scorer"]].drop_duplicates().map(html.unescape)
    names = pairs.groupby("benchmark", sort=False)["scorer"].agg(list)
    if all(len(n) == 1 for n in names):
        return []
    firsts = [d if (d := default_scorer(b, n[0])) in n else n[0] for b, n in names.items()]
    firsts = list(dict.fromkeys(firsts))

    def only(names: Iterable[str]) -> str:
        return "^(" + "|".join(map(re.escape, names)) + ")$"

    out = [["scorer: " + ", ".join(firsts), only(firsts)]]
    out += [[f"scorer: {n}", only([n])] for n in dict.fromkeys(pairs["scorer"]) if n not in firsts]
    return [*out, ["every scorer (rows repeat per scorer)", ""]]


def default_scorer(key: str, fallback: str) -> str:
    """Benchmark ``key``'s default scorer; ``fallback`` for a benchmark no longer registered."""
    try:
        return registry.get(key).default_scorer
    except LcevalError:
        return fallback


def page(
    template: str, title: str, frame: pd.DataFrame | None, texts: Texts | None, **context: Any
) -> str:
    """``templates/<template>`` (extending ``page.html.j2``) with ``title``, ``context`` and the
    :func:`table_html` of ``frame`` (when given)."""
    table = Markup(table_html(frame, texts)) if frame is not None else ""
    return render(template, title=clean(title), table=table, **context)


def write_page(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (:class:`LcevalError` when it cannot be written)."""
    with atomic_open(path) as f:
        f.write(text)
    return path


def write_samples_page(run: RunDir) -> Path | None:
    """Write ``<run.report>/samples.html`` (and ``contexts/``); None without scores;
    :class:`LcevalError` for a score of an unknown sample or a folder that cannot be written."""
    if not run.scores.exists():
        return None
    frame = sample_rows(run)
    if frame.empty:
        return None
    text = page(
        "samples.html.j2",
        "Every answer",
        frame,
        frame.attrs["texts"],
        run_id=clean(run.run_id),
        n=len(frame),
        n_models=int(frame["model"].nunique()),
    )
    return write_page(Path(run.report) / "samples.html", text)


def worst(
    scores: pd.DataFrame,
    *,
    task: str | None = None,
    model: str | None = None,
    scorer: str | None = None,
    n: int | None = None,
) -> pd.DataFrame:
    """Score rows of one task / model / scorer, lowest value first (NaN last), the first ``n``;
    :class:`LcevalError` for a task, model or scorer the scores do not hold, ``n`` below 1."""
    if n is not None and n < 1:
        raise LcevalError(f"worst must be >= 1, got {n}")
    out = only(scores, "the scores", task=task, model=model, scorer=scorer)
    out = out.sort_values("value", kind="stable", na_position="last")
    return out.head(n) if n is not None else out


def only(scores: pd.DataFrame, where: str, **want: str | None) -> pd.DataFrame:
    """Rows of ``scores`` whose columns hold the values ``want`` gives (None: any);
    :class:`LcevalError` naming the values ``where`` holds for one it does not."""
    for col, value in ((c, v) for c, v in want.items() if v is not None):
        have = sorted(set(scores[col].astype(str)))
        if value not in have:
            raise LcevalError(f"no {col} {value!r} in {where}; {col}s there: {', '.join(have)}")
        scores = scores[scores[col].astype(str) == value]
    return scores


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
    """samples.html's table in a notebook cell (``IPython.display.HTML``), narrowed to
    :data:`NOTEBOOK_COLUMNS`: the ``worst`` lowest-valued rows (None: all) of a scored run (id,
    with ``outputs_root``, or ``RunDir``), only ``task`` / ``model`` / ``scorer`` when given.
    :class:`LcevalError` for no scores, an unknown task, model or scorer, a bad ``worst``."""
    from IPython.display import HTML  # heavy: IPython

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
    keep = [c for c in (*NOTEBOOK_COLUMNS, "sample_id") if c in frame.columns]
    if "scorer" in frame.columns and frame["scorer"].nunique() > 1:
        keep.insert(keep.index("value"), "scorer")
    return HTML(table_html(frame[keep], texts, page_length=25))
