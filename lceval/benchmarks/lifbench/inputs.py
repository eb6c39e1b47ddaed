"""LIFBench inputs X: the List, MultiDoc and OneDoc contexts, fitted to a token limit.

Reproduces ``data/ConstructContext.py`` of the official LIFBench code (SheldonWu0327/LIFBench-2024)
with lceval's own code and offline stand-in corpora (``lceval.core.corpora``). Token counting is
incremental: every list line, document and sentence is tokenized once and the counts are summed
(the pieces meet at tiktoken pre-token boundaries, so the sum is exact); each finished context is
counted once more as a check, and only its boundary is adjusted if the check disagrees.

Differences from the official construction (documented choices):

- List texts: Alpaca's instructions of 5..40 words when ``alpaca_path`` is given (official);
  otherwise SQuAD / HotpotQA questions and IFBench / MT-Bench prompts of 5..40 words. Elements are
  a seeded stream with about two thirds uuid1-style hex strings (official: 90,000 uuid1 strings
  shuffled with the Alpaca instructions); uuids come from ``random.Random(seed)``, not the clock.
- MultiDoc texts: 300..500-token chunks of SQuAD contexts (titled by article), HotpotQA
  paragraphs (titled by paragraph title) and Paul Graham essays (untitled, like the official
  GovReport family), drawn with weights 3/8, 3/8, 1/4 so a quarter of documents lack a title as
  in the official four-family mix. Official texts outside 300..500 tokens were cut to 200 tokens.
- List and MultiDoc: official takes the longest prefix that stays under the limit; lceval takes
  that prefix and then fills the remaining gap with later pool items (one or two) so that X lands
  within ``tolerance`` (2%) below the limit.
- OneDoc: whole sentences (nltk punkt, as official) of the concatenated essays, plus a final
  partial sentence that fills the limit; the 23 key sentences are chosen among sentences of 5..50
  words that occur once, and their line breaks become spaces (official: removed).
"""

from __future__ import annotations

import base64
import datetime
import json
import random
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lceval.benchmarks.lifbench.gold import ONEDOC_TAGS
from lceval.benchmarks.lifbench.gold import KeySentence as KeySentenceGold
from lceval.core import corpora
from lceval.core.errors import LcevalError
from lceval.core.tokens import count_tokens, count_tokens_batch, get_encoding

UUID_SHARE = 2 / 3
"""Share of uuid hex elements in the List stream (official: 90,000 uuids beside ~45k texts)."""
MIN_WORDS, MAX_WORDS = 5, 40
"""Word range of the List's natural-language elements (official ``generate_alpaca_list``)."""
DOC_TOKENS = (301, 500)
"""Token range of a MultiDoc document text (official keeps texts with 300 < n <= 500)."""
DOC_FIELDS = ("id", "iD2", "title", "text", "date", "source")
SOURCES = ("meeting", "news", "govreport", "paper", "meeting", "news", "govreport", "paper", "")
"""Official ``random_sources``: an empty draw (1/9) means the document has no source field."""
DUP_SHARE, DUP_GROUPS = 0.25, 5
"""Official ``make_duplcated_list(dupli_ratio=0.25, doc_num=5)``."""
DOC_POOL = 480
"""MultiDoc pool size for limits up to 128k (433 documents fill 120k tokens officially)."""
TAGS = ONEDOC_TAGS
# Official add_key_evidence_token: (head type, tail tag, is_true) in marking order 0..22.
_MARKS: list[tuple[str, str, bool]] = (
    [("#Topic#", "<#Topic#>", True)] * 4
    + [("@argument@", "<@argument@>", True)] * 3
    + [("@argument@", "<#Topic#>", False)]
    + [("!Transition!", "<!Transition!>", True)] * 5
    + [("!Transition!", "<fake_tag>", False)]
    + [("*Evidence*", "<*Evidence*>", True)] * 4
    + [("-Concession-", "<-Concession->", True)] * 4
    + [("-Concession-", "<>", False)]
)
N_KEY = len(_MARKS)  # 23
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+")


def rng_for(seed: int, *keys: object) -> random.Random:
    """A ``random.Random`` seeded from ``seed`` and ``keys`` (stable across runs and platforms)."""
    return random.Random("|".join(str(k) for k in (seed, *keys)))


