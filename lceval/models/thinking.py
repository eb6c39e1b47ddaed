"""Reasoning models: the thinking kept apart from the answer (``Response.reasoning`` and
``Response.text``, the one scorers read), budgeted, never scored.

Markers come from the model, never a list of names: the chat template's own (a template that
strips earlier thinking with ``content.split('</think>')``), the ``think_end`` option
(lm-evaluation-harness's ``think_end_token``), vLLM's reasoning parser (``reasoning_parser``), or
an OpenAI-compatible server's ``reasoning_content`` / ``reasoning`` fields. :func:`split`: a block
opened by the prompt or by the output's start runs to the first end marker; blocks right after it
are thinking too; the rest, leading newlines removed, is the answer; a block never closed gives
no answer. A thinking model gets ``max_thinking_tokens`` (default 32768, HELMET's ``--thinking``)
beside the paper's answer budget; thinking past it gives no answer, scored NaN with the reason
``"no answer after N thinking tokens"``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from lceval.core.errors import LcevalError
from lceval.core.records import FinishReason

DEFAULT_THINKING_TOKENS = 32768
"""Thinking budget in tokens when ``max_thinking_tokens`` is not given."""

_SPLIT_ON = re.compile(r"""\.split\(\s*(['"])(</[^'"<>]{1,40}>)\1\s*\)""")
"""A template splitting message content on a closing tag (``.split('</think>')``)."""

S = TypeVar("S", str, Sequence[int])


@dataclass(frozen=True)
class ThinkMarkers:
    """A model's thinking delimiters."""

    end: str
    start: str | None
    """None: not known; the output is split at ``end`` alone."""
    source: str
    """Where they were read: ``chat template``, ``think_end option``, ``vLLM <parser>``."""


@dataclass(frozen=True)
class Split:
    """The thinking and the answer of one output (text or token ids)."""

    reasoning: Any
    """The thinking (markers removed; blocks joined), or None when the output has none."""
    answer: Any
    """What follows the thinking (empty when :attr:`unfinished`: a block never closed)."""
    unfinished: bool
    blocks: tuple[Any, ...] = ()
    """The thinking blocks one by one."""


def _template_text(chat_template: Any) -> str:
    """A tokenizer's ``chat_template`` (a string, a dict of named ones, or None) as one string."""
    if isinstance(chat_template, dict):
        return "\n".join(str(v) for v in chat_template.values())
    return chat_template if isinstance(chat_template, str) else ""


def markers_from_template(chat_template: Any) -> ThinkMarkers | None:
    """The think markers a chat template declares by splitting earlier turns' content on a
    closing tag (Qwen3, DeepSeek-R1: ``content.split('</think>')``), or None; the start marker
    is the matching opening tag when the template writes it."""
    text = _template_text(chat_template)
    m = _SPLIT_ON.search(text)
    if m is None:
        return None
    end = m.group(2)
    start = "<" + end[2:]
    return ThinkMarkers(end, start if start in text else None, "chat template")


def markers_from_option(think_end: str) -> ThinkMarkers:
    """The markers of a declared ``think_end`` (``</name>`` implies the start ``<name>``)."""
    start = "<" + think_end[2:] if think_end.startswith("</") and think_end.endswith(">") else None
    return ThinkMarkers(think_end, start, "think_end option")


def _find(seq: Any, marker: Any, at: int) -> int:
    """Index of ``marker`` in ``seq`` at or after ``at`` (-1: absent); strings or id lists."""
    if isinstance(seq, str):
        return seq.find(marker, at)
    n, want = len(marker), list(marker)
    hits = (i for i in range(at, len(seq) - n + 1) if n and list(seq[i : i + n]) == want)
    return next(hits, -1)


def _skip(seq: Any, at: int, blank: Callable[[Any], bool]) -> int:
    """The first index at or after ``at`` whose item is not blank."""
    while at < len(seq) and blank(seq[at]):
        at += 1
    return at


def _starts(seq: Any, marker: Any, at: int) -> bool:
    return bool(marker) and list(seq[at : at + len(marker)]) == list(marker)


def split(
    output: S,
    end: S,
    start: S | None = None,
    *,
    opened: bool = False,
    blank: Callable[[Any], bool] | None = None,
) -> Split:
    """Split generated text (string markers) or token ids (id-sequence markers) into thinking
    and answer by the module's rules.

    Args:
        start: None: unknown; a prompt-opened block or an ``end`` in the output marks thinking.
        opened: the prompt ends inside an open thinking block.
        blank: items skipped between blocks and before the answer (default: whitespace for
            text, none for ids).
    """
    is_text = isinstance(output, str)
    if blank is None:
        blank = (lambda c: c.isspace()) if is_text else (lambda _: False)
    at = 0
    lead = _skip(output, 0, blank)
    if not opened:
        if start is not None and _starts(output, start, lead):
            at = lead + len(start)
        elif start is None and _find(output, end, 0) >= 0:
            at = 0  # a declared end without a known start: everything before it is thinking
        else:
            return Split(None, output, False)
    pieces: list[Any] = []
    while True:
        j = _find(output, end, at)
        if j < 0:
            pieces.append(output[at:])
            return Split(_join(pieces, is_text), output[:0], True, tuple(pieces))
        pieces.append(output[at:j])
        at = j + len(end)
        nxt = _skip(output, at, blank)
        if start is not None and _starts(output, start, nxt):
            at = nxt + len(start)
            continue
        break
    rest = output[at:]
    if is_text:
        rest = rest.lstrip("\n")  # type: ignore[union-attr,attr-defined]
    return Split(_join(pieces, is_text), rest, False, tuple(pieces))


def _join(pieces: list[Any], is_text: bool) -> Any:
    if is_text:
        return "\n".join(p.strip("\n") for p in pieces)
    out: list[int] = []
    for p in pieces:
        out.extend(p)
    return out


def prompt_opens(prompt: str, markers: ThinkMarkers | None) -> bool:
    """Whether a rendered prompt ends inside an open block (DeepSeek-R1's ``<think>\\n``)."""
    return (
        markers is not None
        and markers.start is not None
        and prompt.rstrip().endswith(markers.start)
    )


@dataclass(frozen=True)
class Thinking:
    """A local engine's thinking settings (:meth:`from_tokenizer`); ``markers=None``: a model
    that does not think, which changes nothing (no cache field, budget or split)."""

    markers: ThinkMarkers | None
    enable_thinking: bool | None
    """The chat template switch (None: the template's default)."""
    max_thinking_tokens: int
    """Thinking budget in the model's tokens."""

    @classmethod
    def from_tokenizer(
        cls,
        tokenizer: Any,
        enable_thinking: bool | None = None,
        max_thinking_tokens: int | None = None,
        think_end: str | None = None,
        reasoning_parser: str | None = None,
    ) -> Thinking:
        """Markers from ``think_end``, else vLLM's ``reasoning_parser`` when it gives them, else
        the chat template. The options come checked (``backends.ThinkingOptions``).

        Raises:
            LcevalError: ``enable_thinking`` for a model whose template has no thinking switch.
        """
        template = getattr(tokenizer, "chat_template", None)
        markers = None if think_end is None else markers_from_option(think_end)
        if markers is None and reasoning_parser:
            markers = markers_from_vllm_parser(reasoning_parser, tokenizer)
        markers = markers or markers_from_template(template)
        if enable_thinking is not None and "enable_thinking" not in _template_text(template):
            raise LcevalError(
                f"enable_thinking={enable_thinking}: the chat template of "
                f"{getattr(tokenizer, 'name_or_path', 'this model')} has no enable_thinking switch"
            )
        budget = DEFAULT_THINKING_TOKENS if max_thinking_tokens is None else max_thinking_tokens
        return cls(markers, enable_thinking, budget)

    @property
    def active(self) -> bool:
        """The model may think: markers known and thinking not switched off."""
        return self.markers is not None and self.enable_thinking is not False

    def template_kwargs(self) -> dict[str, Any]:
        """Extra ``apply_chat_template`` arguments (``enable_thinking`` when set)."""
        return {} if self.enable_thinking is None else {"enable_thinking": self.enable_thinking}

    def extra_budget(self) -> int:
        """Tokens added to each sample's answer budget for thinking (0 when not active)."""
        return self.max_thinking_tokens if self.active else 0

    def cache_field(self) -> dict[str, Any] | None:
        """The response-cache-key entry: switch, budget and end marker (None: no thinking)."""
        r = self.record()
        keyed = ("enable_thinking", "max_thinking_tokens", "think_end")
        return None if r is None else {k: r[k] for k in keyed}

    def record(self) -> dict[str, Any] | None:
        """For run.json (``info()``): the markers, where they came from, switch and budget."""
        if self.markers is None and self.enable_thinking is None:
            return None
        m = self.markers
        return {
            "think_start": m.start if m else None,
            "think_end": m.end if m else None,
            "markers_from": m.source if m else None,
            "enable_thinking": self.enable_thinking,
            "max_thinking_tokens": self.max_thinking_tokens if self.active else 0,
        }

    def answer(
        self,
        tokenizer: Any,
        ids: Sequence[int],
        prompt: Any,
        stop: Sequence[str],
        reason: FinishReason,
    ) -> tuple[str, str | None, int, bool, FinishReason]:
        """A local engine's answer from its generated ids (cut at EOS / budget).

        Args:
            prompt: the ``RenderedPrompt`` (an open block at its end counts; its
                ``answer_tokens`` is the paper's answer budget).
            stop: the sample's stop strings (the answer is cut at the first).
            reason: how generation ended (``stop`` or ``length``).

        Returns:
            (answer, empty when unfinished; thinking or None; thinking tokens; unfinished;
            finish reason, ``length`` when the answer was cut to its budget).
        """
        reasoning, n, answer, unfinished = self.split_ids(tokenizer, ids, prompt.text)
        if len(answer) > prompt.answer_tokens:  # the answer keeps the paper's budget
            answer, reason = answer[: prompt.answer_tokens], "length"
        text = str(tokenizer.decode(answer, skip_special_tokens=True))
        text, reason = cut_at_stop(text, stop, reason)
        # unfinished thinking keeps how generation ended: EOS inside it is "stop"
        return ("" if unfinished else text), reasoning, n, unfinished, reason

    def split_ids(
        self, tokenizer: Any, ids: Sequence[int], prompt: str
    ) -> tuple[str | None, int, list[int], bool]:
        """(thinking or None, thinking tokens, answer ids, unfinished) of generated ids; the
        answer is empty when unfinished (no end within ``max_thinking_tokens``); thinking past
        the budget is cut to it (text and count)."""
        m = self.markers
        if m is None:
            return None, 0, list(ids), False
        opened = prompt_opens(prompt, m)

        def encode(text: str) -> list[int]:
            return list(tokenizer(text, add_special_tokens=False)["input_ids"])

        end = encode(m.end)
        start = encode(m.start) if m.start else None
        if len(end) == 1 and (start is None or len(start) == 1):  # added tokens: split the ids
            nl = set(encode("\n")) | set(encode("\n\n"))
            sp = split(list(ids), end, start, opened=opened, blank=lambda t: t in nl)
            if sp.reasoning is None:
                return None, 0, list(ids), False
            total = len(sp.reasoning)
            blocks, left = [], self.max_thinking_tokens  # the thinking within the budget
            for block in sp.blocks:
                if left > 0:
                    blocks.append(list(block)[:left])
                left -= len(block)
            text = "\n".join(  # blocks decoded apart: "a" + "b" never runs together as "ab"
                str(tokenizer.decode(b, skip_special_tokens=True)).strip("\n") for b in blocks
            )
            answer = list(sp.answer)
            while answer and answer[0] in nl:
                answer.pop(0)
        else:  # markers spread over several tokens: split the text, count by re-encoding
            raw = str(tokenizer.decode(list(ids), skip_special_tokens=False))
            sp = split(raw, m.end, m.start, opened=opened)
            if sp.reasoning is None:
                return None, 0, list(ids), False
            text, total = sp.reasoning, len(encode(sp.reasoning))
            answer = encode(sp.answer) if sp.answer else []
            if total > self.max_thinking_tokens:  # the thinking within the budget
                cut = encode(text)[: self.max_thinking_tokens]
                text = str(tokenizer.decode(cut, skip_special_tokens=True))
        # past the budget: the thinking and its count are the budget's ("no answer after 64
        # thinking tokens" for a 64-token budget, however far the engine ran on)
        n = min(total, self.max_thinking_tokens)
        unfinished = sp.unfinished or total > self.max_thinking_tokens
        return text, n, ([] if unfinished else answer), unfinished


def cut_at_stop(text: str, stop: Sequence[str], reason: FinishReason) -> tuple[str, FinishReason]:
    """``text`` cut before its first stop string (then ``"stop"``), else as it is."""
    cuts = [j for j in (text.find(s) for s in stop) if j >= 0]
    return (text[: min(cuts)], "stop") if cuts else (text, reason)


def markers_from_vllm_parser(name: str, tokenizer: Any) -> ThinkMarkers | None:
    """The markers of vLLM's reasoning parser ``name`` built over ``tokenizer``
    (``reasoning_start_str`` / ``reasoning_end_str``, or ``start_token`` / ``end_token``); None
    when vLLM or the parser does not give them."""
    try:
        from vllm.reasoning import ReasoningParserManager  # heavy: vLLM engines only

        parser = ReasoningParserManager.get_reasoning_parser(name)(tokenizer)
    except Exception:  # noqa: BLE001 - any failure: the template's markers instead
        return None
    end = getattr(parser, "reasoning_end_str", None) or getattr(parser, "end_token", None)
    start = getattr(parser, "reasoning_start_str", None) or getattr(parser, "start_token", None)
    if not isinstance(end, str) or not end:
        return None
    return ThinkMarkers(end, start if isinstance(start, str) and start else None, f"vLLM {name}")
