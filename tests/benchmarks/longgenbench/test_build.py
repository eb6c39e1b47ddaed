"""LongGenBench builder: scenarios, check sets, prefixes, determinism, official-format files."""

from __future__ import annotations

import json
import re

import pytest

from lceval.benchmarks.longgenbench.build import (
    MAX_NEW_TOKENS,
    NUMBER,
    SCENARIOS,
    STOP,
    VERSIONS,
    block_id,
    build_longgenbench,
    generate_record,
    load_official,
    templates,
    week_header,
    week_of_day,
)
from lceval.benchmarks.longgenbench.gold import GOLD, TASKS, Check, LongGenBenchGold
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.records import to_dict


@pytest.fixture(scope="module")
def built():
    return build_longgenbench({"n_per_scenario": 5, "seed": 3})


def test_counts_fields_and_budgets(built):
    assert len(built.samples) == 2 * 4 * 5
    assert built.contexts == []
    for s in built.samples:
        version = s.meta["version"]
        scenario = s.id.split("/")[2]
        assert s.benchmark == "longgenbench"
        assert s.max_new_tokens == MAX_NEW_TOKENS[version]
        assert s.stop == (STOP,)
        assert isinstance(s.gold, LongGenBenchGold)
        assert s.assistant_prefix == s.gold.prefix
        assert s.gold.prefix.startswith("#*# ")
        assert s.gold.number == NUMBER[(scenario, version)]
        assert s.instruction.endswith("*** started ***")
        assert s.meta["length_label"] == {"short": "16K", "long": "32K"}[version]
        assert s.scenario in {"Diary", "Menu", "Skyscraper", "Urban planning"}
        # The prefix header is matched by the scorer's regex.
        assert re.search(rf"{s.gold.type} 1\b", s.gold.prefix)


def test_table2_sizes():
    assert NUMBER[("diary", "short")] == 52 and NUMBER[("diary", "long")] == 365
    assert NUMBER[("menu", "short")] == 52 and NUMBER[("menu", "long")] == 365
    assert NUMBER[("skyscraper", "short")] == 100 and NUMBER[("skyscraper", "long")] == 300
    assert NUMBER[("urban", "short")] == 100 and NUMBER[("urban", "long")] == 361


def test_check_sets_shape(built):
    for s in built.samples:
        g = s.gold
        n = g.number
        once = {int(k) for k in g.checks_once}
        rng = sorted(int(k) for k in g.checks_range)
        per = sorted(int(k) for k in g.checks_periodic)
        assert len(once) == 5
        assert len(rng) >= 2 and len(per) >= 2
        assert all(1 <= e <= n for e in once | set(rng) | set(per))
        assert len(set(g.checks_range.values())) == 1
        assert len(set(g.checks_periodic.values())) == 1
        steps = {b - a for a, b in zip(per, per[1:], strict=False)}
        assert len(steps) == 1  # an arithmetic progression
        step = steps.pop()
        # the periodic instruction is expanded up to the last entry it covers
        if g.type == "Block":  # along one row, to its end
            width = {100: 10, 361: 19}[n]
            assert (per[-1] - 1) % width + step >= width
        else:
            assert per[-1] + step > n
        if g.type != "Block":
            assert rng == list(range(rng[0], rng[-1] + 1))


def test_periodic_and_range_match_the_prompt_text():
    for i in range(10):
        rec = generate_record("skyscraper", "short", i)
        line = re.search(r"3\) Periodic requirement: (.*)", rec["prompt"]).group(1)
        every = int(re.search(r"every (\d+) floors", line).group(1))
        start = int(re.search(r"Floor (\d+)", line).group(1))
        assert sorted(map(int, rec["checks_periodic"])) == list(range(start, 101, every))
        a, b = map(int, re.search(r"from Floor (\d+) to Floor (\d+)", rec["prompt"]).groups())
        assert sorted(map(int, rec["checks_range"])) == list(range(a, b + 1))
        for floor, desc in rec["checks_once"].items():
            assert re.search(rf"Floor {floor}\b", rec["prompt"])
            assert desc in rec["prompt"]


