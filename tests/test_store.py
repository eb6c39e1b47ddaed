import pytest

from lceval.core.errors import LcevalError
from lceval.core.records import Response
from lceval.core.store import ResponseStore


def _r(i, model="m", h="h"):
    return Response(sample_id=f"s{i}", model=model, text=f"answer {i}", config_hash=h)


def test_append_skips_existing_keys(tmp_path):
    store = ResponseStore(tmp_path / "responses.jsonl")
    assert store.append([_r(1), _r(2)]) == 2
    assert store.append([_r(2), _r(3)]) == 1
    assert store.done("m", "h") == {"s1", "s2", "s3"}
    assert store.done("m", "other") == set()
    assert [r.sample_id for r in store] == ["s1", "s2", "s3"]


def test_sample_hash_is_part_of_the_key(tmp_path):
    import dataclasses

    store = ResponseStore(tmp_path / "responses.jsonl")
    old, legacy = dataclasses.replace(_r(1), sample_hash="old"), _r(2)  # legacy: no hash
    assert store.append([old, legacy]) == 2
    assert store.done("m", "h") == {"s1", "s2"}  # no hashes asked: every answer counts
    assert store.done("m", "h", {"s1": "new", "s2": "new"}) == {"s2"}
    assert store.done("m", "h", {"s1": "old"}) == {"s1"}
    assert store.append([dataclasses.replace(old, sample_hash="new", text="again")]) == 1
    assert store.done("m", "h", {"s1": "new"}) == {"s1"}
    assert [(r.sample_id, r.sample_hash) for r in ResponseStore(store.path)] == [
        ("s1", "old"),
        ("s2", None),
        ("s1", "new"),
    ]


def test_torn_last_line_is_cut_before_appending(tmp_path):
    path = tmp_path / "responses.jsonl"
    store = ResponseStore(path)
    store.append([_r(1), _r(2)])
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"sample_id": "s3", "model": "m", "te')  # killed mid-write
    reopened = ResponseStore(path)  # a reader never cuts (a writer may be mid-line)
    assert path.read_bytes().startswith(whole) and len(path.read_bytes()) > len(whole)
    assert reopened.done("m", "h") == {"s1", "s2"}
    reopened.append([_r(3)])
    assert reopened.torn_bytes > 0
    assert [r.sample_id for r in ResponseStore(path)] == ["s1", "s2", "s3"]
    assert path.read_text().count("\n") == 3


def test_same_sample_different_model_or_config_are_separate(tmp_path):
    store = ResponseStore(tmp_path / "responses.jsonl")
    store.append([_r(1, "a"), _r(1, "b"), _r(1, "a", "h2")])
    assert len(store) == 3


def test_error_responses_are_retried_and_superseded(tmp_path):
    path = tmp_path / "responses.jsonl"
    store = ResponseStore(path)
    failed = Response(
        sample_id="s1",
        model="m",
        text="",
        config_hash="h",
        finish_reason="error",
        error="TimeoutError: server did not answer",
    )
    store.append([failed, _r(2)])
    assert store.done("m", "h") == {"s2"}
    reopened = ResponseStore(path)
    assert reopened.done("m", "h") == {"s2"}
    assert reopened.append([_r(1)]) == 1
    assert reopened.append([_r(1)]) == 0
    final = {r.sample_id: r for r in ResponseStore(path)}
    assert final["s1"].finish_reason == "stop" and final["s1"].text == "answer 1"


def test_lone_surrogate_is_stored_losslessly_and_read_as_replacement(tmp_path):
    path = tmp_path / "responses.jsonl"
    store = ResponseStore(path)
    r = Response(sample_id="s1", model="m", text="a\ud800b\udfff \U0001f600", config_hash="h")
    assert store.append([r, _r(2)]) == 2
    assert "a\\ud800b\\udfff" in path.read_text(encoding="utf-8")  # valid UTF-8, lossless
    assert [x.text for x in ResponseStore(path)][0] == "a\ufffdb\ufffd \U0001f600"


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (b"\xff\xfe not utf-8\n", "line 2 is not valid UTF-8"),
        (b"[1, 2]\n", "line 2 is not a valid response (expected a JSON object"),
        (
            b'{"sample_id": "x", "model": "m", "text": 123, "config_hash": "h"}\n',
            "line 2 is not a valid response (Response.text: expected str",
        ),
        (
            b'{"sample_id": "x", "model": "m", "text": "t", "config_hash": "h", '
            b'"finish_reason": "bogus"}\n',
            "Response.finish_reason: expected one of",
        ),
        (
            b'{"sample_id": "x", "model": "m", "text": "t", "config_hash": "h", '
            b'"prompt_tokens": "x"}\n',
            "Response.prompt_tokens: expected an integer",
        ),
        (b"{not json\n", "line 2 is not valid JSON"),
        (b"[" * 100_000 + b"\n", "line 2 is not valid JSON (nested too deeply)"),
    ],
)
def test_corrupt_line_in_the_middle_is_one_line_error_and_repairable(tmp_path, bad, problem):
    path = tmp_path / "responses.jsonl"
    ResponseStore(path).append([_r(1)])
    ResponseStore(path).append([_r(2)])
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + bad + lines[1])
    with pytest.raises(LcevalError) as exc:
        ResponseStore(path)
    msg = str(exc.value)
    assert problem in msg and str(path) in msg and "lceval repair" in msg and "\n" not in msg
    assert ResponseStore(path, index=False).drop_bad_lines() == 1
    assert [r.sample_id for r in ResponseStore(path)] == ["s1", "s2"]
    assert (tmp_path / "responses.jsonl.bad").read_bytes() == bad


