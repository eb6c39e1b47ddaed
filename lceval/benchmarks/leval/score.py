"""L-Eval scoring: the official exam rules (option letters, GSM numbers, CodeU outputs, TopicRet,
SFiction true/false) and n-gram metrics (ROUGE-1/2/L, token F1).

Reproduces the official evaluation of OpenLMLab/LEval (GPL-3; rules carried over as facts, the
code is lceval's own): ``Evaluation/auto_eval.py`` (answer extraction per task),
``Evaluation/em.py`` (``exact_match_score`` with Coursera's 0.25 partial credit),
``Evaluation/f1.py`` (``f1_score``) and ``Evaluation/rouge.py`` (``compute_rouge`` through
``rouge_score`` without stemming). Each helper's docstring names the official function.

Per sample (scorer ``leval``)
-----------------------------
- tpo, quality, coursera: ``exact_match_score(process_output_mc(text), process_gt_mc(ref))``:
  1, 0.25 (the predicted letters are a strict subset of a multi-letter reference; Coursera), 0.
- gsm100: ``exact_match_score(process_math(text), process_math(ref))``.
- codeU: ``exact_match_score(process_output_code(text, ref), process_gt_code(ref))``.
- topic_retrieval_longchat: ``exact_match_score(text, ref)``; the table averages the three
  topic positions' means (``TopicGold.topic_index``), as auto_eval.py does.
- sci_fi: the loyalty and/or fact judgment of the text (``process_output_judge``) against the
  reference's (``process_gt_judge``); the table averages the loyalty and fact means.
- open-ended: ROUGE-1, ROUGE-2, ROUGE-L F-measures and token F1 against the reference (all four
  in ``parts``); ``value`` is ROUGE-L for ``rouge`` tasks and F1 for ``f1`` tasks. Reports take
  the official L-Eval ROUGE score (geometric mean of the task means of ROUGE-1, -2, -L) from
  ``parts``.

``Judgement.value`` is in 0..1 (the official code reports x 100). ``parts`` also holds ``words``
(whitespace words of the response) and, for open-ended tasks, ``reference_words`` (for the
length gap of LIE).

Deviations, all without effect on the official numbers
------------------------------------------------------
- auto_eval.py decides Coursera by the prediction file's path; here by the sample's task.
- The official Coursera extraction re-slices the string per leading letter and runs
  ``\\s*[A-Z](?=[\\s.)])`` (quadratic on long runs of letters or spaces); the same letters are
  found here in linear time (``[A-D](?=[\\s.)])``: whitespace and other capitals are dropped by
  the official ``[^A-D]`` filter anyway).
- ROUGE comes from ``rouge_score`` itself; only past :data:`ROUGE_BUDGET` token pairs or
  :data:`ROUGE_TOKENS` tokens (hostile output lengths, where its quadratic LCS table would take
  minutes, or its per-token work over a second) the same F-measures come from
  lceval's bit-parallel LCS (``lceval.metrics.lcs_length``), equal to the table (tests compare on
  random texts). ROUGE-Lsum (computed by the official script after NLTK sentence splitting, but
  neither displayed nor part of the L-Eval score) is not computed; ROUGE-1/2/L do not depend on
  sentence splitting (rouge_score's tokenizer maps newlines to spaces).
- References with no whitespace token (which would make the official ``process_gt_mc`` fail)
  read as ``"A"``; SFiction texts without ``[fact:`` give a fact judgment ``<error>``.
"""

from __future__ import annotations

import functools
import math
import re
import string
from collections import Counter
from collections.abc import Sequence
from typing import Any

from lceval.benchmarks.leval.gold import (
    OPTION_TASKS,
    ExamGold,
    LevalGold,
    OpenGold,
    SciFiGold,
    TopicGold,
)
from lceval.core.records import Context, Judgement, Response, Sample
from lceval.metrics import lcs_length

# -- normalisation (Evaluation/em.py, f1.py: normalize_answer) -----------------------------------
_PUNCT = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_em(s: str) -> str:
    """em.py ``normalize_answer``: remove punctuation, the articles a/an/the (case-sensitive, no
    lower-casing in em.py), collapse whitespace."""
    return " ".join(_ARTICLES.sub(" ", s.translate(_PUNCT)).split())


def normalize_f1(s: str) -> str:
    """f1.py ``normalize_answer``: lower-case, then as :func:`normalize_em`."""
    return normalize_em(s.lower())


# -- exact match (Evaluation/em.py) ------------------------------------------------------------
_ABCD = frozenset("ABCD")


