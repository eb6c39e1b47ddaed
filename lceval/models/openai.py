"""The OpenAI-compatible backend: chat completions from an API model or a ``vllm serve`` server.

Requests run in a thread pool, retried by the openai SDK (``max_retries``: 408, 409, 429, 5xx,
timeouts, connection errors); a bad key or unknown model stops the run in one line; a reply
lceval cannot read is that sample's error Response, asked again next run. ``batch=True`` uses the
provider's Batch API, its id kept in ``<run>/batches.json`` so that a killed run picks it up.
"""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import json
import math
import time
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final, cast
from urllib.parse import urlparse

from lceval.core.errors import LcevalError, one_line, redact, without_credentials
from lceval.core.io import atomic_open
from lceval.core.records import Context, FinishReason, Response, Sample
from lceval.core.tokens import count_tokens
from lceval.models.backends import (
    PUBLIC_BASE_URL,
    OpenAIOptions,
    ThinkingOptions,
    is_public_openai,
    openai_ready,
    parse_options,
)
from lceval.models.base import Backend, GenerationConfig, error_response
from lceval.models.prompts import context_text, messages
from lceval.models.thinking import cut_at_stop, markers_from_option, split

MAX_STOP = 4
"""The OpenAI API accepts at most 4 stop strings; further ones are applied locally."""
ENDPOINT: Final = "/v1/chat/completions"

__all__ = ["PUBLIC_BASE_URL", "OpenAIBackend", "is_public_openai"]