def test_leading_bom_is_accepted(tmp_path):
    path = tmp_path / "responses.jsonl"
    ResponseStore(path).append([_r(1)])
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())  # re-saved by a Windows editor
    store = ResponseStore(path)
    assert store.done("m", "h") == {"s1"}
    assert store.append([_r(1), _r(2)]) == 1
    assert [r.sample_id for r in ResponseStore(path)] == ["s1", "s2"]


def test_bom_after_the_first_line_is_a_bad_line(tmp_path):
    path = tmp_path / "responses.jsonl"
    ResponseStore(path).append([_r(1), _r(2)])
    first, second = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(first + b"\xef\xbb\xbf" + second)
    with pytest.raises(LcevalError, match="line 2 is not valid JSON"):
        ResponseStore(path)


def test_second_writer_is_refused(tmp_path):
    path = tmp_path / "responses.jsonl"
    first = ResponseStore(path)
    with first.writer():
        with pytest.raises(LcevalError, match=r"another process \(pid \d+\) is writing"):
            with ResponseStore(path).writer():
                pass
    with ResponseStore(path).writer():  # released
        pass


def test_torn_tail_is_moved_aside_not_lost(tmp_path, capsys):
    path = tmp_path / "responses.jsonl"
    store = ResponseStore(path)
    store.append([_r(1)])
    torn = b'{"sample_id": "s3", "model": "m", "te'
    path.write_bytes(path.read_bytes() + torn)
    ResponseStore(path).append([_r(2)])
    assert (tmp_path / "responses.jsonl.torn").read_bytes() == torn + b"\n"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "moved to responses.jsonl.torn" in err[0]


def test_whole_last_line_without_newline_is_kept(tmp_path):
    """An editor that drops the final newline: the last response still counts and is kept."""
    path = tmp_path / "responses.jsonl"
    ResponseStore(path).append([_r(1), _r(2)])
    path.write_bytes(path.read_bytes()[:-1])
    store = ResponseStore(path)
    assert store.done("m", "h") == {"s1", "s2"}
    assert [r.sample_id for r in store] == ["s1", "s2"]
    store.append([_r(3)])
    assert [r.sample_id for r in ResponseStore(path)] == ["s1", "s2", "s3"]
    assert not (tmp_path / "responses.jsonl.torn").exists()


def test_file_without_line_ends_is_moved_aside_whole(tmp_path, capsys):
    """CR line ends (an old Mac editor): one unparsable 'line'; never silently deleted."""
    path = tmp_path / "responses.jsonl"
    ResponseStore(path).append([_r(1), _r(2)])
    crs = path.read_bytes().replace(b"\n", b"\r")
    path.write_bytes(crs)
    store = ResponseStore(path)
    assert len(store) == 0
    store.append([_r(3)])
    assert (tmp_path / "responses.jsonl.torn").read_bytes() == crs + b"\n"
    assert [r.sample_id for r in ResponseStore(path)] == ["s3"]
    assert "moved to responses.jsonl.torn" in capsys.readouterr().err


def test_repair_keeps_a_valid_last_line_without_newline(tmp_path):
    path = tmp_path / "responses.jsonl"
    ResponseStore(path).append([_r(1), _r(2)])
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b"\x00 not json\n" + lines[1].rstrip(b"\n"))
    store = ResponseStore(path, index=False)
    assert store.drop_bad_lines() == 1
    assert [r.sample_id for r in ResponseStore(path)] == ["s1", "s2"]
    assert (tmp_path / "responses.jsonl.bad").read_bytes() == b"\x00 not json\n"


def test_number_too_long_is_a_bad_line(tmp_path):
    path = tmp_path / "responses.jsonl"
    ResponseStore(path).append([_r(1)])
    path.write_bytes(path.read_bytes() + b'{"x": ' + b"9" * 5000 + b"}\n")
    with pytest.raises(
        LcevalError, match="line 2 is not valid JSON \\(a number too long to read\\)"
    ):
        ResponseStore(path)
    assert ResponseStore(path, index=False).drop_bad_lines() == 1
    assert [r.sample_id for r in ResponseStore(path)] == ["s1"]


def test_configs_count_only_answers_to_the_current_samples(tmp_path):
    import dataclasses

    store = ResponseStore(tmp_path / "responses.jsonl")
    store.append([dataclasses.replace(_r(1, h="old"), sample_hash="v1"), _r(1, h="new")])
    assert store.configs() == {"m": {"old", "new"}}
    assert store.configs({"s1": "v2"}) == {"m": {"new"}}  # the v1 answer is stale
