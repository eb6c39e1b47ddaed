"""Comparisons across runs on each benchmark's headline: :func:`leaderboard` (bootstrap CIs),
:func:`compare_runs` and :func:`pairwise` (paired differences, Holm-adjusted),
:func:`rank_agreement` (Kendall's tau-b between rankings, LongGenBench Sec. 3.5 generalised). A
model found in several runs is named ``<run_id>/<model>``. ``import lceval`` loads this module,
so pandas, numpy and lceval.metrics (pandas) load inside the functions."""

from __future__ import annotations

import copy
import dataclasses
import functools
import itertools
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pydantic
from tabulate import tabulate

from lceval.benchmarks import registry
from lceval.benchmarks.base import scorer_of
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, read_json_object
from lceval.core.records import Sample
from lceval.params import Declared, validate
from lceval.run.config import CompareCall

_RESAMPLING: dict[str, Any] = {
    k: (CompareCall.model_fields[k].annotation, copy.deepcopy(CompareCall.model_fields[k]))
    for k in ("alpha", "n_resamples", "n_permutations", "confidence", "seed")
}
Resampling = pydantic.create_model(
    "Resampling",
    __base__=Declared,
    __doc__="The resampling and test keywords of :func:`leaderboard`, :func:`pairwise` and "
    ":func:`rank_agreement`: :class:`CompareCall`'s own fields, so a bad value says the same "
    "line from every comparison entry.",
    **_RESAMPLING,
)

if TYPE_CHECKING:
    import numpy as np  # heavy: numpy
    import pandas as pd  # heavy: pandas

    from lceval import metrics  # pulls pandas


def check_scorer_in(scorer: str | None, keys: Sequence[str], where: str) -> None:
    """:class:`LcevalError` naming the scorers that apply when ``scorer``'s benchmark is not
    among ``keys`` (those ``where``, ending in its verb, holds)."""
    if scorer is None:
        return
    bench, _ = registry.find_scorer(scorer)  # an unknown scorer: one line listing them all
    if bench.key not in keys:
        choices = [n for k in keys for n in registry.get(k).scorers]
        raise LcevalError(
            f"scorer {scorer!r} scores {bench.key}, which {where} not hold; "
            f"scorers there: {', '.join(choices) or 'none'}"
        )


def _test(where: str, **test: Any) -> dict[str, Any]:
    """``test`` (keywords of :class:`Resampling`) validated by it: :class:`LcevalError`, one
    line naming ``where`` and the bad value, as :func:`compare_runs` says it."""
    return validate(Resampling, test, "params", where).model_dump(include=set(test))


def check_once(run_ids: Sequence[str]) -> None:
    """:class:`LcevalError` naming the runs given more than once."""
    twice = sorted(r for r, n in Counter(run_ids).items() if n > 1)
    if twice:
        runs = f"run {twice[0]} is" if len(twice) == 1 else f"runs {', '.join(twice)} are"
        raise LcevalError(f"{runs} given more than once; name each run once")


def _run_parts(run_id: str, root: str | Path | None) -> tuple[pd.DataFrame, list[Sample]]:
    run = RunDir(run_id, root)
    return run.read_scores(), registry.load_samples(run.read_samples())


