"""LongGenBench data building: Diary, Menu, Skyscraper and Urban planning, short and long versions.

Reproduces the data of LongGenBench (Wu et al., "LongGenBench: Benchmarking Long-Form Generation
in Long Context LLMs", ICLR 2025; Sec. 2.2-2.3, Table 2, Appendix B) and the record format of its
official code (mozhu621/LongGenBench: ``Dataset/Dataset_{short,long}.json`` built by
``Dataset/building_16K.ipynb`` and ``building_32K.ipynb``; ``Evalution/inference.py`` uses the
``prefix`` and the ``*** finished`` stop string). Facts are carried over; code, prompt wording and
item pools are lceval's own (``lceval/benchmarks/longgenbench/resources/templates.json``).

Scenarios (paper Table 2)
-------------------------
====================  =========================  ==========================  =============
scenario              short version (16K)         long version (32K)          unit ``type``
====================  =========================  ==========================  =============
Diary                 weekly diary, 52 weeks      daily diary, 365 days       Week / Day
Menu                  weekly menu, 52 weeks       daily menu, 365 days        Menu Week / Menu Day
Skyscraper            100 floors                  300 floors                  Floor
Urban planning        10x10 grid, 100 blocks      19x19 grid, 361 blocks      Block
====================  =========================  ==========================  =============

Urban planning blocks are numbered row-major from 1: the block at ``(x, y)`` (column ``x``, row
``y``, both from 0) has id ``y * W + x + 1`` with ``W`` = 10 or 19 (official ``block_number``).
Temporal scenarios use 2018 (January 1st is a Monday); week ``w`` covers days ``7(w-1)+1 ..
7w`` and December 31st (day 365) belongs to week 52, as the prompts say.

Every prompt splices 5 single (SI), 1 range (RI) and 1 periodic (PI) instruction (paper footnote 4),
each drawn from 22 sentence templates per type with random entries, and items drawn from 20+
items per scenario and type. The answer starts with the prefix (``Sample.assistant_prefix``, e.g.
``"#*# Week 1 (January 1st - January 7th):"``); generation stops at ``*** finished``;
``max_new_tokens`` is 16384 (short) or 32768 (long) (paper Sec. 3.1).

Gold data (``Sample.gold``)
---------------------------
A :class:`~lceval.benchmarks.longgenbench.gold.LongGenBenchGold` (fields documented there; the JSON
keys are the official record's):

- ``checks_once``: ``{entry_id (str): description}`` for the single instructions (one entry each;
  lceval draws the 5 entries without replacement, so there are exactly 5).
- ``checks_range``: ``{entry_id: description}``, every entry of the range.
- ``checks_periodic``: ``{entry_id: description}``, the periodic instruction expanded to every
  entry it covers (``start, start + k, ...`` up to ``number``).
- ``type``: the unit word the scorer's regex ``{type} (\\d+)`` looks for (``"Week"``, ``"Day"``,
  ``"Menu Week"``, ``"Menu Day"``, ``"Floor"``, ``"Block"``).
- ``number``: entries required (52, 365, 100, 300, 100, 361).
- ``prefix``: the answer prefix; the scorer evaluates ``prefix + generation`` (official
  ``inference.py``).

Descriptions follow the official check sets: the item text (e.g. ``"small cinema"``, ``"my wife's
birthday"``, ``"Burger Mondays featuring Gourmet Burgers"``). The same entry may carry checks of
several types (as in the official data); each type's dict is scored separately.

Sample fields
-------------
``benchmark="longgenbench"``; ``task`` = ``diary_weekly``, ``diary_daily``, ``menu_weekly``,
``menu_daily``, ``skyscraper_100``, ``skyscraper_300``, ``urban_10x10``, ``urban_19x19``;
``scenario`` = ``"Diary"``, ``"Menu"``, ``"Skyscraper"``, ``"Urban planning"``; no context
(``context_id=None``); the whole prompt is ``instruction`` and ends with ``*** started ***``;
``variable_id`` = prompt index within scenario and version; ``expression_id`` = template index of
the range instruction; ``meta`` = ``{"version": "short" | "long", "length_label": "16K" | "32K",
"templates": {"single": [int x 5], "range": int, "periodic": int}, "source": "lceval" |
"file"}``.

Params
------
``seed`` (int, 0), ``versions`` (``["short", "long"]``), ``scenarios`` (``["diary", "menu",
"skyscraper", "urban"]``), ``n_per_scenario`` (int 1..100, 100: prompts per scenario and
version), ``path`` (None, or a path or list of paths to files in the official format: a JSON list
of records ``{prompt, checks_once, checks_range, checks_periodic, type, prefix, number}``; then
no prompts are generated, version and scenario follow from ``type`` and ``number``, and
``n_per_scenario`` keeps the first records of each), ``max_new_tokens`` (None, or an int that
replaces the per-version budget), ``prompt_formats`` (``["p1"]``; ``p2`` adds every prompt again
in the paper's Prompt-2 format, Appendix G / Table 7, :mod:`.prompts`; its samples have ids ending
in ``/p2`` and ``meta["prompt_format"] = "p2"``; Prompt-1 samples carry no such key):
:class:`Config`. The notebook's inference and scoring keys
(:data:`lceval.params.NOTEBOOK_SECTIONS`) are accepted and ignored, so
``params/06_longgenbench/*.yaml`` build as they are.
"""

