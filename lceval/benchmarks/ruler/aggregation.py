"""RULER's aggregation families: common words (cwe) and frequent words (fwe) extraction
(official ``common_words_extraction.py`` and ``freq_words_extraction.py``)."""

from __future__ import annotations

import string
from collections.abc import Sequence

import numpy as np

from lceval.benchmarks.ruler.common import (
    TOKENS_TO_GENERATE,
    Core,
    CweArgs,
    FweArgs,
    _cwe_word_counts,
    _cwe_words,
    _Item,
    _number_prefix_counts,
    _numbering,
    _overhead,
    _pow2_at_least,
    _rng,
)
from lceval.benchmarks.ruler.gold import TASKS

CWE_DESC = (
    "Below is a numbered list of words. In these words, some appear more often than others. "
    "Memorize the ones that appear most often."
)
CWE_INSTR = "Question: What are the 10 most common words in the above list?"
CWE_PREFIX = " Answer: The top 10 words that appear most often in the list are:"
FWE_DESC = (
    "Read the following coded text and track the frequency of each coded word. Find the three "
    "most frequently appeared coded words."
)
FWE_INSTR = (
    "\nQuestion: Do not provide any explanation. Please ignore the dots '....'. What are the "
    "three most frequently appeared words in the above coded text?"
)
FWE_PREFIX = (
    " Answer: According to the coded text above, the three most frequently appeared words are:"
)