def exact_match_score(prediction: str, ground_truth: str) -> float:
    """em.py ``exact_match_score``: 1, 0.25 or 0.

    A reference whose normalised characters are all A-D (option letters) scores 1 when the
    normalised prediction equals it, 0.25 when the prediction's characters are a subset of the
    reference's (multi-answer partial credit), else 0. Any other reference: 1 if both parse as
    the same float; if either does not parse, 1 if the reference (lower-cased, spaces removed)
    occurs in the prediction (lower-cased, spaces removed); else 0.

    Args:
        prediction: the extracted prediction.
        ground_truth: the processed reference.
    """
    gt = normalize_em(ground_truth)
    if all(c in _ABCD for c in gt):
        pred = normalize_em(prediction)
        if pred == gt:
            return 1.0
        if set(pred) <= set(gt):
            return 0.25
        return 0.0
    try:
        return float(float(prediction) == float(ground_truth))
    except ValueError:
        needle = ground_truth.lower().replace(" ", "")
        return float(needle in prediction.lower().replace(" ", ""))


# -- multiple choice (Evaluation/auto_eval.py) ---------------------------------------------------
_FIRST_LETTER = re.compile(r"[ABCD]")
_LEADING = re.compile(r"[ABCD]*")
_OPTION_LIKE = re.compile(r"[A-D](?=[\s.)])")
_RUN = re.compile(r"[ABCD]+")


def process_output_mc(response: str, coursera: bool = False) -> str:
    """auto_eval.py ``process_output_mc``: the option letters of a prediction.

    Empty (after stripping) -> ``"None"``; a substring of ``"ABCD"`` -> itself. Other tasks: the
    first A-D character anywhere. Coursera (or no A-D character at all): a leading run of two or
    more letters (sorted, de-duplicated); else a leading letter plus every A-D letter followed by
    whitespace, ``.`` or ``)`` before the first ``"Question"``, sorted and de-duplicated; else the
    first run of A-D characters; else ``"A"``.

    Args:
        response: the model's text.
        coursera: apply Coursera's multi-answer extraction first.
    """
    if not response.strip():
        return "None"
    if response in "ABCD":
        return response
    if not coursera:
        m = _FIRST_LETTER.search(response)
        if m:
            return m.group()
    lead = _LEADING.match(response)
    cleaned = lead.group() if lead else ""
    rest = response[len(cleaned) :]
    if len(cleaned) > 1:
        return "".join(sorted(set(cleaned)))
    rest = rest.split("Question")[0]
    cleaned = "".join(sorted(set(cleaned + "".join(_OPTION_LIKE.findall(rest)))))
    if not cleaned:
        m = _RUN.search(rest)
        cleaned = m.group() if m else ""
    return cleaned or "A"


def process_gt_mc(reference: str) -> str:
    """auto_eval.py ``process_gt_mc``: the A-D letters of the reference's first whitespace
    token, ``"A"`` when there are none."""
    tokens = reference.split(maxsplit=1)
    letters = re.sub(r"[^A-D]", "", tokens[0]) if tokens else ""
    return letters or "A"


# -- GSM (auto_eval.py process_math) -----------------------------------------------------------
_ANSWER_IS = re.compile(r"The answer is (\S+)")


def process_math(response: str) -> str:
    """auto_eval.py ``process_math``: the digits of the answer.

    The token after ``"The answer is"``; without it, the last space-separated word holding a
    digit in the first paragraph (text before the first blank line). Of that token, the digits
    up to the first ``.`` are kept (sign, commas and units dropped).
    """
    m = _ANSWER_IS.search(response)
    if m:
        token = m.group(1)
    else:
        token = ""
        for word in reversed(response.split("\n\n")[0].split(" ")):
            if any(c.isdigit() for c in word):
                token = word
                break
    digits = []
    for c in token:
        if c.isdigit():
            digits.append(c)
        if c == ".":
            break
    return "".join(digits)


# -- CodeU (auto_eval.py process_gt_code, process_output_code) -----------------------------------
_SPACES = re.compile(r"\s+")
_CODE_REPLACE = ((",", ""), ("'", ""), ("\\", ""), (".0", ""), ("] [", "]["), ("[ [", "[["))
_CODE_DROP = (
    "will be",
    "of the code",
    "is",
    "would be",
    "the value of",
    "the result of",
    "printed",
)


def process_gt_code(response: str) -> str:
    """auto_eval.py ``process_gt_code``: whitespace runs to one space; commas, quotes,
    backslashes and ``.0`` removed; ``] [``, ``[ [`` and ``] ]`` closed up."""
    s = _SPACES.sub(" ", response)
    for a, b in _CODE_REPLACE:
        s = s.replace(a, b)
    return s.replace("] ]", "]]")