from __future__ import annotations

import calendar
import datetime as dt
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from lceval import params
from lceval.benchmarks.base import BuildResult
from lceval.benchmarks.longgenbench.gold import (
    LENGTH_LABEL,
    MAX_NEW_TOKENS,
    NUMBER,
    SCENARIO_NAME,
    SCENARIOS,
    STOP,
    TASK,
    UNIT,
    VERSIONS,
    LongGenBenchGold,
)
from lceval.benchmarks.longgenbench.official import _classify, load_official
from lceval.benchmarks.longgenbench.prompts import GRID, PROMPT_FORMATS, YEAR, prompt_text
from lceval.core.errors import LcevalError
from lceval.core.records import Sample

BENCHMARK = "longgenbench"
N_SINGLE = 5


@cache
def templates() -> dict[str, Any]:
    """The template resource (phrasings per instruction type and item pools per scenario)."""
    text = (
        resources.files(__package__)
        .joinpath("resources/templates.json")
        .read_text(encoding="utf-8")
    )
    return json.loads(text)  # type: ignore[no-any-return]


# -- calendar helpers ----------------------------------------------------------------------------
def ordinal(n: int) -> str:
    """``1 -> "1st"``, ``2 -> "2nd"``, ``11 -> "11th"``, ``23 -> "23rd"``."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def date_of_day(day: int) -> dt.date:
    """The date of day-of-year ``day`` (1..365) in 2018."""
    return dt.date(YEAR, 1, 1) + dt.timedelta(days=day - 1)


def week_of_day(day: int) -> int:
    """Week 1..52 containing day-of-year ``day`` (Monday-based from January 1st; day 365 -> 52)."""
    return min((day - 1) // 7 + 1, 52)


def day_label(day: int) -> str:
    """``"May 13"`` for day-of-year 133 of 2018."""
    d = date_of_day(day)
    return f"{calendar.month_name[d.month]} {d.day:02d}"


def week_header(week: int) -> str:
    """``"January 1st - January 7th"`` for week 1 (week 52 runs to December 31st)."""
    first = date_of_day(7 * (week - 1) + 1)
    last = date_of_day(365 if week == 52 else 7 * week)
    return (
        f"{calendar.month_name[first.month]} {ordinal(first.day)} - "
        f"{calendar.month_name[last.month]} {ordinal(last.day)}"
    )


def with_article(noun: str) -> str:
    """``"a small cinema"``, ``"an observatory"``; plural-looking nouns (ending in s) stay bare."""
    if noun.endswith("s"):
        return noun
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def block_id(x: int, y: int, width: int) -> int:
    """Id of the block in column ``x``, row ``y`` (from 0) of a ``width``-wide grid (from 1)."""
    return y * width + x + 1


# -- one drawn prompt ----------------------------------------------------------------------------
@dataclass(frozen=True)
class _Instr:
    kind: str  # single | range | periodic
    template: int
    text: str
    checks: dict[int, str]


def _sentence(kind: str, template: int, **slots: str) -> str:
    text = templates()["phrasings"][kind][template].format(**slots)
    return text[:1].upper() + text[1:]


def _draw_single(
    rng: random.Random, kind_items: Sequence[Any], entries: Sequence[int], where: Any, what: Any
) -> list[_Instr]:
    """5 single instructions on distinct entries."""
    n_t = len(templates()["phrasings"]["single"])
    items = rng.sample(list(kind_items), N_SINGLE)
    chosen = rng.sample(list(entries), N_SINGLE)
    out = []
    for item, entry in zip(items, chosen, strict=True):
        t = rng.randrange(n_t)
        w_text, e_id = where(entry, item)
        desc = what(item)
        text = _sentence("single", t, where=w_text, what=with_article(desc))
        out.append(_Instr("single", t, text, {e_id: desc}))
    return out


def _free_day_in(rng: random.Random, unit: str, taken: set[int]) -> tuple[int, int]:
    """A random day whose entry (week or day) is not yet taken: (day, entry)."""
    while True:
        day = rng.randint(1, 365)
        entry = week_of_day(day) if unit == "week" else day
        if entry not in taken:
            return day, entry


def _temporal(
    rng: random.Random, scenario: str, version: str
) -> tuple[list[_Instr], dict[str, str]]:
    pools = templates()["scenarios"][scenario]
    unit = "week" if version == "short" else "day"
    n_t = {k: len(v) for k, v in templates()["phrasings"].items()}
    instrs: list[_Instr] = []
    taken: set[int] = set()
    # Single instructions: one-day events given as dates (the model maps the date to its entry).
    singles = rng.sample(pools["single"], N_SINGLE)
    for item in singles:
        fixed = item[1] if scenario == "menu" else None
        entry = -1
        if fixed is not None:
            day = dt.date.fromisoformat(f"{YEAR}-{fixed}").timetuple().tm_yday
            entry = week_of_day(day) if unit == "week" else day
        if fixed is None or entry in taken:
            day, entry = _free_day_in(rng, unit, taken)
        taken.add(entry)
        desc = f"{item[0]} featuring {item[2]}" if scenario == "menu" else item
        t = rng.randrange(n_t["single"])
        instrs.append(
            _Instr(
                "single", t, _sentence("single", t, where=day_label(day), what=desc), {entry: desc}
            )
        )
    # Range instruction (official: diary 2 weeks or 2-7 days; menu 1-4 weeks or 7-14 days).
    item = rng.choice(pools["range"])
    desc = f"{item[0]} featuring {item[1]}" if scenario == "menu" else item
    if unit == "week":
        length = 2 if scenario == "diary" else rng.randint(2, 4)
        start = rng.randint(2, 52 - length)
        span = f"from week {start} to week {start + length - 1}"
    else:
        length = rng.randint(2, 7) if scenario == "diary" else rng.randint(7, 14)
        start = rng.randint(1, 365 - length + 1)
        span = f"from {day_label(start)} to {day_label(start + length - 1)}"
    t = rng.randrange(n_t["range"])
    instrs.append(
        _Instr(
            "range",
            t,
            _sentence("range", t, span=span, what=desc),
            {e: desc for e in range(start, start + length)},
        )
    )
    # Periodic instruction, expanded to every entry it covers.
    item = rng.choice(pools["periodic"])
    if scenario == "menu":
        desc, weeks = f"{item[0]} featuring {item[2]}", int(item[1])
    else:
        desc, weeks = item, rng.choice([3, 4, 5])
    if unit == "week":
        step = weeks
        start = rng.randint(10, 19) if scenario == "diary" else rng.randint(1, 30 - step)
        every, start_text, last = f"every {step} weeks", f"week {start}", 52
    else:
        step = rng.choice([30, 40, 60]) if scenario == "diary" else 7 * weeks
        start = rng.randint(30, 365 - step) if scenario == "diary" else rng.randint(1, 365 - step)
        every, start_text, last = f"every {step} days", f"day {start} ({day_label(start)})", 365
    t = rng.randrange(n_t["periodic"])
    instrs.append(
        _Instr(
            "periodic",
            t,
            _sentence("periodic", t, every=every, start=start_text, what=desc),
            {e: desc for e in range(start, last + 1, step)},
        )
    )
    if scenario == "diary":
        name, pronoun = rng.choice(pools["names"])
        job = with_article(rng.choice(pools["occupations"]))
        slots = {"name": name, "pronoun": pronoun, "occupation": job}
    else:
        slots = {"chef": rng.choice(pools["chefs"])}
    return instrs, slots


def _skyscraper(rng: random.Random, version: str) -> tuple[list[_Instr], dict[str, str]]:
    pools = templates()["scenarios"]["skyscraper"]
    n = NUMBER[("skyscraper", version)]
    n_t = {k: len(v) for k, v in templates()["phrasings"].items()}
    low = 2 if version == "short" else 5
    instrs = _draw_single(
        rng, pools["single"], range(low, n + 1), lambda e, _: (f"Floor {e}", e), lambda i: i
    )
    length = rng.randint(3, 7)
    start = rng.randint(2 if version == "short" else 20, n - length)
    item = rng.choice(pools["range"])
    t = rng.randrange(n_t["range"])
    span = f"from Floor {start} to Floor {start + length - 1}"
    instrs.append(
        _Instr(
            "range",
            t,
            _sentence("range", t, span=span, what=with_article(item)),
            {e: item for e in range(start, start + length)},
        )
    )
    step = rng.choice([15, 20, 25, 30])
    first = 20 + step
    item = rng.choice(pools["periodic"])
    t = rng.randrange(n_t["periodic"])
    text = _sentence(
        "periodic", t, every=f"every {step} floors", start=f"Floor {first}", what=with_article(item)
    )
    instrs.append(_Instr("periodic", t, text, {e: item for e in range(first, n + 1, step)}))
    return instrs, {}


def _urban(rng: random.Random, version: str) -> tuple[list[_Instr], dict[str, str]]:
    pools = templates()["scenarios"]["urban"]
    w = GRID[version]
    n_t = {k: len(v) for k, v in templates()["phrasings"].items()}
    cells = [(x, y) for y in range(w) for x in range(w)]
    instrs = _draw_single(
        rng,
        pools["single"],
        range(len(cells)),
        lambda i, _: (f"the block at {cells[i]}", block_id(*cells[i], w)),
        lambda i: i,
    )
    # Range: 2-4 adjacent blocks along a row or a column (official range block requirements).
    length = rng.randint(2, 4)
    line = rng.randrange(w)
    first = rng.randint(0, w - 5)
    if rng.random() < 0.5:
        coords = [(x, line) for x in range(first, first + length)]
        along = f"along row {line}"
    else:
        coords = [(line, y) for y in range(first, first + length)]
        along = f"along column {line}"
    item = rng.choice(pools["range"])
    t = rng.randrange(n_t["range"])
    span = f"from the block at {coords[0]} to the block at {coords[-1]} {along}"
    instrs.append(
        _Instr(
            "range",
            t,
            _sentence("range", t, span=span, what=with_article(item)),
            {block_id(x, y, w): item for x, y in coords},
        )
    )
    # Periodic: along a fixed row, every 2 or 4 blocks from column 0 (official: row 5; 5/10/15).
    row = 5 if version == "short" else rng.choice([5, 10, 15])
    step = rng.choice([2, 4])
    item = rng.choice(pools["periodic"])
    t = rng.randrange(n_t["periodic"])
    text = _sentence(
        "periodic",
        t,
        every=f"every {step} blocks along row {row}",
        start=f"the block at (0, {row})",
        what=with_article(item),
    )
    checks = {block_id(x, row, w): item for x in range(0, w, step)}
    instrs.append(_Instr("periodic", t, text, checks))
    return instrs, {}


# -- prompt text ---------------------------------------------------------------------------------
def prefix_of(scenario: str, version: str) -> str:
    """The answer prefix of a scenario and version (official ``prefix`` field)."""
    return {
        ("diary", "short"): f"#*# Week 1 ({week_header(1)}):",
        ("diary", "long"): "#*# Day 1 (January 1st):",
        ("menu", "short"): f"#*# Menu Week 1 ({week_header(1)}):",
        ("menu", "long"): "#*# Menu Day 1:",
        ("skyscraper", "short"): "#*# Floor 1:",
        ("skyscraper", "long"): "#*# Floor 1:",
        ("urban", "short"): "#*# Block 1 (0, 0):",
        ("urban", "long"): "#*# Block 1 (0, 0):",
    }[(scenario, version)]


# -- building ------------------------------------------------------------------------------------
def generate_record(
    scenario: str, version: str, index: int, seed: int = 0, prompt_format: str = "p1"
) -> dict[str, Any]:
    """One prompt and its check sets, in the official record format.

    Args:
        scenario: ``diary``, ``menu``, ``skyscraper`` or ``urban``.
        version: ``short`` or ``long``.
        index: prompt index (0-based); each prompt has its own random stream, so prompt ``i`` does
            not depend on how many prompts are built.
        seed: base seed.
        prompt_format: ``p1`` or ``p2`` (paper Appendix G; :mod:`.prompts`): the same draw
            (items, entries, check sets) laid out in either format.

    Returns:
        ``{prompt, checks_once, checks_range, checks_periodic, type, prefix, number, templates}``
        (check keys are entry ids as strings, as in the official files; ``prompt`` ends with
        ``*** started ***`` and does not include the prefix).

    Raises:
        LcevalError: unknown scenario or version.
    """
    if scenario not in SCENARIOS:
        raise LcevalError(f"longgenbench: unknown scenario {scenario!r}; choose from {SCENARIOS}")
    if version not in VERSIONS:
        raise LcevalError(f"longgenbench: unknown version {version!r}; choose short or long")
    rng = random.Random(f"longgenbench/{seed}/{scenario}/{version}/{index}")
    if scenario in ("diary", "menu"):
        instrs, slots = _temporal(rng, scenario, version)
    elif scenario == "skyscraper":
        instrs, slots = _skyscraper(rng, version)
    else:
        instrs, slots = _urban(rng, version)
    checks: dict[str, dict[str, str]] = {"single": {}, "range": {}, "periodic": {}}
    for ins in instrs:
        for e, d in ins.checks.items():
            checks[ins.kind][str(e)] = d
    return {
        "prompt": prompt_text(
            scenario,
            version,
            instrs,
            slots,
            pools=templates()["scenarios"][scenario],
            prefix=prefix_of(scenario, version),
            fmt=prompt_format,
        ),
        "checks_once": checks["single"],
        "checks_range": checks["range"],
        "checks_periodic": checks["periodic"],
        "type": UNIT[(scenario, version)],
        "prefix": prefix_of(scenario, version),
        "number": NUMBER[(scenario, version)],
        "templates": {
            "single": [i.template for i in instrs if i.kind == "single"],
            "range": next(i.template for i in instrs if i.kind == "range"),
            "periodic": next(i.template for i in instrs if i.kind == "periodic"),
        },
    }


def _sample(
    rec: Mapping[str, Any],
    scenario: str,
    version: str,
    index: int,
    source: str,
    max_new_tokens: int | None,
    prompt_format: str = "p1",
) -> Sample:
    prompt, prefix = rec["prompt"], rec["prefix"]
    # Official prompts end with the prefix; lceval starts the answer with it instead.
    if prompt.endswith(prefix):
        prompt = prompt[: len(prompt) - len(prefix)].rstrip("\n")
    tmpl = rec.get("templates")
    # Prompt-1 samples keep the ids and meta they had before formats existed.
    p2 = {"prompt_format": prompt_format} if prompt_format != "p1" else {}
    return Sample(
        id=f"{BENCHMARK}/{version}/{scenario}/{index}" + (f"/{prompt_format}" if p2 else ""),
        benchmark=BENCHMARK,
        task=TASK[(scenario, version)],
        instruction=prompt,
        assistant_prefix=prefix,
        max_new_tokens=max_new_tokens or MAX_NEW_TOKENS[version],
        stop=(STOP,),
        gold=LongGenBenchGold(
            checks_once=dict(rec["checks_once"]),
            checks_range=dict(rec["checks_range"]),
            checks_periodic=dict(rec["checks_periodic"]),
            type=rec["type"],
            number=rec["number"],
            prefix=prefix,
        ),
        scenario=SCENARIO_NAME[scenario],
        expression_id=tmpl["range"] if tmpl else None,
        variable_id=index,
        meta={
            "version": version,
            "length_label": LENGTH_LABEL[version],
            **({"templates": tmpl} if tmpl else {}),
            "source": source,
            **p2,
        },
    )


class Config(params.Declared):
    """LongGenBench's builder params (see the module docstring, "Params")."""

    seed: int = Field(0, description="seed of the generated prompts")
    versions: Annotated[tuple[str, ...], params.names(VERSIONS)] = Field(
        VERSIONS, description="versions built (short, long)"
    )
    scenarios: Annotated[tuple[str, ...], params.names(SCENARIOS)] = Field(
        SCENARIOS, description="scenarios built"
    )
    n_per_scenario: Annotated[int, Field(ge=1, le=100_000)] = Field(
        100, description="prompts per scenario and version (at most 100 when generated)"
    )
    path: Annotated[str | tuple[str, ...] | None, params.paths(many=True)] = Field(
        None, description="official-format files to read instead of generating; null: generate"
    )
    max_new_tokens: params.Positive | None = Field(
        None,
        description="answer budget in tokens replacing the per-version one; null: the version's",
    )
    prompt_formats: Annotated[tuple[str, ...], params.names(PROMPT_FORMATS)] = Field(
        ("p1",),
        description="prompt formats built (paper Appendix G, Table 7): p1 (main), p2 "
        "(swapped order, rewritten generate sentence); generated prompts only",
    )


