import json
import os

import pytest

from lceval.core.corpora import read_jsonl_file
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, atomic_open, iter_jsonl, outputs_root, read_records, write_jsonl
from lceval.core.records import Context, Sample, Score


def test_atomic_open_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "x.json"
    with pytest.raises(RuntimeError):
        with atomic_open(target) as f:
            f.write("half")
            raise RuntimeError("boom")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_iter_jsonl_skips_torn_last_line_only(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text('{"a": 1}\n{"a": 2}\n{"a": ')
    assert [d["a"] for d in iter_jsonl(p)] == [1, 2]
    p.write_text('{"a": 1}\n{"a": \n{"a": 3}\n')
    with pytest.raises(LcevalError, match="line 2"):
        list(iter_jsonl(p))


def test_run_dir_round_trip(tmp_path):
    run = RunDir("r1", tmp_path).create()
    ctx = Context(id="c", text="long text", n_tokens=2, encoding="o200k_base")
    s = Sample(id="s1", benchmark="lifbench", task="LSI", instruction="I", context_id="c")
    run.write_samples([s], [ctx])
    assert run.read_samples() == [s]
    assert run.read_contexts() == {"c": ctx}
    df = run.write_scores(
        [Score("s1", "m", "lifbench", "LSI", "lifbench.ars", "1", 0.5, {"a": 1.0})]
    )
    assert json.loads(run.read_scores().loc[0, "parts"]) == {"a": 1.0}
    assert list(df.columns)[:3] == ["sample_id", "model", "benchmark"]


def test_unknown_context_is_rejected(tmp_path):
    run = RunDir("r1", tmp_path).create()
    s = Sample(id="s1", benchmark="lifbench", task="LSI", instruction="I", context_id="nope")
    with pytest.raises(LcevalError, match="unknown context 'nope'"):
        run.write_samples([s], [])
    assert not run.samples.exists()


@pytest.mark.parametrize("bad", ["", "a b", "../x", "-x"])
def test_bad_run_ids(bad, tmp_path):
    with pytest.raises(LcevalError, match="run_id"):
        RunDir(bad, tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_output_folder(tmp_path):
    tmp_path.chmod(0o500)
    with pytest.raises(LcevalError, match="not writable"):
        RunDir("r", tmp_path / "sub").create()


def test_unwritable_output_folder_as_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(LcevalError, match="not writable"):
        RunDir("file", tmp_path).create()  # the run folder's name taken by a file
    with pytest.raises(LcevalError, match="is a file, not a folder"):
        RunDir("r", blocker)  # the folder of run folders a file: refused before create


def test_outputs_root_found_from_subfolder(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "lceval").mkdir()
    (tmp_path / "notebooks").mkdir()
    monkeypatch.delenv("LCEVAL_OUTPUTS", raising=False)
    monkeypatch.chdir(tmp_path / "notebooks")
    assert outputs_root() == tmp_path.resolve() / "outputs"
    monkeypatch.setenv("LCEVAL_OUTPUTS", str(tmp_path / "elsewhere"))
    assert outputs_root() == tmp_path / "elsewhere"


def test_write_jsonl_counts(tmp_path):
    assert write_jsonl(tmp_path / "a.jsonl", [{"x": 1}, {"x": 2}]) == 2


BOM = b"\xef\xbb\xbf"
DEEP = b"[" * 100_000


@pytest.mark.parametrize(
    "read", [lambda p: list(iter_jsonl(p)), read_jsonl_file], ids=["iter_jsonl", "read_jsonl_file"]
)
def test_jsonl_readers_accept_a_leading_bom_only(tmp_path, read):
    p = tmp_path / "r.jsonl"
    p.write_bytes(BOM + b'{"a": 1}\n{"a": 2}\n')  # saved by a Windows tool
    assert [d["a"] for d in read(p)] == [1, 2]
    p.write_bytes(b'{"a": 1}\n' + BOM + b'{"a": 2}\n')  # a BOM inside the file is not text
    with pytest.raises(LcevalError, match="line 2 is not valid JSON"):
        read(p)


@pytest.mark.parametrize(
    "read", [lambda p: list(iter_jsonl(p)), read_jsonl_file], ids=["iter_jsonl", "read_jsonl_file"]
)
def test_jsonl_readers_report_too_deep_nesting_as_a_bad_line(tmp_path, read):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b'{"a": 1}\n' + DEEP + b"\n" + b'{"a": 3}\n')
    with pytest.raises(LcevalError) as exc:
        read(p)
    msg = str(exc.value)
    assert str(p) in msg and "line 2 is not valid JSON (nested too deeply)" in msg
    assert "\n" not in msg


def test_iter_jsonl_too_deep_torn_last_line_is_skipped(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b'{"a": 1}\n' + DEEP)  # unterminated: a torn write, as any other
    assert list(iter_jsonl(p)) == [{"a": 1}]


def test_iter_jsonl_names_the_line_that_is_not_utf8(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b'{"a": 1}\n{"a": "\xff\xfe"}\n{"a": 3}\n')
    with pytest.raises(LcevalError) as exc:
        list(iter_jsonl(p))
    assert str(exc.value) == f"{p}: line 2 is not valid UTF-8 text (byte 7)"
    p.write_bytes(b'{"a": 1}\n{"a": "\xe2\x82')  # a torn last line cut inside a character
    assert list(iter_jsonl(p)) == [{"a": 1}]
    p.write_bytes(b'{"a": 1}\r\n{"a": 2}\r\n')  # Windows line ends
    assert [d["a"] for d in iter_jsonl(p)] == [1, 2]


def _scored_run(tmp_path):
    from lceval.core.io import new_meta, scores_frame
    from lceval.core.records import Sample, Score

    run = RunDir("r", tmp_path).create()
    run.write_samples([Sample("s1", "echo", "T", "q")], [])
    run.write_meta(new_meta("r"))
    scores_frame([Score("s1", "m", "echo", "T", "echo", "1", 0.5)]).to_parquet(run.scores)
    return run


def test_jsonl_number_too_long_and_non_record_lines_are_one_line_errors(tmp_path):
    from lceval.core.records import Sample

    p = tmp_path / "r.jsonl"
    p.write_bytes(b'{"a": 1}\n{"x": ' + b"9" * 5000 + b"}\n")
    with pytest.raises(
        LcevalError, match="line 2 is not valid JSON \\(a number too long to read\\)"
    ):
        list(iter_jsonl(p))
    for bad in (b"[1, 2]", b"null", b'{"id": 5}'):
        p.write_bytes(b'{"id": "s", "benchmark": "b", "task": "T", "instruction": "q"}\n' + bad)
        with pytest.raises(LcevalError, match="line 2 is not a Sample"):
            read_records(p, Sample)


def test_unterminated_last_line(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b'{"a": 1}\n{"a": 2}')  # whole, only its newline is missing: read
    assert [d["a"] for d in iter_jsonl(p)] == [1, 2]
    p.write_bytes(b'{"a": 1}\n{"a": ')  # torn append: skipped where tolerated, else an error
    assert list(iter_jsonl(p)) == [{"a": 1}]
    with pytest.raises(LcevalError, match="line 2 is not valid JSON .*\\(torn or cut\\)"):
        list(iter_jsonl(p, torn=False))
    p.write_bytes(b'{"a": 1}\r{"a": 2}\r')  # CR line ends: one line that is not JSON
    with pytest.raises(LcevalError, match="line 1 is not valid JSON"):
        list(iter_jsonl(p, torn=False))


def test_run_samples_with_a_torn_tail_are_an_error(tmp_path):
    run = _scored_run(tmp_path)
    run.samples.write_bytes(run.samples.read_bytes() + b'{"id": "s2", "bench')
    with pytest.raises(LcevalError, match="samples.jsonl: line 2 is not valid JSON"):
        run.read_samples()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"run_id": "\xff"}', "is not valid UTF-8 text"),
        (b"[]", "is not a run record"),
        (b"[" * 100_000, "is not valid JSON (nested too deeply)"),
        (b'{"x": ' + b"9" * 5000 + b"}", "is not valid JSON (a number too long to read)"),
        (b"{", "is not valid JSON"),
    ],
)
def test_corrupt_run_json_is_one_line(tmp_path, content, message):
    run = _scored_run(tmp_path)
    run.run_json.write_bytes(content)
    with pytest.raises(LcevalError) as exc:
        run.read_meta()
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_corrupt_scores_are_one_line(tmp_path):
    import pandas as pd

    run = _scored_run(tmp_path)
    good = run.scores.read_bytes()
    assert run.read_scores()["value"].tolist() == [0.5]
    for content in (good[:100], b"garbage" * 10, b""):
        run.scores.write_bytes(content)
        with pytest.raises(LcevalError, match="is not a readable scores table.*lceval score r"):
            run.read_scores()
    pd.DataFrame({"a": [1]}).to_parquet(run.scores)
    with pytest.raises(LcevalError, match="lacks column\\(s\\) sample_id"):
        run.read_scores()
    for value in (float("inf"), -5.0, 1.5):
        df = pd.read_parquet(__import__("io").BytesIO(good)).assign(value=value)
        df.to_parquet(run.scores)
        with pytest.raises(LcevalError, match="1 value\\(s\\) outside \\[0, 1\\]"):
            run.read_scores()
    df.assign(value=float("nan"), model=7).to_parquet(run.scores)
    with pytest.raises(LcevalError, match="column model must hold text"):
        run.read_scores()


