"""The CLI's contract with users: one-line errors and a non-zero exit on bad input."""

import pandas as pd
import pytest

from lceval.cli import main
from lceval.core.io import RunDir
from lceval.core.records import Sample


def _err(capsys, argv):
    code = main(argv)
    err = capsys.readouterr().err.strip()
    return code, err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["build", "nosuchbench", "--run-id", "r"], "unknown benchmark 'nosuchbench'"),
        (["build", "lifbench", "--run-id", "r", "--params", "missing.yaml"], "missing.yaml"),
        (["build", "lifbench", "--run-id", "bad id"], "run_id 'bad id' is not valid"),
        (["infer", "norun"], "run.json does not exist"),
        (["score", "norun"], "samples.jsonl does not exist"),
        (["run", "99_no_such_notebook", "--run-id", "r"], "unknown notebook"),
        (["build", "lifbench", "--run-id", "r", "-p", "novalue"], "expects KEY=VALUE"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, argv, message):
    code, err = _err(capsys, ["--outputs", str(tmp_path), *argv])
    assert code == 2
    assert err.startswith("lceval: ") and message in err
    assert "\n" not in err


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["eval", "lifbench", "--limt", "1"],
            "lceval eval: unrecognized arguments: --limt 1; did you mean --limit?",
        ),
        (["eval", "lifbench", "--limt=1"], "lceval eval: unrecognized arguments: --limt=1; did"),
        (["eval"], "lceval eval: the following arguments are required: benchmark"),
        (["compare", "a", "b", "--alhpa", ".1"], "lceval compare: unrecognized arguments: --alhpa"),
        (["evl"], "lceval: argument command: invalid choice: 'evl'"),
    ],
)
def test_a_flag_argparse_refuses_is_one_line_and_exit_2(capsys, tmp_path, argv, line):
    """argparse printed its usage (up to ten lines) above the error; now the error alone, the
    closest flag, and where the flags are listed."""
    with pytest.raises(SystemExit) as info:
        main(["--outputs", str(tmp_path), *argv])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.startswith(line) and err.count("\n") == 1
    assert err.rstrip().endswith("-h lists the flags)") and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        # `-p key=` was read as null: the builder's default, the run went ahead
        (["eval", "lifbench", "-p", "lengths="], "-p lengths= needs a value after '='"),
        (["build", "lifbench", "--run-id", "r", "-p", "tasks= "], "-p tasks= needs a value"),
        # an empty value said "got" and nothing
        (["eval", "lifbench", "--limit", ""], "--limit must be an integer, got '' (nothing)"),
        # --params "" was no params file at all: the builder's defaults, silently
        (["eval", "lifbench", "--params", ""], "--params must not be empty, got '' (nothing)"),
    ],
)
def test_an_empty_value_is_refused_naming_it(capsys, tmp_path, argv, message):
    code, err = _err(capsys, ["--outputs", str(tmp_path), *argv])
    assert code == 2 and err.startswith(f"lceval: {message}")
    assert "\n" not in err and list(tmp_path.iterdir()) == []


def test_malformed_params_yaml(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("tasks: [LSI,\n")
    code, err = _err(
        capsys,
        ["--outputs", str(tmp_path), "build", "lifbench", "--run-id", "r", "--params", str(bad)],
    )
    assert code == 2 and "not valid YAML" in err and "bad.yaml" in err
    bad.write_text("- just\n- a list\n")
    code, err = _err(
        capsys,
        ["--outputs", str(tmp_path), "build", "lifbench", "--run-id", "r", "--params", str(bad)],
    )
    assert code == 2 and "must hold a mapping" in err


def test_unknown_backend(capsys, tmp_path):
    from lceval.core.io import new_meta

    run = RunDir("r", tmp_path).create()
    run.write_meta(new_meta("r"))
    run.write_samples([Sample(id="a", benchmark="lifbench", task="LSI", instruction="x")], [])
    code, err = _err(capsys, ["--outputs", str(tmp_path), "infer", "r", "--backend", "tgi"])
    assert code == 2 and "unknown backend 'tgi'" in err


def test_unknown_model_path(capsys, tmp_path):
    from lceval.core.io import new_meta

    run = RunDir("r", tmp_path).create()
    run.write_meta(new_meta("r"))
    run.write_samples([Sample(id="a", benchmark="lifbench", task="LSI", instruction="x")], [])
    code, err = _err(
        capsys,
        ["--outputs", str(tmp_path), "infer", "r", "--model", str(tmp_path / "no-such-model")],
    )
    assert code == 2 and "no-such-model" in err


def _run_with_one_sample(tmp_path):
    from lceval.core.io import new_meta

    run = RunDir("r", tmp_path).create()
    run.write_meta(new_meta("r"))
    gold = {"target": "t"}
    run.write_samples([Sample(id="a", benchmark="echo", task="T", instruction="x", gold=gold)], [])
    return run


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--limit", "-1"], "--limit must be >= 1, got -1"),
        (["--limit", "0"], "--limit must be >= 1, got 0"),
        (["--max-new-tokens", "0"], "--max-new-tokens must be >= 1, got 0"),
        (["-o", "bogus=1"], "has no option 'bogus'; all "),  # auto: whichever it picks
        (["--backend", "hf", "-o", "bogus=1"], "backend hf has no option 'bogus'; all "),
        (["--backend", "vllm", "-o", "bogus=1"], "backend vllm has no option 'bogus'"),
    ],
)
def test_bad_infer_input_is_refused_before_the_model_loads(capsys, tmp_path, extra, message):
    _run_with_one_sample(tmp_path)
    code, err = _err(capsys, ["--outputs", str(tmp_path), "infer", "r", *extra])
    assert code == 2 and err.startswith("lceval: ") and message in err and "\n" not in err


