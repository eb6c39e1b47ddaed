"""CIF-Bench scoring (paper Sec. 3.3): accuracy, F1, semantic similarity; every score in 0..1.

The paper scores each instance by its task's output type:

- multi-class -> accuracy: 1 when the label extracted from the output equals the reference's;
- multi-label -> F1 between the labels extracted from the output and the reference's labels;
- similarity -> semantic similarity to the reference with BLEURT (Sellam et al., 2020);
- creative -> a model-based evaluator (GPT-4) given the task instruction and the reference.

The paper had GPT-4 judge the classification tasks too, "since it is intractable to handcraft
regex rules" for every task; the official evaluation code and prompts are not released. Scorer
``cifbench`` (this module) applies rule-based answer extraction instead (:func:`extract_label`,
:func:`extract_labels`); scorer ``cifbench:judge`` (``lceval.benchmarks.cifbench.judge``) asks a
model as the paper did.

Similarity: with ``bleurt_checkpoint`` (a local BLEURT checkpoint in Hugging Face format, e.g. a
PyTorch port of BLEURT-20; ``bleurt-pytorch`` is imported when installed) the value is BLEURT's
regression output clipped to 0..1. Offline without a checkpoint, two documented stand-ins are
computed: chrF (sacrebleu's sentence chrF, character 6-grams, beta 2, /100; character-based, so
it needs no Chinese word segmentation) and ROUGE-L F1 over jieba word tokens (punctuation
dropped). The value is chrF unless ``similarity="rouge-l"``; both are in ``parts`` and the
explanation names the metric used, so every score records which one it is.

Creative tasks under the rule-based scorer get the similarity stand-in (``creative="similarity"``,
marked in the explanation) or NaN (``creative="nan"``).
"""

from __future__ import annotations

import functools
import logging
import math
import re
import unicodedata
import warnings
from collections.abc import Sequence
from typing import Any

from lceval.benchmarks.cifbench.gold import CifGold, normalize
from lceval.core.errors import one_line
from lceval.core.records import Context, Judgement, Response, Sample
from lceval.metrics import lcs_length

SIMILARITY_METRICS = ("chrf", "rouge-l", "bleurt")
"""Values of the ``similarity`` option."""

ANSWER_CUE = re.compile(
    r"(?:答案|最终答案|输出|结果|回答|标签|类别|分类|判断|answer|label|output)\s*(?:是|为|应为|应该是)?\s*[:：]?",
    re.IGNORECASE,
)
"""Phrases after which an answer follows (``答案是``, ``输出：``, ``Answer:``)."""


def clean_text(text: Any) -> str:
    """Any output as scorable text: None -> ``""``, non-strings through ``str``, and characters
    UTF-8 cannot encode (lone surrogates) replaced by ``?``."""
    if text is None:
        return ""
    s = text if isinstance(text, str) else str(text)
    return s.encode("utf-8", "replace").decode("utf-8")


def _ascii_alnum(c: str) -> bool:
    return c.isascii() and c.isalnum()


def label_matches(text: str, labels: Sequence[str]) -> list[tuple[int, int, str]]:
    """Non-overlapping occurrences of ``labels`` in ``text``, left to right.

    The text is compared in NFKC, case-folded form; labels are normalized
    (:func:`lceval.benchmarks.cifbench.gold.normalize`). At one position the longest label wins
    (``不是`` before ``是``); a label starting or ending with an ASCII letter or digit must not
    touch another ASCII letter or digit there (``NN`` is not found in ``NNP``, ``1`` not in
    ``10``).

    Returns:
        ``(start, end, label)`` tuples by position.
    """
    t = unicodedata.normalize("NFKC", text).casefold()
    found: list[tuple[int, int, str]] = []
    for lab in labels:
        if not lab:
            continue
        start = t.find(lab)
        while start >= 0:
            end = start + len(lab)
            ok = not (_ascii_alnum(lab[0]) and start > 0 and _ascii_alnum(t[start - 1]))
            ok = ok and not (_ascii_alnum(lab[-1]) and end < len(t) and _ascii_alnum(t[end]))
            if ok:
                found.append((start, end, lab))
            start = t.find(lab, start + 1)
    found.sort(key=lambda m: (m[0], -(m[1] - m[0])))
    out: list[tuple[int, int, str]] = []
    last = -1
    for m in found:
        if m[0] >= last:
            out.append(m)
            last = m[1]
    return out


def _after_cue(text: str) -> str | None:
    """The text after the last answer cue (``答案是``, ``输出：`` ...), or None when none."""
    t = unicodedata.normalize("NFKC", text)
    cues = list(ANSWER_CUE.finditer(t))
    return t[cues[-1].end() :] if cues else None


