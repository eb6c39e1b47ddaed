"""Execute lceval's notebooks once, in order, for the documentation site (`make docs-notebooks`).

Each notebook runs through `lceval.cli.notebooks.run_notebook` (papermill, as `lceval run` does)
with its own default `run_id` and the short test-time values the suite's nbval run uses
(`conftest.NOTEBOOK_TEST_PARAMS`: a few short answers each), into a temporary outputs folder;
the executed copy, outputs kept, is written to `docs/notebooks/`, where `make docs` renders it
as a page (mkdocs-jupyter, never re-executed). The site's notebook pages say so. In the copy,
the temporary outputs folder reads `outputs` and the checkout's path `.`, so no machine path is
committed. A notebook that fails stops the script with its error; the copies already written
stay.

    python docs/tools/execute_notebooks.py [NN_name ...]   # default: every notebook
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from conftest import NOTEBOOK_TEST_PARAMS  # noqa: E402  the suite's short values
from lceval.cli.notebooks import declared_params, run_notebook  # noqa: E402

OUT = REPO / "docs" / "notebooks"


def sanitize(path: Path, outputs: Path) -> None:
    """Replace the machine's paths in an executed copy: the outputs folder by ``outputs``, the
    checkout by ``.`` (JSON-escaped, as they appear in the file)."""
    text = path.read_text(encoding="utf-8")
    for old, new in (
        (str(outputs.resolve()), "outputs"),
        (str(outputs), "outputs"),
        (str(REPO), "."),
    ):
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")


def main(names: list[str]) -> None:
    notebooks = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if names:
        notebooks = [nb for nb in notebooks if nb.stem in names]
    outputs = Path(os.environ.get("LCEVAL_OUTPUTS") or tempfile.mkdtemp(prefix="lceval-docs-"))
    os.environ["LCEVAL_OUTPUTS"] = str(outputs)
    OUT.mkdir(parents=True, exist_ok=True)
    for nb in notebooks:
        run_id = declared_params(nb)["run_id"]
        params = dict(NOTEBOOK_TEST_PARAMS.get(nb.stem, {}))
        t0 = time.perf_counter()
        done = run_notebook(nb, run_id, params, outputs_root=outputs, kernel_name="lceval")
        shutil.copyfile(done, OUT / nb.name)
        sanitize(OUT / nb.name, outputs)
        print(f"{nb.stem}: {time.perf_counter() - t0:.0f} s -> {OUT / nb.name}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
