"""``lceval plan``: a built run's size (prompt, unique and budget tokens) and GPU-time estimate
(:mod:`lceval.run.plan`), recorded in run.json."""

from __future__ import annotations

from typing import TYPE_CHECKING

import lceval.run
from lceval.cli.common import csv_path
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.run.config import PlanConfig

if TYPE_CHECKING:  # pandas: lceval.run.cost imports it, loaded by the handler alone
    import pandas as pd

    from lceval.run.cost import Prices
    from lceval.run.plan import Plan


def handle(cfg: PlanConfig, outputs: str | None) -> int:
    """Print :func:`plan_text`."""
    print(plan_text(cfg, outputs))
    return 0


def plan_text(cfg: PlanConfig, outputs: str | None) -> str:
    """:func:`lceval.run.plan.plan_run` on the selected samples, recorded in run.json, as
    :func:`lceval.run.plan.render` shows it; ``--csv`` writes the two tables. The budget is
    ``--max-new-tokens``, else the cap the run's inference recorded, else its build params'.

    Raises:
        LcevalError: a bad ``--csv`` (ranges: :class:`lceval.run.config.PlanConfig`), a run that is
            not built, an unreadable model tokenizer.
    """
    from lceval.run import cost, plan  # pandas

    prices = cost.load_prices(cfg.prices)  # a bad table stops before any tokenizing
    eff = plan.EFFICIENCY if cfg.efficiency is None else cfg.efficiency
    csv = csv_path(cfg.csv) if cfg.csv else None
    run = RunDir(cfg.run_id, outputs)
    samples = lceval.run.select_samples(run, run.read_samples(), limit=cfg.limit, tasks=cfg.tasks)
    cap, source = cfg.max_new_tokens, ""
    if cap is None:
        cap, source = plan.recorded_cap(run), "as the run's inference recorded"
    if cap is None:
        cap = run.read_meta().inference.get("max_new_tokens")
        source = "as the run's build params declare for inference"
    p = plan.plan_run(
        run,
        model=cfg.model,
        samples=samples,
        max_new_tokens=cap,
        efficiency=eff,
        exact=True if cfg.exact else None,
        max_thinking_tokens=cfg.max_thinking_tokens,
    )
    p.estimates["usd"] = cost.gpu_dollars(p.estimates, prices)
    try:  # a judge the params do not name right fails at scoring; the plan says so and goes on
        judges = cost.judge_calls(run, p.rows)
        judge_gpu, judge_api, notes = cost.judge_table(judges, prices, eff)
    except LcevalError as exc:
        import pandas as pd

        judges, judge_gpu, judge_api = [], pd.DataFrame(), pd.DataFrame()
        notes = [f"judge calls not counted: {exc}"]
    shown = p
    if not judge_gpu.empty:  # shown, not recorded: run.json's plan keeps the answering models
        import dataclasses

        import pandas as pd

        both = pd.concat([p.estimates, judge_gpu], ignore_index=True)
        shown = dataclasses.replace(p, estimates=both)
    text = plan.render(shown) + "\n\n" + cost_text(run, p, prices, cfg.prices, judge_api)
    if judges or notes:
        text += "\n\n" + "\n".join([*(judge_lines(judges) if judges else []), *notes])
    if cfg.gpus is not None:
        text += "\n\n" + plan.render_wall_clock(p, cfg.gpus)
    if cap is not None and cfg.max_new_tokens is None:
        text += (
            f"\nbudget capped at {cap} new tokens per sample, {source} "
            "(--max-new-tokens N plans another cap)"
        )
    if csv is not None:  # written before run.json: a failed write leaves the run as it was
        from lceval.report.reporting import save_table  # matplotlib

        try:
            a = save_table(p.sizes, csv.parent, csv.stem, index=False)
            b = save_table(p.estimates, csv.parent, f"{csv.stem}_estimate", index=False)
        except OSError as exc:
            raise LcevalError(f"--csv: cannot write {csv}: {exc.strerror}") from None
        text += f"\nwrote {a} and {b}"
    run.update_meta(plan=p.summary())
    return text


def judge_lines(judges: list) -> list[str]:
    """What the judge rows count (:func:`lceval.run.cost.judge_calls`)."""
    out = [
        "judge calls (an estimate: per prompt the judge template's o200k_base tokens plus the "
        "answer budget of each answer it quotes; the reference, question and context it quotes "
        "are left out; output = the judge's budget; GPU rows assume no prefix sharing):"
    ]
    for j in judges:
        out.append(
            f"  {j.label} ({j.scorer}, backend {j.backend}) for {j.benchmark}: {j.answers:,} "
            f"answers, {j.calls:,} prompts, {j.prompt_tokens:,} input tokens, "
            f"{j.output_tokens:,} output tokens"
        )
    return out


def cost_text(
    run: RunDir,
    p: Plan,
    prices: Prices,
    prices_file: str | None,
    judge_api: pd.DataFrame | None = None,
) -> str:
    """The API dollars of the plan (and of the API judges' calls), this run's calibration
    (stored) and this machine's calibrated answering time (:mod:`lceval.run.cost`)."""
    from lceval.run import cost  # pandas

    meta = run.read_meta()
    api_models = [
        str(e.get("model") or n)
        for n, e in (meta.models or {}).items()
        if isinstance(e, dict) and e.get("backend") == "openai"
    ]
    t = p.total()
    out_tokens = t["budget"] + p.thinking_budget()
    table = cost.api_table(t["prompt_tokens"], out_tokens, prices, api_models)
    if judge_api is not None and len(judge_api):
        import pandas as pd

        table = pd.concat([judge_api, table], ignore_index=True)
    for c in ("input_usd", "output_usd", "usd", "batch_usd"):
        table[c] = table[c].map(cost.dollars)
    source = prices_file or str(cost.PRICES_PATH)
    lines = [
        f"API dollars ({t['prompt_tokens']:,} input tokens counted with {p.tokenizer}, "
        f"{out_tokens:,} output tokens = the answer"
        + (" and thinking budgets" if p.thinking_budget() else " budget")
        + f", an upper bound; prices of {prices.date} from {source}, list prices to edit):",
        table.to_string(index=False),
    ]
    cals, said = cost.calibrate(run, p.rows)
    if cals:
        said.append(f"stored in {cost.store(cals)}")
    pred = cost.predictions(p.rows)
    if not pred.empty:
        shown = pred.assign(
            factor=pred["factor"].map("{:,.1f}x".format),
            answer_s=pred["answer_s"].map("{:,.1f}".format),
            wall_s=pred["wall_s"].map("{:,.1f}".format),
            engine_start_s=pred["engine_start_s"].map(
                lambda s: "?" if s is None or s != s else f"{s:,.1f}"
            ),
        )
        said += [
            f"on this machine (calibrated: answer_s = factor x the {cost.REFERENCE_GPU} floor "
            "of these samples, wall_s = answer_s + the measured engine start; seconds):",
            shown.to_string(index=False),
        ]
    return "\n".join(lines + ([""] + said if said else []))