class OpenAIBackend(Backend):
    """Any OpenAI-compatible chat-completions endpoint answering Samples.

    Args:
        model: the served model name (``"gpt-4o-mini"``, vLLM's ``--served-model-name``).
        options: :class:`lceval.models.backends.OpenAIOptions` (declared there with their
            meaning), or the same as keywords (``given``). The generation config's
            ``max_thinking_tokens`` is added to each sample's budget (``max_tokens`` covers
            thinking and answer on these servers).

    Thinking comes from the message's ``reasoning_content`` / ``reasoning`` field, else the content
    split at ``think_end``; its tokens from ``usage.completion_tokens_details.reasoning_tokens``,
    else counted with lceval's tiktoken encoding. An ``assistant_prefix`` is sent as a final
    assistant message (continued by vLLM servers: ``continue_final_message``).

    Raises:
        LcevalError: no model name, a bad option, or no key for the public API.
    """

    def __init__(
        self, model: str | None, options: OpenAIOptions | None = None, **given: Any
    ) -> None:
        from openai import OpenAI  # heavy: openai, only when the backend is used

        o = options if options is not None else cast(OpenAIOptions, parse_options("openai", given))
        url, key = openai_ready(model, o)
        self.base_url = without_credentials(url)
        """The endpoint as recorded and shown: without a ``user:password@`` part."""
        self.name, self.options = cast(str, model), o
        self.markers = markers_from_option(o.think_end) if o.think_end is not None else None
        self.public = is_public_openai(self.base_url)
        if key and _plain_http_to_remote(self.base_url):
            warnings.warn(
                f"sending {o.api_key_env} over plain http to {self.base_url}", stacklevel=2
            )
        if o.batch:
            self.call_size = 100_000  # the whole run in one batch (lceval.run.inference)
        self.run_dir: Path | None = None
        """The run folder holding ``batches.json`` (set by inference; None: the working dir)."""
        self.client = OpenAI(
            api_key=key or "EMPTY",
            base_url=url,
            max_retries=o.max_retries,
            timeout=o.timeout,
        )

    def info(self) -> dict[str, Any]:
        """Provenance for run.json: backend, served model name and endpoint (never the key)."""
        import openai  # heavy: openai (loaded by __init__)

        out = {
            "backend": "openai",
            "model": self.name,
            "base_url": self.base_url,
            "public_api": self.public,
            "openai": openai.__version__,
        }
        return {**out, **self.cache_fields}

    @property
    def cache_fields(self) -> dict[str, Any]:
        """The thinking options when set (they change the answers); empty otherwise, so runs
        without them keep their cache keys."""
        think = self.options.model_dump(include=set(ThinkingOptions.model_fields))
        return {"thinking": think} if any(v is not None for v in think.values()) else {}

    def close(self) -> None:
        """Close the HTTP client."""
        self.client.close()

    def request(
        self, sample: Sample, contexts: Mapping[str, Context], config: GenerationConfig
    ) -> dict[str, Any]:
        """The chat-completions request body for ``sample`` (model, messages, sampling).

        Raises:
            LcevalError: the sample's context is unknown or its budget is < 1.
        """
        budget = config.budget(sample)
        if budget < 1:
            raise LcevalError(f"sample {sample.id}: new-token budget must be >= 1, got {budget}")
        budget += config.max_thinking_tokens or 0
        msgs: list[dict[str, str]] = messages(sample, context_text(sample, contexts))
        body: dict[str, Any] = {"model": self.name, "messages": msgs, "n": 1, "seed": config.seed}
        body["temperature"] = config.temperature
        if config.temperature > 0:
            body["top_p"] = config.top_p
        body["max_completion_tokens" if self.public else "max_tokens"] = budget
        if stop := config.stops(sample):  # an empty one (refused by servers) left out
            body["stop"] = list(stop[:MAX_STOP])
        extra = dict(config.extra)
        if self.options.enable_thinking is not None:
            kwargs = dict(extra.get("chat_template_kwargs") or {})
            extra["chat_template_kwargs"] = {
                **kwargs,
                "enable_thinking": self.options.enable_thinking,
            }
        if sample.assistant_prefix:
            msgs.append({"role": "assistant", "content": sample.assistant_prefix})
            if not self.public:
                extra.update(continue_final_message=True, add_generation_prompt=False)
        if extra:
            body["extra_body"] = extra
        return body

    def generate(
        self,
        samples: Sequence[Sample],
        contexts: Mapping[str, Context],
        config: GenerationConfig,
    ) -> list[Response]:
        """Answer ``samples`` concurrently: one Response each, in order.

        ``config.extra`` goes into the request body (vLLM's ``top_k``, ``repetition_penalty``, ...).

        Raises:
            LcevalError: the server rejects the key or does not know the model.
        """
        if self.options.batch and samples:
            return self._batch(samples, contexts, config)
        workers = max(1, min(self.options.concurrency, len(samples)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(lambda s: self._answer(s, contexts, config), samples))

    def _refused(self, exc: Exception) -> LcevalError:
        return LcevalError(f"{self.base_url} refused the API key: {self._one_line(exc)}")

    def _answer(
        self, sample: Sample, contexts: Mapping[str, Context], config: GenerationConfig
    ) -> Response:
        import openai  # heavy: openai (loaded by __init__)

        t0 = time.perf_counter()
        try:
            body = self.request(sample, contexts, config)
            try:
                completion = self.client.chat.completions.create(**body)
            except ValueError as exc:  # a 200 whose JSON body does not parse (JSONDecodeError)
                raise MalformedReply(f"the server's reply: {exc}") from None
            return self._response(sample, completion, config, time.perf_counter() - t0)
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise self._refused(exc) from None
        except openai.NotFoundError as exc:
            raise LcevalError(
                f"{self.base_url} has no model {self.name!r}: {self._one_line(exc)}"
            ) from None
        except (
            LcevalError,
            openai.APIError,
            MalformedReply,
            ValueError,
            TypeError,
            AttributeError,
        ) as e:
            # retries spent, or whatever a hostile reply holds: the sample's error, not the run's
            return self._error(sample, config, e)

    def _batch(
        self, samples: Sequence[Sample], contexts: Mapping[str, Context], config: GenerationConfig
    ) -> list[Response]:
        """Answer ``samples`` as one Batch API batch (module docstring), resuming a recorded one."""
        import openai  # heavy: openai (loaded by __init__)

        out: dict[str, Response] = {}
        lines = []
        for s in samples:
            try:
                body = self.request(s, contexts, config)
            except LcevalError as exc:
                out[s.id] = self._error(s, config, exc)
                continue
            body.update(body.pop("extra_body", {}))
            lines.append({"custom_id": s.id, "method": "POST", "url": ENDPOINT, "body": body})
        if not lines:
            return [out[s.id] for s in samples]
        data = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode()
        key = hashlib.sha256(self.base_url.encode() + b"\n" + data).hexdigest()[:16]
        ledger = (self.run_dir or Path(".")) / "batches.json"
        t0 = time.perf_counter()
        got: dict[str, Any] = {}
        try:
            batch_id = _read_ledger(ledger).get(key)
            if batch_id is None:
                up = self.client.files.create(file=("batch.jsonl", data), purpose="batch")
                batch_id = self.client.batches.create(
                    input_file_id=up.id, endpoint=ENDPOINT, completion_window="24h"
                ).id
                _record_batch(ledger, key, batch_id)
            while (b := self.client.batches.retrieve(batch_id)).status != "completed":
                if b.status in ("failed", "expired", "cancelled"):
                    _record_batch(ledger, key, None)
                    why = (
                        "; ".join(e.message or "" for e in b.errors.data or []) if b.errors else ""
                    )
                    raise MalformedReply(f"batch {batch_id} {b.status}{': ' + why if why else ''}")
                time.sleep(self.options.batch_poll_s)
            for fid in (b.output_file_id, b.error_file_id):
                for line in self.client.files.content(fid).text.splitlines() if fid else ():
                    rec = json.loads(line) if line.strip() else None
                    if isinstance(rec, dict) and isinstance(rec.get("custom_id"), str):
                        got.setdefault(rec["custom_id"], rec)
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise self._refused(exc) from None
        except (openai.APIError, MalformedReply, ValueError) as exc:
            return [out.get(s.id) or self._error(s, config, exc) for s in samples]
        latency = time.perf_counter() - t0
        return [
            out.get(s.id) or self._batch_answer(s, got.get(s.id), config, latency) for s in samples
        ]

    def _batch_answer(
        self, sample: Sample, rec: dict[str, Any] | None, config: GenerationConfig, latency: float
    ) -> Response:
        """One sample's Response from its line of a batch's output or error file."""
        from openai.types.chat import ChatCompletion  # heavy: openai (loaded by __init__)

        try:
            if rec is None:
                raise MalformedReply("the batch's output has no line for this sample")
            res = rec.get("response") or {}
            if rec.get("error") or res.get("status_code") != 200:
                why = rec.get("error") or (res.get("body") or {}).get("error") or res
                raise MalformedReply(f"the batch answered {res.get('status_code')}: {why}")
            completion = ChatCompletion.model_validate(res.get("body"))
            return self._response(sample, completion, config, latency)
        except (MalformedReply, ValueError, TypeError, AttributeError) as exc:
            return self._error(sample, config, exc)

    def _one_line(self, exc: BaseException) -> str:
        # the key and base_url's credentials redacted before the cut; then any bearer token
        return redact(one_line(exc), patterns=True)

    def _error(self, sample: Sample, config: GenerationConfig, exc: BaseException) -> Response:
        """An error Response whose message has the API key and any bearer token redacted."""
        r = error_response(sample, self.name, config, exc)
        return dataclasses.replace(r, error=redact(r.error or "", patterns=True))

    def _response(
        self, sample: Sample, completion: Any, config: GenerationConfig, latency: float
    ) -> Response:
        """The Response of a completion (a choice lceval cannot read: MalformedReply)."""
        choice, text = _choice(completion)
        reason = _finish_reason(getattr(choice, "finish_reason", None))
        usage = getattr(completion, "usage", None)
        reasoning, n_think, unfinished, text = self._thinking(choice, usage, text, config)
        if unfinished:  # no answer; the server's finish kept (EOS inside the thinking: stop)
            text = ""
        text, reason = cut_at_stop(text, config.stops(sample), reason)
        # a server may echo the key: stored as "[redacted]", saying so
        text, reasoning = redact(text), redact(reasoning) if reasoning is not None else None
        return Response(
            sample_id=sample.id,
            model=self.name,
            text=text,
            config_hash=config.hash(),
            prompt_tokens=token_count(getattr(usage, "prompt_tokens", None)),
            completion_tokens=token_count(getattr(usage, "completion_tokens", None)),
            finish_reason=reason,
            latency_s=latency,
            reasoning=reasoning,
            reasoning_tokens=n_think,
            thinking_unfinished=unfinished,
        )

    def _thinking(
        self, choice: Any, usage: Any, content: str, config: GenerationConfig
    ) -> tuple[str | None, int, bool, str]:
        """(thinking, its tokens, no answer, answer) of one choice (class docstring)."""
        fields = (getattr(choice.message, k, None) for k in ("reasoning_content", "reasoning"))
        reasoning = next((v for v in fields if isinstance(v, str) and v), None)
        unfinished, answer = False, content
        if reasoning is not None:
            unfinished = not content.strip() and getattr(choice, "finish_reason", None) == "length"
        elif self.markers is not None:
            sp = split(content, self.markers.end, self.markers.start)
            reasoning, unfinished, answer = sp.reasoning, sp.unfinished, sp.answer
        if reasoning is None:
            return None, 0, False, content
        details = getattr(usage, "completion_tokens_details", None)
        n = token_count(getattr(details, "reasoning_tokens", None)) or count_tokens(reasoning)
        limit = config.max_thinking_tokens
        if limit is not None and n > limit:  # counted up to the budget, as the local engines
            return reasoning, limit, True, answer
        return reasoning, n, unfinished, answer


MAX_TOKENS = 10**9
"""Largest token count taken from ``usage``; any other count reads as 0 (unknown)."""


class MalformedReply(Exception):
    """A 200 reply lceval cannot store as a chat completion (the sample's error Response)."""


def _choice(completion: Any) -> tuple[Any, str]:
    """(first choice, its content as text: text parts joined, null as "").

    Raises:
        MalformedReply: not a completion, no choices, no message, or content that is not text.
    """
    if not hasattr(completion, "choices"):
        body = one_line(repr(completion), 120)
        raise MalformedReply(f"the server's reply is not a chat completion: {body}")
    choices = completion.choices
    if not isinstance(choices, list) or not choices:
        raise MalformedReply(f"the server's reply has no choices (choices: {choices!r:.40})")
    message = getattr(choices[0], "message", None)
    if message is None:
        raise MalformedReply("the server's reply has a choice without a message")
    content = getattr(message, "content", None)
    if isinstance(content, list) and all(
        isinstance(p, dict) and p.get("type", "text") == "text" and isinstance(p.get("text"), str)
        for p in content
    ):
        content = "".join(p["text"] for p in content)
    if content is not None and not isinstance(content, str):
        raise MalformedReply(
            f"the server's reply has content of type {type(content).__name__}, not text: "
            f"{one_line(repr(content), 80)}"
        )
    return choices[0], content or ""


def _finish_reason(value: object) -> FinishReason:
    """``length`` and ``content_filter`` kept; any other finish (``tool_calls``, null) ``stop``."""
    return cast(FinishReason, value) if value in ("length", "content_filter") else "stop"


def token_count(value: object) -> int:
    """A server-reported token count as an int in ``0..MAX_TOKENS``; anything else 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0
    return int(value) if value == int(value) and 0 <= value <= MAX_TOKENS else 0


def _plain_http_to_remote(base_url: str) -> bool:
    """True for an ``http://`` URL whose host is not on this machine (loopback)."""
    u = urlparse(base_url)
    if u.scheme != "http" or u.hostname == "localhost":
        return False
    try:
        return not ipaddress.ip_address(u.hostname or "").is_loopback
    except ValueError:
        return True


def _read_ledger(path: Path) -> dict[str, str]:
    """The batches a run submitted: request hash -> batch id ({} when unreadable)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def _record_batch(path: Path, key: str, batch_id: str | None) -> None:
    """Set ``key``'s batch id in the ledger (None: drop it), atomically."""
    ledger = {k: v for k, v in _read_ledger(path).items() if k != key}
    with atomic_open(path) as f:
        f.write(json.dumps(ledger if batch_id is None else {**ledger, key: batch_id}, indent=1))
