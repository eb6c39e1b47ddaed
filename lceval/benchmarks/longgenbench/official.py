"""Reading data in the official LongGenBench format (``Dataset/Dataset_short.json``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lceval.benchmarks.longgenbench.gold import NUMBER, UNIT
from lceval.core.errors import LcevalError


def _classify(record: Mapping[str, Any], where: str) -> tuple[str, str]:
    """(scenario, version) of an official-format record from its ``type`` and ``number``."""
    unit, number = record.get("type"), record.get("number")
    for (scenario, version), u in UNIT.items():
        if u == unit and NUMBER[(scenario, version)] == number:
            return scenario, version
    raise LcevalError(f"{where}: unknown type/number {unit!r}/{number!r}")


def _check_dict(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise LcevalError(f"{where} must be a mapping of entry id to description")
    out = {}
    for k, v in value.items():
        try:
            entry = int(k)
        except (TypeError, ValueError):
            raise LcevalError(f"{where}: entry id {k!r} is not an integer") from None
        if not isinstance(v, str):
            raise LcevalError(f"{where}[{k!r}] must be a string")
        out[str(entry)] = v
    return out


def load_official(path: str | Path) -> list[dict[str, Any]]:
    """Read a file in the official LongGenBench format and validate each record.

    Args:
        path: a JSON file holding a list of records ``{prompt, checks_once, checks_range,
            checks_periodic, type, prefix, number}`` (``Dataset/Dataset_short.json`` format).

    Returns:
        The records (check keys normalised to decimal strings).

    Raises:
        LcevalError: the file is missing, not JSON, not a list, or a record lacks a field or has
            a wrong type.
    """
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise LcevalError(f"longgenbench: cannot read {p}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise LcevalError(f"longgenbench: {p} is not valid JSON (line {exc.lineno})") from None
    except RecursionError:
        raise LcevalError(f"longgenbench: {p} is nested too deeply") from None
    if not isinstance(data, list):
        raise LcevalError(f"longgenbench: {p} must hold a JSON list of records")
    out = []
    for i, rec in enumerate(data):
        where = f"longgenbench: {p.name} record {i}"
        if not isinstance(rec, Mapping):
            raise LcevalError(f"{where} is not an object")
        for key in (
            "prompt",
            "checks_once",
            "checks_range",
            "checks_periodic",
            "type",
            "prefix",
            "number",
        ):
            if key not in rec:
                raise LcevalError(f"{where} lacks {key!r}")
        if not isinstance(rec["prompt"], str) or not isinstance(rec["prefix"], str):
            raise LcevalError(f"{where}: prompt and prefix must be strings")
        if (
            not isinstance(rec["number"], int)
            or isinstance(rec["number"], bool)
            or rec["number"] < 1
        ):
            raise LcevalError(f"{where}: number must be a positive integer")
        r = dict(rec)
        for key in ("checks_once", "checks_range", "checks_periodic"):
            r[key] = _check_dict(rec[key], f"{where} {key}")
        out.append(r)
    return out
