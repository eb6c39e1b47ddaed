"""Reasoning models: the thinking kept apart from the answer (``Response.reasoning``; scorers read
``Response.text``), budgeted (``max_thinking_tokens``, default 32768 as HELMET's ``--thinking``;
past it: no answer, scored NaN). Markers come from the ``think_end`` option (lm-evaluation-harness's
``think_end_token``), vLLM's reasoning parser or the chat template, never from model names.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from lceval.core.errors import LcevalError
from lceval.core.records import FinishReason
from lceval.params import ThinkingBudget

DEFAULT_THINKING_TOKENS = 32768  # the thinking budget when max_thinking_tokens is not given
_SPLIT_ON = re.compile(r"""\.split\(\s*(['"])(</[^'"<>]{1,40}>)\1\s*\)""")  # .split('</think>')

S = TypeVar("S", str, Sequence[int])


@dataclass(frozen=True)
class ThinkMarkers:
    """A model's thinking delimiters (``start`` None: unknown, the output splits at ``end``)
    and where they were read (``chat template``, ``think_end option``, ``vLLM <parser>``)."""

    end: str
    start: str | None
    source: str


@dataclass(frozen=True)
class Split:
    """An output (text or ids) split: the thinking (blocks joined; None: none), the answer after
    it (empty when ``unfinished``: a block never closed) and the thinking blocks one by one."""

    reasoning: Any
    answer: Any
    unfinished: bool
    blocks: tuple[Any, ...] = ()


def markers_from_template(chat_template: Any) -> ThinkMarkers | None:
    """The markers a chat template (a string, a dict of named ones, or None) declares by splitting
    earlier turns on a closing tag (Qwen3, DeepSeek-R1); the start when the template writes it."""
    if isinstance(chat_template, dict):
        chat_template = "\n".join(map(str, chat_template.values()))
    text = chat_template if isinstance(chat_template, str) else ""
    if (m := _SPLIT_ON.search(text)) is None:
        return None
    start = "<" + m.group(2)[2:]
    return ThinkMarkers(m.group(2), start if start in text else None, "chat template")


def markers_from_option(think_end: str) -> ThinkMarkers:
    """The markers of a declared ``think_end`` (``</name>`` implies the start ``<name>``)."""
    start = "<" + think_end[2:] if think_end.startswith("</") and think_end.endswith(">") else None
    return ThinkMarkers(think_end, start, "think_end option")


def markers_from_vllm_parser(name: str, tokenizer: Any) -> ThinkMarkers | None:
    """The markers of vLLM's reasoning parser ``name`` (``reasoning_start_str`` /
    ``reasoning_end_str``, or ``start_token`` / ``end_token``); None where it gives none."""
    try:
        from vllm.reasoning import ReasoningParserManager  # engine: vllm

        parser = ReasoningParserManager.get_reasoning_parser(name)(tokenizer)
    except Exception:  # noqa: BLE001 - any failure: the template's markers instead
        return None
    end = getattr(parser, "reasoning_end_str", None) or getattr(parser, "end_token", None)
    start = getattr(parser, "reasoning_start_str", None) or getattr(parser, "start_token", None)
    if not isinstance(end, str) or not end:
        return None
    return ThinkMarkers(end, start if isinstance(start, str) and start else None, f"vLLM {name}")


def _find(seq: Any, marker: Any, at: int) -> int:
    if isinstance(seq, str):
        return seq.find(marker, at)
    n, want = len(marker), list(marker)
    return next((i for i in range(at, len(seq) - n + 1) if list(seq[i : i + n]) == want), -1)


def split(
    output: S,
    end: S,
    start: S | None = None,
    *,
    opened: bool = False,
    blank: Callable[[Any], bool] | None = None,
) -> Split:
    """Split generated text (string markers) or token ids (id-list markers) into thinking and
    answer: a block opened by the prompt (``opened``) or at the output's start (after ``blank``
    items: whitespace for text, none for ids) runs to the first ``end``; blocks right after it are
    thinking too; the rest (leading newlines dropped from text) is the answer. With ``start``
    None, everything before an ``end`` is thinking."""
    is_text = isinstance(output, str)
    if blank is None:
        blank = (lambda c: c.isspace()) if is_text else (lambda _: False)

    def skip(at: int) -> int:
        while at < len(output) and blank(output[at]):
            at += 1
        return at

    def starts(at: int) -> bool:
        return bool(start) and list(output[at : at + len(start or "")]) == list(start or "")

    at = 0
    if not opened:
        if starts(skip(0)):
            at = skip(0) + len(start or "")
        elif start is not None or _find(output, end, 0) < 0:
            return Split(None, output, False)
    blocks: list[Any] = []
    while (j := _find(output, end, at)) >= 0:
        blocks.append(output[at:j])
        at = j + len(end)
        if not starts(skip(at)):
            rest = output[at:]
            answer = rest.lstrip("\n") if isinstance(rest, str) else rest
            return Split(_join(blocks, is_text), answer, False, tuple(blocks))
        at = skip(at) + len(start or "")
    blocks.append(output[at:])
    return Split(_join(blocks, is_text), output[:0], True, tuple(blocks))


def _join(blocks: list[Any], is_text: bool) -> Any:
    return "\n".join(b.strip("\n") for b in blocks) if is_text else [t for b in blocks for t in b]


def prompt_opens(prompt: str, markers: ThinkMarkers | None) -> bool:
    """Whether a rendered prompt ends inside an open block (DeepSeek-R1's ``<think>\\n``)."""
    return bool(markers and markers.start and prompt.rstrip().endswith(markers.start))


def cut_at_stop(
    text: str, strings: Sequence[str], reason: FinishReason
) -> tuple[str, FinishReason]:
    """``text`` cut before its first stop string (then ``"stop"``), else as it is; an empty stop
    string, which would match before every answer, is ignored (as :func:`.render_sample` drops
    it from the engines' stop strings)."""
    cuts = [j for j in (text.find(s) for s in strings if s) if j >= 0]
    return (text[: min(cuts)], "stop") if cuts else (text, reason)


@dataclass(frozen=True)
class Thinking:
    """A local engine's thinking settings; ``markers=None``: a model that does not think, which
    changes nothing (no cache field, budget or split). The budget is the generation config's
    (:meth:`budget`)."""

    markers: ThinkMarkers | None
    enable_thinking: bool | None  # the chat template switch (None: the template's default)

    @classmethod
    def from_tokenizer(
        cls,
        tokenizer: Any,
        enable_thinking: bool | None = None,
        think_end: str | None = None,
        reasoning_parser: str | None = None,
    ) -> Thinking:
        """Markers from ``think_end``, else vLLM's ``reasoning_parser``, else the chat template
        (options checked by ``backends.ThinkingOptions``).

        Raises:
            LcevalError: ``enable_thinking`` for a model whose template has no thinking switch.
        """
        template = getattr(tokenizer, "chat_template", None)
        markers = markers_from_option(think_end) if think_end is not None else None
        if markers is None and reasoning_parser:
            markers = markers_from_vllm_parser(reasoning_parser, tokenizer)
        markers = markers or markers_from_template(template)
        if enable_thinking is not None and "enable_thinking" not in str(template or ""):
            raise LcevalError(
                f"enable_thinking={enable_thinking}: the chat template of "
                f"{getattr(tokenizer, 'name_or_path', 'this model')} has no enable_thinking switch"
            )
        return cls(markers, enable_thinking)

    @property
    def active(self) -> bool:
        """The model may think: markers known and thinking not switched off."""
        return self.markers is not None and self.enable_thinking is not False

    def template_kwargs(self) -> dict[str, Any]:
        """Extra ``apply_chat_template`` arguments (``enable_thinking`` when set)."""
        return {} if self.enable_thinking is None else {"enable_thinking": self.enable_thinking}

    @staticmethod
    def budget(config: ThinkingBudget) -> int:
        """The thinking budget in tokens under ``config`` (the generation config): its
        ``max_thinking_tokens``, else :data:`DEFAULT_THINKING_TOKENS`."""
        given = config.max_thinking_tokens
        return DEFAULT_THINKING_TOKENS if given is None else given

    def extra_budget(self, config: ThinkingBudget) -> int:
        """Tokens added to each sample's answer budget for thinking (0 when not active)."""
        return self.budget(config) if self.active else 0

    def cache_field(self) -> dict[str, Any] | None:
        """The response-cache-key entry: switch and end marker (None: no thinking; the budget is
        the generation config's, in its hash)."""
        r = self.record()
        keyed = ("enable_thinking", "think_end")
        return None if r is None else {k: r[k] for k in keyed}

    def record(self) -> dict[str, Any] | None:
        """For run.json: the markers, where they came from, and the switch."""
        if self.markers is None and self.enable_thinking is None:
            return None
        m = self.markers
        return {
            "think_start": m.start if m else None,
            "think_end": m.end if m else None,
            "markers_from": m.source if m else None,
            "enable_thinking": self.enable_thinking,
        }

    def split_ids(
        self, tokenizer: Any, ids: Sequence[int], prompt: str, budget: int
    ) -> tuple[str | None, int, list[int], bool]:
        """(thinking or None, thinking tokens, answer ids, unfinished) of generated ids: split as
        ids when each marker is one token, else as decoded text (counted by re-encoding). Thinking
        past ``budget`` tokens is cut to it (text and count) and gives no answer."""
        m = self.markers
        if m is None:
            return None, 0, list(ids), False

        def encode(text: str) -> list[int]:
            return list(tokenizer(text, add_special_tokens=False)["input_ids"])

        opened = prompt_opens(prompt, m)
        end, start = encode(m.end), encode(m.start) if m.start else None
        nl = set(encode("\n")) | set(encode("\n\n"))
        if len(end) == 1 and (start is None or len(start) == 1):  # added tokens: split the ids
            sp = split(list(ids), end, start, opened=opened, blank=nl.__contains__)
        else:
            sp = split(
                str(tokenizer.decode(list(ids), skip_special_tokens=False)),
                m.end,
                m.start,
                opened=opened,
            )
        if sp.reasoning is None:
            return None, 0, list(ids), False
        if isinstance(sp.reasoning, str):
            text, total = sp.reasoning, len(encode(sp.reasoning))
            answer = encode(sp.answer) if sp.answer else []
            if total > budget:
                text = str(tokenizer.decode(encode(text)[:budget], skip_special_tokens=True))
        else:
            total, kept, left = len(sp.reasoning), [], budget
            for block in sp.blocks:  # decoded apart: "a" + "b" never runs together as "ab"
                if left > 0:
                    piece = tokenizer.decode(list(block)[:left], skip_special_tokens=True)
                    kept.append(str(piece).strip("\n"))
                left -= len(block)
            text = "\n".join(kept)
            answer = list(itertools.dropwhile(nl.__contains__, sp.answer))
        unfinished = sp.unfinished or total > budget
        return text, min(total, budget), ([] if unfinished else answer), unfinished
