"""LIFEval rubrics of the OneDoc scenario (OR, OQ, OE): official ``EvaluateFunc.py``."""

from __future__ import annotations

from collections.abc import Sequence

from lceval.benchmarks.lifbench.gold import (
    ONEDOC_TAGS,
    RUBRIC,
    KeySentences,
)
from lceval.benchmarks.lifbench.rubric import (
    _INVALID,
    Rubric,
    _loads,
    _rubric,
    unescape,
    within_edit_distance,
)

# --------------------------------------------------------------------------------------------
# OneDoc scenario
# --------------------------------------------------------------------------------------------


def score_repeat(
    output: str, key_sentences: KeySentences, num: int, sep: str, *, strict: bool = False
) -> Rubric:
    """OR: repeat ``num`` key sentences, one per line, each followed by ``sep`` and its type.

    Official ``judge_onedoc_repeat``. With hits = key sentences (true or fake) contained in the
    output, fakes = the fake ones among them, lines = non-empty lines:

    - ``ori`` (2): +1 always (official quirk; strict: only if hits > 0), +1 if any type name
      appears.
    - ``hit`` (2): min(1, (hits - 0.5 * fakes) / num) * 2.
    - ``format`` (3): +0.5 if a newline is present (or num == 1), +0.5 if ``sep`` is present,
      + min(1, lines split by ``sep`` into exactly two / max(lines, num)) * 2 (0 without ``sep``).
    - ``num`` (4): +1 each for ``sep`` count == num, line count == num, hits == num; plus the share
      of agreeing pairs among those three counts.
    - ``correct`` (3): share of lines whose sentence part is within edit distance
      len(s) // 6 + 3 of a key sentence s of a type named after ``sep``, * 3.

    Args:
        output: the model's answer.
        key_sentences: all key sentences of the context (type -> sentences, true and fake).
        num: how many sentences were asked (>= 1).
        sep: the separator asked (non-empty).
        strict: fix the official quirks.
    """
    out = output.strip()
    parts = {"format": 0.0, "ori": 0.0, "hit": 0.0, "num": 0.0, "correct": 0.0}
    if not out:
        return _rubric(parts, "empty output")
    hits = fakes = 0
    by_tag: dict[str, list[str]] = {}
    for tag, sentences in key_sentences.items():
        texts = by_tag.setdefault(tag, [])
        for s in sentences:
            text = s.text
            if text and text in out:
                hits += 1
                fakes += 0 if s.is_true else 1
                if "\n" in text:
                    pure = text.replace("\n", "")
                    out = out.replace(text, pure)
                    text = pure
            texts.append(text)
    if hits > 0 or not strict:
        parts["ori"] += 1.0
    if any(tag in out for tag in ONEDOC_TAGS):
        parts["ori"] += 1.0
    parts["hit"] = min(1.0, (hits - 0.5 * fakes) / num) * 2.0
    if num == 1 or "\n" in out:
        parts["format"] += 0.5
    has_sep = sep in out
    if has_sep:
        parts["format"] += 0.5
    lines = [line for line in out.split("\n") if line]
    n_sep = out.count(sep)
    parts["num"] = (
        float(n_sep == num)
        + float(len(lines) == num)
        + float(hits == num)
        + (int(n_sep == len(lines)) + int(n_sep == hits) + int(hits == len(lines))) / 3
    )
    if has_sep:
        two = sum(1 for line in lines if len(line.split(sep)) == 2)
        parts["format"] += min(1.0, two / max(len(lines), num)) * 2.0
    right = 0
    for line in lines:
        if sep in line:
            sentence, type_part = line.split(sep, 1)
        else:
            sentence = type_part = line.strip()
        cands = [t for tag in ONEDOC_TAGS if tag in type_part for t in by_tag.get(tag, ())]
        if any(within_edit_distance(sentence, c, len(c) // 6 + 3) for c in cands):
            right += 1
    parts["correct"] = right / len(lines) * 3.0 if lines else 0.0
    return _rubric(parts, f"{hits} key sentences repeated ({fakes} fake), {num} asked")


def score_qa(output: str, options: Sequence[str], is_key: bool, is_true_key: bool) -> Rubric:
    """OQ: is the given sentence a (true) key sentence? Answer with one of two options.

    Official ``judge_onedoc_qa``; ``options[0]`` is the "yes" answer. ``format`` (2): +1 if the
    output length equals an option's length, else +0.5 if longer than the longest option + 3;
    +1 if exactly one option occurs, +0.5 if both do. ``correct`` (3): both options 0.5, neither
    0; for a true key sentence 3 if the answer is yes else 0.1; otherwise 3 for no, 2 for yes.

    Args:
        output: the model's answer.
        options: ``[yes, no]`` option strings (non-empty).
        is_key: the sentence is tagged (true or fake).
        is_true_key: the sentence is a true key sentence.
    """
    out = output.strip()
    yes_opt, no_opt = options[0], options[1]
    n, n_yes, n_no = len(out), len(yes_opt), len(no_opt)
    fmt = correct = 0.0
    if n == n_yes or n == n_no:
        fmt = 1.0
    elif n > max(n_yes, n_no) + 3:
        fmt = 0.5
    yes, no = yes_opt in out, no_opt in out
    if yes and no:
        fmt += 0.5
        correct = 0.5
        note = "both options given"
    elif yes or no:
        fmt += 1.0
        if is_true_key:
            correct = 0.1 if yes != is_key else 3.0
        else:
            correct = 2.0 if yes else 3.0
        note = "answered yes" if yes else "answered no"
    else:
        note = "no option in the output"
    return Rubric({"correct": correct, "format": fmt}, correct + fmt, note)


def score_extract(
    output: str,
    tag: str,
    targets: Sequence[str],
    fakes: Sequence[str],
    key_texts: Sequence[str],
    *,
    strict: bool = False,
) -> Rubric:
    """OE: extract every key sentence of one type as a JSON list, in id order.

    Official ``judge_onedoc_extract``. ``format`` (4): JSON list of strings 4 (``[]`` counts for
    ``|Summary|``), other list 3, other JSON 1; when only the outermost ``[...]`` parses: 3 / 2 /
    1. A ``|Summary|`` question answered exactly ``[]`` scores full marks on every item. With
    found = key sentences of any type contained (after ``unescape``): ``order`` (4): 4 once found
    > 0 (official quirk; strict: share in id order not placed before the previous one, * 4);
    ``ori`` (2): 2 if found > 0; ``correct`` (4): true targets found / max(found, parsed list
    length, number of targets) * 3.5, +0.5 if no fake of the type is contained.

    Args:
        output: the model's answer.
        tag: the asked type, e.g. ``"#Topic#"``.
        targets: the true sentences of that type.
        fakes: the fake sentences of that type (0 or 1 officially).
        key_texts: every key sentence of the context (all types; official label order, or id order
            for the strict order item).
        strict: fix the official quirks.
    """
    out = output.strip()
    parts = {"format": 0.0, "correct": 0.0, "order": 0.0, "ori": 0.0}
    if not out:
        return _rubric(parts, "empty output")
    n_out = 0
    value = _loads(out)
    full = 4.0
    if value is _INVALID:
        value = _loads(out[out.find("[") : out.rfind("]") + 1])
        full = 3.0
    if value is not _INVALID:
        if isinstance(value, list):
            ok = all(isinstance(v, str) for v in value) or (tag == "|Summary|" and value == [])
            parts["format"] = full if ok else full - 1.0
            n_out = len(value)
        else:
            parts["format"] = 1.0
    if tag == "|Summary|" and out == "[]":
        return _rubric(dict(RUBRIC["OE"]), "no |Summary| sentences: [] is right")
    dec = unescape(out, strict=strict)
    texts = _nonempty(key_texts)
    if strict:
        positions = [p for p in map(dec.find, texts) if p != -1]
        found = len(positions)
    else:
        found = sum(map(dec.__contains__, texts))
    if found:
        if strict:
            ok_pos, last = 0, -1
            for p in positions:
                ok_pos += p >= last
                last = max(last, p)
            parts["order"] = ok_pos / found * 4.0
        else:
            parts["order"] = 4.0
        parts["ori"] = 2.0
    contains = dec.__contains__
    hits = sum(map(contains, _nonempty(targets)))
    den = max(found, n_out, len(targets))
    parts["correct"] = hits / den * 3.5 if den else 0.0
    if not any(map(contains, _nonempty(fakes))):
        parts["correct"] += 0.5
    return _rubric(parts, f"{hits}/{len(targets)} targets found")


def _nonempty(texts: Sequence[str]) -> Sequence[str]:
    """``texts`` without empty strings (an empty sentence is in every output; rubrics skip it)."""
    return [t for t in texts if t] if "" in texts else texts