def build_longgenbench(raw: Mapping[str, Any]) -> BuildResult:
    """Build LongGenBench samples (see the module docstring for params, fields and gold keys).

    Args:
        raw: the keys of :class:`Config`: ``seed``, ``versions``, ``scenarios``,
            ``n_per_scenario``, ``path``,
            ``max_new_tokens``.

    Returns:
        Samples in order version, scenario, index; no contexts.

    Raises:
        LcevalError: unknown key, bad value, or an unreadable / malformed official file.
    """
    p = params.parse(Config, raw, "longgenbench", accept=params.NOTEBOOK_SECTIONS)
    seed, versions, scenarios, n, budget = (
        p.seed,
        p.versions,
        p.scenarios,
        p.n_per_scenario,
        p.max_new_tokens,
    )
    samples: list[Sample] = []
    path = p.path
    if path is None:
        if n > 100:
            raise LcevalError(f"longgenbench: n_per_scenario must be at most 100, got {n}")
        for fmt in p.prompt_formats:
            for version in versions:
                for scenario in scenarios:
                    for i in range(n):
                        rec = generate_record(scenario, version, i, seed, fmt)
                        samples.append(_sample(rec, scenario, version, i, "lceval", budget, fmt))
        return BuildResult(samples, [], sources={"generator": "lceval templates.json"})
    if p.prompt_formats != ("p1",):
        raise LcevalError("longgenbench: prompt_formats applies to generated prompts, not path")
    paths = [path] if isinstance(path, str) else path
    counts: dict[tuple[str, str], int] = {}
    for file in paths:
        for i, rec in enumerate(load_official(file)):
            scenario, version = _classify(rec, f"longgenbench: {Path(file).name} record {i}")
            if scenario not in scenarios or version not in versions:
                continue
            k = counts.get((scenario, version), 0)
            if k >= n:
                continue
            counts[(scenario, version)] = k + 1
            samples.append(_sample(rec, scenario, version, k, "file", budget))
    if not samples:
        raise LcevalError(f"longgenbench: no records in {paths} match versions and scenarios")
    samples.sort(
        key=lambda s: (
            VERSIONS.index(s.meta["version"]),
            SCENARIOS.index(s.id.split("/")[2]),
            s.variable_id or 0,
        )
    )
    return BuildResult(samples, [], sources={"files": [str(f) for f in paths]})
