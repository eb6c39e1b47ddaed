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

import lceval.report
import lceval.run
from lceval.errors import LcevalError, one_line
from lceval.run.config import VERBS, InferConfig, add_flags, from_args


def _models(config: InferConfig) -> list[Any] | None:
    """``--model`` values as a ``models:`` list (``{...}`` values already read as mappings by
    :class:`lceval.run.config.InferConfig`); none: the embedded stand-in.

    Raises:
        LcevalError: no ``--model`` for openai.
    """
    if config.model is None and config.models is None:
        if config.backend == "openai":
            raise LcevalError("the openai backend needs --model <served model name>")
        return ["embedded"]
    model = config.model
    return [model] if isinstance(model, str) else model


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--outputs",
        default=argparse.SUPPRESS,
        help="folder of run folders (default: $LCEVAL_OUTPUTS, else ./outputs); before or after "
        "the command",
    )
    common.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show engine logs (vLLM, transformers, torch, Jupyter) on the terminal; by default "
        "they go to outputs/RUN/logs/lceval.log (LCEVAL_VERBOSE=1 does the same)",
    )
    p = argparse.ArgumentParser(
        prog="lceval",
        description="Evaluate instruction following over long contexts and long outputs.",
        parents=[common],
    )
    sub = p.add_subparsers(dest="command", required=True)

    def verb(name: str, help: str) -> argparse.ArgumentParser:
        q = sub.add_parser(name, help=help, parents=[common])
        if name in VERBS:  # flags generated from the verb's declared config
            add_flags(q, VERBS[name])
        return q

    verb("list", "benchmarks with their tasks and scorers, and the backends")
    verb("build", "build a benchmark's samples into a run folder")
    verb("infer", "answer a run's samples with a model (resumable)")
    verb("plan", "a built run's size (prompt, unique and budget tokens) and GPU-time estimate")
    verb("score", "score a run's responses")
    f = verb("repair", "move lines of responses.jsonl that do not parse aside")
    f.add_argument("run_id")
    verb("report", "write a run's tables and figures under report/")
    verb(
        "compare",
        "rank one run's models (a leaderboard), or compare two runs (or two models of one run) "
        "paired",
    )
    m = verb("import", "turn a benchmark's official prediction files into a run")
    m.add_argument("benchmark", help="a benchmark with an importer (see lceval list)")
    m.add_argument("path", help="a prediction file or folder (e.g. a clone's Predictions/)")
    m.add_argument("--run-id", required=True)
    m.add_argument("--force", action="store_true", help="replace a run that has responses")
    verb("run", "execute notebooks with papermill (a pipeline or one notebook)")
    st = verb("status", "a run's inference progress (from another terminal; logs/progress.jsonl)")
    st.add_argument("run_id")
    sc = verb("schema", "write the JSON Schema of every verb's params (for editors)")
    sc.add_argument(
        "folder", nargs="?", default=None, help="write <verb>.schema.json here (default: print)"
    )
    return p