def _norm(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------------------- fitting
def fit(
    sizes: Sequence[int], prefix: Callable[[int], int], limit: int, lo: int
) -> tuple[list[int], int]:
    """Pick pool items, in pool order, whose rendered token sum lies in ``[lo, limit]``.

    Item ``j`` placed at 1-based position ``n`` costs ``prefix(n) + sizes[j]`` tokens. Takes the
    longest prefix under ``limit`` (official), then fills the gap with one or two later items,
    dropping trailing prefix items if needed.

    Args:
        sizes: token count of each pool item without its position-dependent prefix.
        prefix: tokens of the position marker of the n-th item (``"{n}."``, ``doc-{n}`` header).
        limit: the token limit (inclusive).
        lo: the least acceptable total (tokens).

    Returns:
        (pool indices in context order, total tokens).

    Raises:
        LcevalError: the pool cannot fill the limit.
    """
    chosen: list[int] = []
    total = 0
    j = 0
    while j < len(sizes) and total + prefix(len(chosen) + 1) + sizes[j] <= limit:
        total += prefix(len(chosen) + 1) + sizes[j]
        chosen.append(j)
        j += 1
    if j >= len(sizes) and total < lo:
        raise LcevalError(f"the input pool is too small for a {limit}-token context")
    rest = list(range(j, min(len(sizes), j + 150)))
    for _ in range(6):
        if total >= lo:
            return chosen, total
        extra = _fill(lo - total, limit - total, len(chosen), rest, sizes, prefix, 4)
        if extra is not None:
            idx = chosen + extra
            return idx, total + sum(
                prefix(n) + sizes[k] for n, k in enumerate(extra, len(chosen) + 1)
            )
        if not chosen:
            break
        last = chosen.pop()
        total -= prefix(len(chosen) + 1) + sizes[last]
    raise LcevalError(f"cannot fit pool items within 2% below {limit} tokens")


def _fill(
    gap_lo: int,
    gap_hi: int,
    n: int,
    cands: list[int],
    sizes: Sequence[int],
    prefix: Callable[[int], int],
    depth: int,
) -> list[int] | None:
    """Up to ``depth`` items of ``cands`` (in pool order) placed at positions n+1, n+2, ... whose
    costs sum into ``[gap_lo, gap_hi]``; None if there are none."""
    if depth == 0 or gap_hi <= 0:
        return None
    for k in cands:
        if gap_lo <= prefix(n + 1) + sizes[k] <= gap_hi:
            return [k]
    if depth == 1:
        return None
    tried = 0
    for k in cands:
        c = prefix(n + 1) + sizes[k]
        if c >= gap_hi:
            continue
        rest = _fill(
            gap_lo - c, gap_hi - c, n + 1, [x for x in cands if x > k], sizes, prefix, depth - 1
        )
        if rest is not None:
            return [k, *rest]
        tried += 1
        if tried >= (60 if depth == 2 else 4):
            break
    return None


# ------------------------------------------------------------------------------------------ List
@dataclass(frozen=True)
class ListContext:
    """One List input: the elements in order and the rendered text ``"{i}. {elem}\\n"``."""

    elements: list[str]
    text: str
    n_tokens: int


def list_texts(alpaca_path: str | None) -> tuple[list[str], dict[str, Any]]:
    """Natural-language List elements of 5..40 words (unique, whitespace-normalised, file order).

    Args:
        alpaca_path: Alpaca's ``alpaca_data.json`` (a JSON list of {"instruction", ...}), or None
            for the shipped stand-ins.

    Returns:
        (texts, sources for run.json).

    Raises:
        LcevalError: a missing or corrupt file (named).
    """
    raw: list[str] = []
    sources: dict[str, Any] = {}
    if alpaca_path:
        p = Path(alpaca_path)
        if not p.is_file():
            raise LcevalError(f"alpaca_path {alpaca_path!r} does not exist")
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
            raw = [str(d["instruction"]) for d in data]
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, RecursionError):
            raise LcevalError(
                f"alpaca_path {alpaca_path!r} is corrupt: expected a JSON list of "
                "objects with 'instruction'"
            ) from None
        sources["alpaca"] = corpora.source_info(p)
    else:
        raw += [r["question"] for r in corpora.squad()]
        raw += [str(r["question"]) for r in corpora.hotpotqa()]
        raw += [str(r["prompt"]) for r in corpora.ifbench_prompts()]
        raw += [str(r["turns"][0]) for r in corpora.mtbench_questions()]
        for name in ("squad", "hotpotqa", "ifbench_prompts", "mtbench_questions"):
            sources[name] = corpora.source_info(name)
    seen: set[str] = set()
    texts = []
    for t in raw:
        t = _norm(t)
        if MIN_WORDS <= len(t.split()) <= MAX_WORDS and t not in seen and not t[:1].isdigit():
            seen.add(t)
            texts.append(t)
    if not texts:
        raise LcevalError("no List texts of 5..40 words in the given source")
    return texts, sources


