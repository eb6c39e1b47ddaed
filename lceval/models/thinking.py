"""Reasoning models: the thinking kept apart from the answer, budgeted, and never scored.

Most instruction models released since 2025 think before they answer: their output opens with a
thinking block (``<think> ... </think>``), or an OpenAI-compatible server returns the thinking in
a separate ``reasoning_content`` / ``reasoning`` field. lceval stores the thinking in
``Response.reasoning`` and the answer alone in ``Response.text``, which every scorer reads.

Where the markers come from (never a list of model names):

* the chat template's own: a template that strips earlier turns' thinking splits the content on
  its end marker (Qwen3 and DeepSeek-R1 templates: ``content.split('</think>')``); that marker,
  and its opening counterpart when the template writes it, are the model's think markers
  (:func:`markers_from_template`);
* the model option ``think_end`` (e.g. ``think_end="</think>"``), the model's declared
  end-of-thinking marker, for a template that does not show one (lm-evaluation-harness's
  ``think_end_token``);
* an OpenAI-compatible server's ``reasoning_content`` / ``reasoning`` message fields.

Rules of the split (:func:`split`): a block opened by the prompt (a template whose generation
prompt ends with the start marker, as DeepSeek-R1's) or by the output's first characters runs to
the first end marker; further blocks right after it are thinking too; what follows is the answer,
newlines before it removed (as the templates do: ``.lstrip('\\n')``). An end marker later in the
answer stays in the answer. A block that never closes gives no answer. A model without declared
markers is left as it is: its output is its answer, ``<think>`` or not.

Budgets: the answer keeps the paper's ``max_new_tokens``; a thinking model gets
``max_thinking_tokens`` more (default :data:`DEFAULT_THINKING_TOKENS`, HELMET's ``--thinking``
budget). A model whose thinking does not end within ``max_thinking_tokens`` gets no answer: its
score is NaN with the reason ``"no answer after N thinking tokens"``
(``Response.thinking_unfinished``), never an empty or partial answer scored.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from lceval.core.errors import LcevalError
from lceval.core.records import FinishReason

DEFAULT_THINKING_TOKENS = 32768
"""Thinking budget in tokens when a thinking model's ``max_thinking_tokens`` is not given (the
32k tokens HELMET's ``--thinking`` adds to the answer budget)."""

_SPLIT_ON = re.compile(r"""\.split\(\s*(['"])(</[^'"<>]{1,40}>)\1\s*\)""")
"""A template splitting message content on a closing tag (``.split('</think>')``)."""

S = TypeVar("S", str, Sequence[int])

_KEYED = ("enable_thinking", "max_thinking_tokens", "think_end")
"""The thinking settings that join the response cache key (:meth:`Thinking.cache_field`)."""


@dataclass(frozen=True)
class ThinkMarkers:
    """A model's thinking delimiters."""

    end: str
    """End-of-thinking marker, e.g. ``</think>``."""
    start: str | None
    """Start marker, e.g. ``<think>`` (None: not known; the output is split at ``end`` alone)."""
    source: str
    """Where they were read: ``chat template`` or ``think_end option``."""


@dataclass(frozen=True)
class Split:
    """The thinking and the answer of one output (text or token ids)."""

    reasoning: Any
    """The thinking (markers removed; blocks joined), or None when the output has none."""
    answer: Any
    """The answer: what follows the thinking (empty when :attr:`unfinished`)."""
    unfinished: bool
    """A thinking block never closed: no answer."""
    blocks: tuple[Any, ...] = ()
    """The thinking blocks one by one (for ids, decoded apart and joined with a newline)."""


def markers_from_template(chat_template: Any) -> ThinkMarkers | None:
    """The think markers a chat template declares, or None.

    A template declares them when it strips thinking from earlier assistant turns by splitting
    on a closing tag (Qwen3, DeepSeek-R1 and their distills: ``content.split('</think>')``); the
    start marker is the matching opening tag when the template writes it.

    Args:
        chat_template: the tokenizer's ``chat_template`` (a string, a dict of named templates,
            or None).
    """
    if isinstance(chat_template, dict):
        chat_template = "\n".join(str(v) for v in chat_template.values())
    if not isinstance(chat_template, str) or not chat_template:
        return None
    m = _SPLIT_ON.search(chat_template)
    if m is None:
        return None
    end = m.group(2)
    start = "<" + end[2:]
    return ThinkMarkers(end, start if start in chat_template else None, "chat template")


def markers_from_option(think_end: str) -> ThinkMarkers:
    """The markers of a declared ``think_end`` (``</name>`` implies the start ``<name>``).

    Raises:
        LcevalError: ``think_end`` is empty or only whitespace.
    """
    if not isinstance(think_end, str) or not think_end.strip():
        raise LcevalError(
            f"think_end must be a non-empty marker such as '</think>', got {think_end!r}"
        )
    end = think_end
    start = "<" + end[2:] if end.startswith("</") and end.endswith(">") else None
    return ThinkMarkers(end, start, "think_end option")


def template_declares_switch(chat_template: Any) -> bool:
    """Whether a chat template reads ``enable_thinking`` (Qwen3's switch)."""
    if isinstance(chat_template, dict):
        chat_template = "\n".join(str(v) for v in chat_template.values())
    return isinstance(chat_template, str) and "enable_thinking" in chat_template


