"""lceval's offline stand-in for L-Eval's GSM(16-shot): seeded multi-step integer arithmetic word
problems with exact answers, written in the official ``gsm100`` format.

Why here: L-Eval's GSM task is a long prompt of worked examples (``input``: 16 chain-of-thought
solutions, each ``Question: ...\\nLet's think step by step\\n<steps>\\nThe answer is N``) followed
by a question (``instructions``) whose reference is the bare number (``outputs``). The stand-in
writes exactly that shape (``data_path: arithmetic`` of the L-Eval builder), so the official GSM
prompt (system prompt, layout), the official answer extraction (``process_math``: the number after
"The answer is") and the exam table apply unchanged, as for the real file. It is not GSM8K data:
a reproducible, licence-free task that needs several dependent steps, used where the real file is
not at hand (CI, the NTK sweep's offline default).

A problem
---------
A person starts with a number of items, then 2-4 operations (``steps``) change it: buying packs
(k x m added), finding or receiving more (+k), giving some away (-k, never below 1), doubling or
tripling, and sharing equally into k bags and keeping one (exact division only). The question
asks how many items the person has at the end. Every intermediate value is a positive integer
at most :data:`MAX_VALUE`; the answer is exact. The worked solution writes one line per
operation with the arithmetic spelled out (``23 + 48 = 71``), then ``The answer is N``.

Seeds: question ``i`` draws from ``random.Random(f"{seed}/question/{i}")`` and worked example
``j`` from ``random.Random(f"{seed}/example/{j}")`` (disjoint streams; an example whose question
equals a test question is skipped), so the same seed gives the same questions at every length
and under every model setting (paired comparisons), and adding examples never changes them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lceval.core.errors import LcevalError
from lceval.core.tokens import get_encoding

SOURCE = "lceval_arithmetic"
"""``source`` of the stand-in records (the official gsm100 file has none)."""
MAX_VALUE = 999
"""Largest intermediate value."""
MAX_EXAMPLES = 5000
"""Most worked examples one document may hold (a guard against runaway lengths)."""
SEPARATOR = "\n\n"
"""Between worked examples (as in the official gsm100 input)."""

_NAMES = (
    ("Mia", "She", "her"),
    ("Liam", "He", "his"),
    ("Ava", "She", "her"),
    ("Noah", "He", "his"),
    ("Zoe", "She", "her"),
    ("Omar", "He", "his"),
    ("Lena", "She", "her"),
    ("Ravi", "He", "his"),
    ("Sofia", "She", "her"),
    ("Kenji", "He", "his"),
)
_ITEMS = (
    "apples",
    "marbles",
    "stickers",
    "pencils",
    "cookies",
    "stamps",
    "shells",
    "coins",
    "cards",
    "beads",
)
_FRIENDS = ("a friend", "a neighbour", "a cousin", "a classmate", "the school fair")


@dataclass(frozen=True)
class Problem:
    """One word problem with its worked solution."""

    question: str
    """The problem text (no ``Question:`` prefix)."""
    steps: tuple[str, ...]
    """Solution lines, one per operation, arithmetic spelled out."""
    answer: int
    """The exact final number (a positive integer)."""

    def example(self) -> str:
        """The worked example as the official gsm100 input writes one."""
        return (
            f"Question: {self.question}\nLet's think step by step\n"
            + "\n".join(self.steps)
            + f"\nThe answer is {self.answer}"
        )

    def instruction(self) -> str:
        """The question as the official gsm100 ``instructions`` write it."""
        return f"Question: {self.question}\nLet's think step by step\n"


def make_problem(rng: random.Random, steps: int) -> Problem:
    """Draw one problem with ``steps`` operations (>= 1).

    Raises:
        LcevalError: ``steps`` < 1.
    """
    if steps < 1:
        raise LcevalError(f"arithmetic: steps must be >= 1, got {steps}")
    name, pron, poss = rng.choice(_NAMES)
    items = rng.choice(_ITEMS)
    value = rng.randint(12, 60)
    text = [f"{name} has {value} {items}."]
    lines = [f"{name} starts with {value} {items}."]
    for _ in range(steps):
        ops = ["add", "packs"] + (["sub"] if value >= 2 else [])
        if value * 3 <= MAX_VALUE:
            ops.append("times")
        divisors = [k for k in (2, 3, 4, 5) if value % k == 0 and value // k >= 2]
        if divisors:
            ops.append("share")
        op = rng.choice(ops)
        if op == "add":
            k = rng.randint(3, 40)
            if value + k > MAX_VALUE:
                op = "sub"
            else:
                who = rng.choice(_FRIENDS)
                text.append(f"{pron} gets {k} more {items} from {who}.")
                lines.append(f"{pron} gets {k} more: {value} + {k} = {value + k} {items}.")
                value += k
        if op == "packs":
            n, m = rng.randint(2, 6), rng.randint(3, 12)
            if value + n * m > MAX_VALUE:
                op = "sub"
            else:
                text.append(f"{pron} buys {n} packs with {m} {items} in each pack.")
                lines.append(
                    f"The packs hold {n} * {m} = {n * m} {items}, so {pron.lower()} has "
                    f"{value} + {n * m} = {value + n * m} {items}."
                )
                value += n * m
        if op == "sub":
            k = rng.randint(1, min(value - 1, 40))
            who = rng.choice(_FRIENDS)
            text.append(f"{pron} gives {k} of {poss} {items} to {who}.")
            lines.append(f"{pron} gives away {k}: {value} - {k} = {value - k} {items}.")
            value -= k
        elif op == "times":
            k = rng.choice([2, 3] if value * 3 <= MAX_VALUE else [2])
            word = {2: "doubles", 3: "triples"}[k]
            text.append(f"Then {pron.lower()} {word} the number of {items} {pron.lower()} has.")
            lines.append(f"{pron} {word} them: {value} * {k} = {value * k} {items}.")
            value *= k
        elif op == "share":
            k = rng.choice(divisors)
            text.append(f"{pron} splits {poss} {items} equally into {k} bags and keeps one bag.")
            lines.append(f"{pron} keeps one of {k} bags: {value} / {k} = {value // k} {items}.")
            value //= k
    text.append(f"How many {items} does {name} have now?")
    return Problem(" ".join(text), tuple(lines), value)


def questions(n: int, steps: int, seed: int) -> list[Problem]:
    """The ``n`` test problems of ``seed`` (question stream)."""
    return [make_problem(random.Random(f"{seed}/question/{i}"), steps) for i in range(n)]


def examples(
    shots: int | None,
    steps: int,
    seed: int,
    *,
    min_tokens: int = 0,
    encoding: str = "cl100k_base",
    avoid: Sequence[Problem] = (),
) -> list[Problem]:
    """Worked examples (example stream): ``shots`` of them, or (``shots`` None) as many as it
    takes to reach ``min_tokens`` tokens joined by :data:`SEPARATOR`.

    Raises:
        LcevalError: neither a count nor a token target, or more than :data:`MAX_EXAMPLES`.
    """
    if shots is None and min_tokens <= 0:
        raise LcevalError("arithmetic: give a number of shots or a token target")
    enc = get_encoding(encoding)
    taken = {p.question for p in avoid}
    out: list[Problem] = []
    tokens = 0
    j = 0
    sep = len(enc.encode(SEPARATOR))
    while (shots is not None and len(out) < shots) or (shots is None and tokens < min_tokens):
        if j >= MAX_EXAMPLES * 2 or len(out) >= MAX_EXAMPLES:
            raise LcevalError(f"arithmetic: more than {MAX_EXAMPLES} examples needed")
        p = make_problem(random.Random(f"{seed}/example/{j}"), steps)
        j += 1
        if p.question in taken:
            continue
        out.append(p)
        tokens += len(enc.encode(p.example())) + (sep if len(out) > 1 else 0)
    return out


def records(
    n_questions: int,
    shots: int | None,
    steps: int,
    seed: int,
    *,
    min_tokens: int = 0,
    encoding: str = "cl100k_base",
) -> list[dict[str, Any]]:
    """One official-format gsm100 record: ``input`` = the worked examples, ``instructions`` = the
    ``n_questions`` questions, ``outputs`` = their answers as bare numbers (as the official file).

    All questions share one document (the official file repeats the same 16 examples on each of
    its 100 lines), so engines with prefix caching encode it once.
    """
    if n_questions < 1:
        raise LcevalError(f"arithmetic: questions must be >= 1, got {n_questions}")
    qs = questions(n_questions, steps, seed)
    shots_ = examples(shots, steps, seed, min_tokens=min_tokens, encoding=encoding, avoid=qs)
    return [
        {
            "input": SEPARATOR.join(p.example() for p in shots_),
            "instructions": [q.instruction() for q in qs],
            "outputs": [str(q.answer) for q in qs],
            "source": SOURCE,
            "evaluation": "exam",
        }
    ]


def fit_examples(document: str, budget: int, encoding: str = "cl100k_base") -> str:
    """The longest run of whole leading worked examples of ``document`` within ``budget`` tokens.

    Raises:
        LcevalError: not even one example fits.
    """
    enc = get_encoding(encoding)
    parts = document.split(SEPARATOR)
    sep = len(enc.encode(SEPARATOR))
    total, keep = 0, 0
    for i, part in enumerate(parts):
        total += len(enc.encode(part)) + (sep if i else 0)
        if total > budget:
            break
        keep = i + 1
    if keep == 0:
        raise LcevalError(
            f"arithmetic: {budget} tokens cannot hold one worked example; use a longer length"
        )
    return SEPARATOR.join(parts[:keep])