def load_headlines(
    run_ids: Sequence[str],
    *,
    benchmarks: Sequence[str] | None = None,
    root: str | Path | None = None,
    scorer: str | None = None,
) -> dict[str, metrics.Headline]:
    """Benchmark key -> :class:`lceval.metrics.Headline` over every model of ``run_ids`` (only
    ``benchmarks`` when given; ``scorer``'s rows for its benchmark, the default scorer's else);
    :class:`LcevalError` for a run given twice or without scores, a benchmark scored in none,
    two models that would share a name, nothing to compare, an unknown scorer."""
    from lceval import metrics  # pulls pandas

    if scorer is not None:
        registry.find_scorer(scorer)
    check_once(run_ids)
    found: dict[str, list[tuple[str, metrics.Headline]]] = {}
    scored: set[str] = set()
    for rid in run_ids:
        scores, samples = _run_parts(rid, root)
        for key in sorted({s.benchmark for s in samples}):
            part = registry.get(key).scores_for(scores, scorer_of(key, scorer))[0]
            if part.empty:
                continue
            scored.add(key)
            if benchmarks is None or key in benchmarks:
                mine = [s for s in samples if s.benchmark == key]
                h = metrics.headline_of(registry.get(key), part, mine, scorer_of(key, scorer))
                found.setdefault(key, []).append((rid, h))
    runs = f"run {run_ids[0]} does" if len(run_ids) == 1 else f"runs {', '.join(run_ids)} do"
    check_scorer_in(scorer, sorted(scored), runs)
    missing = [b for b in benchmarks or [] if b not in scored]
    if missing:
        raise LcevalError(
            f"benchmark {missing[0]!r} is scored in none of runs {', '.join(run_ids)}; "
            f"benchmarks scored there: {', '.join(sorted(scored)) or 'none'}"
        )
    if not found:
        raise LcevalError(f"no scored benchmark in runs {', '.join(run_ids)}")
    return {
        key: dataclasses.replace(
            items[0][1], frame=named_models(key, [(r, h.frame) for r, h in items])
        )
        for key, items in sorted(found.items())
    }


def named_models(key: str, parts: Iterable[tuple[Any, pd.DataFrame]]) -> pd.DataFrame:
    """``parts`` (run id, rows with a ``model`` column) as one frame, each model named as itself,
    or ``<run_id>/<model>`` when several runs have it; :class:`LcevalError` when two models of
    benchmark ``key`` would share a name."""
    import pandas as pd  # heavy: pandas

    parts = [(rid, f.assign(model=f["model"].astype(str))) for rid, f in parts]
    runs_of: dict[str, set[str]] = {}
    for rid, f in parts:
        for m in f["model"]:
            runs_of.setdefault(m, set()).add(rid)

    def name(rid: str, m: str) -> str:
        return m if len(runs_of[m]) == 1 else f"{rid}/{m}"

    def told(rid: str, m: str) -> str:
        if len(runs_of[m]) == 1:
            return f"model {m!r} of run {rid}"
        runs = ", ".join(sorted(runs_of[m]))
        return f"model {m!r} of run {rid} (named {rid}/{m} as runs {runs} all have {m!r})"

    owner: dict[str, tuple[str, str]] = {}
    for rid, f in parts:
        for m in dict.fromkeys(f["model"]):
            first = owner.setdefault(name(rid, m), (rid, m))
            if first != (rid, m):
                raise LcevalError(
                    f"{key}: two models would both be named {name(rid, m)!r}: {told(*first)} "
                    f"and {told(rid, m)}; rename one of them"
                )
    named = [f.assign(model=[name(rid, m) for m in f["model"]]) for rid, f in parts]
    return pd.concat(named, ignore_index=True)


