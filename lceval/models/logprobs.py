"""Prompt log-probabilities from a loaded ``hf`` or ``vllm`` backend: the input of the membership
signals (Min-K% Prob, Min-K%++, zlib ratio; :mod:`lceval.contamination`). Texts are scored raw (no
chat template) after the tokenizer's BOS (if any) and an unscored ``prefix``; a sequence over the
window loses the text's last tokens. vLLM (``prompt_logprobs=0``) gives the tokens' own only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lceval.core.errors import LcevalError


@dataclass(frozen=True)
class TokenLogprobs:
    """Log-probabilities (natural log) of one text's scored ``token_ids`` under a model:
    ``logprobs[t] = log p(token_t | prefix, tokens < t)``, shape ``(n,)``; ``mean`` / ``std``: mean
    and standard deviation of ``log p(z | ...)`` over the vocabulary per position (Min-K%++'s mu
    and sigma; None on vllm); ``truncated``: text tokens dropped to fit the window."""

    token_ids: tuple[int, ...]
    logprobs: np.ndarray
    mean: np.ndarray | None
    std: np.ndarray | None
    truncated: int = 0
    engine: str = ""  # hf or vllm


def backend_kind(backend: Any) -> str:
    """``"hf"`` or ``"vllm"``: the engine a loaded backend holds.

    Raises:
        LcevalError: a closed backend or one without prompt log-probabilities (openai).
    """
    if getattr(backend, "llm", None) is not None:
        return "vllm"
    if getattr(backend, "model", None) is not None and hasattr(backend, "tokenizer"):
        return "hf"
    name = getattr(backend, "name", type(backend).__name__)
    raise LcevalError(
        f"backend {name} gives no prompt log-probabilities (only loaded hf and vllm backends do)"
    )


def _ids(tokenizer: Any, text: str) -> list[int]:
    clean = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates -> "?"
    return [int(i) for i in tokenizer(clean, add_special_tokens=False)["input_ids"]]


def _sequences(
    tokenizer: Any, texts: Sequence[str], prefixes: Sequence[str] | None, window: int
) -> list[tuple[list[int], int, int]]:
    """(token ids, index of the first scored position, text tokens dropped) per text."""
    if isinstance(texts, str) or isinstance(prefixes, str):
        raise LcevalError("prompt_logprobs: texts and prefixes must be lists of strings")
    if prefixes is not None and len(prefixes) != len(texts):
        raise LcevalError("prompt_logprobs: prefixes and texts differ in length")
    eos = getattr(tokenizer, "eos_token_id", None)
    head = [int(i) for i in tokenizer("", add_special_tokens=True)["input_ids"] if i != eos]
    out = []
    for i, text in enumerate(texts):
        prefix = "" if prefixes is None else prefixes[i]
        if not isinstance(text, str) or not isinstance(prefix, str):
            what = "text" if not isinstance(text, str) else "every prefix"
            raise LcevalError(f"prompt_logprobs: {what} must be a string (text {i})")
        lead, body = head + (_ids(tokenizer, prefix) if prefix else []), _ids(tokenizer, text)
        if not body:
            raise LcevalError(f"prompt_logprobs: text {i} has no tokens")
        if window - len(lead) < 1:
            raise LcevalError(f"prompt_logprobs: prefix {i} alone fills the window {window}")
        kept = body[: window - len(lead)]
        start = max(len(lead), 1)  # position 0 has no prediction
        if start >= len(lead) + len(kept):
            raise LcevalError(f"prompt_logprobs: text {i} has no scorable token")
        out.append((lead + kept, start, len(body) - len(kept)))
    return out


def _hf(
    backend: Any, seqs: list[tuple[list[int], int, int]], distribution: bool, chunk: int
) -> list[TokenLogprobs]:
    import torch  # heavy: torch (hf only)

    device = next(backend.model.parameters()).device
    out = []
    for ids, start, dropped in seqs:
        keep = len(ids) - start + 1  # logits predicting positions start..end (from start - 1)
        kw = {"logits_to_keep": keep} if backend._logits_kw else {}  # else all, cut below
        with torch.inference_mode():
            logits = backend.model(torch.tensor([ids], device=device), **kw).logits
        logits = logits[0, -keep:-1]  # the last position predicts past the text
        target = torch.tensor(ids[start:], device=device)[:, None]
        parts = []  # (log p of the token, mean, std) per block of positions
        for a in range(0, logits.shape[0], chunk):
            logp = torch.log_softmax(logits[a : a + chunk].float(), dim=-1)
            p = logp.exp()
            mean = (p * logp).sum(-1)
            std = ((p * logp.square()).sum(-1) - mean.square()).clamp_min(0).sqrt()
            parts.append(torch.stack([logp.gather(1, target[a : a + chunk])[:, 0], mean, std]))
        lp, mu, sd = torch.cat(parts, 1).double().cpu().numpy()
        if not distribution:
            mu = sd = None
        out.append(TokenLogprobs(tuple(ids[start:]), lp, mu, sd, dropped, "hf"))
    return out


def _vllm(backend: Any, seqs: list[tuple[list[int], int, int]]) -> list[TokenLogprobs]:
    from vllm import SamplingParams  # engine: vllm

    params = SamplingParams(prompt_logprobs=0, max_tokens=1, temperature=0.0)
    prompts = [{"prompt_token_ids": ids} for ids, _, _ in seqs]
    results = backend.llm.generate(prompts, params, use_tqdm=False)
    out = []
    for (ids, start, dropped), res in zip(seqs, results, strict=True):
        plp, vals = res.prompt_logprobs or [], []
        for t in range(start, len(ids)):
            if t >= len(plp) or not plp[t] or ids[t] not in plp[t]:
                raise LcevalError(f"vLLM returned no log-probability for prompt position {t}")
            vals.append(float(plp[t][ids[t]].logprob))
        out.append(TokenLogprobs(tuple(ids[start:]), np.asarray(vals), None, None, dropped, "vllm"))
    return out


def prompt_logprobs(
    backend: Any,
    texts: Sequence[str],
    prefixes: Sequence[str] | None = None,
    *,
    distribution: bool = True,
    window: int | None = None,
    chunk: int = 256,
) -> list[TokenLogprobs]:
    """Log-probabilities of each text's tokens under a loaded hf or vllm backend (not closed).

    Args:
        backend: a loaded ``HFBackend`` or ``VLLMBackend``.
        texts: the texts to score (raw text).
        prefixes: optional text before each text (not scored).
        distribution: also the mean and std per position (hf only; Min-K%++).
        window: most tokens per sequence (default: the backend's ``window``).
        chunk: positions per log-softmax block on hf (memory ``chunk x vocabulary``).

    Returns:
        One :class:`TokenLogprobs` per text, in order.

    Raises:
        LcevalError: a backend without prompt log-probabilities, texts or prefixes that are not
            lists of strings (or of another length), an empty text, a prefix filling the window,
            or a window below 2.
    """
    kind = backend_kind(backend)
    if window is not None and (type(window) is not int or window < 2):
        raise LcevalError(f"prompt_logprobs: window must be an integer >= 2, got {window!r}")
    size = int(window or getattr(backend, "window", 0) or 2048)
    seqs = _sequences(backend.tokenizer, texts, prefixes, size)
    if kind == "hf":
        return _hf(backend, seqs, distribution, chunk)
    return _vllm(backend, seqs)
