"""Prompts for the local engines: the sample's messages through the tokenizer's chat template
(``plain`` text for base models), the context alone right-truncated when the prompt does not fit
(LIFBench paper, Sec. 5.1).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lceval.core.errors import LcevalError
from lceval.core.records import Context, FinishReason, Response, Sample
from lceval.models.base import GenerationConfig
from lceval.models.thinking import Thinking, cut_at_stop


def user_text(sample: Sample, context_text: str) -> str:
    """The user turn: description, context and instruction joined by ``sample.joiner``."""
    parts = [p for p in (sample.description, context_text, sample.instruction) if p]
    return sample.joiner.join(parts)


def context_text(sample: Sample, contexts: Mapping[str, Context]) -> str:
    """The text of the sample's context ('' if it has none).

    Raises:
        LcevalError: the sample names a context that is not in ``contexts``.
    """
    if sample.context_id is None:
        return ""
    try:
        return contexts[sample.context_id].text
    except KeyError:
        raise LcevalError(
            f"sample {sample.id} references unknown context {sample.context_id!r}"
        ) from None


def messages(sample: Sample, context: str) -> list[dict[str, str]]:
    """Chat messages for ``sample``: the system message if any, earlier turns, the user turn."""
    system = [{"role": "system", "content": sample.system}] if sample.system else []
    history = [{"role": m["role"], "content": m["content"]} for m in sample.history]
    return [*system, *history, {"role": "user", "content": user_text(sample, context)}]


@dataclass(frozen=True)
class RenderedPrompt:
    """A prompt ready for a local engine: ``text`` (ending with the generation prompt and any
    assistant prefix), its token ids (what the engine is sent: the text tokenized without
    special tokens added) and the context dropped to fit the window, in model tokens;
    ``max_tokens``: the answer budget plus a thinking model's, ``answer_tokens``: the paper's;
    ``engine_stop``: the stop strings the engine is sent (:meth:`GenerationConfig.stops`; none
    for a thinking model: its answer is cut after the split)."""

    text: str
    ids: list[int]
    truncated_tokens: int
    max_tokens: int = 0
    answer_tokens: int = 0
    engine_stop: tuple[str, ...] = ()

    @property
    def n_tokens(self) -> int:
        """The prompt's length in model tokens."""
        return len(self.ids)


def plain_text(sample: Sample, context: str) -> str:
    """The completion prompt for base models: earlier turns, the user turn, then the assistant
    prefix (appended as is when it starts with whitespace, as RULER's ``base`` template; else on a
    new line, as LongGenBench's prompts). The system message is not sent.
    """
    parts = [m["content"] for m in sample.history if m.get("content")]
    text = sample.joiner.join([*parts, user_text(sample, context)])
    prefix = sample.assistant_prefix
    if not prefix:
        return text
    return text + prefix if prefix[:1].isspace() else f"{text}\n{prefix}"


def resolve_prompt_format(tokenizer: Any, prompt_format: str) -> str:
    """``"chat"`` or ``"plain"`` for ``prompt_format`` (``auto``: chat when there is a template).

    Raises:
        LcevalError: ``chat`` for a tokenizer without a chat template.
    """
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if prompt_format == "chat" and not has_template:
        raise LcevalError(
            f"tokenizer of {getattr(tokenizer, 'name_or_path', '?')} has no chat template; "
            "use prompt_format=plain (or auto)"
        )
    if prompt_format == "auto":
        return "chat" if has_template else "plain"
    return prompt_format