def process_output_code(response: str, reference: str) -> str:
    """auto_eval.py ``process_output_code``: the predicted output of the code.

    After :func:`process_gt_code` and removing filler phrases ("will be", "is", ...), the
    ``n + 3`` words after the last "the final output", or else the last ``n + 3`` words, where
    ``n`` is the reference's word count.
    """
    n = len(reference.split()) + 3
    s = process_gt_code(response)
    for phrase in _CODE_DROP:
        s = s.replace(phrase, "")
    if "the final output" in s:
        words = _SPACES.split(s.split("the final output")[-1])[:n]
    else:
        words = _SPACES.split(s)[-n:]
    return " ".join(words)


# -- SFiction (auto_eval.py process_gt_judge, process_output_judge) ------------------------------
def process_gt_judge(response: str) -> tuple[str, str]:
    """auto_eval.py ``process_gt_judge``: (loyalty, fact) parts of ``"X [fact: Y]"``, lower-cased
    and stripped; the fact part loses its last character (the ``]``). Without ``[fact:`` the
    fact part is empty (the official code fails)."""
    parts = response.lower().split("[fact:")
    fact = parts[1][:-1] if len(parts) > 1 else ""
    return parts[0].strip(), fact.strip()


def judge_word(text: str) -> str:
    """The first whitespace word of ``text`` containing ``true`` -> ``"true"``, or ``false`` ->
    ``"false"`` (checked in that order per word); ``"<error>"`` when none does (no random
    guess, as in ``process_output_judge``). ``text`` should be lower-cased."""
    for word in text.split():
        if "true" in word:
            return "true"
        if "false" in word:
            return "false"
    return "<error>"


def process_output_judge(response: str) -> tuple[str, str]:
    """auto_eval.py ``process_output_judge``: (loyalty, fact) judgments of a prediction
    ``"X [fact: Y]"`` (:func:`judge_word` of each part of :func:`process_gt_judge`)."""
    loyalty, fact = process_gt_judge(response)
    return judge_word(loyalty), judge_word(fact)


# -- n-gram metrics (Evaluation/f1.py, rouge.py) -------------------------------------------------
def f1_score(prediction: str, ground_truth: str) -> float:
    """f1.py ``f1_score``: token F1 (0..1) of the normalised texts (:func:`normalize_f1`)."""
    pred = normalize_f1(prediction).split()
    gt = normalize_f1(ground_truth).split()
    same = sum((Counter(pred) & Counter(gt)).values())
    if same == 0:
        return 0.0
    precision = same / len(pred)
    recall = same / len(gt)
    return 2 * precision * recall / (precision + recall)


_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def rouge_tokens(text: str) -> list[str]:
    """rouge_score's default tokenizer without stemming (``tokenize.tokenize``): lower-case,
    non-alphanumeric runs to spaces, split; only ``[a-z0-9]+`` tokens kept."""
    return _NON_ALNUM.sub(" ", text.lower()).split()


def _fmeasure(overlap: int, n_pred: int, n_ref: int) -> float:
    precision = overlap / max(n_pred, 1)
    recall = overlap / max(n_ref, 1)
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def rouge_n(pred: Sequence[str], ref: Sequence[str], n: int) -> float:
    """ROUGE-N F-measure (0..1) of token lists, as rouge_score's ``_score_ngrams``."""
    p = Counter(tuple(pred[i : i + n]) for i in range(len(pred) - n + 1))
    r = Counter(tuple(ref[i : i + n]) for i in range(len(ref) - n + 1))
    overlap = sum((p & r).values())
    return _fmeasure(overlap, sum(p.values()), sum(r.values()))


def rouge_l(pred: Sequence[str], ref: Sequence[str]) -> float:
    """ROUGE-L F-measure (0..1) of token lists, as rouge_score's ``_score_lcs`` (0 when either
    list is empty)."""
    if not pred or not ref:
        return 0.0
    lcs = lcs_length(pred, ref)
    return _fmeasure(lcs, len(pred), len(ref))


ROUGE_BUDGET = 1_000_000
"""Most prediction x reference token pairs scored by ``rouge_score`` itself (its LCS table is a
Python double loop: about 0.2 to 0.45 us per pair, the latter when most tokens match)."""

ROUGE_TOKENS = 100_000
"""Most prediction + reference tokens scored by ``rouge_score`` itself (it also spends about
1.2 us per token on tokenizing and n-grams: 1.8 s for a megabyte of ``A.`` against a six-word
reference, 3M pairs, under the old 4M-pair budget alone). Beyond either limit the same
F-measures come from :func:`rouge_n` and :func:`rouge_l` (bit-parallel LCS), equal to
rouge_score's (tests compare on random texts), so a degenerate megabyte of output scores in well
under a second (``bench/fuzz_scorers.py``)."""


@functools.lru_cache(maxsize=1)
def _rouge_scorer() -> Any:
    from rouge_score import rouge_scorer  # heavy: rouge_score

    return rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)


