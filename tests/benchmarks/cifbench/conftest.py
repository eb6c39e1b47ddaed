"""Fixtures for CIF-Bench tests: small split files in the official format (lceval's own texts)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest


def write_task(
    folder: Path, number: int, name: str, split: str, rows: Sequence[tuple[str, str, object]]
) -> Path:
    """Write ``<number>_<name>_<split>.jsonl`` with (Instruction, Input, Output) rows."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{number}_{name}_{split}.jsonl"
    lines = [
        json.dumps({"Input": i, "Output": o, "Instruction": ins}, ensure_ascii=False)
        for ins, i, o in rows
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def task_writer() -> Callable[..., Path]:
    """:func:`write_task`."""
    return write_task


@pytest.fixture
def demo(tmp_path: Path) -> dict[str, Path]:
    """The lceval demo dataset (public, private, metadata) in a temporary folder."""
    from lceval.benchmarks.cifbench.data import write_demo_dataset

    return write_demo_dataset(tmp_path / "cif")


def make_sample(
    task: str,
    k: int,
    j: int,
    split: str = "private",
    source: str = "official",
    cats: Sequence[str] = (),
    origin: str | None = None,
) -> object:
    """A CIF-Bench sample of ``task``, instruction ``k``, input ``j`` (similarity gold)."""
    from lceval.benchmarks.cifbench.gold import CifGold
    from lceval.core.records import Sample

    meta = {"split": split, "source": source, "instruction_id": k, "input_id": j}
    meta["categories"] = list(cats)
    if origin:
        meta["origin"] = origin
    return Sample(
        id=f"cifbench/{split}/{task}/{source}/i{k}/d{j}",
        benchmark="cifbench",
        task=task,
        instruction="",
        gold=CifGold("x", "similarity"),
        scenario=split,
        meta=meta,
    )


@pytest.fixture
def cif_sample() -> Callable[..., object]:
    """:func:`make_sample`."""
    return make_sample