def leaderboard(
    headlines: Mapping[str, metrics.Headline],
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Each model's headline per benchmark with its bootstrap CI, best first: ``benchmark, metric,
    unit, rank, model, estimate, low, high, n, n_units``; :class:`LcevalError` for a value
    :class:`Resampling` refuses (``leaderboard: seed must be >= 0, got -1 (int)``)."""
    import pandas as pd  # heavy: pandas

    from lceval import metrics  # pulls pandas

    test = _test("leaderboard", n_resamples=n_resamples, confidence=confidence, seed=seed)
    parts = [ranked(metrics.headline_estimates(h, **test)) for h in headlines.values()]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def ranked(est: pd.DataFrame) -> pd.DataFrame:
    """``est`` with ``rank`` (1 = best ``estimate``, ties share the lower), best first."""
    cols = list(est.columns)
    cols.insert(cols.index("model"), "rank")
    rank = est["estimate"].rank(method="min", ascending=False)
    return est.assign(rank=rank)[cols].sort_values(["rank", "model"])


def _paired_row(h: metrics.Headline, a: str, b: str, **test: Any) -> dict[str, Any] | None:
    """The headline's paired difference A - B; None when the models share no sample."""
    from lceval import metrics  # pulls pandas

    model = h.frame["model"].astype(str)
    ids_a = set(h.frame.loc[model == a, "sample_id"])
    if not ids_a.intersection(h.frame.loc[model == b, "sample_id"]):
        return None
    res = dataclasses.asdict(metrics.headline_paired(h, a, b, **test))
    return {"benchmark": h.benchmark, "metric": h.metric, "model_a": a, "model_b": b, **res}


def _holm_columns(table: pd.DataFrame, alpha: float, by: str | None = None) -> pd.DataFrame:
    from lceval import metrics  # pulls pandas

    p = table["p_value"].astype(float)
    groups = p.groupby(table[by] if by else lambda _: 0)  # no ``by``: one family of tests
    table["p_holm"] = groups.transform(lambda x: metrics.holm(x.to_numpy()))
    table["significant"] = table["p_holm"] <= alpha
    return table


def pairwise(
    headlines: Mapping[str, metrics.Headline],
    *,
    alpha: float = 0.05,
    n_resamples: int = 2000,
    n_permutations: int = 9999,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Every pair of models per benchmark: the headline's paired difference A - B (A the
    better-ranked), Holm-adjusted per benchmark; :func:`compare_runs`' columns but ``level,
    scorer, task``. :class:`LcevalError` for a value :class:`Resampling` refuses."""
    import pandas as pd  # heavy: pandas

    from lceval import metrics  # pulls pandas

    test = _test(
        "pairwise",
        alpha=alpha,
        n_resamples=n_resamples,
        n_permutations=n_permutations,
        confidence=confidence,
        seed=seed,
    )
    alpha = test.pop("alpha")
    rows = []
    for h in headlines.values():
        est = metrics.headline_estimates(h, n_resamples=1, seed=seed)
        order = est.sort_values(["estimate", "model"], ascending=[False, True])["model"].tolist()
        pairs = itertools.combinations(order, 2)  # models of runs on other samples: no row
        rows += [r for a, b in pairs if (r := _paired_row(h, a, b, **test)) is not None]
    cols = ["benchmark", "metric", "model_a", "model_b", "diff", "low", "high", "p_value"]
    table = pd.DataFrame(rows, columns=[*cols, "test", "n", "n_units"])
    return _holm_columns(table, alpha, by="benchmark")


def compare_runs(
    run_a: str,
    run_b: str,
    *,
    benchmark: str | None = None,
    model_a: str | None = None,
    model_b: str | None = None,
    root: str | Path | None = None,
    no_tasks: bool = False,
    alpha: float = 0.05,
    n_resamples: int = 2000,
    n_permutations: int = 9999,
    confidence: float = 0.95,
    seed: int = 0,
    scorer: str | None = None,
) -> pd.DataFrame:
    """Paired comparison of two runs (or two models of one run) on the samples they share:
    ``lceval compare RUN_A RUN_B`` in Python (:func:`lceval.compare`).

    The arguments are :class:`lceval.run.config.CompareCall`'s fields (``run_ids`` given as
    ``run_a, run_b``), validated by it once, as ``lceval compare`` validates its flags; see
    :func:`paired` for the table.

    Raises:
        LcevalError: one line: a bad value (``alpha must be < 1, got 2 (int)``), or anything
            :func:`paired` refuses.
    """
    given = {
        "run_ids": [run_a, run_b],
        "benchmark": benchmark,
        "model_a": model_a,
        "model_b": model_b,
        "root": root,
        "no_tasks": no_tasks,
        "alpha": alpha,
        "n_resamples": n_resamples,
        "n_permutations": n_permutations,
        "confidence": confidence,
        "seed": seed,
        "scorer": scorer,
    }
    return paired(validate(CompareCall, given, "params", "compare"))


def paired(cfg: CompareCall) -> pd.DataFrame:
    """The paired comparison a validated ``cfg`` asks for: its first run (A) against its last
    (B), on the samples they share.

    Per benchmark and pair (a model of run A, one of run B; within one run each unordered
    pair once): the headline difference A - B (:func:`lceval.metrics.headline_paired`) and,
    unless ``no_tasks``, each task's mean value difference, Holm-adjusted over all rows at
    ``alpha``; ``scorer``'s rows for its benchmark, the default scorer's else. Columns
    ``benchmark, level`` (``headline``/``task``), ``scorer, task, metric, model_a, model_b,
    diff`` (the metric's unit; 0..1 for tasks), ``low, high, p_value, test, n, n_units, p_holm,
    significant``.

    Raises:
        LcevalError: ``benchmark`` not in both runs; a model not scored there; no benchmark or
            model pair in common; an unknown ``scorer``.
    """
    import pandas as pd  # heavy: pandas

    from lceval import metrics  # pulls pandas

    run_a, run_b, root = cfg.run_ids[0], cfg.run_ids[-1], cfg.root
    benchmark, model_a, model_b, scorer = cfg.benchmark, cfg.model_a, cfg.model_b, cfg.scorer
    test = {
        "n_resamples": cfg.n_resamples,
        "n_permutations": cfg.n_permutations,
        "confidence": cfg.confidence,
        "seed": cfg.seed,
    }
    if scorer is not None:
        registry.find_scorer(scorer)
    scores_a, samples_a = _run_parts(run_a, root)
    scores_b, samples_b = _run_parts(run_b, root)
    keys = sorted({s.benchmark for s in samples_a} & {s.benchmark for s in samples_b})
    if benchmark is not None:
        if benchmark not in keys:
            raise LcevalError(
                f"benchmark {benchmark!r} is not in both runs {run_a} and {run_b}; "
                f"benchmarks in both: {', '.join(keys) or 'none'}"
            )
        keys = [benchmark]
    where = f"runs {run_a} and {run_b} do" if run_a != run_b else f"run {run_a} does"
    check_scorer_in(scorer, keys, where)
    for rid, scores, model in ((run_a, scores_a, model_a), (run_b, scores_b, model_b)):
        have = sorted(set(scores.loc[scores["benchmark"].isin(keys), "model"].astype(str)))
        if keys and model is not None and model not in have:
            raise LcevalError(
                f"run {rid} has no model {model!r} on {', '.join(keys)}; "
                f"its models there: {', '.join(have) or 'none'}"
            )
    rows: list[dict[str, Any]] = []
    read: dict[str, str] = {}
    disjoint = 0  # model pairs scored on the benchmark that share no sample
    for key in keys:
        bench = registry.get(key)
        sa, names = bench.scores_for(scores_a, scorer_of(key, scorer))
        read[key] = names[0]
        sb = bench.scores_for(scores_b, names[0])[0]
        sa = sa.assign(model=lambda d: "A:" + d["model"])
        sb = sb.assign(model=lambda d: "B:" + d["model"])
        if model_a is not None:
            sa = sa[sa["model"] == f"A:{model_a}"]
        if model_b is not None:
            sb = sb[sb["model"] == f"B:{model_b}"]
        samples = {s.id: s for s in [*samples_a, *samples_b] if s.benchmark == key}
        both = pd.concat([sa, sb], ignore_index=True)
        h = metrics.headline_of(bench, both, list(samples.values()), names[0])
        seen: set[frozenset[str]] = set()
        for a, b in itertools.product(sorted(set(sa["model"])), sorted(set(sb["model"]))):
            pair = frozenset((a[2:], b[2:]))
            if run_a == run_b and (len(pair) == 1 or pair in seen):
                continue  # two models of one run: each unordered pair once
            seen.add(pair)
            if a not in h.models or b not in h.models:
                continue
            row = _paired_row(h, a, b, **test)
            if row is None:
                disjoint += 1
                continue
            rows.append({**row, "level": "headline", "task": "", "model_a": a, "model_b": b})
            if not cfg.no_tasks:
                rows.extend(_task_rows(key, h, both, a, b, **test))
    if not rows and disjoint:
        which = f"run {run_a}'s models" if run_a == run_b else f"runs {run_a} and {run_b}"
        raise LcevalError(
            f"{which} share no scored sample: each of the {disjoint} model pair(s) answered "
            "different samples; compare needs samples both models answered (same build)"
        )
    if not rows and run_a == run_b and keys:  # one run: its models paired with each other
        have = sorted(set(scores_a.loc[scores_a["benchmark"].isin(keys), "model"].astype(str)))
        raise LcevalError(
            f"run {run_a} has {len(have)} model(s) on {', '.join(keys)} "
            f"({', '.join(have) or 'none'}): nothing to pair within it; name two runs, or "
            "two different models of it (model_a, model_b)"
        )
    if not rows:
        raise LcevalError(f"runs {run_a} and {run_b} share no benchmark and model pair to compare")
    cols = ["benchmark", "level", "scorer", "task", "metric", "model_a", "model_b", "diff"]
    table = pd.DataFrame(rows)
    table["scorer"] = table["benchmark"].map(read)
    table["model_a"] = [f"{run_a}/{m[2:]}" for m in table["model_a"]]
    table["model_b"] = [f"{run_b}/{m[2:]}" for m in table["model_b"]]
    table = table[[*cols, "low", "high", "p_value", "test", "n", "n_units"]]
    return _holm_columns(table, cfg.alpha)


def _task_rows(
    key: str, h: metrics.Headline, scores: pd.DataFrame, a: str, b: str, **test: Any
) -> list[dict[str, Any]]:
    """One row per task: mean value of A minus B on the shared samples (0..1)."""
    from lceval import metrics  # pulls pandas

    cluster = dict(zip(h.frame["sample_id"], h.frame["cluster"], strict=False))
    va = scores[scores["model"] == a].set_index("sample_id")
    vb = scores[scores["model"] == b].set_index("sample_id")
    ids = va.index.intersection(vb.index).sort_values()
    rows = []
    for task, part in va.loc[ids].groupby("task"):
        ids_t = list(part.index)
        units = [cluster.get(i, i) for i in ids_t]
        shared = len(set(units)) < len(units)
        res = metrics.paired_difference(
            va.loc[ids_t, "value"].to_numpy(float),
            vb.loc[ids_t, "value"].to_numpy(float),
            clusters=units if shared else None,
            **test,
        )
        row = {"benchmark": key, "level": "task", "task": str(task), "metric": "mean score"}
        rows.append({**row, "model_a": a, "model_b": b, **dataclasses.asdict(res)})
    return rows


def rank_agreement(
    headlines: Mapping[str, metrics.Headline],
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Kendall's tau-b between every two benchmarks' rankings of their common models with a
    bootstrap CI (each benchmark's units resampled, both headlines recomputed; NaN under three
    models): ``benchmark_a, benchmark_b, n_models, tau, low, high, models``; :class:`LcevalError`
    for a value :class:`Resampling` refuses."""
    import pandas as pd  # heavy: pandas

    from lceval import metrics  # pulls pandas

    test = _test("rank_agreement", n_resamples=n_resamples, confidence=confidence, seed=seed)
    rows = []
    for ka, kb in itertools.combinations(sorted(headlines), 2):
        ha, hb = headlines[ka], headlines[kb]
        common = sorted(set(ha.models) & set(hb.models))
        nan = float("nan")
        row = {"benchmark_a": ka, "benchmark_b": kb, "n_models": len(common)}
        if len(common) < 2:
            rows.append({**row, "tau": nan, "low": nan, "high": nan, "models": ""})
            continue
        wide, groups, strata, clusters, stat = _joint_design({ka: ha, kb: hb}, common)
        est = metrics.bootstrap_sums(
            wide, stat, groups=groups, strata=strata, clusters=clusters, **test
        )
        low, high = (est.low, est.high) if len(common) >= 3 else (nan, nan)
        rows.append({**row, "tau": est.mean, "low": low, "high": high, "models": ", ".join(common)})
    cols = ["benchmark_a", "benchmark_b", "n_models", "tau", "low", "high", "models"]
    return pd.DataFrame(rows, columns=cols)


_SEP = "\x1f"


def _joint_design(
    headlines: Mapping[str, metrics.Headline], models: Sequence[str]
) -> tuple[pd.DataFrame, list[str], list[str], list[str], metrics.SumStatistic]:
    """Two benchmarks' samples as one bootstrap design, the statistic tau-b of their headlines."""
    import numpy as np  # heavy: numpy
    import pandas as pd  # heavy: pandas

    from lceval import metrics  # pulls pandas

    tables, groups, strata, clusters = [], [], [], []
    for key, h in headlines.items():
        f = h.frame[h.frame["model"].isin(models)]
        design = f.drop_duplicates("sample_id").set_index("sample_id")[["group", "cluster"]]
        wide = f.pivot_table(index="sample_id", columns="model", values=list(h.columns))
        wide.columns = [f"{key}{_SEP}{m}{_SEP}{c}" for c, m in wide.columns]
        wide = wide.reindex(design.index)
        tables.append(wide)
        g = [f"{key}{_SEP}{x}" for x in design["group"]]
        c = [f"{key}{_SEP}{x}" for x in design["cluster"]]
        nested = bool((design.groupby("cluster")["group"].nunique() <= 1).all())
        groups += g
        clusters += c
        strata += g if nested else [key] * len(g)
    table = pd.concat(tables, ignore_index=True).fillna(0.0)
    keys = list(headlines)

    def stat(sums: Mapping[str, np.ndarray], labels: Sequence[Hashable]) -> np.ndarray:
        values = []
        for key in keys:
            h = headlines[key]
            idx = [i for i, g in enumerate(labels) if str(g).split(_SEP, 1)[0] == key]
            own = [str(labels[i]).split(_SEP, 1)[1] for i in idx]
            per_model = []
            for m in models:
                sub = {c: sums[f"{key}{_SEP}{m}{_SEP}{c}"][..., idx] for c in h.columns}
                per_model.append(h.statistic(sub, own))
            values.append(np.stack(per_model, axis=-1))
        return metrics.kendall_tau_b(values[0], values[1])

    return table, groups, strata, clusters, stat


def plot_overview(board: pd.DataFrame, agreement: pd.DataFrame) -> Any:
    """Figure: one panel per benchmark of :func:`leaderboard`'s ``board`` (headlines with 95%
    CIs, best on top) and a heat map of :func:`rank_agreement`'s Kendall's tau."""
    import matplotlib.pyplot as plt  # heavy: matplotlib
    import numpy as np  # heavy: numpy
    import pandas as pd  # heavy: pandas
    import seaborn as sns  # heavy: seaborn

    keys = list(dict.fromkeys(board["benchmark"]))
    n = max(1, len(keys) + (1 if len(agreement) else 0))
    rows = int(board.groupby("benchmark").size().max()) if len(board) else 1
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 0.3 * rows + 1.8), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=False):
        t = board[board["benchmark"] == key].sort_values("estimate")
        y = np.arange(len(t))
        est = t["estimate"].to_numpy(float)
        lo = np.nan_to_num(est - t["low"].to_numpy(float))
        hi = np.nan_to_num(t["high"].to_numpy(float) - est)
        ax.errorbar(est, y, xerr=[lo, hi], fmt="o", capsize=3)
        ax.set_yticks(y, t["model"].tolist(), fontsize=7)
        ax.set_xlabel(f"{t['metric'].iloc[0]} ({t['unit'].iloc[0]})")
        ax.set_title(key)
    if len(agreement):
        ax = axes[0][-1]
        names = sorted(set(agreement["benchmark_a"]) | set(agreement["benchmark_b"]))
        mat = pd.DataFrame(np.eye(len(names)), index=names, columns=names)
        for r in agreement.itertuples(index=False):
            mat.loc[r.benchmark_a, r.benchmark_b] = r.tau
            mat.loc[r.benchmark_b, r.benchmark_a] = r.tau
        kw = {"vmin": -1, "vmax": 1, "cmap": "coolwarm", "cbar_kws": {"shrink": 0.7}}
        sns.heatmap(mat, annot=True, fmt=".2f", ax=ax, annot_kws={"fontsize": 7}, **kw)
        ax.tick_params(labelsize=7, labelrotation=0)
        ax.set_title("Kendall tau of model rankings (blank: n/a)")
    fig.suptitle("Leaderboards with 95% bootstrap CIs")
    fig.tight_layout()
    return fig