def rouge_scores(prediction: str, reference: str) -> dict[str, float]:
    """rouge1, rouge2, rougeL F-measures (0..1) of ``prediction`` against ``reference``: rouge.py
    ``compute_rouge``, i.e. ``rouge_score.RougeScorer(..., use_stemmer=False)``, which is called
    here unless the texts exceed :data:`ROUGE_BUDGET` token pairs or :data:`ROUGE_TOKENS`
    tokens."""
    pred, ref = rouge_tokens(prediction), rouge_tokens(reference)
    if len(pred) * len(ref) <= ROUGE_BUDGET and len(pred) + len(ref) <= ROUGE_TOKENS:
        got = _rouge_scorer().score(reference, prediction)
        return {k: float(got[k].fmeasure) for k in ("rouge1", "rouge2", "rougeL")}
    return {
        "rouge1": rouge_n(pred, ref, 1),
        "rouge2": rouge_n(pred, ref, 2),
        "rougeL": rouge_l(pred, ref),
    }


# -- the scorer -------------------------------------------------------------------------------
def _short(text: str, n: int = 40) -> str:
    return repr(text[:n]) + ("..." if len(text) > n else "")


def exam_judgement(task: str, gold: LevalGold, text: str) -> Judgement:
    """The exact-match Judgement of a closed-ended response (rules per task, module docstring).

    Args:
        task: the task code.
        gold: the sample's gold (ExamGold, TopicGold or SciFiGold).
        text: the response text.
    """
    words = float(len(text.split()))
    if isinstance(gold, SciFiGold):
        ref_loyalty, ref_fact = process_gt_judge(gold.reference)
        if gold.judgment == "both":
            loyalty, fact = process_output_judge(text)
        else:
            loyalty = fact = judge_word(text.lower())
        parts: dict[str, float] = {}
        if gold.judgment in ("loyalty", "both"):
            parts["loyalty"] = exact_match_score(loyalty, ref_loyalty)
        if gold.judgment in ("fact", "both"):
            parts["fact"] = exact_match_score(fact, ref_fact)
        value = sum(parts.values()) / len(parts)
        return Judgement(
            value=value,
            parts={**parts, "words": words},
            explanation=f"{gold.judgment}: pred {loyalty}/{fact} vs ref {ref_loyalty}/{ref_fact}",
        )
    if task in OPTION_TASKS:
        pred, ref = (
            process_output_mc(text, coursera=task == "coursera"),
            process_gt_mc(gold.reference),
        )
    elif task == "gsm100":
        pred, ref = process_math(text), process_math(gold.reference)
    elif task == "codeU":
        pred, ref = process_output_code(text, gold.reference), process_gt_code(gold.reference)
    else:  # topic_retrieval_longchat: the raw texts
        pred, ref = text, gold.reference
    value = exact_match_score(pred, ref)
    parts = {"em": value, "words": words}
    if isinstance(gold, TopicGold):
        parts["topic_index"] = float(gold.topic_index)
    return Judgement(value=value, parts=parts, explanation=f"pred {_short(pred)} vs {_short(ref)}")


def ngram_judgement(gold: OpenGold, text: str) -> Judgement:
    """The n-gram Judgement of an open-ended response: ROUGE-1/2/L and F1 in ``parts``, value
    = ROUGE-L (``rouge`` tasks) or F1 (``f1`` tasks).

    Args:
        gold: the sample's OpenGold.
        text: the response text.
    """
    parts = rouge_scores(text, gold.reference)
    parts["f1"] = f1_score(text, gold.reference)
    value = parts["rougeL"] if gold.metric == "rouge" else parts["f1"]
    parts["words"] = float(len(text.split()))
    parts["reference_words"] = float(gold.reference_words)
    label = "ROUGE-L" if gold.metric == "rouge" else "F1"
    return Judgement(value=value, parts=parts, explanation=f"{label} {value:.4f}")


def score_leval(sample: Sample, response: Response, context: Context | None = None) -> Judgement:
    """Score one L-Eval response with the official rules (scorer ``leval``).

    Args:
        sample: an L-Eval sample whose gold is parsed (``lceval.benchmarks.registry.load_samples``).
        response: the model's response.
        context: unused (the references are in the gold).

    Returns:
        A Judgement in 0..1 (see the module docstring); NaN with a reason for a gold of an
        unknown shape. Never raises on any response text.
    """
    gold = sample.gold
    text = response.text if isinstance(response.text, str) else str(response.text)
    if isinstance(gold, OpenGold):
        return ngram_judgement(gold, text)
    if isinstance(gold, ExamGold | TopicGold | SciFiGold):
        return exam_judgement(sample.task, gold, text)
    return Judgement(value=math.nan, explanation=f"no L-Eval gold for task {sample.task!r}")
