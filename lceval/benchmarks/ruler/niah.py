"""RULER's needle-in-a-haystack family (official ``scripts/data/synthetic/niah.py``)."""

from __future__ import annotations

import numpy as np

from lceval.benchmarks.ruler.common import (
    NOISE,
    TOKENS_TO_GENERATE,
    Core,
    NiahArgs,
    _Item,
    _overhead,
    _rand,
    _rng,
)
from lceval.benchmarks.ruler.gold import TASKS
from lceval.core.errors import LcevalError

NIAH_DESC = (
    "Some special magic {type_needle_v} are hidden within the following text. Make sure to "
    "memorize it. I will quiz you about the {type_needle_v} afterwards."
)
NIAH_INSTR = (
    "What are all the special magic {type_needle_v} for {query} mentioned in the provided text?"
)
NIAH_PREFIX = " The special magic {type_needle_v} for {query} mentioned in the provided text are"
NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."
DEPTHS = [int(x) for x in np.round(np.linspace(0, 100, num=40, endpoint=True))]
"""Needle depths in percent (official ``niah.py``)."""


class NiahBuilder(Core):
    """The niah family builder."""

    def _niah_pool(
        self, task: str, kind_k: str, kind_v: str, budget: int
    ) -> tuple[np.ndarray, dict[str, int], np.ndarray]:
        """Distractor needle lines for the ``needle`` haystack, with keys and token counts.

        One pool per task and build (seeded), large enough for the longest length; each sample
        draws its distractors from it, so lines are tokenized once, not per sample.
        """
        key = (task, kind_k)
        if key in self._pools:
            return self._pools[key]
        rng = np.random.default_rng([self.seed, TASKS.index(task), 0, 2**31])
        probe = NEEDLE.format(
            type_needle_v=kind_v, key=_rand(kind_k, rng), value=_rand(kind_v, rng)
        )
        per_line = max(1, self.c.count(probe + "\n"))
        n = int(budget / per_line * 1.5) + 64
        keys: list[str] = []
        seen: set[str] = set()
        while len(keys) < n:
            k = _rand(kind_k, rng)
            if k not in seen:
                seen.add(k)
                keys.append(k)
        lines = [NEEDLE.format(type_needle_v=kind_v, key=k, value=_rand(kind_v, rng)) for k in keys]
        counts = self.c.counts([ln + "\n" for ln in lines])
        self._pools[key] = (
            np.array(lines, dtype=object),
            {k: i for i, k in enumerate(keys)},
            counts,
        )
        return self._pools[key]

    # ---- niah ------------------------------------------------------------------------------
    def niah(
        self,
        task: str,
        args: NiahArgs,
        length: int,
        index: int,
        units: int | None = None,
        draw: tuple[int, ...] = (),
    ) -> _Item:
        """Needle in a haystack (official ``niah.py``).

        ``num_needle_k`` keys with ``num_needle_v`` values each are stated as needles ("One of
        the special magic numbers for KEY is: VALUE.") at random depths of the haystack;
        ``num_needle_q`` keys are asked about. Answer: every value of the queried keys.
        ``units``: the haystack's essay words or lines (None: as many as fit ``length``).
        ``draw``: a fresh draw of the same sample (the probe's and the back-off's;
        :func:`lceval.benchmarks.ruler.common._rng`).
        """
        rng = _rng(self.seed, task, length, index, draw)
        kind_k, kind_v = args.type_needle_k, args.type_needle_v
        nq = args.num_needle_q
        nk = max(args.num_needle_k, nq)
        nv = args.num_needle_v
        keys: list[str] = []
        while len(keys) < nk:
            k = _rand(kind_k, rng)
            if k not in keys:
                keys.append(k)
        values = [[_rand(kind_v, rng) for _ in range(nv)] for _ in keys]
        needles = [
            NEEDLE.format(type_needle_v=kind_v, key=k, value=v)
            for k, vs in zip(keys, values, strict=True)
            for v in vs
        ]
        needles = [needles[i] for i in rng.permutation(len(needles))]
        picked = sorted(int(i) for i in rng.choice(nk, nq, replace=False))
        picked = [int(i) for i in rng.permutation(picked)]
        queries = [keys[i] for i in picked]
        answers = [a for i in picked for a in values[i]]
        query = ", ".join(queries[:-1]) + ", and " + queries[-1] if len(queries) > 1 else queries[0]

        desc, instr, prefix, tv = NIAH_DESC, NIAH_INSTR, NIAH_PREFIX, str(kind_v)
        if nq * nv == 1:  # official: singular wording for a single answer

            def singular(t: str) -> str:
                t = t.replace("Some", "A").replace("are all", "is").replace("are", "is")
                return t.replace("answers", "answer")

            desc, instr, prefix, tv = singular(desc), singular(instr), singular(prefix), kind_v[:-1]
        desc = desc.format(type_needle_v=tv)
        instr = instr.format(type_needle_v=tv, query=query)
        prefix = prefix.format(type_needle_v=tv, query=query)
        joiner = "\n"
        overhead = _overhead(self.c, desc, instr, prefix, joiner)
        budget = length - TOKENS_TO_GENERATE["niah"] - overhead
        hay = args.type_haystack
        if hay == "essay":
            context, ctx_tokens, depths = self._essay_haystack(rng, needles, budget, units)
        else:
            context, ctx_tokens, depths = self._line_haystack(
                task, args, keys, rng, needles, budget, units
            )
        return _Item(
            desc,
            context,
            instr,
            prefix,
            joiner,
            answers,
            ctx_tokens,
            overhead,
            hay,
            {"keys": tuple(queries), "depths": tuple(depths)},
        )

    def _essay_haystack(
        self, rng: np.random.Generator, needles: list[str], budget: int, words: int | None
    ) -> tuple[str, int, list[int]]:
        """(context, its tokens, needle depths in percent) of the ``essay`` haystack: needles at
        sampled depths between essay sentences (official ``niah.py``); the first ``words`` essay
        words, or (None) as many whole sentences as fit ``budget`` tokens."""
        needle_tok = int(self.c.counts([" " + n for n in needles]).sum())
        if words is None:
            text, starts, ends, cum = self._essay(budget)
            n = max(0, int(np.searchsorted(cum, budget - needle_tok, side="right")) - 1)
            hay_tok = int(cum[n])
        else:
            text, starts, ends, n, hay_tok = self._essay_words(words)
        depths = sorted(int(d) for d in rng.choice(DEPTHS, len(needles), replace=False))
        pos = [0] + [int(n * d / 100) for d in depths] + [n]
        parts = []
        for i in range(1, len(pos)):
            a, b = pos[i - 1], pos[i]
            parts.append(text[starts[a] : ends[b - 1]] if b > a else "")
            if i - 1 < len(needles):
                parts.append(needles[i - 1])
        context = " ".join(parts)
        ctx_tokens = hay_tok + needle_tok
        return context, ctx_tokens, depths

    def _line_haystack(
        self,
        task: str,
        args: NiahArgs,
        keys: list[str],
        rng: np.random.Generator,
        needles: list[str],
        budget: int,
        units: int | None,
    ) -> tuple[str, int, list[int]]:
        """(context, its tokens, needle depths in percent) of the ``noise`` or ``needle``
        haystack: lines of noise or distractor needles, the needles inserted at sampled lines;
        ``units`` lines, or (None) as many as fit ``budget`` tokens."""
        hay, kind_k, kind_v = args.type_haystack, args.type_needle_k, args.type_needle_v
        needle_tok = int(self.c.counts([n + "\n" for n in needles]).sum())
        if hay == "noise":
            per = self.c.count(NOISE + "\n")
            n = max(0, (budget - needle_tok) // per) if units is None else units
            lines_src: list[str] = [NOISE] * n
            ctx_tokens = n * per + needle_tok
        elif hay == "needle":
            lines, pkeys, pcounts = self._niah_pool(task, kind_k, kind_v, self.max_length)
            order = rng.permutation(len(lines))
            bad = [pkeys[k] for k in keys if k in pkeys]
            if bad:  # a distractor never carries a queried key
                order = order[~np.isin(order, bad)]
            cum = np.concatenate([[0], np.cumsum(pcounts[order])])
            if units is None:
                n = max(0, int(np.searchsorted(cum, budget - needle_tok, side="right")) - 1)
            else:  # the pool holds 1.5x the longest length: more lines never fit
                n = min(units, len(order))
            lines_src = lines[order[:n]].tolist()
            ctx_tokens = int(cum[n]) + needle_tok
        else:
            raise LcevalError(f"ruler: unknown haystack {hay!r}")
        idx = sorted(int(i) for i in rng.choice(max(n, 1), len(needles), replace=n < len(needles)))
        # official: insert needles at the sampled line indexes (needles in reverse order)
        out: list[str] = []
        prev = 0
        for j, at in enumerate(idx):
            out.extend(lines_src[prev:at])
            out.append(needles[len(needles) - 1 - j])
            prev = at
        out.extend(lines_src[prev:])
        context = "\n".join(out)
        depths = [round(100 * i / max(n, 1)) for i in idx]
        return context, ctx_tokens, depths