class AggregationBuilder(Core):
    """The cwe and fwe family builders."""

    def cwe(
        self,
        task: str,
        args: CweArgs,
        length: int,
        index: int,
        units: int | None = None,
        draw: tuple[int, ...] = (),
    ) -> _Item:
        """Common words extraction (official ``common_words_extraction.py``).

        A numbered list of words: ``num_cw`` common words repeated ``freq_cw`` times among as
        many uncommon words, each repeated ``freq_ucw`` times, as fit the budget (6 and 1 below
        4K tokens), shuffled; one solved example first. Answer: the common words. Words come from
        wonderwords; a list longer than wonderwords holds draws from the larger list instead
        (:func:`_cwe_words`). ``units``: distinct words, common ones included (None: as many
        as fit ``length``).
        ``draw``: a fresh draw of the same sample (the probe's and the back-off's;
        :func:`lceval.benchmarks.ruler.common._rng`).
        """
        rng = _rng(self.seed, task, length, index, draw)
        ncw = args.num_cw
        if length < 4096:  # official: smaller repeats and few-shot below 4K
            shot, rc, ru = (20, 3, 1), 6, 1
        else:
            shot, rc, ru = (40, 10, 3), args.freq_cw, args.freq_ucw

        def numbered(words: Sequence[str]) -> str:  # "1. w1 2. w2 ..." (official format)
            return " ".join(map(str.__add__, _numbering(_pow2_at_least(len(words))), words))

        vocab = np.array(_cwe_words(False), dtype=object)
        ex = rng.choice(len(vocab), shot[0], replace=False)
        ex_list = np.concatenate([np.repeat(ex[:ncw], shot[1]), np.repeat(ex[ncw:], shot[2])])
        ex_list = rng.permutation(ex_list)
        example = (
            CWE_DESC
            + "\n"
            + numbered(vocab[ex_list].tolist())
            + "\n"
            + CWE_INSTR
            + CWE_PREFIX
            + " "
            + numbered(vocab[ex[:ncw]].tolist())
        )
        desc = example + "\n" + CWE_DESC
        overhead = _overhead(self.c, desc, CWE_INSTR, CWE_PREFIX, "\n")
        budget = length - TOKENS_TO_GENERATE["common_words_extraction"] - overhead
        for large in (False, True):
            vocab = np.array(_cwe_words(large), dtype=object)
            wcounts = _cwe_word_counts(self.tok, large)
            order = rng.permutation(len(vocab))
            common, rest = order[:ncw], order[ncw:]
            nums = _number_prefix_counts(self.tok, _pow2_at_least(ncw * rc + ru * len(rest)))
            ks = np.arange(len(rest) + 1)
            tokens = (
                nums[ncw * rc + ru * ks]
                + rc * int(wcounts[common].sum())
                + ru * np.concatenate([[0], np.cumsum(wcounts[rest])])
            )
            if units is not None:  # official: the larger list once wonderwords' is too short
                k = min(max(0, units - ncw), len(rest))
                if units <= len(vocab) or large:
                    break
                continue
            k = max(0, int(np.searchsorted(tokens, budget, side="right")) - 1)
            if k < len(rest):  # the list has more words than fit: draw from it (official)
                break
        self.large_word_list |= large
        uncommon = rest[:k]
        words = rng.permutation(np.concatenate([np.repeat(common, rc), np.repeat(uncommon, ru)]))
        context = numbered(vocab[words].tolist())
        return _Item(
            desc,
            context,
            CWE_INSTR,
            CWE_PREFIX,
            "\n",
            vocab[common].tolist(),
            int(tokens[k]),
            overhead,
            "words",
            {},
        )

    # ---- frequent words --------------------------------------------------------------------
    def _coded_pool(self, task: str, wordlen: int) -> tuple[np.ndarray, np.ndarray]:
        """Distinct random coded words (``wordlen`` lower-case letters) with token counts; one
        pool per build, large enough for the longest length, tokenized once."""
        if wordlen not in self._coded:
            rng = np.random.default_rng([self.seed, TASKS.index(task), 0, 2**31])
            need = max(2000, self.max_length // 50 * 4)
            letters = np.array(list(string.ascii_lowercase))
            draws = letters[rng.integers(0, 26, size=(need * 2, wordlen))]
            words = sorted({"".join(r) for r in draws})
            words_arr = np.array(words[: need * 2], dtype=object)
            counts = self.c.counts([" " + w for w in words_arr.tolist()])
            self._coded[wordlen] = (words_arr, counts)
        return self._coded[wordlen]

    def fwe(
        self,
        task: str,
        args: FweArgs,
        length: int,
        index: int,
        units: int | None = None,
        draw: tuple[int, ...] = (),
    ) -> _Item:
        """Frequent words extraction (official ``freq_words_extraction.py``).

        Random coded words with Zipf-distributed counts (exponent ``alpha``; vocabulary
        ``length // 50`` words), shuffled; the most frequent word is ``...`` (noise). Answer: the
        three next most frequent words. ``units``: the Zipf word count ``num_words`` (None: the
        largest that fits ``length``).
        ``draw``: a fresh draw of the same sample (the probe's and the back-off's;
        :func:`lceval.benchmarks.ruler.common._rng`).
        """
        from scipy.special import zeta  # heavy: scipy

        rng = _rng(self.seed, task, length, index, draw)
        alpha = args.alpha
        budget_all = length - TOKENS_TO_GENERATE["freq_words_extraction"]
        # official: vocab_size = max_seq_length // 50 (RULER main: net of the answer budget)
        vocab_size = max(5, (length if self.fill == "official" else budget_all) // 50)
        pool, pcounts = self._coded_pool(task, args.coded_wordlen)
        pick = rng.choice(len(pool), vocab_size, replace=False)
        vocab = pool[pick].copy()
        wc = pcounts[pick].copy()
        vocab[0] = "..."  # official: the top-ranked word is noise
        wc[0] = self.c.count(" ...")
        overhead = _overhead(self.c, FWE_DESC, FWE_INSTR, FWE_PREFIX, " ")
        budget = budget_all - overhead
        weights = np.arange(1, vocab_size + 1, dtype=np.float64) ** -alpha / zeta(alpha)

        def tokens(n: int) -> int:
            return int(((n * weights).astype(np.int64) * wc).sum())

        lo, hi = (0, max(1, 4 * budget)) if units is None else (units, units)
        while lo < hi:  # largest word count whose text fits the budget
            mid = (lo + hi + 1) // 2
            if tokens(mid) <= budget:
                lo = mid
            else:
                hi = mid - 1
        cnt = (lo * weights).astype(np.int64)
        words = rng.permutation(np.repeat(np.arange(vocab_size), cnt))
        context = " ".join(vocab[words].tolist())
        return _Item(
            FWE_DESC,
            context,
            FWE_INSTR,
            FWE_PREFIX,
            " ",
            vocab[1:4].tolist(),
            tokens(lo),
            overhead,
            "coded_words",
            {},
        )
