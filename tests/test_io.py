import json
import os

import pytest

from lceval.corpora import read_jsonl_file
from lceval.errors import LcevalError
from lceval.io import RunDir, atomic_open, iter_jsonl, outputs_root, write_jsonl
from lceval.records import Context, Sample, Score


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
        RunDir("r", blocker).create()


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
    assert str(exc.value) == f"{p}: line 2 is not UTF-8 text (byte 7)"
    p.write_bytes(b'{"a": 1}\n{"a": "\xe2\x82')  # a torn last line cut inside a character
    assert list(iter_jsonl(p)) == [{"a": 1}]
    p.write_bytes(b'{"a": 1}\r\n{"a": 2}\r\n')  # Windows line ends
    assert [d["a"] for d in iter_jsonl(p)] == [1, 2]
