"""OpenAIBackend: retry/backoff against a scripted local HTTP server, and a real vLLM server."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from lceval.core.errors import LcevalError
from lceval.core.records import Context, Sample
from lceval.models.base import GenerationConfig
from lceval.models.openai import OpenAIBackend, is_public_openai

GREEDY = GenerationConfig()


def _completion(text: str, finish: str = "stop") -> dict:
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }


Reply = tuple[int, "dict | bytes", dict]
"""(status, body, headers): a dict body is sent as JSON, bytes as they are (with the headers'
content-type)."""


class Scripted:
    """A loopback OpenAI server: each chat request answered with the next reply of ``script``,
    then a good completion; ``route(method, path, body)`` may answer any request first (the batch
    endpoints) by returning a reply instead of None."""

    def __init__(self, script: list[Reply], route: Callable | None = None) -> None:
        self.script = list(script)
        self.requests: list[dict] = []
        self.times: list[float] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                reply = route(self.command, self.path, raw) if route else None
                if reply is None:
                    outer.requests.append(json.loads(raw))
                    outer.times.append(time.perf_counter())
                    reply = outer.script.pop(0) if outer.script else (200, _completion("good"), {})
                status, body, headers = reply
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                headers = {"content-type": "application/json", **headers}
                headers["content-length"] = str(len(data))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            do_POST = do_GET = _reply  # noqa: N815 - http.server API

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def scripted() -> Iterator:
    servers: list[Scripted] = []

    def make(script: list[Reply], route: Callable | None = None) -> Scripted:
        servers.append(Scripted(script, route))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def _sample(sid: str = "s0", **kw: object) -> Sample:
    base: dict = dict(id=sid, benchmark="test", task="T", instruction="Say hi.", max_new_tokens=8)
    base.update(kw)
    return Sample(**base)


ERR = {"error": {"message": "slow down", "type": "rate_limit", "code": None}}


def test_retries_429_twice_then_succeeds(scripted) -> None:
    srv = scripted([(429, ERR, {}), (429, ERR, {}), (200, _completion("hello there"), {})])
    backend = OpenAIBackend("fake", base_url=srv.url, max_retries=5)
    (r,) = backend.generate([_sample()], {}, GREEDY)
    assert r.text == "hello there" and r.finish_reason == "stop" and r.error is None
    assert (r.prompt_tokens, r.completion_tokens) == (11, 3)
    assert len(srv.requests) == 3
    gaps = [b - a for a, b in zip(srv.times, srv.times[1:], strict=False)]
    assert gaps[0] >= 0.5 * 0.75 and gaps[1] >= 1.0 * 0.75  # the SDK's backoff, with jitter


def test_retry_after_header_is_honoured(scripted) -> None:
    srv = scripted([(503, ERR, {"retry-after": "0.6"}), (200, _completion("ok"), {})])
    backend = OpenAIBackend("fake", base_url=srv.url)
    (r,) = backend.generate([_sample()], {}, GREEDY)
    assert r.text == "ok" and srv.times[1] - srv.times[0] >= 0.55


def test_gives_up_after_max_retries(scripted) -> None:
    srv = scripted([(500, ERR, {})] * 3)
    backend = OpenAIBackend("fake", base_url=srv.url, max_retries=2)
    (r,) = backend.generate([_sample()], {}, GREEDY)
    assert r.finish_reason == "error" and "500" in (r.error or "")
    assert len(srv.requests) == 3


def test_bad_request_is_an_error_response_without_retry(scripted) -> None:
    too_long = {"error": {"message": "maximum context length is 2048 tokens", "type": "x"}}
    srv = scripted([(400, too_long, {})])
    backend = OpenAIBackend("fake", base_url=srv.url)
    bad, good = backend.generate([_sample("a"), _sample("b")], {}, GREEDY)
    assert len(srv.requests) == 2
    errors = [r for r in (bad, good) if r.finish_reason == "error"]
    assert len(errors) == 1 and "context length" in (errors[0].error or "")


def test_unknown_model_and_bad_key_stop_the_run(scripted) -> None:
    srv = scripted([(404, {"error": {"message": "no such model"}}, {})])
    with pytest.raises(LcevalError, match="has no model 'fake'"):
        OpenAIBackend("fake", base_url=srv.url).generate([_sample()], {}, GREEDY)
    srv = scripted([(401, {"error": {"message": "bad key"}}, {})])
    with pytest.raises(LcevalError, match="refused the API key"):
        OpenAIBackend("fake", base_url=srv.url).generate([_sample()], {}, GREEDY)


def test_connection_refused_is_retried_then_recorded() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = OpenAIBackend("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1)
    (r,) = backend.generate([_sample()], {}, GREEDY)
    assert r.finish_reason == "error" and "Connection" in (r.error or "")


def test_request_body_and_local_stop_cut(scripted) -> None:
    srv = scripted([(200, _completion("one two STOP three", "length"), {})])
    backend = OpenAIBackend("fake", base_url=srv.url)
    ctx = {"c": Context("c", "CONTEXT", 0, "o200k_base")}
    s = _sample(
        context_id="c",
        description="DESC",
        system="SYS",
        assistant_prefix="Answer:",
        stop=("a1", "", "a2", "a3", "a4", "STOP"),  # the empty one dropped
        max_new_tokens=50,
    )
    (r,) = backend.generate([s], ctx, GenerationConfig(max_new_tokens=20, seed=7))
    assert r.text == "one two " and r.finish_reason == "stop"  # 5th stop string cut locally
    body = srv.requests[0]
    assert body["messages"] == [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": "DESC\n\nCONTEXT\n\nSay hi."},
        {"role": "assistant", "content": "Answer:"},
    ]
    assert body["max_tokens"] == 20 and body["seed"] == 7 and body["temperature"] == 0
    assert body["stop"] == ["a1", "a2", "a3", "a4"]
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False


def test_concurrent_requests_keep_sample_order(scripted) -> None:
    srv = scripted([])
    backend = OpenAIBackend("fake", base_url=srv.url, concurrency=4)
    samples = [_sample(f"s{i}") for i in range(10)]
    out = backend.generate(samples, {}, GREEDY)
    assert [r.sample_id for r in out] == [s.id for s in samples]
    assert len(srv.requests) == 10 and all(r.text == "good" for r in out)


def test_public_api_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LCEVAL_TEST_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(LcevalError, match="set LCEVAL_TEST_KEY"):
        OpenAIBackend("gpt-4o-mini", api_key_env="LCEVAL_TEST_KEY")
    monkeypatch.setenv("LCEVAL_TEST_KEY", "sk-test")
    backend = OpenAIBackend("gpt-4o-mini", api_key_env="LCEVAL_TEST_KEY")
    assert backend.public and "sk-test" not in json.dumps(backend.info())
    body = backend.request(_sample(assistant_prefix="X"), {}, GREEDY)
    assert "max_completion_tokens" in body and "extra_body" not in body
    # the generation config mapped to the request: stop strings beside the sample's own, the
    # thinking budget added to the answer's (max_completion_tokens covers both)
    cfg = GenerationConfig(stop=["END"], max_thinking_tokens=32, temperature=0.5, top_p=0.9)
    body = backend.request(_sample(stop=("\n\n",)), {}, cfg)
    assert body["stop"] == ["\n\n", "END"] and body["max_completion_tokens"] == 8 + 32
    assert (body["temperature"], body["top_p"], body["seed"]) == (0.5, 0.9, 0)
    assert is_public_openai("https://api.openai.com/v1")
    assert not is_public_openai("http://127.0.0.1:8000/v1")
    with pytest.raises(LcevalError, match="model"):
        OpenAIBackend(None)


# -- a real vLLM OpenAI-compatible server ---------------------------------------------------------
SERVED = "smollm2"
SERVER_WINDOW = 1024
START_TIMEOUT_S = 600


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def vllm_server(
    embedded_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    pytest.importorskip("vllm")
    port = _free_port()
    log = tmp_path_factory.mktemp("vllm-server") / "server.log"
    cmd = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(embedded_model_dir), "--served-model-name", SERVED,
        "--host", "127.0.0.1", "--port", str(port), "--dtype", "bfloat16",
        "--max-model-len", str(SERVER_WINDOW), "--enforce-eager",
    ]  # fmt: skip
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1"}
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vLLM server exited with {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"vLLM server not up in {START_TIMEOUT_S} s: {log.read_text()[-2000:]}")
            time.sleep(2)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.engine
def test_real_vllm_server(vllm_server: str) -> None:
    backend = OpenAIBackend(SERVED, base_url=vllm_server, api_key_env="LCEVAL_NO_SUCH_KEY")
    ctx = {
        "fr": Context("fr", "Paris is the capital of France.", 0, "o200k_base"),
        "huge": Context("huge", "the sky is blue. " * 1500, 0, "o200k_base"),
    }
    samples = [
        _sample("q0", instruction="What is the capital of France?", context_id="fr",
                max_new_tokens=24),
        _sample("q1", instruction="Write a long story about a dragon.", max_new_tokens=5),
        _sample("q2", instruction="Count from 1 to 20, separated by commas.", max_new_tokens=60,
                stop=("7",)),
        _sample("q3", instruction="Summarise.", context_id="huge"),
    ]  # fmt: skip
    q0, q1, q2, q3 = backend.generate(samples, ctx, GREEDY)
    assert "Paris" in q0.text and q0.error is None and q0.prompt_tokens > 20
    assert (q1.finish_reason, q1.completion_tokens) == ("length", 5) and q1.text
    assert q2.finish_reason == "stop" and "7" not in q2.text and "6" in q2.text
    assert q3.finish_reason == "error" and q3.error  # longer than --max-model-len: rejected
    # Greedy answers are reproducible through the server.
    assert backend.generate(samples[:1], ctx, GREEDY)[0].text == q0.text
    backend.close()


SECRET = "sk-test-Secret0123456789"


@pytest.mark.parametrize("status", [401, 500])
def test_api_key_echoed_by_the_server_is_redacted(scripted, monkeypatch, capsys, status) -> None:
    monkeypatch.setenv("LCEVAL_TEST_KEY", SECRET)
    echo = {"error": {"message": f"bad header Authorization: Bearer {SECRET} ({SECRET})"}}
    srv = scripted([(status, echo, {})] * 3)
    backend = OpenAIBackend("fake", base_url=srv.url, api_key_env="LCEVAL_TEST_KEY", max_retries=0)
    if status == 401:
        with pytest.raises(LcevalError) as exc:
            backend.generate([_sample()], {}, GREEDY)
        msg = str(exc.value)
    else:
        (r,) = backend.generate([_sample()], {}, GREEDY)
        msg = r.error or ""
    assert SECRET not in msg and "Bearer [redacted]" in msg


def test_key_over_plain_http_to_a_remote_host_warns(monkeypatch) -> None:
    monkeypatch.setenv("LCEVAL_TEST_KEY", SECRET)
    with pytest.warns(UserWarning, match="over plain http"):
        OpenAIBackend("m", base_url="http://203.0.113.5:8000/v1", api_key_env="LCEVAL_TEST_KEY")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        OpenAIBackend("m", base_url="http://127.0.0.1:8000/v1", api_key_env="LCEVAL_TEST_KEY")


def test_lone_surrogate_from_the_server_is_stored_and_scored(scripted, tmp_path) -> None:
    from lceval.core.store import ResponseStore
    from lceval.models.generate import generate

    srv = scripted([(200, _completion("x\ud800y"), {})])
    backend = OpenAIBackend("fake", base_url=srv.url)
    store = ResponseStore(tmp_path / "responses.jsonl")
    (r,) = generate(backend, [_sample()], {}, GREEDY, store=store, progress=False)
    assert r.text == "x\ud800y"
    assert [x.text for x in ResponseStore(tmp_path / "responses.jsonl")] == ["x\ufffdy"]


# -- issue 38 item 3: a hostile server ---------------------------------------------------------
def _with(**fields: object) -> dict:
    doc = _completion("fine")
    doc.update(fields)
    return doc


def _message(content: object, finish: str = "stop", **extra: object) -> list[dict]:
    return [
        {
            "index": 0,
            "message": {"role": "assistant", "content": content, **extra},
            "finish_reason": finish,
        }
    ]


# (case, raw body, content-type, the error's text or None when the reply is answered)
HOSTILE: list[tuple[str, bytes, str, str | None]] = [
    ("choices []", json.dumps(_with(choices=[])).encode(), "json", "has no choices"),
    ("choices null", json.dumps(_with(choices=None)).encode(), "json", "has no choices"),
    (
        "no message",
        json.dumps(_with(choices=[{"index": 0, "finish_reason": "stop"}])).encode(),
        "json",
        "a choice without a message",
    ),
    ("content int", json.dumps(_with(choices=_message(5))).encode(), "json", "of type int"),
    ("content dict", json.dumps(_with(choices=_message({"a": 1}))).encode(), "json", "type dict"),
    ("html 502 page", b"<html><body>502 Bad Gateway</body></html>", "html", "not a chat compl"),
    ("broken json", b'{"choices": [', "json", "MalformedReply"),
    ("a list body", b"[1, 2]", "json", "not a chat completion"),
]
FINE: list[tuple[str, bytes, str, str]] = [
    # (case, raw body, content-type, the stored text)
    (
        "content as text parts",
        json.dumps(_with(choices=_message([{"type": "text", "text": "hi"}, {"text": "!"}]))),
        "json",
        "hi!",
    ),
    ("usage as a string", json.dumps(_with(usage="lots")), "json", "fine"),
    (
        "infinite usage",
        json.dumps(_with(usage={"prompt_tokens": float("inf"), "completion_tokens": -3})),
        "json",
        "fine",
    ),
    (
        "reasoning_tokens 1e20",
        json.dumps(
            _with(
                choices=_message("ans", reasoning_content="a b c"),
                usage={
                    "prompt_tokens": 10**20,
                    "completion_tokens": 4,
                    "completion_tokens_details": {"reasoning_tokens": 1e20},
                },
            )
        ),
        "json",
        "ans",
    ),
]


def _raw(bodies: list[tuple[bytes, str]]) -> list[Reply]:
    """Replies of status 200 with raw bodies of content type ``application/json`` or
    ``text/<kind>``."""
    kinds = {"json": "application/json"}
    return [(200, b, {"content-type": kinds.get(k, f"text/{k}")}) for b, k in bodies]


@pytest.mark.parametrize(("case", "body", "kind", "error"), HOSTILE, ids=[c[0] for c in HOSTILE])
def test_a_malformed_reply_is_that_samples_error(scripted, case, body, kind, error) -> None:
    srv = scripted(_raw([(body, kind)]))
    backend = OpenAIBackend("fake", base_url=srv.url, max_retries=0, concurrency=1)
    bad, good = backend.generate([_sample("s0"), _sample("s1")], {}, GREEDY)
    assert bad.finish_reason == "error" and bad.text == "" and error in (bad.error or ""), bad
    assert good.text == "good" and good.error is None


@pytest.mark.parametrize(("case", "body", "kind", "text"), FINE, ids=[c[0] for c in FINE])
def test_odd_but_readable_replies_store_text_and_bounded_counts(
    scripted, case, body, kind, text
) -> None:
    srv = scripted(_raw([(body.encode(), kind)]))
    (r,) = OpenAIBackend("fake", base_url=srv.url, max_retries=0).generate([_sample()], {}, GREEDY)
    assert r.text == text and isinstance(r.text, str) and r.error is None
    for n in (r.prompt_tokens, r.completion_tokens, r.reasoning_tokens):
        assert type(n) is int and 0 <= n <= 10**9
    if r.reasoning is not None:
        assert r.reasoning_tokens == 3  # the refused count is estimated with tiktoken


def test_content_filter_finish_is_stored_as_such(scripted) -> None:
    srv = scripted([(200, _completion("half an ans", finish="content_filter"), {})])
    (r,) = OpenAIBackend("fake", base_url=srv.url).generate([_sample()], {}, GREEDY)
    assert (r.finish_reason, r.text) == ("content_filter", "half an ans")


# (case, content or raw body, finish, the stored text, finish_reason, reasoning, unfinished)
CONTENT: list[tuple[str, str | bytes, str, str, str, str | None, bool]] = [
    ("think-start without an end", "<think>plan plan", "length", "", "length", "plan plan", True),
    ("a stop string at position 0", "STOP and more", "stop", "", "stop", None, False),
    (
        "a stop string after the thinking",
        "<think>a STOP</think>STOP b",
        "stop",
        "",
        "stop",
        "a STOP",
        False,
    ),
    ("1 MB of one character", "a" * 1_000_000, "length", "a" * 1_000_000, "length", None, False),
    (
        "1 MB of unfinished thinking",
        "<think>" + "a" * 1_000_000,
        "length",
        "",
        "length",
        "a" * 1_000_000,
        True,
    ),
    # raw bytes: a body whose content is not valid UTF-8 (a cut multi-byte char)
    (
        "invalid UTF-8 in the body",
        json.dumps(_completion("ok XX"))
        .replace("XX", "\\u20ac")
        .encode()
        .replace(b"\\u20ac", b"\xe2\x82"),
        "stop",
        "",
        "error",
        None,
        False,
    ),
]


@pytest.mark.parametrize(
    ("case", "content", "finish", "text", "reason", "reasoning", "unfinished"),
    CONTENT,
    ids=[c[0] for c in CONTENT],
)
def test_hostile_content_gives_a_response(
    scripted, tmp_path, case, content, finish, text, reason, reasoning, unfinished
) -> None:
    """The openai backend's _response on what a server may send: a Response, never an exception;
    stored and read back whole."""
    from lceval.core.store import ResponseStore

    if isinstance(content, bytes):
        reply: Reply = (200, content, {"content-type": "application/json"})
    else:
        reply = (200, _completion(content, finish=finish), {})
    srv = scripted([reply])
    opts = {"think_end": "</think>", "max_retries": 0}
    (r,) = OpenAIBackend("fake", base_url=srv.url, **opts).generate(
        [_sample(stop=("STOP",))], {}, GREEDY
    )
    assert (r.text, r.finish_reason, r.reasoning, r.thinking_unfinished) == (
        text,
        reason,
        reasoning,
        unfinished,
    )
    if reason == "error":
        assert r.error and "\n" not in r.error
    store = ResponseStore(tmp_path / "responses.jsonl")
    store.append([r])
    assert list(ResponseStore(tmp_path / "responses.jsonl")) == [r]


def test_hostile_replies_through_infer_score_and_report(
    scripted, echo_bench, tmp_path, capsys
) -> None:
    """Every hostile reply of one ``lceval infer``: that sample's error, the others answered,
    exit 1; the rerun asks only the failed ones again; score and report exit 0."""
    import lceval.run
    from lceval.cli import main
    from lceval.core.io import RunDir

    bodies = [(b, k) for _, b, k, _ in HOSTILE] + [(b.encode(), k) for _, b, k, _ in FINE]
    lceval.run.build("h", "echo", {"n": len(bodies) + 1}, root=tmp_path)
    srv = scripted(_raw(bodies))
    argv = [
        *("--outputs", str(tmp_path), "infer", "h", "--backend", "openai", "--model", "fake"),
        *("-o", f"base_url={srv.url}", "-o", "concurrency=1", "-o", "max_retries=0"),
    ]
    assert main(argv) == 1
    first = RunDir("h", tmp_path).read_responses()
    assert sum(r.finish_reason == "error" for r in first) == len(HOSTILE)
    assert all(isinstance(r.text, str) for r in first)
    assert main(argv) == 0, capsys.readouterr().err  # the failed ones asked again
    latest = {r.sample_id: r for r in RunDir("h", tmp_path).read_responses()}
    assert len(latest) == len(bodies) + 1 and all(r.error is None for r in latest.values())
    assert main(["--outputs", str(tmp_path), "score", "h"]) == 0, capsys.readouterr().err
    assert main(["--outputs", str(tmp_path), "report", "h"]) == 0, capsys.readouterr().err


# -- issue 40 item 4: the Batch API ------------------------------------------------------------
class BatchAPI:
    """The Batch API of a loopback server (``route`` of :class:`Scripted`): /v1/files upload and
    content, /v1/batches create and retrieve. A batch stays ``in_progress`` until ``release``
    is set; then each request is answered with ``answer <custom_id>`` (usage 11 + 3), except the
    custom ids in ``refuse``, answered with status 400 in the error file."""

    def __init__(self, refuse: tuple[str, ...] = ()) -> None:
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, str] = {}
        self.release = threading.Event()
        self.refuse = refuse
        self.uploads = self.creates = 0

    def _batch(self, bid: str) -> dict:
        done = self.release.is_set()
        if done and f"{bid}-out" not in self.files:
            out, err = [], []
            for line in self.files[self.batches[bid]].splitlines():
                cid = json.loads(line)["custom_id"]
                if cid in self.refuse:
                    bad = {"status_code": 400, "body": {"error": {"message": "too long"}}}
                    err.append({"id": "r", "custom_id": cid, "response": bad, "error": None})
                else:
                    ok = {"status_code": 200, "body": _completion(f"answer {cid}")}
                    out.append({"id": "r", "custom_id": cid, "response": ok, "error": None})
            for name, recs in ((f"{bid}-out", out), (f"{bid}-err", err)):
                self.files[name] = "".join(json.dumps(r) + "\n" for r in recs).encode()
        return {
            "id": bid,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "input_file_id": self.batches[bid],
            "completion_window": "24h",
            "created_at": 0,
            "status": "completed" if done else "in_progress",
            "output_file_id": f"{bid}-out" if done else None,
            "error_file_id": f"{bid}-err" if done and self.refuse else None,
        }

    def route(self, method: str, path: str, raw: bytes) -> Reply | None:
        if method == "POST" and path == "/v1/files":
            self.uploads += 1
            lines = [x.rstrip(b"\r") for x in raw.split(b"\n") if x.startswith(b'{"custom_id"')]
            fid = f"file-{len(self.files)}"
            self.files[fid] = b"\n".join(lines) + b"\n"
            info = {"id": fid, "object": "file", "bytes": len(raw), "created_at": 0}
            return 200, {**info, "filename": "batch.jsonl", "purpose": "batch"}, {}
        if method == "POST" and path == "/v1/batches":
            self.creates += 1
            bid = f"batch_{self.creates}"
            self.batches[bid] = json.loads(raw)["input_file_id"]
            return 200, self._batch(bid), {}
        if method == "GET" and path.startswith("/v1/batches/"):
            return 200, self._batch(path.rsplit("/", 1)[1]), {}
        if method == "GET" and path.startswith("/v1/files/") and path.endswith("/content"):
            return 200, self.files[path.split("/")[3]], {"content-type": "application/jsonl"}
        return None


def test_batch_answers_each_sample_with_the_providers_usage(scripted, tmp_path) -> None:
    api = BatchAPI(refuse=("s1",))
    api.release.set()
    srv = scripted([], api.route)
    backend = OpenAIBackend("fake", base_url=srv.url, batch=True, batch_poll_s=0.05)
    backend.run_dir = tmp_path
    out = backend.generate([_sample("s0"), _sample("s1"), _sample("s2")], {}, GREEDY)
    assert [r.text for r in out] == ["answer s0", "", "answer s2"]
    assert [(r.prompt_tokens, r.completion_tokens) for r in out] == [(11, 3), (0, 0), (11, 3)]
    assert out[1].finish_reason == "error" and "400" in (out[1].error or "")
    assert (api.uploads, api.creates, srv.requests) == (1, 1, [])  # no per-sample requests
    sent = [json.loads(x) for x in api.files["file-0"].splitlines()]
    assert [x["custom_id"] for x in sent] == ["s0", "s1", "s2"]
    assert sent[0]["body"]["messages"][-1]["content"].endswith("Say hi.")
    assert json.loads((tmp_path / "batches.json").read_text()) != {}


@pytest.mark.crash
def test_batch_run_killed_between_submit_and_retrieve_resumes_it(scripted, tmp_path) -> None:
    """``lceval infer`` SIGKILLed while its batch is in progress: the rerun retrieves the same
    batch (one upload, one batch) and answers every sample exactly once."""
    from lceval.cli import main
    from lceval.core.io import RunDir, new_meta

    samples = [_sample(f"s{i}", benchmark="lifbench", task="LSI") for i in range(5)]
    run = RunDir("b", tmp_path).create()
    run.write_samples(samples, [])
    run.write_meta(new_meta("b"))
    api = BatchAPI()
    srv = scripted([], api.route)
    argv = [
        *("--outputs", str(tmp_path), "infer", "b", "--backend", "openai", "--model", "fake"),
        *("-o", f"base_url={srv.url}", "-o", "batch=true", "-o", "batch_poll_s=0.1"),
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "lceval", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    deadline = time.time() + 120
    while time.time() < deadline and not (run.path / "batches.json").exists():
        assert proc.poll() is None, "infer ended before submitting"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert api.creates == 1 and not run.responses.exists()  # killed before any answer
    api.release.set()
    assert main(argv) == 0
    ids = [r.sample_id for r in RunDir("b", tmp_path).read_responses()]
    assert sorted(ids) == [s.id for s in samples]  # each exactly once
    assert (api.uploads, api.creates) == (1, 1)
    texts = {r.sample_id: r.text for r in RunDir("b", tmp_path).read_responses()}
    assert texts == {s.id: f"answer {s.id}" for s in samples}
    from lceval.report.cost import cost_table  # the report prices them at the batch price

    row = cost_table(RunDir("b", tmp_path)).iloc[0]
    assert (row["answers"], row["input_tokens"], row["output_tokens"]) == (5, 55, 15)
    assert row["price"] == "batch" and row["price_source"] == "no price for fake in the table"