def extract_label(text: str, labels: Sequence[str]) -> str | None:
    """The class a free-text answer names, from a closed label set (multi-class).

    Rules, in order: the whole answer equals a label (after normalization); else the first label
    found after the last answer cue (``答案是`` / ``输出：`` / ``Answer:``); else the first label
    found anywhere (:func:`label_matches`: longest at a position, ASCII word boundaries).

    Args:
        text: the model's output.
        labels: the normalized label set.

    Returns:
        The label, or None when the answer names none.
    """
    whole = normalize(text)
    if whole in labels:
        return whole
    tail = _after_cue(text)
    if tail is not None:
        m = label_matches(tail, labels)
        if m:
            return m[0][2]
    m = label_matches(text, labels)
    return m[0][2] if m else None


def extract_labels(text: str, labels: Sequence[str]) -> tuple[str, ...]:
    """Every label a free-text answer names (multi-label): the distinct labels of
    :func:`label_matches` over the whole answer, in order of first appearance."""
    return tuple(dict.fromkeys(lab for _, _, lab in label_matches(text, labels)))


def f1(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """F1 (0..1) between two label sets: ``2|P & G| / (|P| + |G|)``; 1.0 when both are empty."""
    p, g = set(predicted), set(gold)
    if not p and not g:
        return 1.0
    return 2.0 * len(p & g) / (len(p) + len(g))


@functools.cache
def _chrf_metric() -> Any:
    from sacrebleu.metrics import CHRF  # heavy: sacrebleu

    return CHRF()


def chrf(hypothesis: str, reference: str) -> float:
    """sacrebleu's sentence chrF (character 6-grams, beta 2) divided by 100: 0..1."""
    if not hypothesis.strip():
        return 0.0
    score = _chrf_metric().sentence_score(hypothesis, [reference]).score / 100.0
    return min(1.0, max(0.0, float(score)))


@functools.cache
def _jieba() -> Any:
    with warnings.catch_warnings():  # jieba imports the deprecated pkg_resources
        warnings.simplefilter("ignore", DeprecationWarning)
        import jieba  # heavy: jieba

    jieba.setLogLevel(logging.WARNING)
    return jieba


def _punct(token: str) -> bool:
    return all(unicodedata.category(c)[0] in "PSZ" for c in token)


def zh_tokens(text: str) -> list[str]:
    """jieba word tokens of ``text`` (NFKC, case-folded), without whitespace and punctuation."""
    t = unicodedata.normalize("NFKC", text).casefold()
    return [w for w in _jieba().lcut(t) if w.strip() and not _punct(w)]


def rouge_l(hypothesis: Sequence[str], reference: Sequence[str]) -> float:
    """ROUGE-L F1 (beta 1, as ``rouge_score``) between two token sequences: 0..1."""
    lcs = lcs_length(reference, hypothesis)
    if lcs == 0:
        return 0.0
    p, r = lcs / len(hypothesis), lcs / len(reference)
    return 2 * p * r / (p + r)


@functools.lru_cache(maxsize=2)
def _bleurt(checkpoint: str) -> tuple[Any, Any]:
    import torch  # noqa: F401 - heavy: torch; transformers' model classes need it
    import transformers  # heavy: transformers

    try:  # registers the BLEURT classes of PyTorch ports with transformers' Auto classes
        import bleurt_pytorch  # noqa: F401 - optional: bleurt-pytorch, pulls torch
    except ImportError:
        pass
    tok = transformers.AutoTokenizer.from_pretrained(checkpoint, local_files_only=True)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        checkpoint, local_files_only=True
    )
    return tok, model.eval()


def bleurt(hypothesis: str, reference: str, checkpoint: str) -> float:
    """BLEURT's raw regression output for (reference, candidate), from a local checkpoint.

    Args:
        hypothesis: the model output.
        reference: the reference output.
        checkpoint: folder of a BLEURT checkpoint in Hugging Face format (loaded once per
            process); its first logit is the score.
    """
    import torch  # heavy: torch

    tok, model = _bleurt(checkpoint)
    inputs = tok([reference], [hypothesis], truncation=True, max_length=512, return_tensors="pt")
    with torch.inference_mode():
        return float(model(**inputs).logits.flatten()[0])


ROUGE_CHARS = 100_000
"""Longest output (characters) whose ROUGE-L part is computed when ROUGE-L is not the chosen
metric. jieba segments about 0.1-1 MB/s (a long run of ASCII letters, digits and dots is one
block to it: 13 s for a megabyte of ``A.``), so a degenerate megabyte would spend seconds on a
number nobody asked for; with ``similarity: rouge-l`` it is always computed."""


