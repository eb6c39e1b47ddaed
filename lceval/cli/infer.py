"""``lceval infer``: a run's samples answered by one or more models (:func:`lceval.run.infer`,
resumable), or ``--list-options BACKEND``: every ``-o`` option a backend takes."""

from __future__ import annotations

import sys

from lceval.cli.common import next_steps
from lceval.core.errors import LcevalError
from lceval.models.backends import BACKENDS, resolve_backend
from lceval.models.base import RUN_OPTIONS, backend_options
from lceval.run.config import InferConfig
from lceval.run.inference import run_infer


def handle(cfg: InferConfig, outputs: str | None) -> int:
    """Answer the run; print the response count and the next step (score). Exit status 1 when
    some samples failed (they are retried on the next run; the first one is named on stderr).

    Raises:
        LcevalError: no run id, no ``--model`` for openai, anything the inference stage refuses
            before an engine starts (unknown backend option, a context over the window, a
            ``--ray-address`` where no Ray cluster answers, ...).
    """
    if cfg.list_options is not None:
        print(options_listing(cfg.list_options))
        return 0
    run_id = cfg.run_id
    if not run_id:
        raise LcevalError("infer needs a run id: lceval infer RUN (see lceval list)")

    responses = run_infer(cfg, root=outputs)
    errors = [r for r in responses if r.finish_reason == "error"]
    print(f"{len(responses)} responses ({len(errors)} errors) in run {run_id}")
    if errors:
        print(
            f"lceval: {len(errors)} sample(s) failed and will be retried on the next run; "
            f"first: {errors[0].sample_id}: {errors[0].error}",
            file=sys.stderr,
        )
        return 1
    print(next_steps(run_id, outputs, "score", "score the answers"))
    return 0


def options_listing(backend: str) -> str:
    """What ``lceval infer --list-options BACKEND`` prints: one ``-o`` option a line, with its
    type, range, default and help (``lceval.models.backends``; vLLM engine arguments: vLLM's
    defaults, see its EngineArgs docs).

    Raises:
        LcevalError: an unknown backend.
    """
    name = resolve_backend(backend)
    spec = BACKENDS[name]
    lines = [f"options of backend {name} (lceval infer RUN --backend {name} -o KEY=VALUE):"]
    lines += [f"  {key}: {text}" for key, text in spec.help().items()]
    passed = [k for k in backend_options(name) if k not in spec.options.model_fields]
    lines += [f"  {key}  (vLLM engine argument; default: vLLM's)" for key in passed]
    lines.append(
        "  context='full'  (full, none, bm25:K, dense:K, or a list: full,none; the no-context and "
        "retrieval baselines, answers stored as MODEL@context=MODE)"
    )
    if spec.local:
        lines += [
            f"  {k}={v!r}  (int >= 1; engine replicas on Ray)" for k, v in RUN_OPTIONS.items()
        ]
    return "\n".join(lines)
