"""Issue 50 item 4: a run whose answers all errored (an endpoint outage) is scored and reported:
the report renders and says so, for RULER (whose log-scaled length axis had no finite point)
and each benchmark buildable offline."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.models.test_openai import scripted  # noqa: F401 - the loopback fixture

SMALL = {
    "ruler": {"num_samples": 1, "lengths": [1024], "tasks": ["niah_single_1", "vt"]},
    "lifbench": {"max_samples_per_task": 1, "lengths": ["4k"], "tasks": ["LSI"]},
    "manyifeval": {"n_prompts": 1},
    "longgenbench": {"n_per_scenario": 1},
}


@pytest.mark.parametrize("key", sorted(SMALL))
def test_report_of_a_run_whose_answers_all_errored(
    key: str,
    scripted,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import lceval.run
    from lceval.cli import main

    lceval.run.build("down", key, SMALL[key], root=tmp_path)
    srv = scripted([(503, {"error": {"message": "upstream down"}}, {})] * 1000)
    out = ["--outputs", str(tmp_path)]
    argv = [*out, "infer", "down", "--backend", "openai", "--model", "fake", "--limit", "3"]
    argv += ["-o", f"base_url={srv.url}", "-o", "max_retries=0", "--max-new-tokens", "8"]
    assert main(argv) == 1
    assert main([*out, "score", "down"]) == 0
    capsys.readouterr()
    assert main([*out, "report", "down"]) == 0, capsys.readouterr().err[-2000:]
    err = capsys.readouterr().err
    assert f"{key}: every answer errored" in err
    assert "Traceback" not in err
    assert (tmp_path / "down" / "report" / "index.html").is_file()