def similarity_scores(
    hypothesis: str,
    reference: str,
    metric: str = "chrf",
    bleurt_checkpoint: str | None = None,
) -> tuple[float, dict[str, float], str]:
    """Similarity of an output to its reference: (value 0..1, parts, metric name).

    chrF is always computed; ROUGE-L (jieba tokens) too unless the output is longer than
    :data:`ROUGE_CHARS` characters and ``metric`` is not ``rouge-l``; BLEURT when a checkpoint
    is given. ``metric`` picks the value: ``chrf``, ``rouge-l`` or ``bleurt`` (clipped to 0..1).
    """
    parts = {"chrF": chrf(hypothesis, reference)}
    if metric == "rouge-l" or len(hypothesis) <= ROUGE_CHARS:
        parts["ROUGE-L"] = rouge_l(zh_tokens(hypothesis), zh_tokens(reference))
    if bleurt_checkpoint:
        raw = bleurt(hypothesis, reference, bleurt_checkpoint)
        parts["BLEURT_raw"] = raw
        parts["BLEURT"] = min(1.0, max(0.0, raw))
    name = {"chrf": "chrF", "rouge-l": "ROUGE-L", "bleurt": "BLEURT"}[metric]
    return parts[name], parts, name


def score_cifbench(
    sample: Sample,
    response: Response,
    context: Context | None = None,
    *,
    similarity: str | None = None,
    bleurt_checkpoint: str | None = None,
    creative: str = "similarity",
) -> Judgement:
    """Score one CIF-Bench response by its task's output type (scorer ``cifbench``).

    Args:
        sample: a CIF-Bench sample with typed gold (:class:`CifGold`).
        response: the model's output.
        context: unused.
        similarity: ``chrf`` (default offline), ``rouge-l`` or ``bleurt`` (default when
            ``bleurt_checkpoint`` is given).
        bleurt_checkpoint: local BLEURT checkpoint folder (Hugging Face format).
        creative: creative tasks get the similarity stand-in (``similarity``) or NaN (``nan``).

    Returns:
        ``value`` in 0..1: accuracy (multi-class), F1 (multi-label), similarity (similarity and,
        by default, creative). ``parts`` hold the extracted labels' counts or the similarity
        metrics. NaN with the reason for an empty reference (or one naming no label), a bad
        option or a BLEURT failure.
        Never raises on any output.
    """
    del context
    gold: CifGold = sample.gold
    text = clean_text(response.text)
    metric = similarity or ("bleurt" if bleurt_checkpoint else "chrf")
    if metric not in SIMILARITY_METRICS or (metric == "bleurt" and not bleurt_checkpoint):
        return Judgement(math.nan, explanation=f"bad similarity option {metric!r:.40}")
    if creative not in ("similarity", "nan"):
        return Judgement(math.nan, explanation=f"bad creative option {creative!r:.40}")
    otype = gold.output_type
    if otype in ("multi-class", "multi-label") and not any(gold.gold_labels):
        return Judgement(math.nan, explanation=f"{otype}: the reference names no label")
    if otype == "multi-class":
        pred = extract_label(text, gold.labels)
        want = gold.gold_labels[0] if gold.gold_labels else ""
        hit = float(pred is not None and pred == want)
        return Judgement(
            hit,
            parts={"correct": hit},
            points={"correct": 1.0},
            explanation=f"multi-class accuracy: predicted {pred!r:.60}, reference {want!r:.60}",
        )
    if otype == "multi-label":
        pred_set = extract_labels(text, gold.labels)
        value = f1(pred_set, gold.gold_labels)
        common = float(len(set(pred_set) & set(gold.gold_labels)))
        return Judgement(
            value,
            parts={
                "predicted": float(len(pred_set)),
                "reference": float(len(gold.gold_labels)),
                "common": common,
            },
            explanation=f"multi-label F1: predicted {list(pred_set)!r:.80}, "
            f"reference {list(gold.gold_labels)!r:.80}",
        )
    if otype == "creative" and creative == "nan":
        return Judgement(math.nan, explanation="creative task: needs the model-based evaluator")
    reference = clean_text(gold.reference)
    if not reference.strip():
        return Judgement(math.nan, explanation="empty reference")
    try:
        value, parts, name = similarity_scores(text, reference, metric, bleurt_checkpoint)
    except Exception as exc:  # noqa: BLE001 - a broken checkpoint is a NaN with its reason
        msg = one_line(exc)
        return Judgement(math.nan, explanation=f"similarity failed: {type(exc).__name__}: {msg}")
    stand_in = "" if name == "BLEURT" else ", offline stand-in for BLEURT"
    how = f"similarity {name}{stand_in}"
    if otype == "creative":
        how = f"creative task scored by {how} (the paper uses a model-based evaluator)"
    return Judgement(value, parts=parts, explanation=how)
