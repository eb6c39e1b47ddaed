"""Prompt assembly for every local engine: a sample's context looked up, its user message built,
the tokenizer's chat template applied (never a hand-written template; ``plain`` completion text
for base models), and, when a prompt does not fit the model's window, the context alone
right-truncated, keeping the scenario description and the instruction (LIFBench paper, Sec. 5.1).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lceval.core.errors import LcevalError
from lceval.core.records import Context, Sample

if TYPE_CHECKING:
    from lceval.models.base import GenerationConfig

PROMPT_FORMATS = ("auto", "chat", "plain")
"""``chat``: the tokenizer's chat template; ``plain``: raw completion text (base models);
``auto``: chat when the tokenizer has a template, else plain."""


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
    """Chat messages for ``sample`` (system if any, then the user turn)."""
    out = []
    if sample.system:
        out.append({"role": "system", "content": sample.system})
    out.extend({"role": m["role"], "content": m["content"]} for m in sample.history)
    out.append({"role": "user", "content": user_text(sample, context)})
    return out


@dataclass(frozen=True)
class RenderedPrompt:
    """A prompt ready for a local engine."""

    text: str
    """Chat-templated prompt text (ends with the generation prompt and any assistant prefix)."""
    n_tokens: int
    """Prompt length in the model's tokens."""
    truncated_tokens: int
    """Context tokens dropped to fit the window."""
    max_tokens: int = 0
    """Tokens the engine may generate: the answer budget plus, for a thinking model, its
    thinking budget (:meth:`lceval.models.thinking.Thinking.extra_budget`). The one place the
    thinking budget is added; every local engine reads it (0: not rendered by
    :func:`render_sample`)."""
    answer_tokens: int = 0
    """The paper's answer budget (``GenerationConfig.budget``): a thinking model's answer is
    cut to it after the thinking is split off."""
    stop: tuple[str, ...] = ()
    """Stop strings the engine checks while generating: the sample's, none for a thinking
    model (a stop string written while thinking must not end the output; the answer is cut at
    its first stop string after the split)."""


def plain_text(sample: Sample, context: str) -> str:
    """The raw completion prompt for base models (no chat template).

    Earlier turns' contents, then the user turn (description + context + instruction), each
    separated by ``sample.joiner``; then the assistant prefix. A prefix that starts with
    whitespace carries its own separator and is appended as it is: RULER's ``base`` template
    sends ``input + answer_prefix`` (``"...in the provided text? The special magic number..."``,
    ``"...Question: ... Answer:"``; official ``scripts/data/prepare.py``). Any other prefix
    starts a new line, as LongGenBench's official prompts end with ``"\n" + prefix``. The system
    message is not sent. This is what the official LIFBench inference sends to a tokenizer without
    a chat template.
    """
    parts = [m["content"] for m in sample.history if m.get("content")]
    parts.append(user_text(sample, context))
    text = sample.joiner.join(parts)
    prefix = sample.assistant_prefix
    if not prefix:
        return text
    return text + prefix if prefix[:1].isspace() else f"{text}\n{prefix}"


def check_prompt_format(prompt_format: str) -> None:
    """Raise LcevalError unless ``prompt_format`` is one of :data:`PROMPT_FORMATS`."""
    if prompt_format not in PROMPT_FORMATS:
        choices = ", ".join(PROMPT_FORMATS)
        raise LcevalError(f"unknown prompt_format {prompt_format!r}; choose one of {choices}")


def resolve_prompt_format(tokenizer: Any, prompt_format: str) -> str:
    """``"chat"`` or ``"plain"`` for ``prompt_format`` (``auto``, ``chat`` or ``plain``).

    Raises:
        LcevalError: unknown format, or ``chat`` for a tokenizer without a chat template.
    """
    check_prompt_format(prompt_format)
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
    max_new_tokens: int,
    prompt_format: str = "chat",
    template_kwargs: Mapping[str, Any] | None = None,
) -> RenderedPrompt:
    """Format ``sample`` for a local engine, right-truncating only the context.

    Args:
        tokenizer: a transformers tokenizer.
        sample: the sample (its description, instruction, system and assistant prefix are kept).
        context: the full context text.
        window: the model's context window in tokens.
        max_new_tokens: tokens reserved for the answer.
        prompt_format: ``chat`` (the tokenizer's chat template), ``plain`` (:func:`plain_text`,
            for base models) or ``auto`` (chat when the tokenizer has a template).
        template_kwargs: extra arguments of ``apply_chat_template`` (``enable_thinking``, see
            ``lceval.models.thinking``).

    Returns:
        The prompt text, its length in tokens and how many context tokens were dropped.

    Raises:
        LcevalError: ``chat`` with a tokenizer that has no chat template, or the prompt is longer
            than the window even with an empty context.

    Source: LIFBench paper Sec. 5.1 (inputs beyond a model's window are right-truncated; the
    instruction is kept); official LIFBench inference (chat template when the tokenizer has one,
    the raw prompt otherwise).
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

    def n_tok(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    full = template(context)
    n_full = n_tok(full)
    limit = window - max_new_tokens
    if n_full <= limit:
        return RenderedPrompt(full, n_full, 0)
    ctx_ids = tokenizer(context, add_special_tokens=False)["input_ids"]
    overhead = n_full - len(ctx_ids)
    keep = limit - overhead
    if keep < 0:
        raise LcevalError(
            f"sample {sample.id}: prompt without its context is {overhead} tokens, longer than the "
            f"window {window} minus {max_new_tokens} new tokens"
        )
    # Token boundaries shift when the cut context is decoded and re-encoded: shrink until it fits.
    while True:
        cut = tokenizer.decode(ctx_ids[:keep], skip_special_tokens=False)
        text = template(cut)
        n = n_tok(text)
        if n <= limit or keep == 0:
            if n > limit:
                raise LcevalError(f"sample {sample.id}: prompt does not fit the window {window}")
            return RenderedPrompt(text, n, len(ctx_ids) - keep)
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
    """The prompt a local engine sends for ``sample`` and what it may generate: its context
    looked up, then :func:`render_chat_prompt` with the sample's budget under ``config``; a
    thinking model (``thinking``, a ``lceval.models.thinking.Thinking``) gets its template
    switch, its thinking budget added to :attr:`RenderedPrompt.max_tokens` and no engine stop
    strings (:attr:`RenderedPrompt.stop`).

    Raises:
        LcevalError: the budget is < 1, the context is unknown, or the prompt cannot fit.
    """
    budget = config.budget(sample)
    if budget < 1:
        raise LcevalError(f"sample {sample.id}: new-token budget must be >= 1, got {budget}")
    extra, kwargs = (
        (0, None) if thinking is None else (thinking.extra_budget(), thinking.template_kwargs())
    )
    p = render_chat_prompt(
        tokenizer,
        sample,
        context_text(sample, contexts),
        window,
        budget + extra,
        prompt_format,
        kwargs,
    )
    stop = () if thinking is not None and thinking.active else tuple(sample.stop)
    return dataclasses.replace(p, max_tokens=budget + extra, answer_tokens=budget, stop=stop)