def _print_extra_metrics(run_id: str, root: Any, df: Any) -> None:
    """Print the numbers benchmarks show beside their headline (``Benchmark.metrics``; ManyIFEval:
    IFEval's four pooled accuracies) after ``lceval score``'s table."""
    from lceval import registry
    from lceval.io import RunDir

    keys = sorted(set(df["benchmark"].astype(str))) if len(df) else []
    with_metrics = [k for k in keys if registry.get(k).metrics is not None]
    if not with_metrics:
        return
    samples = lceval.run.load_samples(RunDir(run_id, root))
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
    """``lceval compare``: :func:`lceval.report.compare.leaderboard` for one run (its models
    ranked),
    three or more, or on request; :func:`lceval.report.compare.compare_runs` for two runs, or for
    two
    models of one run named by ``--model-a`` and ``--model-b``; results.json files
    (:mod:`lceval.report.results`) give the leaderboard only.

    Everything the command line can get wrong is checked before any run is read (``--alpha``
    and ``--seed`` by :class:`lceval.run.config.CompareConfig`, ``--csv`` and ``--samples`` here).

    Raises:
        LcevalError: a bad ``--csv`` or ``--samples``, a run given
            twice, a run without scores, an unknown benchmark or model, nothing in common to
            compare; a results file where a paired comparison is asked for (it needs
            scores.parquet), or one that does not validate.
    """
    from lceval.report import compare, results

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
    from lceval import registry
    from lceval.io import RunDir
    from lceval.report import results

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
    (:func:`lceval.report.compare_page.compare_rows`)."""
    from lceval.io import RunDir
    from lceval.report import compare_page

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
    """``lceval plan``: :func:`lceval.run.plan.plan_run` on the selected samples, recorded in
    run.json, printed as :func:`lceval.run.plan.render`; ``--csv`` writes the two tables.

    The budget is ``--max-new-tokens``, else the one the run's build params declare (run.json's
    ``inference``, as ``lceval infer`` uses it), else each sample's own.

    Raises:
        LcevalError: a bad ``--csv`` (ranges: :class:`lceval.run.config.PlanConfig`), a run that is
            not built, an unreadable model tokenizer.
    """
    from lceval.io import RunDir
    from lceval.run import plan

    gpus = args.gpus  # ranged by PlanConfig
    csv = _csv_path(args.csv) if args.csv else None
    run = RunDir(args.run_id, args.outputs)
    samples = lceval.run.select_samples(run, run.read_samples(), limit=args.limit, tasks=args.tasks)
    # one budget for one run: --max-new-tokens, else the cap its inference used, else the cap its
    # build params declare for inference (what `lceval infer RUN` will use)
    cap, source = args.max_new_tokens, ""
    if cap is None:
        cap, source = plan.recorded_cap(run), "as the run's inference recorded"
    if cap is None:
        cap = run.read_meta().inference.get("max_new_tokens")
        source = "as the run's build params declare for inference"
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
    if gpus is not None:
        text += "\n\n" + plan.render_wall_clock(p, gpus)
    if cap is not None and args.max_new_tokens is None:
        text += (
            f"\nbudget capped at {cap} new tokens per sample, {source} "
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
    if spec.local:
        from lceval.models.base import RUN_OPTIONS

        for key, default in RUN_OPTIONS.items():
            lines.append(f"  {key}={default!r}  (int >= 1; engine replicas on Ray)")
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


def _schema(folder: str | None) -> None:
    """``lceval schema [FOLDER]``: the JSON Schema of every verb's config and of every notebook's
    params files, printed or written as ``FOLDER/<name>.schema.json``
    (:func:`lceval.run.config.json_schemas`, :func:`lceval.cli.notebooks.notebook_schemas`)."""
    import json

    from lceval.cli.notebooks import notebook_schemas
    from lceval.run.config import json_schemas

    schemas = {**json_schemas(), **notebook_schemas()}
    if folder is None:
        print(json.dumps(schemas, indent=2))
        return
    out = Path(folder)
    if not out.is_dir():
        raise LcevalError(f"schema: folder {out} does not exist")
    for verb, schema in schemas.items():
        path = out / f"{verb}.schema.json"
        path.write_text(json.dumps(schema, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {path}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lceval`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    if getattr(args, "verbose", False):
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
        print("lceval: interrupted (finished answers are saved; rerun to resume)", file=sys.stderr)
        return 130


def _os_error(exc: OSError) -> str:
    """An OSError as one line: the file it names, then its reason (``No space left on device``)."""
    reason = exc.strerror or one_line(exc) or type(exc).__name__
    return f"{exc.filename}: {reason}" if exc.filename else reason


def _dispatch(args: argparse.Namespace) -> int:
    from lceval.params import load_params  # lceval.run (pandas, engines) only where needed

    outputs = getattr(args, "outputs", None)
    cfg: Any = from_args(VERBS[args.command], args) if args.command in VERBS else None
    if args.command == "list":
        print(_listing())
    elif args.command == "schema":
        _schema(args.folder)
    elif args.command == "build":
        params = load_params(cfg.params) if cfg.params else {}
        params.update(cfg.param)
        run = lceval.run.build(
            cfg.run_id, cfg.benchmark, params, root=outputs, seed=cfg.seed, force=cfg.force
        )
        n = sum(1 for _ in open(run.samples, encoding="utf-8"))
        print(f"built {n} samples into {run.path}")
        print(
            _next(
                argparse.Namespace(run_id=cfg.run_id, outputs=outputs),
                "plan",
                "its size and GPU estimate",
                "infer",
                "answer it",
            )
        )
    elif args.command == "infer":
        if cfg.list_options is not None:
            print(_options_listing(cfg.list_options))
            return 0
        if not cfg.run_id:
            raise LcevalError("infer needs a run id: lceval infer RUN (see lceval list)")

        cfg = cfg.model_copy(update={"model": _models(cfg), "models": None})
        responses = lceval.run.infer(
            cfg.run_id, root=outputs, config=cfg, ray_address=cfg.ray_address
        )
        errors = [r for r in responses if r.finish_reason == "error"]
        print(f"{len(responses)} responses ({len(errors)} errors) in run {cfg.run_id}")
        if errors:
            print(
                f"lceval: {len(errors)} sample(s) failed and will be retried on the next run; "
                f"first: {errors[0].sample_id}: {errors[0].error}",
                file=sys.stderr,
            )
            return 1
        print(
            _next(
                argparse.Namespace(run_id=cfg.run_id, outputs=outputs), "score", "score the answers"
            )
        )
    elif args.command == "plan":
        print(_plan(argparse.Namespace(**dict(cfg), outputs=outputs)))
    elif args.command == "status":
        from lceval.io import RunDir
        from lceval.progress import status

        print(status(RunDir(args.run_id, outputs).path))
    elif args.command == "score":
        df = lceval.run.score(cfg.run_id, root=outputs, scorer=cfg.scorer, options=cfg.option)
        print(df.groupby(["model", "benchmark", "task"])["value"].mean().round(3).to_string())
        here = argparse.Namespace(run_id=cfg.run_id, outputs=outputs)
        _print_extra_metrics(cfg.run_id, outputs, df)
        _warn_coverage(here)
        print(_next(here, "report", "tables, figures and report/index.html"))
    elif args.command == "repair":
        from lceval.io import RunDir
        from lceval.store import ResponseStore

        run = RunDir(args.run_id, outputs)
        if not run.responses.exists():
            raise LcevalError(f"{run.responses} does not exist")
        n = ResponseStore(run.responses, index=False).drop_bad_lines()
        print(f"moved {n} bad line(s) to {run.responses}.bad" if n else "no bad lines")
    elif args.command == "report":
        from lceval.io import RunDir
        from lceval.report.index_page import report_summary

        tables = lceval.report.report(cfg.run_id, root=outputs, scorer=cfg.scorer)
        for key, names in tables.scorers.items():
            print(f"{key}: scorer {', '.join(names)}")
        print(report_summary(RunDir(cfg.run_id, outputs), tables))
    elif args.command == "compare":
        args = argparse.Namespace(**dict(cfg), outputs=outputs)
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
        run = importer(args.path, args.run_id, root=outputs, force=args.force)
        n = sum(1 for _ in open(run.samples, encoding="utf-8"))
        print(f"imported {n} samples and their responses into {run.path}")
    elif args.command == "run":
        from lceval.cli import notebooks

        if cfg.ray_address:  # the notebooks' lceval.run.infer calls read it
            from lceval.models.replicas import RAY_ADDRESS_ENV

            os.environ[RAY_ADDRESS_ENV] = cfg.ray_address
        target = cfg.target
        if str(target).endswith((".yaml", ".yml")):
            if cfg.params:
                raise LcevalError("--params is for a single notebook; a pipeline names its own")
            paths = notebooks.run_pipeline(
                target, cfg.run_id, outputs_root=outputs, overrides=cfg.param
            )
        else:
            if not cfg.run_id:
                raise LcevalError("lceval run NOTEBOOK needs --run-id")
            params = load_params(cfg.params) if cfg.params else {}
            paths = [
                notebooks.run_notebook(
                    target, cfg.run_id, {**params, **cfg.param}, outputs_root=outputs, check=True
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