def _find(seq: Any, marker: Any, at: int) -> int:
    """Index of ``marker`` in ``seq`` at or after ``at`` (-1: absent); strings or id lists."""
    if isinstance(seq, str):
        return seq.find(marker, at)
    n = len(marker)
    if n == 0:
        return -1
    first = marker[0]
    for i in range(at, len(seq) - n + 1):
        if seq[i] == first and list(seq[i : i + n]) == list(marker):
            return i
    return -1


def _skip(seq: Any, at: int, blank: Callable[[Any], bool]) -> int:
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
    """Split a model's output into thinking and answer (see the module docstring for the rules).

    Works on text (markers are strings) or on token ids (markers are id sequences).

    Args:
        output: the generated text or token ids.
        end: the end-of-thinking marker.
        start: the start marker (None: unknown; only a prompt-opened block or an ``end`` in the
            output marks thinking).
        opened: the prompt ends inside an open thinking block.
        blank: which items between blocks and before the answer are skipped (default: for text,
            whitespace between blocks and newlines before the answer; for ids, none).

    Returns:
        The :class:`Split`; ``reasoning`` is None when the output holds no thinking.
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
    """Whether a rendered prompt ends inside an open thinking block (its generation prompt ends
    with the start marker, as DeepSeek-R1's template writes ``<think>\\n``)."""
    if markers is None or markers.start is None:
        return False
    tail = prompt.rstrip()
    return tail.endswith(markers.start)


@dataclass(frozen=True)
class Thinking:
    """A local engine's thinking settings, read from its tokenizer and options.

    Built by :meth:`from_tokenizer`; a model without markers gets ``markers=None`` and changes
    nothing (no cache field, no budget, no split).
    """

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
    ) -> Thinking:
        """Markers from ``think_end`` when given, else from the tokenizer's chat template. The
        options come checked (``lceval.models.backends.ThinkingOptions``).

        Raises:
            LcevalError: ``enable_thinking`` for a model whose template has no thinking switch.
        """
        template = getattr(tokenizer, "chat_template", None)
        markers = (
            markers_from_option(think_end)
            if think_end is not None
            else markers_from_template(template)
        )
        if enable_thinking is not None and not template_declares_switch(template):
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
        """What joins the response cache key: None for a model without thinking (keys as
        before), else the switch, the budget and the end marker."""
        r = self.record()
        return None if r is None else {k: r[k] for k in _KEYED}

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
        """A local engine's answer from its generated ids (both engines call this).

        Args:
            tokenizer: the model's tokenizer.
            ids: the generated ids (cut at EOS / budget).
            prompt: the ``lceval.models.prompts.RenderedPrompt`` (its text: an open block at its
                end counts; its ``answer_tokens``: the paper's answer budget).
            stop: the sample's stop strings (the answer is cut at the first).
            reason: how generation ended (``stop`` or ``length``).

        Returns:
            (answer text, empty when unfinished; thinking text or None; thinking tokens;
            unfinished; finish reason: ``length`` when the answer was cut to its budget).
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
        """Split generated token ids of a local engine.

        Args:
            tokenizer: the model's tokenizer (markers are encoded with it).
            ids: the generated ids (cut at EOS / stop / budget).
            prompt: the rendered prompt (an open block at its end counts).

        Returns:
            (thinking text or None, thinking tokens, answer ids (empty when unfinished; the
            caller cuts them to the answer budget), unfinished: no end within
            ``max_thinking_tokens``). Thinking past the budget is cut to it (text and count);
            several blocks are joined with a newline.
        """
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
    """The markers of vLLM's reasoning parser ``name`` (the ``reasoning_parser`` engine option),
    read from the parser built over the model's tokenizer (``reasoning_start_str`` /
    ``reasoning_end_str``, or ``start_token`` / ``end_token``); None when vLLM or the parser
    does not give them (the chat template's markers are used instead)."""
    try:
        from vllm.reasoning import ReasoningParserManager

        parser = ReasoningParserManager.get_reasoning_parser(name)(tokenizer)
    except Exception:  # noqa: BLE001 - any failure: fall back to the template's markers
        return None
    end = getattr(parser, "reasoning_end_str", None) or getattr(parser, "end_token", None)
    start = getattr(parser, "reasoning_start_str", None) or getattr(parser, "start_token", None)
    if not isinstance(end, str) or not end:
        return None
    return ThinkMarkers(end, start if isinstance(start, str) and start else None, f"vLLM {name}")


def check_options(enable_thinking: Any, max_thinking_tokens: Any, think_end: Any) -> None:
    """Raise LcevalError for a bad thinking option (one line naming it)."""
    if enable_thinking is not None and not isinstance(enable_thinking, bool):
        raise LcevalError(f"enable_thinking must be true or false, got {enable_thinking!r}")
    if max_thinking_tokens is not None and (
        isinstance(max_thinking_tokens, bool)
        or not isinstance(max_thinking_tokens, int)
        or max_thinking_tokens < 1
    ):
        raise LcevalError(
            f"max_thinking_tokens must be an integer >= 1, got {max_thinking_tokens!r}"
        )
    if think_end is not None:
        markers_from_option(think_end)
