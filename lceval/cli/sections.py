"""The own parameters of the notebooks that build no benchmark (00, 03, 05, 09, 10), declared once
as :class:`lceval.params.Declared` models: ``lceval run`` checks a params file with them before
the notebook starts, and ``lceval schema`` writes the notebook's JSON Schema from them. The
notebooks' other keys are the shared sections' (:func:`lceval.cli.notebooks.sections`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from lceval.params import Declared, Encoding, Positive, Text

Share = Annotated[float, Field(ge=0, le=1)]
"""A number in 0..1."""
PositiveNumber = Annotated[float, Field(gt=0)]
"""A number > 0."""


class Overview(Declared):
    """Notebook 00: runs compared side by side, with fixed responses scored as demo runs."""

    run_ids: list[Text] = Field(description="scored runs to compare (any benchmarks and models)")
    fixtures: Text = Field(description="folder of fixed responses scored as demo runs")
    fixture_benchmarks: list[Text] = Field(description="benchmarks of fixtures scored as demo runs")
    fixture_models: dict[str, Text] = Field(
        description="demo model name -> which fixed responses it answers with"
    )
    benchmarks: list[Text] | None = Field(
        description="benchmarks to include; null: every benchmark in the runs"
    )
    confidence: Share = Field(description="confidence level of the bootstrap intervals")
    alpha: Share = Field(description="family-wise error rate of the pairwise tests (Holm)")


class ArsIfsScoring(Declared):
    """Notebook 03: LIFBench's ARS and IFS report of one run."""

    compare_run_ids: list[Text] = Field(
        description="other runs to compare with this one (paired tests on shared samples)"
    )
    random_run_id: Text | None = Field(
        description='a run built with expressions: "random" (Fig. 3 IFS gap); null: skipped'
    )
    radar_published: Text | list[Text] = Field(
        description='published rows in the Fig. 2 radar: "reference", "all", "none" or names'
    )


class RulerCorrelation(Declared):
    """Notebook 05: LongGenBench scores against RULER's (Sec. 4.3)."""

    ruler_runs: list[Text] = Field(description="scored RULER runs (notebook 07)")
    longgenbench_runs: list[Text] = Field(description="scored LongGenBench runs (notebook 06)")
    metric: Text = Field(description='LongGenBench metric correlated with RULER ("wAvg", "CR")')
    ruler_names: dict[str, Text] = Field(
        description="LongGenBench model name -> its name in RULER's README"
    )


class NtkBaseSweep(Declared):
    """Notebook 09: retrieval and reasoning accuracy across RoPE bases (the NTK sweep)."""

    bases: list[PositiveNumber] | None = Field(
        min_length=1, description="RoPE bases to sweep (or use ntk_factors)"
    )
    ntk_factors: list[PositiveNumber] | None = Field(
        min_length=1, description="NTK-aware scaling factors instead of bases; null: use bases"
    )
    lengths: list[Positive] = Field(min_length=1, description="input lengths in tokens")
    samples: Positive = Field(description="questions per task family and length")
    data_path: Text | None = Field(
        description="a clone's LEval-data/ (TopicRet, GSM); null: offline stand-ins"
    )
    retrieval_tasks: list[Text] | None = Field(
        description="RULER retrieval tasks used without data_path"
    )
    encoding: Encoding = Field(description="tiktoken encoding that counts context lengths")
    reasoning_max_new_tokens: Positive = Field(
        description="budget of the reasoning answers in tokens"
    )
    arithmetic_shots: Positive | None = Field(
        description="worked examples in the offline reasoning prompt; null: as many as fit"
    )
    arithmetic_steps: Positive = Field(description="steps per offline arithmetic question")


class Contamination(Declared):
    """Notebook 10: n-gram overlap and membership signals on a run."""

    build_demo: bool = Field(description="build a CIF-Bench demo run under run_id first")
    corpus: list[Text] = Field(
        min_length=1, description="reference corpora: shipped names, files or folders"
    )
    part: Literal["prompt", "context", "reference"] = Field(description="text checked")
    threshold: Share = Field(description="a sample is flagged when its overlap exceeds this")
    seen: list[Text] = Field(
        min_length=3, max_length=3, description="the AUROC's split: [field, seen, unseen value]"
    )
    k: Share = Field(description="Min-K% share of lowest-probability tokens")


SECTIONS: dict[str, type[BaseModel]] = {
    "00_overview": Overview,
    "03_ars_ifs_scoring": ArsIfsScoring,
    "05_ruler_correlation": RulerCorrelation,
    "09_ntk_base_sweep": NtkBaseSweep,
    "10_contamination": Contamination,
}
"""Notebook stem -> its own section."""
