"""RULER's variable-tracking family (official ``scripts/data/synthetic/variable_tracking.py``)."""

from __future__ import annotations

import string

import numpy as np

from lceval.benchmarks.ruler.common import (
    NOISE,
    TOKENS_TO_GENERATE,
    Core,
    VtArgs,
    _Item,
    _overhead,
    _rng,
)

VT_DESC = "Memorize and track the chain(s) of variable assignment hidden in the following text.\n"
VT_INSTR = "Question: Find all variables that are assigned the value {query} in the text above."
VT_PREFIX = (
    " Answer: According to the chain(s) of variable assignment in the text above, {num_v} "
    "variables are assigned the value {query}, they are: "
)
_VT_ICL_LENGTH = 500  # official: the vt one-shot example is built at max_seq_length=500


class VtBuilder(Core):
    """The variable-tracking family builder."""

    @staticmethod
    def _chain(
        rng: np.random.Generator, hops: int, k: int, icl: bool
    ) -> tuple[list[str], list[str]]:
        names: list[str] = []
        while len(names) < hops + 1:
            v = "".join(rng.choice(list(string.ascii_uppercase), k))
            if v not in names and v != "VAR":
                names.append(v)
        value = "12345" if icl else str(int(rng.integers(10000, 99999)))
        chain = [f"VAR {names[0]} = {value}"]
        chain += [f"VAR {names[j + 1]} = VAR {names[j]} " for j in range(hops)]
        return names, chain

    def _vt_noise(
        self, rng: np.random.Generator, chain: list[str], budget: int, units: int | None = None
    ) -> tuple[str, int]:
        """Noise lines with the chain at sampled lines: ``units`` noise lines, or (None) as many
        as fit ``budget`` tokens."""
        per = self.c.count(NOISE + "\n")
        chain_tok = int(self.c.counts([c + "\n" for c in chain]).sum())
        n = max(len(chain), (budget - chain_tok) // per if units is None else units)
        positions = sorted(int(p) for p in rng.choice(n, len(chain), replace=False))
        out: list[str] = []
        prev = 0
        for p, line in zip(positions, chain, strict=True):
            out.extend([NOISE] * (p - prev))
            out.append(line)
            prev = p
        out.extend([NOISE] * (n - prev))
        return "\n".join(out), n * per + chain_tok

    def _vt_example(self, hops: int) -> tuple[str, list[str]]:
        """The one-shot example (official: built once at 500 tokens, 3-letter names, 12345).

        ``fill: official``: its noise lines as the pinned generator's probe picks them (steps of
        5 lines while prompt + answer + answer budget fit 500 tokens,
        nvidia-long-context-eval 26.3 ``variable_tracking.py`` ``main``); else as many as fit.
        """
        if hops not in self._vt_icl:
            rng = _rng(self.seed, "vt", 0, 2**31)
            names, chain = self._chain(rng, hops, 3, icl=True)
            instr = VT_INSTR.format(query="12345")
            prefix = VT_PREFIX.format(num_v=hops + 1, query="12345")
            overhead = _overhead(self.c, VT_DESC, instr, prefix, "\n")
            budget = _VT_ICL_LENGTH - overhead
            if self.fill == "official":  # the pinned probe: 5 lines a step, answer counted
                answer = self.c.count(f" {names}")
                state = rng.bit_generator.state
                n = total = 0
                while total + TOKENS_TO_GENERATE["variable_tracking"] < _VT_ICL_LENGTH:
                    n += 5
                    rng.bit_generator.state = state
                    total = overhead + self._vt_noise(rng, chain, 0, n)[1] + answer
                    if total + TOKENS_TO_GENERATE["variable_tracking"] > _VT_ICL_LENGTH:
                        n -= 5
                        break
                rng.bit_generator.state = state
                ctx, _ = self._vt_noise(rng, chain, 0, max(n, 5))
            else:
                ctx, _ = self._vt_noise(rng, chain, budget)
            text = VT_DESC + "\n" + ctx + "\n" + instr + prefix + " " + " ".join(names) + "\n"
            self._vt_icl[hops] = (text, names)
        return self._vt_icl[hops]

    def vt(
        self,
        task: str,
        args: VtArgs,
        length: int,
        index: int,
        units: int | None = None,
        draw: tuple[int, ...] = (),
    ) -> _Item:
        """Variable tracking (official ``variable_tracking.py``).

        A chain ``VAR A = 12345``, ``VAR B = VAR A``, ... of ``num_hops`` assignments hidden
        among noise lines, after one solved example (built once at 500 tokens, then renamed).
        Answer: every variable that holds the queried value. ``units``: noise lines (None: as
        many as fit ``length``).
        ``draw``: a fresh draw of the same sample (the probe's and the back-off's;
        :func:`lceval.benchmarks.ruler.common._rng`).
        """
        rng = _rng(self.seed, task, length, index, draw)
        hops = args.num_hops
        example, old = self._vt_example(hops)
        for name in old:  # official randomize_icl: new names of the same length, new value
            new = "".join(rng.choice(list(string.ascii_uppercase), len(name)))
            example = example.replace(name, new)
        example = example.replace("12345", str(int(rng.integers(10000, 99999))))
        names, chain = self._chain(rng, hops, 5, icl=False)
        value = chain[0].split("=")[-1].strip()
        desc = example + "\n" + VT_DESC
        instr = VT_INSTR.format(query=value)
        prefix = VT_PREFIX.format(num_v=hops + 1, query=value)
        overhead = _overhead(self.c, desc, instr, prefix, "\n")
        budget = length - TOKENS_TO_GENERATE["variable_tracking"] - overhead
        context, ctx_tokens = self._vt_noise(rng, chain, budget, units)
        return _Item(
            desc,
            context,
            instr,
            prefix,
            "\n",
            names,
            ctx_tokens,
            overhead,
            "noise",
            {"value": value},
        )