class ListPool:
    """A seeded stream of List elements with their token counts, grown on demand."""

    def __init__(self, texts: Sequence[str], seed: int, encoding: str) -> None:
        self.encoding = encoding
        self._rng = rng_for(seed, "list")
        order = list(texts)
        self._rng.shuffle(order)
        self._texts = iter(order)
        self.elements: list[str] = []
        self.sizes: list[int] = []
        self._num_cache: dict[int, int] = {}

    def _grow(self, tokens: int) -> None:
        new = []
        for _ in range(max(256, tokens // 12)):
            if self._rng.random() < UUID_SHARE:
                new.append(uuid.UUID(int=self._rng.getrandbits(128), version=1).hex)
            else:
                t = next(self._texts, None)
                if t is None:
                    raise LcevalError("the List text source is exhausted; give alpaca_path")
                new.append(t)
        self.elements += new
        self.sizes += count_tokens_batch([f" {e}\n" for e in new], self.encoding)

    def number_tokens(self, n: int) -> int:
        """Tokens of the position marker ``"{n}."``."""
        if n not in self._num_cache:
            self._num_cache[n] = count_tokens(f"{n}.", self.encoding)
        return self._num_cache[n]

    def reserve(self, limit: int) -> None:
        """Grow the pool as :meth:`context` does for ``limit`` (a build that skips a length
        grows it all the same, so the later lengths' contexts are the whole build's).

        Raises:
            LcevalError: the text source runs out.
        """
        while sum(self.sizes) < limit * 1.2 + 2000:
            self._grow(limit)

    def context(self, limit: int, tolerance: float) -> ListContext:
        """The List context of at most ``limit`` tokens and at least ``(1 - tolerance) * limit``.

        Raises:
            LcevalError: the text source runs out.
        """
        self.reserve(limit)
        lo = int(limit * (1 - tolerance)) + 1
        idx, total = fit(self.sizes, self.number_tokens, limit, lo)
        elements = [self.elements[i] for i in idx]
        text = "".join(f"{i}. {e}\n" for i, e in enumerate(elements, 1))
        n = count_tokens(text, self.encoding)
        while n > limit:  # never expected (pieces meet at pre-token boundaries); keep it safe
            elements.pop()
            text = "".join(f"{i}. {e}\n" for i, e in enumerate(elements, 1))
            n = count_tokens(text, self.encoding)
        return ListContext(elements, text, n)


# -------------------------------------------------------------------------------------- MultiDoc
@dataclass(frozen=True)
class Doc:
    """One MultiDoc document; absent fields are None (absent from the rendering too)."""

    fields: dict[str, str]
    """Present fields only, in rendering order (a seeded random order, as official)."""
    family: str
    group: int | None = None
    """Duplicate group (0..4) or None."""

    def body(self) -> str:
        """The rendering after the ``doc-{n}`` header: ``key: value`` lines, then a blank line."""
        return "".join(f"{k}: {v}\n" for k, v in self.fields.items()) + "\n\n"


def doc_header(n: int) -> str:
    """The official document header line."""
    return f"******************** doc-{n} ********************\n"


@dataclass(frozen=True)
class MultiDocContext:
    """One MultiDoc input: the documents in order and the rendered text."""

    docs: list[Doc]
    text: str
    n_tokens: int
    dup_groups: list[list[int]] = field(default_factory=list)
    """Duplicate groups as 1-based document numbers (groups with >= 2 members present)."""


_DERIVED: dict[tuple[object, ...], tuple[object, Any]] = {}
"""What a build derives from a shipped corpus (sentence units, sentence sizes), kept beside the
corpus object it came from: a later build in the process reuses it while ``lceval.core.corpora``
serves the same object (its loaders are cached) and derives it afresh after their caches are
cleared. Each derivation costs 0.5-1.5 s of a lifbench build."""


def _derived(key: tuple[object, ...], corpus: object, make: Callable[[], Any]) -> Any:
    """``make()`` for ``corpus`` under ``key``, kept while ``corpus`` is the object served."""
    kept = _DERIVED.get(key)
    if kept is None or kept[0] is not corpus:
        kept = _DERIVED[key] = (corpus, make())
    return kept[1]


def _family_units(name: str) -> tuple[tuple[str | None, list[str]], ...]:
    """(title, sentences) units of a document family, in corpus order (derived once per
    corpus object: callers only read them)."""
    corpus: object = (
        corpora.squad()
        if name == "squad"
        else corpora.hotpotqa()
        if name == "hotpotqa"
        else corpora.paul_graham_essays()
    )
    return _derived(("units", name), corpus, lambda: tuple(_make_family_units(name)))


def _make_family_units(name: str) -> list[tuple[str | None, list[str]]]:
    """(title, sentences) units of a document family, in corpus order."""
    if name == "squad":
        seen: dict[str, tuple[str, list[str]]] = {}
        for r in corpora.squad():
            if r["context"] not in seen:
                seen[r["context"]] = (
                    r["title"].replace("_", " "),
                    _SENT_SPLIT.split(_norm(r["context"])),
                )
            # paragraphs of one article are consecutive; units are paragraphs
        return list(seen.values())
    if name == "hotpotqa":
        units: list[tuple[str | None, list[str]]] = []
        seen_titles: set[str] = set()
        for item in corpora.hotpotqa():
            for title, sents in item["context"]:
                if title not in seen_titles and len(sents) >= 2:
                    seen_titles.add(title)
                    units.append((str(title), [_norm(s) for s in sents if _norm(s)]))
        return units
    text = corpora.paul_graham_essays()
    sents = _SENT_SPLIT.split(_norm(text))
    return [(None, sents[i : i + 40]) for i in range(0, len(sents), 40)]


class DocPool:
    """The seeded MultiDoc document pool with duplicate groups (official ``MultiDocInput``)."""

    FAMILIES = (("squad", 3), ("hotpotqa", 3), ("paul_graham_essays", 2))

    def __init__(self, seed: int, encoding: str, size: int = DOC_POOL) -> None:
        self.encoding = encoding
        rng = rng_for(seed, "multidoc")
        units = {name: _family_units(name) for name, _ in self.FAMILIES}
        cursors = {name: rng.randrange(len(u)) for name, u in units.items()}
        names = [n for n, w in self.FAMILIES for _ in range(w)]
        texts: list[str] = []
        meta: list[tuple[str, str | None]] = []
        for _ in range(size):
            fam = rng.choice(names)
            target = rng.randint(*DOC_TOKENS)
            title, text = self._chunk(units[fam], cursors, fam, target)
            texts.append(text)
            meta.append((fam, title))
        # Duplicate groups over the whole pool (official make_duplcated_list): pool items 0 and 2
        # open group 0; every group has int(size * 0.25) // 5 + 1 members.
        per_group = int(size * DUP_SHARE) // DUP_GROUPS + 1
        members = [0, 2, *rng.sample(range(3, size), per_group * DUP_GROUPS - 2)]
        groups = [sorted(members[g * per_group : (g + 1) * per_group]) for g in range(DUP_GROUPS)]
        group_of: dict[int, int] = {}
        for g, mem in enumerate(groups):
            for i in mem:
                texts[i] = texts[mem[0]]
                group_of[i] = g
        self.docs: list[Doc] = []
        start = datetime.date(2000, 1, 1)
        days = (datetime.date(2024, 12, 31) - start).days
        for i, (text, (fam, title)) in enumerate(zip(texts, meta, strict=True)):
            values: dict[str, str | None] = {
                "id": base64.urlsafe_b64encode(uuid.UUID(int=rng.getrandbits(128), version=4).bytes)
                .rstrip(b"=")
                .decode(),
                "iD2": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                "title": title,
                "text": text,
                "date": (start + datetime.timedelta(days=rng.randint(0, days))).isoformat(),
                "source": rng.choice(SOURCES) or None,
            }
            keys = list(DOC_FIELDS)
            rng.shuffle(keys)
            fields = {k: v for k in keys if (v := values[k])}
            self.docs.append(Doc(fields, fam, group_of.get(i)))
        self.sizes = count_tokens_batch([d.body() for d in self.docs], encoding)
        self._head: dict[int, int] = {}

    def _chunk(
        self,
        units: Sequence[tuple[str | None, list[str]]],
        cursors: dict[str, int],
        fam: str,
        target: int,
    ) -> tuple[str | None, str]:
        """Consecutive sentences of one family until ``target`` tokens (300..500 in the end)."""
        u = cursors[fam]
        title = units[u % len(units)][0]
        sents: list[str] = []
        n = 0
        while n < target:
            t, ss = units[u % len(units)]
            u += 1
            for s in ss:
                sents.append(s)
                n += count_tokens(" " + s, self.encoding)
                if n >= target:
                    break
        cursors[fam] = u
        text = " ".join(sents)
        while count_tokens(text, self.encoding) > DOC_TOKENS[1] and len(sents) > 1:
            sents.pop()
            text = " ".join(sents)
        if count_tokens(text, self.encoding) < DOC_TOKENS[0]:  # one very long sentence: cut it
            enc = get_encoding(self.encoding)
            text = enc.decode(enc.encode_ordinary(" ".join(sents))[: DOC_TOKENS[1] - 5]).strip()
        return title, text

    def header_tokens(self, n: int) -> int:
        """Tokens of the ``doc-{n}`` header line."""
        if n not in self._head:
            self._head[n] = count_tokens(doc_header(n), self.encoding)
        return self._head[n]

    def context(self, limit: int, tolerance: float) -> MultiDocContext:
        """The MultiDoc context of ``(1 - tolerance) * limit`` to ``limit`` tokens.

        Raises:
            LcevalError: the pool is too small for ``limit``.
        """
        lo = int(limit * (1 - tolerance)) + 1
        idx, _ = fit(self.sizes, self.header_tokens, limit, lo)
        docs = [self.docs[i] for i in idx]
        text = "".join(doc_header(n) + d.body() for n, d in enumerate(docs, 1))
        n_tok = count_tokens(text, self.encoding)
        while n_tok > limit:  # never expected; keep it safe
            docs.pop()
            text = "".join(doc_header(n) + d.body() for n, d in enumerate(docs, 1))
            n_tok = count_tokens(text, self.encoding)
        groups: dict[int, list[int]] = {}
        for n, d in enumerate(docs, 1):
            if d.group is not None:
                groups.setdefault(d.group, []).append(n)
        dup = sorted(g for g in groups.values() if len(g) > 1)
        return MultiDocContext(docs, text, n_tok, dup)


# ---------------------------------------------------------------------------------------- OneDoc
@dataclass(frozen=True)
class KeySentence:
    """A tagged sentence of the OneDoc input."""

    text: str
    tag: str
    """Head type, e.g. ``"#Topic#"``."""
    order: int
    """Marking order 0..22 (official)."""
    sentence_index: int
    is_true: bool
    head: str
    tail: str

    def to_gold(self) -> KeySentenceGold:
        """This sentence as the gold records it (``gold.KeySentence``)."""
        return KeySentenceGold(
            text=self.text,
            order=self.order,
            sentence_index=self.sentence_index,
            is_true=self.is_true,
            head=self.head,
            tail=self.tail,
        )


@dataclass(frozen=True)
class OneDocContext:
    """One OneDoc input: sentences (tags applied), key sentences and the text."""

    sentences: list[str]
    keys: list[KeySentence]
    text: str
    n_tokens: int

    def untagged(self) -> list[int]:
        """Indices of full, untagged sentences of 5..50 words occurring once (QA evidence)."""
        tagged = {k.sentence_index for k in self.keys}
        last = len(self.sentences) - 1  # the partial filler sentence
        return [
            i
            for i, s in enumerate(self.sentences)
            if i not in tagged and i != last and _eligible(s) and self.text.count(s) == 1
        ]


def _eligible(s: str) -> bool:
    return 5 <= len(s.split()) <= 50 and "<" not in s and ">" not in s


class OneDocSource:
    """The concatenated Paul Graham essays split into sentences (nltk punkt, as official)."""

    def __init__(self, encoding: str, max_limit: int) -> None:
        import nltk  # heavy: nltk

        corpora.ensure_nltk_data()
        self.encoding = encoding
        essays = corpora.paul_graham_essays()
        chars = min(len(essays), max_limit * 6 + 20000)

        def split() -> tuple[tuple[str, ...], tuple[int, ...]]:
            try:
                sents = [s.strip() for s in nltk.sent_tokenize(essays[:chars]) if s.strip()]
            except LookupError as exc:
                raise LcevalError(f"NLTK punkt data missing: {str(exc).splitlines()[0]}") from None
            spaced = [s if i == 0 else " " + s for i, s in enumerate(sents)]
            return tuple(sents), tuple(count_tokens_batch(spaced, encoding))

        # derived once per essays object, encoding and length (tuples: the contexts only read them)
        self.sentences: tuple[str, ...]
        self.sizes: tuple[int, ...]
        self.sentences, self.sizes = _derived(("onedoc", encoding, chars), essays, split)

    def context(self, limit: int, tolerance: float, rng: random.Random) -> OneDocContext:
        """Sentences up to ``limit`` tokens (tags included), the 23 key sentences tagged.

        Raises:
            LcevalError: the essays are too short for ``limit`` or have too few usable sentences.
        """
        for _ in range(10):
            ctx = self._try_context(limit, tolerance, rng)
            if all(ctx.text.count(k.text) == 1 for k in ctx.keys):
                return ctx
        raise LcevalError(f"cannot place 23 unique key sentences in a {limit}-token OneDoc context")

    def _try_context(self, limit: int, tolerance: float, rng: random.Random) -> OneDocContext:
        budget = limit - 400
        total, m = 0, 0
        while m < len(self.sentences) and total + self.sizes[m] <= budget:
            total += self.sizes[m]
            m += 1
        if m >= len(self.sentences) or budget <= 0:
            raise LcevalError(f"the essays are too short for a {limit}-token OneDoc context")
        sents = self.sentences[:m]
        seen: dict[str, int] = {}
        for s in sents:
            seen[_norm(s)] = seen.get(_norm(s), 0) + 1
        eligible = [i for i, s in enumerate(sents) if _eligible(s) and seen[_norm(s)] == 1]
        if len(eligible) < N_KEY + 4:
            raise LcevalError(f"a {limit}-token OneDoc context has too few sentences to tag")
        picks = rng.sample(eligible, N_KEY)
        keys: list[KeySentence] = []
        per_tag: dict[str, int] = {}
        out = list(sents)
        sizes = list(self.sizes[:m])
        for order, (idx, (tag, tail, is_true)) in enumerate(zip(picks, _MARKS, strict=True)):
            k = per_tag.get(tag, 0)
            per_tag[tag] = k + 1
            head = f"<{tag}-{k}>"
            plain = _norm(sents[idx])
            keys.append(KeySentence(plain, tag, order, idx, is_true, head, tail))
            out[idx] = head + plain + tail
            sizes[idx] = count_tokens(out[idx] if idx == 0 else " " + out[idx], self.encoding)
        total = sum(sizes)
        lo = int(limit * (1 - tolerance)) + 1
        while m < len(self.sentences) and total + self.sizes[m] <= limit:  # whole sentences
            out.append(self.sentences[m])
            total += self.sizes[m]
            m += 1
        enc = get_encoding(self.encoding)
        filler = ""
        if total < lo and m < len(self.sentences):  # a partial last sentence fills the limit
            ids = enc.encode_ordinary(" " + self.sentences[m])
            filler = enc.decode(ids[: limit - total]).strip()
        text = " ".join([*out, filler] if filler else out)
        n = count_tokens(text, self.encoding)
        while n > limit and filler:  # the filler merged at its boundary: trim it
            filler = enc.decode(enc.encode_ordinary(filler)[: -(n - limit)]).strip()
            text = " ".join([*out, filler] if filler else out)
            n = count_tokens(text, self.encoding)
        if n > limit:
            raise LcevalError(f"OneDoc context overshoots {limit} tokens ({n})")
        return OneDocContext([*out, filler] if filler else out, keys, text, n)
