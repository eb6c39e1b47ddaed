"""``lceval plan``: a built run's size (prompt, unique and budget tokens) and GPU-time estimate
(:mod:`lceval.run.plan`), recorded in run.json."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import lceval.run
from lceval.cli.common import out_path, write_csv
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.models.base import GenerationConfig
from lceval.run import plan
from lceval.run.config import PlanConfig

if TYPE_CHECKING:  # pandas: lceval.run.cost imports it, loaded by the handler alone
    import pandas as pd

    from lceval.run.cost import JudgeCalls, Prices


def handle(cfg: PlanConfig, outputs: str | None) -> int:
    """Print :func:`lceval.run.plan.plan_run` of the selected samples as
    :func:`lceval.run.plan.render` shows it, with its dollars and judge calls; record it in
    run.json; ``--csv`` writes the two tables. The budget is ``--max-new-tokens``, else the cap
    the run's inference recorded, else its build params'.

    Raises:
        LcevalError: a bad ``--csv`` (ranges: :class:`lceval.run.config.PlanConfig`), a run that is
            not built, an unreadable model tokenizer.
    """
    import pandas as pd  # heavy: pandas

    from lceval.run import cost  # pulls pandas

    prices = cost.load_prices(cfg.prices)  # a bad table stops before any tokenizing
    eff = plan.EFFICIENCY if cfg.efficiency is None else cfg.efficiency
    csv = out_path(cfg.csv) if cfg.csv else None
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
        generation=GenerationConfig(
            max_new_tokens=cap, max_thinking_tokens=cfg.max_thinking_tokens
        ),
        efficiency=eff,
        exact=True if cfg.exact else None,
    )
    p.estimates["usd"] = cost.gpu_dollars(p.estimates, prices)
    try:  # a judge the params do not name right fails at scoring; the plan says so and goes on
        judges = cost.judge_calls(run, p.rows)
        judge_gpu, judge_api, notes = cost.judge_table(judges, prices, eff)
    except LcevalError as exc:
        judges, judge_gpu, judge_api = [], pd.DataFrame(), pd.DataFrame()
        notes = [f"judge calls not counted: {exc}"]
    # the judges' GPU rows are shown, not recorded: run.json's plan keeps the answering models
    both = pd.concat([p.estimates, judge_gpu], ignore_index=True)
    shown = dataclasses.replace(p, estimates=both) if len(judge_gpu) else p
    text = plan.render(shown, cfg.gpus) + "\n\n" + cost_text(run, p, prices, cfg.prices, judge_api)
    if judges or notes:
        text += "\n\n" + "\n".join([*judge_lines(judges), *notes])
    if cap is not None and cfg.max_new_tokens is None:
        text += (
            f"\nbudget capped at {cap} new tokens per sample, {source} "
            "(--max-new-tokens N plans another cap)"
        )
    if csv is not None:  # written before run.json: a failed write leaves the run as it was
        a = write_csv(p.sizes, csv)
        b = write_csv(p.estimates, csv.with_name(f"{csv.stem}_estimate.csv"))
        text += f"\nwrote {a} and {b}"
    run.update_meta(plan=p.summary())
    print(text)
    return 0


def judge_lines(judges: list[JudgeCalls]) -> list[str]:
    """What the judge rows count (:func:`lceval.run.cost.judge_calls`); no judges: no lines."""
    if not judges:
        return []
    return [
        "judge calls (an estimate: per prompt the judge template's o200k_base tokens plus the "
        "answer budget of each answer it quotes; the reference, question and context it quotes "
        "are left out; output = the judge's budget; GPU rows assume no prefix sharing):",
        *(
            f"  {j.label} ({j.scorer}, backend {j.backend}) for {j.benchmark}: {j.answers:,} "
            f"answers, {j.calls:,} prompts, {j.prompt_tokens:,} input tokens, "
            f"{j.output_tokens:,} output tokens"
            for j in judges
        ),
    ]


def cost_text(
    run: RunDir, p: plan.Plan, prices: Prices, prices_file: str | None, judge_api: pd.DataFrame
) -> str:
    """The API dollars of the plan (and of the API judges' calls), this run's calibration
    (stored) and this machine's calibrated answering time (:mod:`lceval.run.cost`)."""
    import pandas as pd  # heavy: pandas

    from lceval.run import cost  # pulls pandas

    api_models = [
        str(e.get("model") or n)
        for n, e in (run.read_meta().models or {}).items()
        if isinstance(e, dict) and e.get("backend") == "openai"
    ]
    t = p.total()
    out_tokens = t["budget"] + p.thinking_budget()
    table = cost.api_table(t["prompt_tokens"], out_tokens, prices, api_models)
    table = pd.concat([judge_api, table], ignore_index=True) if len(judge_api) else table
    usd = ("input_usd", "output_usd", "usd", "batch_usd")
    lines = [
        f"API dollars ({t['prompt_tokens']:,} input tokens counted with {p.tokenizer}, "
        f"{out_tokens:,} output tokens = the answer"
        + (" and thinking budgets" if p.thinking_budget() else " budget")
        + f", an upper bound; prices of {prices.date} from {prices_file or cost.PRICES_PATH}, "
        "list prices to edit):",
        table.to_string(index=False, formatters=dict.fromkeys(usd, cost.dollars), na_rep="?"),
    ]
    cals, said = cost.calibrate(run, p.rows)
    if cals:
        said.append(f"stored in {cost.store(cals)}")
    pred = cost.predictions(p.rows)
    if not pred.empty:
        seconds = "{:,.1f}".format
        formats = dict.fromkeys(["answer_s", "engine_start_s", "wall_s"], seconds)
        said += [
            f"on this machine (calibrated: answer_s = factor x the {cost.REFERENCE_GPU} floor "
            "of these samples, wall_s = answer_s + the measured engine start; seconds):",
            pred.astype({"engine_start_s": float}).to_string(
                index=False, formatters={**formats, "factor": "{:,.1f}x".format}, na_rep="?"
            ),
        ]
    return "\n".join(lines + ([""] + said if said else []))