def render_chat_prompt(
    tokenizer: Any,
    sample: Sample,
    context: str,
    window: int,
    reserve: int,
    prompt_format: str = "chat",
    template_kwargs: Mapping[str, Any] | None = None,
) -> RenderedPrompt:
    """``sample`` formatted with ``tokenizer`` (transformers; ``prompt_format`` chat, plain or
    auto; ``template_kwargs`` passed to ``apply_chat_template``), only the ``context``
    right-truncated so that the prompt plus ``reserve`` tokens (the answer's budget, a reasoning
    model's thinking budget beside it) fit ``window`` tokens.

    Raises:
        LcevalError: ``chat`` without a chat template, or the prompt does not fit the window
            even with an empty context.

    Source: LIFBench paper Sec. 5.1 (inputs beyond the window right-truncated, the instruction
    kept); official LIFBench inference (chat template when the tokenizer has one, else raw text).
    """
    fmt = resolve_prompt_format(tokenizer, prompt_format)

    def template(ctx: str) -> str:
        if fmt == "plain":
            return plain_text(sample, ctx)
        text = tokenizer.apply_chat_template(
            messages(sample, ctx),
            tokenize=False,
            add_generation_prompt=True,
            **dict(template_kwargs or {}),
        )
        return text + sample.assistant_prefix

    def encode(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    full = template(context)
    full_ids = encode(full)
    n_full = len(full_ids)
    limit = window - reserve
    if n_full <= limit:
        return RenderedPrompt(full, full_ids, 0)
    ctx_ids = tokenizer(context, add_special_tokens=False)["input_ids"]
    overhead = n_full - len(ctx_ids)
    keep = limit - overhead
    if keep < 0:
        raise LcevalError(
            f"sample {sample.id}: prompt without its context is {overhead} tokens, longer than the "
            f"window {window} minus {reserve} new tokens"
        )
    # Token boundaries shift when the cut context is decoded and re-encoded: shrink until it fits.
    while True:
        text = template(tokenizer.decode(ctx_ids[:keep], skip_special_tokens=False))
        ids = encode(text)
        n = len(ids)
        if n <= limit:
            return RenderedPrompt(text, ids, len(ctx_ids) - keep)
        if keep == 0:
            raise LcevalError(f"sample {sample.id}: prompt does not fit the window {window}")
        keep = max(0, keep - (n - limit) - 1)


def render_sample(
    tokenizer: Any,
    sample: Sample,
    contexts: Mapping[str, Context],
    window: int,
    config: GenerationConfig,
    prompt_format: str = "chat",
    thinking: Any = None,
) -> RenderedPrompt:
    """What a local engine sends for ``sample``: :func:`render_chat_prompt` at its budget under
    ``config``; a ``thinking`` model gets its template switch, its budget added and no stop strings.

    Raises:
        LcevalError: the budget is < 1, the context is unknown, or the prompt cannot fit.
    """
    budget = config.budget(sample)
    if budget < 1:
        raise LcevalError(f"sample {sample.id}: new-token budget must be >= 1, got {budget}")
    extra = thinking.extra_budget(config) if thinking is not None else 0
    kwargs = thinking.template_kwargs() if thinking is not None else None
    ctx = context_text(sample, contexts)
    p = render_chat_prompt(tokenizer, sample, ctx, window, budget + extra, prompt_format, kwargs)
    stop = () if thinking is not None and thinking.active else config.stops(sample)
    return dataclasses.replace(p, max_tokens=budget + extra, answer_tokens=budget, engine_stop=stop)


def common_prefix_len(rows: Sequence[Sequence[int]]) -> int:
    """Length of the longest token prefix all ``rows`` share (0 for no rows)."""
    return len(os.path.commonprefix([list(r) for r in rows]))


class Renders:
    """:meth:`render` and :meth:`response` for a local engine (hf, vLLM) holding a tokenizer, a
    window, a prompt format and its :class:`.Thinking` settings."""

    name: str
    tokenizer: Any
    window: int
    prompt_format: str
    thinking: Thinking = Thinking(None, None)  # a model not thinking

    def render(
        self, sample: Sample, contexts: Mapping[str, Context], config: GenerationConfig
    ) -> RenderedPrompt:
        """The prompt this engine sends for ``sample`` (:func:`render_sample`)."""
        args = (self.window, config, self.prompt_format, self.thinking)
        return render_sample(self.tokenizer, sample, contexts, *args)

    def response(
        self,
        sample: Sample,
        prompt: RenderedPrompt,
        ids: Sequence[int],
        reason: FinishReason,
        config: GenerationConfig,
        completion_tokens: int,
        latency: float,
    ) -> Response:
        """The Response for ``sample`` of this engine's generated ``ids`` (cut at EOS or budget;
        ``completion_tokens``: the engine's count, an EOS included; ``latency``: seconds): the
        thinking split off (:meth:`.Thinking.split_ids`), the answer kept to
        ``prompt.answer_tokens`` (then ``length``), cut before the first of its stop strings
        (:meth:`GenerationConfig.stops`, then ``stop``) and empty when the thinking is
        unfinished (an EOS inside the thinking stays ``stop``)."""
        tok = self.tokenizer
        budget = self.thinking.budget(config)
        reasoning, n_think, answer, unfinished = self.thinking.split_ids(
            tok, ids, prompt.text, budget
        )
        if len(answer) > prompt.answer_tokens:
            answer, reason = answer[: prompt.answer_tokens], "length"
        text = str(tok.decode(answer, skip_special_tokens=True))
        text, reason = cut_at_stop(text, config.stops(sample), reason)
        return Response(
            sample_id=sample.id,
            model=self.name,
            text="" if unfinished else text,
            config_hash=config.hash(),
            prompt_tokens=prompt.n_tokens,
            completion_tokens=completion_tokens,
            finish_reason=reason,
            truncated_tokens=prompt.truncated_tokens,
            latency_s=latency,
            reasoning=reasoning,
            reasoning_tokens=n_think,
            thinking_unfinished=unfinished,
        )
