"""Issue 50 items 1-3: the API key and the credentials of ``base_url`` never leave the engine
layer, whatever a hostile loopback server echoes, through infer, score and report."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.models.test_openai import _completion, scripted  # noqa: F401 - the loopback fixture

KEY = "tgp_v1_Zq8rW3nK5vL1pX7mB2cJ9dF4hT6yQ0sA"
"""A key of no known pattern (not sk-..., never sent as a Bearer token in the echoes)."""
USER, PASSWORD = "alice", "Pw7xQ2mZ9vK4rT1n"


def _fragments(secret: str, n: int = 8) -> set[str]:
    return {secret[i : i + n] for i in range(len(secret) - n + 1)}


def _leaks(text: str) -> list[str]:
    return sorted(f for f in _fragments(KEY) | _fragments(PASSWORD) if f in text)


def test_no_fragment_of_the_key_or_password_leaves_the_engine(
    scripted,  # noqa: F811
    echo_bench,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import lceval.run
    from lceval.cli import main
    from lceval.core.io import RunDir

    monkeypatch.setenv("LCEVAL_TEST_KEY", KEY)
    long = "x" * 900 + " upstream said: the key you sent was " + KEY
    reasoning = _completion(f"the answer, and your key is {KEY}")
    reasoning["choices"][0]["message"]["reasoning_content"] = f"I saw {KEY} in the header"
    replies = [
        (500, {"error": {"message": long}}, {}),
        (500, long.encode(), {"content-type": "text/plain"}),
        (400, {"error": {"message": f"bad request from {USER}:{PASSWORD} with {KEY}"}}, {}),
        (200, _completion(f"echo {KEY} and {PASSWORD}"), {}),
        (200, reasoning, {}),
    ]
    lceval.run.build("h", "echo", {"n": len(replies)}, root=tmp_path)
    srv = scripted(replies)
    url = srv.url.replace("http://", f"http://{USER}:{PASSWORD}@")
    argv = [
        *("--outputs", str(tmp_path), "infer", "h", "--backend", "openai", "--model", "fake"),
        *("-o", f"base_url={url}", "-o", "concurrency=1", "-o", "max_retries=0"),
        *("-o", "api_key_env=LCEVAL_TEST_KEY"),
    ]
    assert main(argv) == 1
    run = RunDir("h", tmp_path)
    answers = {r.sample_id: r for r in run.read_responses()}
    assert sum(r.finish_reason == "error" for r in answers.values()) == 3
    answered = [r for r in answers.values() if r.error is None]
    assert len(answered) == 2 and all("[redacted" in r.text for r in answered)
    assert any(r.reasoning and "[redacted" in r.reasoning for r in answered)
    assert main(["--outputs", str(tmp_path), "score", "h"]) == 0
    assert main(["--outputs", str(tmp_path), "report", "h"]) == 0
    # The 401 and 404 paths stop the run: their one line is redacted too.
    for status in (401, 404):
        srv = scripted([(status, {"error": {"message": long + f" {USER}:{PASSWORD}"}}, {})])
        url = srv.url.replace("http://", f"http://{USER}:{PASSWORD}@")
        argv[argv.index("infer") + 1] = f"h{status}"
        argv[argv.index(next(a for a in argv if a.startswith("base_url=")))] = f"base_url={url}"
        lceval.run.build(f"h{status}", "echo", {"n": 1}, root=tmp_path)
        assert main(argv) == 2
    out = capsys.readouterr()
    assert _leaks(out.out + out.err) == []
    for f in sorted(p for p in tmp_path.rglob("*") if p.is_file()):
        assert _leaks(f.read_bytes().decode("utf-8", "replace")) == [], f
    assert "127.0.0.1" in (run.path / "run.json").read_text()  # the host is kept


def test_redaction_comes_before_the_cut_and_leaves_ordinary_text() -> None:
    """The key at the end of a long error is redacted whole before one_line cuts it (the cut
    left 37 of its 39 characters); a base_url's password is registered when the URL is
    recorded without it; an answer's "bearer of" is text, not a token."""
    from lceval.core.errors import add_secret, one_line, redact, without_credentials

    add_secret(KEY)
    cut = one_line("x" * 480 + " " + KEY, 500)
    assert _leaks(cut) == [] and cut.endswith("[redacted]"[: 500 - 481])
    assert without_credentials(f"http://{USER}:{PASSWORD}@10.0.0.1:8/v1") == "http://10.0.0.1:8/v1"
    assert redact(f"p={PASSWORD}") == "p=[redacted]"
    assert redact("The bearer of sk-learn-ish news") == "The bearer of sk-learn-ish news"
    assert redact("Authorization: Bearer abc.def", patterns=True) == (
        "Authorization: Bearer [redacted]"
    )