SETTINGS = {  # of run.json's ``models`` entries that change answers beside the model
    "engine": "backend",
    "dtype": "dtype",
    "temperature": "generation.temperature",
    "top_p": "generation.top_p",
    "seed": "generation.seed",
    "budget (max new tokens)": "generation.max_new_tokens",
    "prompt format": "prompt_format",
    "window": "window",
}


def _setting(entry: Mapping[str, Any], path: str) -> Any:
    value: Any = entry
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return "each sample's own" if path.endswith("max_new_tokens") and value is None else value


def setting_differences(table: pd.DataFrame, root: str | Path | None = None) -> list[str]:
    """One line per pair of :func:`compare_runs`'s ``table`` naming each :data:`SETTINGS`
    difference of the two models' run.json entries (or that one records none); empty when the
    pairs ran alike."""

    @functools.cache
    def entry(name: str) -> Mapping[str, Any] | None:  # run.json's models[<model>] of run/model
        run_id, _, model = name.partition("/")
        found = read_json_object(RunDir(run_id, root).run_json).get("models")
        found = found.get(model) if isinstance(found, Mapping) else None
        return found if isinstance(found, Mapping) else None

    lines: list[str] = []
    pairs = zip(table["model_a"].astype(str), table["model_b"].astype(str), strict=True)
    for a, b in dict.fromkeys(pairs):
        ea, eb = entry(a), entry(b)
        missing = [n for n, e in ((a, ea), (b, eb)) if e is None]
        if missing:
            lines.append(
                f"{a} vs {b}: run.json records no engine or decoding settings of "
                f"{' and '.join(missing)}; differences of engine, dtype, decoding and budget "
                "unchecked"
            )
            continue
        assert ea is not None and eb is not None
        diffs = [
            f"{label} {va} vs {vb}"
            for label, path in SETTINGS.items()
            if (va := _setting(ea, path)) != (vb := _setting(eb, path))
        ]
        if diffs:
            lines.append(f"{a} vs {b} differ beside the model: {'; '.join(diffs)}")
    return lines