@pytest.mark.parametrize("version,width", [("short", 10), ("long", 19)])
def test_block_ids_follow_row_major_numbering(version, width):
    assert block_id(0, 0, width) == 1
    assert block_id(width - 1, width - 1, width) == width * width
    for i in range(8):
        rec = generate_record("urban", version, i)
        section = rec["prompt"].split("1) Single")[1].split("2) Range")[0]
        singles = re.findall(r"(?i)the block at \((\d+), (\d+)\)", section)
        ids = [block_id(int(x), int(y), width) for x, y in singles]
        assert ids == [int(k) for k in rec["checks_once"]]
        per = sorted(map(int, rec["checks_periodic"]))
        row = (per[0] - 1) // width
        assert all((e - 1) // width == row for e in per)  # one row
        assert per[0] == row * width + 1  # starts at column 0


def test_block_id_official_example():
    # Official Dataset_short.json: "Designate Block at (4, 9) for university use" -> check 95.
    assert block_id(4, 9, 10) == 95
    assert block_id(10, 7, 19) == 144


def test_calendar():
    assert week_header(1) == "January 1st - January 7th"
    assert [week_of_day(d) for d in (1, 7, 8, 133, 364, 365)] == [1, 1, 2, 19, 52, 52]
    # Official: "husband (yourself) (birthday on May 13)" -> week 19, day 133.
    rec = generate_record("diary", "short", 0)
    for week, desc in rec["checks_once"].items():
        assert 1 <= int(week) <= 52 and desc in rec["prompt"]


def test_menu_fixed_dates_map_to_their_week():
    found = 0
    for i in range(30):
        rec = generate_record("menu", "short", i)
        for week, desc in rec["checks_once"].items():
            if desc.startswith("Christmas Gala Dinner") and "December 25" in rec["prompt"]:
                assert int(week) == week_of_day(359)
                found += 1
    assert found >= 1


def test_templates_have_at_least_20_per_type():
    t = templates()
    for kind in ("single", "range", "periodic"):
        assert len(t["phrasings"][kind]) >= 20
        for scenario in SCENARIOS:
            assert len(t["scenarios"][scenario][kind]) >= 20


def test_deterministic_and_seeded():
    a = build_longgenbench({"n_per_scenario": 3, "seed": 1})
    b = build_longgenbench({"n_per_scenario": 3, "seed": 1})
    c = build_longgenbench({"n_per_scenario": 3, "seed": 2})
    dump = [json.dumps(to_dict(s), sort_keys=True) for s in a.samples]
    assert dump == [json.dumps(to_dict(s), sort_keys=True) for s in b.samples]
    assert dump != [json.dumps(to_dict(s), sort_keys=True) for s in c.samples]
    # prompt i does not depend on how many prompts are built
    d = build_longgenbench({"n_per_scenario": 1, "seed": 1, "versions": ["long"]})
    first_long = [s for s in a.samples if s.meta["version"] == "long" and s.variable_id == 0]
    assert [to_dict(s) for s in d.samples] == [to_dict(s) for s in first_long]


def test_subset_params():
    r = build_longgenbench({"n_per_scenario": 2, "versions": "short", "scenarios": ["menu"]})
    assert [s.task for s in r.samples] == ["menu_weekly", "menu_weekly"]
    r = build_longgenbench({"n_per_scenario": 1, "max_new_tokens": 300})
    assert {s.max_new_tokens for s in r.samples} == {300}


@pytest.mark.parametrize(
    "params,field",
    [
        ({"n_per_scenaro": 3}, "n_per_scenaro"),
        ({"versions": ["medium"]}, "versions"),
        ({"scenarios": ["poem"]}, "scenarios"),
        ({"n_per_scenario": 0}, "n_per_scenario"),
        ({"n_per_scenario": 101}, "n_per_scenario"),
        ({"seed": "x"}, "seed"),
        ({"max_new_tokens": -1}, "max_new_tokens"),
        ({"versions": []}, "versions"),
    ],
)
def test_bad_params(params, field):
    with pytest.raises(LcevalError, match=field):
        build_longgenbench(params)


def _official(tmp_path, records):
    p = tmp_path / "Dataset_small.json"
    p.write_text(json.dumps(records), encoding="utf-8")
    return p


OFFICIAL = [
    {
        "prompt": "Construct a skyscraper with 100 floors. ... *** started ***\n#*# Floor 1:",
        "checks_once": {"51": "graphic design studio", "7": "martial arts dojo"},
        "checks_range": {"63": "gym", "64": "gym"},
        "checks_periodic": {"40": "restaurant", "60": "restaurant"},
        "type": "Floor",
        "prefix": "#*# Floor 1:",
        "number": 100,
    },
    {
        "prompt": "Construct a city ... *** started ***\n#*# Block 1 (0, 0):",
        "checks_once": {"144": "library"},
        "checks_range": {"55": "shopping district"},
        "checks_periodic": {"96": "coffee shop"},
        "type": "Block",
        "prefix": "#*# Block 1 (0, 0):",
        "number": 361,
    },
]


def test_official_format_loads(tmp_path):
    p = _official(tmp_path, OFFICIAL)
    r = build_longgenbench({"path": str(p)})
    assert [s.id for s in r.samples] == [
        "longgenbench/short/skyscraper/0",
        "longgenbench/long/urban/0",
    ]
    s = r.samples[0]
    assert s.instruction.endswith("*** started ***")  # the prefix moved to the answer
    assert s.assistant_prefix == "#*# Floor 1:"
    assert s.gold.checks_once == {"51": "graphic design studio", "7": "martial arts dojo"}
    assert s.gold.type == "Floor" and s.gold.number == 100
    assert s.max_new_tokens == 16384 and r.samples[1].max_new_tokens == 32768
    assert s.meta["source"] == "file"
    only_long = build_longgenbench({"path": str(p), "versions": ["long"]})
    assert len(only_long.samples) == 1


@pytest.mark.parametrize(
    "content,match",
    [
        ("{not json", "not valid JSON"),
        ('{"a": 1}', "JSON list"),
        (json.dumps([{k: v for k, v in OFFICIAL[0].items() if k != "prefix"}]), "prefix"),
        (json.dumps([{**OFFICIAL[0], "type": "Storey"}]), "type/number"),
        (json.dumps([{**OFFICIAL[0], "checks_once": {"x": "a"}}]), "not an integer"),
        (json.dumps([{**OFFICIAL[0], "number": "100"}]), "number"),
    ],
)
def test_official_format_errors(tmp_path, content, match):
    p = tmp_path / "bad.json"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(LcevalError, match=match):
        build_longgenbench({"path": str(p)})


def test_missing_official_file(tmp_path):
    with pytest.raises(LcevalError, match="cannot read"):
        load_official(tmp_path / "nope.json")


def test_versions_constant():
    assert VERSIONS == ("short", "long")


# -- typed gold ---------------------------------------------------------------------------------
def test_gold_round_trips_through_json(built, tmp_path):
    run = RunDir("g", tmp_path).create()
    run.write_samples(built.samples, [])
    raw = run.read_samples()
    assert all(isinstance(s.gold, dict) for s in raw)  # on disk: the official record keys
    assert list(raw[0].gold) == [
        "checks_once",
        "checks_range",
        "checks_periodic",
        "type",
        "number",
        "prefix",
    ]
    from lceval.benchmarks.registry import load_samples

    typed = load_samples(raw)
    assert [s.gold for s in typed] == [s.gold for s in built.samples]
    assert set(GOLD) == set(TASKS) == {s.task for s in built.samples}


def test_gold_checks_in_order_with_several_descriptions():
    g = LongGenBenchGold.from_dict(
        {
            "checks_once": {"3": "spa", "1": ["coffee shop", "reception desk"]},
            "checks_range": {"2": "gym"},
            "checks_periodic": {},
            "type": "Floor",
            "number": 3,
            "prefix": "#*# Floor 1:",
        }
    )
    assert g.checks_once["1"] == ("coffee shop", "reception desk")
    assert g.checks == (
        Check("single", 3, "spa"),
        Check("single", 1, "coffee shop"),
        Check("single", 1, "reception desk"),
        Check("range", 2, "gym"),
    )


@pytest.mark.parametrize(
    "change,match",
    [
        ({"checks_once": {"x": "a"}}, "checks_once: entry id 'x'"),
        ({"checks_range": {"1": 3}}, "checks_range"),
        ({"number": 0}, "number"),
        ({"number": "52"}, "number"),
        ({"type": ""}, "type"),
        ({"prefix": None}, "prefix"),
    ],
)
def test_bad_gold_names_the_field(change, match):
    good = {
        "checks_once": {"1": "a"},
        "checks_range": {},
        "checks_periodic": {},
        "type": "Week",
        "number": 52,
        "prefix": "#*# Week 1:",
    }
    with pytest.raises(ValueError, match=match):
        LongGenBenchGold.from_dict({**good, **change})


@pytest.mark.parametrize("name", ["smoke", "full"])
def test_notebook_params_files_build_as_they_are(name):
    from lceval.params import load_params

    params = load_params(f"params/06_longgenbench/{name}.yaml")
    params.pop("run_id")
    params["n_per_scenario"] = 1  # the full set's content is the same, only longer
    params["path"] = None  # the official Dataset_*.json are the user's (tests/.../test_official)
    r = build_longgenbench(params)
    assert {s.meta["version"] for s in r.samples} == set(params["versions"])