def test_run_id_with_trailing_newline_is_refused(capsys, tmp_path):
    code, err = _err(capsys, ["--outputs", str(tmp_path), "build", "ruler", "--run-id", "nl\n"])
    assert code == 2 and "is not valid" in err
    assert not (tmp_path / "nl\n").exists()


def test_corrupt_responses_give_one_line_then_repair(capsys, tmp_path, echo_bench, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # the key is checked first; then the file
    run = _run_with_one_sample(tmp_path)
    good = b'{"sample_id": "a", "model": "m", "text": "t", "config_hash": "h"}\n'
    run.responses.write_bytes(good + b"\xff\xfe\n" + good)
    for argv in (["score", "r"], ["infer", "r", "--backend", "openai", "--model", "m"]):
        code, err = _err(capsys, ["--outputs", str(tmp_path), *argv])
        assert code == 2 and "line 2 is not valid UTF-8" in err and "\n" not in err
    assert main(["--outputs", str(tmp_path), "repair", "r"]) == 0
    assert "moved 1 bad line" in capsys.readouterr().out
    assert run.responses.read_bytes() == good + good


def test_files_follow_the_umask(tmp_path):
    import os
    import stat

    from lceval.core.io import _UMASK

    run = _run_with_one_sample(tmp_path)
    want = 0o666 & ~_UMASK
    for p in (run.run_json, run.samples, run.contexts):
        assert stat.S_IMODE(os.stat(p).st_mode) == want, p


def test_second_infer_on_the_same_run_is_refused(capsys, tmp_path):
    import subprocess
    import sys

    run = _run_with_one_sample(tmp_path)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from lceval.core.store import ResponseStore\n"
            "with ResponseStore(sys.argv[1]).writer():\n print('held', flush=True); time.sleep(60)",
            str(run.responses),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        code, err = _err(
            capsys,
            [
                "--outputs",
                str(tmp_path),
                "infer",
                "r",
                "--backend",
                "openai",
                "--model",
                "m",
                "-o",
                "base_url=http://127.0.0.1:9/v1",
            ],
        )
        assert code == 2 and f"(pid {holder.pid}) is writing responses.jsonl" in err
    finally:
        holder.kill()
        holder.wait()


def _ruler_scored(root, run_id, model, values):
    from lceval.core.io import new_meta, scores_frame
    from lceval.core.records import Score

    run = RunDir(run_id, root).create()
    gold = {"outputs": ["w"], "metric": "string_match_all"}
    samples = [
        Sample(f"ruler/{t}/1024/{i}", "ruler", t, "q", gold=gold, length=1024)
        for t in ("cwe", "fwe")
        for i in range(4)
    ]
    run.write_samples(samples, [])
    run.write_meta(new_meta(run_id))
    scores = [
        Score(s.id, model, "ruler", s.task, "ruler", "1", float(v))
        for s, v in zip(samples, values, strict=True)
    ]
    scores_frame(scores).to_parquet(run.scores)


def test_compare_prints_the_paired_table_and_writes_csv(capsys, tmp_path):
    _ruler_scored(tmp_path, "a", "ma", [1, 1, 1, 0, 1, 0.5, 1, 1])
    _ruler_scored(tmp_path, "b", "mb", [0, 1, 0, 0, 0.5, 0.5, 1, 0])
    out_csv = tmp_path / "cmp.csv"
    code = main(["--outputs", str(tmp_path), "compare", "a", "b", "--csv", str(out_csv)])
    out = capsys.readouterr().out
    assert code == 0 and "a/ma" in out and "b/mb" in out and "mcnemar-exact" in out
    table = pd.read_csv(out_csv)
    assert list(table["level"]) == ["headline", "task", "task"]
    assert table.loc[0, "diff"] == pytest.approx(100 * ((3 / 4 - 1 / 4) + (3.5 / 4 - 2 / 4)) / 2)
    main(["--outputs", str(tmp_path), "compare", "a", "b", "--no-tasks"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("note: a/ma vs b/mb: run.json records no engine")  # unchecked
    rows = [line for line in lines if not line.startswith("note: ")][1:]
    assert len(rows) == 1 and rows[0].split()[:2] == ["ruler", "headline"]
    code = main(["--outputs", str(tmp_path), "compare", "a", "b", "--leaderboard"])
    rows = [line.split() for line in capsys.readouterr().out.strip().splitlines()[1:]]
    assert code == 0 and [r[3:5] for r in rows] == [["1", "ma"], ["2", "mb"]]


def test_compare_names_every_setting_the_runs_differ_in_and_fits_160_columns(capsys, tmp_path):
    """A vLLM bfloat16 greedy run against an hf float32 T=0.7 run: the confounds are named above
    the table, and its rows (long model names included) fit 160 columns."""
    long = "HuggingFaceTB/SmolLM2-135M-Instruct-with-a-long-local-suffix"
    _ruler_scored(tmp_path, "a", long, [1, 1, 1, 0, 1, 0.5, 1, 1])
    _ruler_scored(tmp_path, "b", long, [0, 1, 0, 0, 0.5, 0.5, 1, 0])
    gen = {"temperature": 0.0, "top_p": 1.0, "seed": 0, "max_new_tokens": 64}
    for run_id, info in (
        ("a", {"backend": "vllm", "dtype": "bfloat16", "generation": gen}),
        ("b", {"backend": "hf", "dtype": "float32", "generation": {**gen, "temperature": 0.7}}),
    ):
        RunDir(run_id, tmp_path).update_meta(models={long: info})
    assert main(["--outputs", str(tmp_path), "compare", "a", "b"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("benchmark"))
    note = " ".join(lines[:header])
    assert note.startswith("note: a/") and " vs b/" in note
    for said in ("engine vllm vs hf", "dtype bfloat16 vs float32", "temperature 0.0 vs 0.7"):
        assert said in note, note
    assert "seed" not in note and "budget" not in note
    assert max(map(len, lines)) <= 160, max(map(len, lines))
    table = "\n".join(lines[header:])
    assert "..." not in table and "a/HuggingFaceTB/Sm" in lines[header + 1]  # wrapped, not cut
    assert "suffix" in table


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["compare", "a", "nope"], "nope"),
        (["compare", "a", "b", "--alpha", "1.5"], "--alpha must be < 1.0"),
        (["compare", "a", "b", "--csv", "x.txt"], "--csv must name a .csv file"),
        (["compare", "a", "b", "--csv", "/no/such/dir/x.csv"], "does not exist"),
        (["compare", "a", "b", "c", "--model-a", "m"], "--model-a/--model-b are for a paired"),
        (["compare", "a", "--samples", "s.html"], "--samples is for a paired comparison"),
        (["compare", "a", "b", "--leaderboard", "--model-b", "m"], "--model-a/--model-b are for"),
        (["compare", "a", "a"], "lceval: "),
        (["compare", "a", "b", "--seed", "-1"], "--seed must be >= 0, got -1"),
        (["compare", "a", "b", "--seed", "-1", "--leaderboard"], "--seed must be >= 0, got -1"),
        (["compare", "a", "a", "b"], "run a is given more than once"),
        (["compare", "a", "a", "--leaderboard"], "run a is given more than once"),
        (["compare", "a", "b", "--benchmark", "nope"], "'nope' is not in both runs"),
        (["compare", "a", "b", "--model-a", "nope"], "run a has no model 'nope' on ruler"),
        (["compare", "a", "b", "--model-b", "nope"], "run b has no model 'nope' on ruler"),
        (["compare", "a", "b", "--leaderboard", "--benchmark", "nope"], "'nope' is scored in"),
    ],
)
def test_compare_bad_input_is_one_line(capsys, tmp_path, argv, message):
    _ruler_scored(tmp_path, "a", "ma", [1] * 8)
    _ruler_scored(tmp_path, "b", "mb", [0] * 8)
    code, err = _err(capsys, ["--outputs", str(tmp_path), *argv])
    assert code == 2 and message in err and err.startswith("lceval: ") and "\n" not in err


def test_compare_flag_mix_is_refused_by_the_declared_config():
    """The check lives on CompareConfig: a params file or Python call meets the same line as
    the command line, before any run is read."""
    from lceval.core.errors import LcevalError
    from lceval.params import validate
    from lceval.run.config import CompareConfig

    paired = validate(CompareConfig, {"run_ids": ["x"], "model_a": "m1", "model_b": "m2"})
    assert not paired.ranked and validate(CompareConfig, {"run_ids": ["x"]}).ranked
    bad = {"run_ids": ["x", "y", "z"], "samples": "s.html"}
    with pytest.raises(LcevalError, match=r"^compare: --samples is for a paired comparison"):
        validate(CompareConfig, bad, where="compare")


@pytest.mark.parametrize(
    ("argv", "available"),
    [
        (["--benchmark", "nope"], "benchmarks in both: ruler"),
        (["--model-a", "nope"], "its models there: ma"),
        (["--model-b", "nope"], "its models there: mb"),
        (["--leaderboard", "--benchmark", "nope"], "benchmarks scored there: ruler"),
    ],
)
def test_compare_unknown_benchmark_or_model_lists_the_choices(capsys, tmp_path, argv, available):
    _ruler_scored(tmp_path, "a", "ma", [1] * 8)
    _ruler_scored(tmp_path, "b", "mb", [0] * 8)
    code, err = _err(capsys, ["--outputs", str(tmp_path), "compare", "a", "b", *argv])
    assert code == 2 and "'nope'" in err and err.endswith(available) and "\n" not in err


def test_compare_csv_is_checked_before_anything_is_computed(capsys, tmp_path):
    _ruler_scored(tmp_path, "a", "ma", [1] * 8)
    _ruler_scored(tmp_path, "b", "mb", [0] * 8)
    folder = tmp_path / "d.csv"
    folder.mkdir()
    for extra in ([], ["--leaderboard"]):
        code = main(["--outputs", str(tmp_path), "compare", "a", "b", "--csv", str(folder), *extra])
        captured = capsys.readouterr()
        assert code == 2 and captured.out == ""  # no table printed before the error
        err = captured.err.strip()
        assert err == f"lceval: --csv: {folder} is a folder, not a file"
    for bad, message in (("x.txt", "--csv must name a .csv file"), ("/no/d/x.csv", "not exist")):
        code = main(["--outputs", str(tmp_path), "compare", "a", "nope", "--csv", bad])
        captured = capsys.readouterr()
        # the --csv error comes first, before the missing run 'nope' is noticed
        assert code == 2 and captured.out == "" and message in captured.err


def test_compare_one_run_pairs_its_models_once(capsys, tmp_path):
    from lceval.core.io import scores_frame
    from lceval.core.records import Score

    _ruler_scored(tmp_path, "two", "m1", [1, 1, 1, 0, 1, 0.5, 1, 1])
    run = RunDir("two", tmp_path)
    first = run.read_scores()
    values = [0, 1, 0, 0, 0.5, 0.5, 1, 0]
    second = [
        Score(sid, "m2", "ruler", task, "ruler", "1", float(v))
        for sid, task, v in zip(first["sample_id"], first["task"], values, strict=True)
    ]
    pd.concat([first, scores_frame(second)], ignore_index=True).to_parquet(run.scores)
    out_csv = tmp_path / "one.csv"
    pair = ["--model-a", "m1", "--model-b", "m2"]
    assert main(["--outputs", str(tmp_path), "compare", "two", *pair, "--csv", str(out_csv)]) == 0
    table = pd.read_csv(out_csv)
    assert list(table["level"]) == ["headline", "task", "task"]
    assert set(table["model_a"]) == {"two/m1"} and set(table["model_b"]) == {"two/m2"}
    # Holm over these three rows, not six (the mirror pair m2-m1 doubled the family)
    assert table.loc[0, "p_holm"] == pytest.approx(3 * table.loc[0, "p_value"])
    # one run alone: its models ranked (a leaderboard), m1 (higher scores) first
    board_csv = tmp_path / "board.csv"
    assert main(["--outputs", str(tmp_path), "compare", "two", "--csv", str(board_csv)]) == 0
    board = pd.read_csv(board_csv)
    assert list(board["model"]) == ["m1", "m2"] and list(board["rank"]) == [1, 2]