def fit_width(table: pd.DataFrame, width: int = 160) -> str:
    """``table`` as text (4 significant digits) in at most ``width`` columns where it can be:
    drops ``n_units`` and a ``scorer`` equal to its benchmark, then wraps the names (metric,
    models, task) onto more lines (tabulate's ``maxcolwidths``, breaking after hyphens), never
    cutting them (issue 49: "Smo...5M-Instruct")."""
    import pandas as pd  # heavy: pandas

    names = ("metric", "model_a", "model_b", "task")

    def text(t: pd.DataFrame, limit: int | None = None) -> str:
        widths = [limit if c in names else None for c in t.columns]
        cells = [
            [f"{x:.4g}" if isinstance(x, float) else str(x) for x in row]
            for row in t.itertuples(index=False)
        ]
        align = ["right" if pd.api.types.is_numeric_dtype(t[c]) else "left" for c in t.columns]
        return tabulate(
            cells, headers=list(t.columns), tablefmt="plain", maxcolwidths=widths,
            colalign=align, disable_numparse=True,
        )  # fmt: skip

    def fits(out: str) -> bool:
        return max(map(len, out.splitlines()), default=0) <= width

    out = table.copy()
    if fits(text(out)):
        return text(out)
    if "n_units" in out:
        out = out.drop(columns="n_units")
    if "scorer" in out and "benchmark" in out and (out["scorer"] == out["benchmark"]).all():
        out = out.drop(columns="scorer")
    shown = text(out)
    for limit in (40, 32, 24, 18, 14, 10):
        if fits(shown):
            break
        shown = text(out, limit)
    return shown
