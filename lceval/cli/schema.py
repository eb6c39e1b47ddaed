"""``lceval schema [FOLDER]``: the JSON Schema of every verb's config and of every notebook's
params files, printed or written as ``FOLDER/<name>.schema.json`` (the committed copies are
``lceval/schemas/params/``, which editors read)."""

from __future__ import annotations

import json
from pathlib import Path

from lceval.cli.notebooks import notebook_schemas
from lceval.core.errors import LcevalError
from lceval.run.config import SchemaConfig, json_schemas


def handle(cfg: SchemaConfig, outputs: str | None) -> int:
    """Print the schemas as one JSON mapping (no folder) or write one file per name and print
    ``wrote PATH`` for each (:func:`lceval.run.config.json_schemas`,
    :func:`lceval.cli.notebooks.notebook_schemas`).

    Raises:
        LcevalError: the folder does not exist.
    """
    schemas = {**json_schemas(), **notebook_schemas()}
    if cfg.folder is None:
        print(json.dumps(schemas, indent=2))
        return 0
    out = Path(cfg.folder)
    if not out.is_dir():
        raise LcevalError(f"schema: folder {out} does not exist")
    for verb, schema in schemas.items():
        path = out / f"{verb}.schema.json"
        path.write_text(json.dumps(schema, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {path}")
    return 0