def test_an_outputs_root_that_is_a_file_is_refused_naming_it(tmp_path, monkeypatch, capsys):
    """A file given as the folder of run folders: one line naming it, from Python and the
    command line (compare said its runs had no scores.parquet)."""
    import lceval
    from lceval.cli import main

    f = tmp_path / "f"
    f.write_text("x")
    says = f"the folder of run folders {f} is a file, not a folder"
    with pytest.raises(LcevalError, match=f"^{says}"):
        RunDir("r", f)
    with pytest.raises(LcevalError, match=f"^{says}"):
        lceval.compare("a", "b", root=f)
    monkeypatch.setenv("LCEVAL_OUTPUTS", str(f))
    with pytest.raises(LcevalError, match=f"^{says}"):
        outputs_root()
    assert main(["--outputs", str(f), "compare", "a", "b"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"lceval: {says}") and err.count("\n") == 1
    assert main(["--outputs", str(f), "eval", "lifbench", "--model", "embedded"]) == 2
    assert capsys.readouterr().err.startswith(f"lceval: {says}")
    assert sorted(tmp_path.iterdir()) == [f]


def test_run_meta_records_lcevals_commit_not_the_working_folders(tmp_path, monkeypatch):
    """run.json's git commit is the code that made the run: a command started inside another
    git repository (the user's project) records lceval's checkout, and a package that is not a
    tracked file of a checkout (a wheel copied into a repository) records none."""
    import shutil
    import subprocess

    from lceval.core import io

    other = tmp_path / "project"
    other.mkdir()
    env = {"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x", "GIT_COMMITTER_NAME": "u"}
    env |= {"GIT_COMMITTER_EMAIL": "u@x", "PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    for command in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", *command], cwd=other, env=env, check=True)
    project = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=other, capture_output=True, text=True, check=True
    ).stdout.strip()
    monkeypatch.chdir(other)
    recorded = io.new_meta("r").git_commit
    assert recorded != project
    assert recorded == io.git_commit(io.PACKAGE)
    # lceval copied into the user's repository, untracked (site-packages in a .venv there)
    copy = other / "venv" / "lceval"
    copy.mkdir(parents=True)
    shutil.copy(io.PACKAGE / "__init__.py", copy / "__init__.py")
    assert io.git_commit(copy) is None
