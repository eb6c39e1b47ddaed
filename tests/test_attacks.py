"""Issue 32 items 3, 4 and 8, issue 31 item 6: attacks as a careless user and a crashing machine
would make them, table-driven. Every bad command is answered with one ``lceval: ...`` line
naming the problem (exit 2, no traceback) and leaves every file of every run byte-identical;
SIGKILL during a report leaves nothing behind once the next command has run; a run whose
models answered disjoint samples gets its report.

The runs are L-Eval prediction files imported (offline, no model): ``two`` holds model ``ma``
on TOEFL (tpo) and model ``mb`` on financial_qa (disjoint samples, as published prediction
sets often are); ``left`` holds ``ma`` only and ``right`` ``mb`` only.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lceval.core.store
import lceval.run
from lceval.cli import main
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, sweep_temps, temp_prefix

MODELS = {"ma": "tpo", "mb": "financial_qa"}


def _rows(model: str, task: str, n: int = 4) -> str:
    rows = [
        {
            "query": f"question {i} of {task}",
            "gt": "A" if task == "tpo" else f"answer {i}",
            f"{model}_pred": "A" if i % 2 else "B",
            "evaluation": "exam" if task == "tpo" else "f1",
        }
        for i in range(n)
    ]
    return "".join(json.dumps(r) + "\n" for r in rows)


def _predictions(folder: Path, models: dict[str, str]) -> Path:
    for model, task in models.items():
        (folder / model).mkdir(parents=True)
        (folder / model / f"{task}.pred.jsonl").write_text(_rows(model, task))
    return folder


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runs ``two``, ``left`` and ``right`` imported and scored; ``two`` reported."""
    base = tmp_path_factory.mktemp("attacks")
    root = base / "outputs"
    for rid, models in (
        ("two", MODELS),
        ("left", {"ma": "tpo"}),
        ("right", {"mb": "financial_qa"}),
    ):
        src = _predictions(base / f"pred-{rid}", models)
        assert main(["--outputs", str(root), "import", "leval", str(src), "--run-id", rid]) == 0
        assert main(["--outputs", str(root), "score", rid]) == 0
    assert main(["--outputs", str(root), "report", "two"]) == 0
    return root


@pytest.fixture
def root(built: Path, tmp_path: Path) -> Path:
    """A private copy of the built runs (tests may change them)."""
    out = tmp_path / "outputs"
    shutil.copytree(built, out)
    return out


def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes; left out: ``logs/`` (engine start-up records)
    and ``responses.jsonl.lock`` (the writer's flock file, empty of state and kept by design:
    removing a flock file on release races with the next writer)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "logs" not in p.relative_to(root).parts and p.suffix != ".lock"
    }


# -- bad input files the cases read ---------------------------------------------------------------
def _results_with(root: Path, tmp: Path, name: str, change: Callable[[dict], None]) -> str:
    doc = json.loads((root / "two" / "report" / "results.json").read_text())
    change(doc)
    path = tmp / name
    path.write_text(json.dumps(doc))  # json.dumps writes NaN as the bare word NaN
    return str(path)


def _nan(doc: dict) -> None:
    doc["headlines"][0]["estimate"] = float("nan")


def _int_version(doc: dict) -> None:
    doc["schema_version"] = 1


def _pred_file(tmp: Path, rows: list[dict]) -> str:
    folder = tmp / "bad-pred"
    folder.mkdir(exist_ok=True)
    path = folder / "tpo.pred.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


# -- issue 38 item 5: files that are not what they claim ---------------------------------------
def _put(root: Path, rel: str, data: bytes | str) -> None:
    """Replace ``two/<rel>`` by ``data`` (bytes), a symlink to /dev/zero (``"zero"``) or a FIFO
    (``"fifo"``)."""
    path = root / "two" / rel
    path.unlink()
    if data == "zero":
        path.symlink_to("/dev/zero")
    elif data == "fifo":
        os.mkfifo(path)
    else:
        assert isinstance(data, bytes)
        path.write_bytes(data)


def _meta_with(root: Path, **fields: object) -> bytes:
    doc = json.loads((root / "two" / "run.json").read_text())
    doc.update(fields)
    return json.dumps(doc).encode()


def _params(tmp: Path, data: bytes | str) -> str:
    path = tmp / "params.yaml"
    if data == "zero":
        path.symlink_to("/dev/zero")
    else:
        assert isinstance(data, bytes)
        path.write_bytes(data)
    return str(path)


def _bad_file(
    rel: str, data: bytes | str, verb: str = "score"
) -> Callable[[Path, Path], list[str]]:
    def argv(root: Path, tmp: Path) -> list[str]:
        _put(root, rel, data)
        return [verb, "two"]

    return argv


def _bad_meta(verb: str = "score", **fields: object) -> Callable[[Path, Path], list[str]]:
    def argv(root: Path, tmp: Path) -> list[str]:
        _put(root, "run.json", _meta_with(root, **fields))
        return [verb, "two"]

    return argv


def _huge_count(verb: str) -> Callable[[Path, Path], list[str]]:
    def argv(root: Path, tmp: Path) -> list[str]:
        path = root / "two" / "responses.jsonl"
        first = json.loads(path.read_text().splitlines()[0])
        with path.open("a") as f:
            f.write(json.dumps({**first, "text": "new", "reasoning_tokens": 10**20}) + "\n")
        return [verb, "two"]

    return argv


DIGITS = "9" * 5000
HUGE = "x" * 10_000_000


# -- a server that refuses every key --------------------------------------------------------------
@pytest.fixture
def refusing_server() -> Iterator[str]:
    """A local chat-completions server answering 401 to every request; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server API
            self.rfile.read(int(self.headers.get("content-length", 0)))
            body = json.dumps({"error": {"message": "Incorrect API key provided"}}).encode()
            self.send_response(401)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


# (name, argv after --outputs ROOT (``{tmp}`` and files made by ``make``), expected text of
# the one line)
CASES: list[tuple[str, Callable[[Path, Path], list[str]], str]] = [
    (
        "compare of runs with no shared sample",
        lambda root, tmp: ["compare", "left", "right"],
        "runs left and right share no scored sample",
    ),
    (
        "... with --samples",
        lambda root, tmp: ["compare", "left", "right", "--samples", str(tmp / "c.html")],
        "runs left and right share no scored sample",
    ),
    (
        "... with --no-tasks",
        lambda root, tmp: ["compare", "left", "right", "--no-tasks"],
        "runs left and right share no scored sample",
    ),
    (
        "two models of one run on disjoint samples",
        lambda root, tmp: ["compare", "two", "--model-a", "ma", "--model-b", "mb"],
        "run two's models share no scored sample",
    ),
    (
        "... with --samples",
        lambda root, tmp: [
            *("compare", "two", "--model-a", "ma", "--model-b", "mb"),
            *("--samples", str(tmp / "c.html")),
        ],
        "run two's models share no scored sample",
    ),
    (
        "a scorer of a benchmark the runs do not hold",
        lambda root, tmp: ["compare", "left", "right", "--scorer", "ruler"],
        "scorer 'ruler' scores ruler, which runs left and right do not hold; scorers there: leval",
    ),
    (
        "... on the leaderboard",
        lambda root, tmp: ["compare", "two", "--scorer", "lifbench:strict"],
        "scorer 'lifbench:strict' scores lifbench, which run two does not hold",
    ),
    (
        "... on the leaderboard of results files",
        lambda root, tmp: [
            *("compare", "--leaderboard", "--scorer", "ruler"),
            str(root / "two" / "report" / "results.json"),
        ],
        "results of run two hold no headline of scorer 'ruler'; their ruler scorers: none",
    ),
    (
        "a results file holding NaN",
        lambda root, tmp: [
            *("compare", "--leaderboard"),
            _results_with(root, tmp, "nan.json", _nan),
        ],
        "holds NaN, which JSON does not allow",
    ),
    (
        "a results file whose schema_version is a number",
        lambda root, tmp: [
            *("compare", "--leaderboard"),
            _results_with(root, tmp, "v1.json", _int_version),
        ],
        'has schema_version 1 (int); results files give it as text: "1"',
    ),
    (
        "an empty prediction file",
        lambda root, tmp: ["import", "leval", _pred_file(tmp, []), "--run-id", "new"],
        "no prediction row to import",
    ),
    (
        "a prediction key naming no model",
        lambda root, tmp: [
            *("import", "leval", "--run-id", "new"),
            _pred_file(tmp, [{"query": "q", "gt": "A", "_pred": "A"}]),
        ],
        "key '_pred' names no model",
    ),
    (
        "a model name with a line break",
        lambda root, tmp: [
            *("import", "leval", "--run-id", "new"),
            _pred_file(tmp, [{"query": "q", "gt": "A", "m\nx_pred": "A"}]),
        ],
        "holds a control character",
    ),
    (
        "a query that is a number",
        lambda root, tmp: [
            *("import", "leval", "--run-id", "new"),
            _pred_file(tmp, [{"query": 5, "gt": None, "m_pred": "A"}]),
        ],
        "line 1: query must be text, got int 5",
    ),
    (
        "a null reference",
        lambda root, tmp: [
            *("import", "leval", "--run-id", "new"),
            _pred_file(tmp, [{"query": "q", "gt": None, "m_pred": "A"}]),
        ],
        "line 1: gt (the reference answer) is null",
    ),
    (
        "plan with a model path that does not exist",
        lambda root, tmp: ["plan", "two", "--model", str(tmp / "nonexistent")],
        "model path {tmp}/nonexistent does not exist",
    ),
    (
        "plan --csv into a folder that cannot be written",
        lambda root, tmp: ["plan", "two", "--csv", "/proc/plan.csv"],
        "cannot write to /proc",
    ),
    ("run.json that is a list", _bad_file("run.json", b"[]"), "run.json is not a run record"),
    (
        "... for report",
        _bad_file("run.json", b"[]", "report"),
        "run.json is not a run record",
    ),
    ("run.json with models as a list", _bad_meta(models=["ma"]), "run.json is not a run record"),
    ("run.json with models as an int", _bad_meta(models=3), "run.json is not a run record"),
    (
        "run.json nested 100,000 deep",
        _bad_file("run.json", b"[" * 100_000),
        "run.json is not valid JSON (nested too deeply)",
    ),
    (
        "run.json a symlink to /dev/zero",
        _bad_file("run.json", "zero"),
        "run.json is a device or socket, not a regular file",
    ),
    ("run.json a FIFO", _bad_file("run.json", "fifo"), "run.json is a FIFO, not a regular file"),
    (
        "... for report",
        _bad_file("run.json", "fifo", "report"),
        "run.json is a FIFO, not a regular file",
    ),
    (
        "responses.jsonl a symlink to /dev/zero",
        _bad_file("responses.jsonl", "zero"),
        "responses.jsonl is a device or socket, not a regular file",
    ),
    (
        "... for report",
        _bad_file("responses.jsonl", "zero", "report"),
        "responses.jsonl is a device or socket, not a regular file",
    ),
    (
        "samples.jsonl a FIFO",
        _bad_file("samples.jsonl", "fifo"),
        "samples.jsonl is a FIFO, not a regular file",
    ),
    (
        "a response with reasoning_tokens 1e20",
        _huge_count("score"),
        "line 9 is not a valid response (cannot build Response: Response.reasoning_tokens: 1e+20",
    ),
    (
        "... for report",
        _huge_count("report"),
        "line 9 is not a valid response (cannot build Response: Response.reasoning_tokens: 1e+20",
    ),
    (
        "a params file in UTF-16",
        lambda root, tmp: [
            *("build", "manyifeval", "--run-id", "new", "--params"),
            _params(tmp, "n_prompts: 2\n".encode("utf-16")),
        ],
        "params file {tmp}/params.yaml is UTF-16 text; save it as UTF-8",
    ),
    (
        "a params file with invalid bytes",
        lambda root, tmp: [
            *("build", "manyifeval", "--run-id", "new", "--params"),
            _params(tmp, b"n_prompts: 2\nseed: \xff\xfe\n"),
        ],
        "params file {tmp}/params.yaml is not UTF-8 text (byte 19)",
    ),
    (
        "a params file that is /dev/zero",
        lambda root, tmp: [
            *("build", "manyifeval", "--run-id", "new", "--params"),
            _params(tmp, "zero"),
        ],
        "params file {tmp}/params.yaml is a device or socket, not a regular file",
    ),
    (
        "a params file nested 100,000 deep",
        lambda root, tmp: [
            *("build", "manyifeval", "--run-id", "new", "--params"),
            _params(tmp, b"a: " + b"[" * 100_000),
        ],
        "params file {tmp}/params.yaml is nested too deeply",
    ),
    (
        "a 5000-digit max_new_tokens",
        lambda root, tmp: [
            *("build", "manyifeval", "--run-id", "new", "-p"),
            f"max_new_tokens={DIGITS}",
        ],
        "max_new_tokens must be an integer, got '99999",
    ),
    (
        "a 10 MB params value (the line is cut)",
        lambda root, tmp: [*("build", "manyifeval", "--run-id", "new", "-p"), f"n_prompts={HUGE}"],
        "... (10000002 characters) (str)",
    ),
    (
        "-p run_id",
        lambda root, tmp: ["build", "manyifeval", "--run-id", "new", "-p", "run_id=../../escape"],
        "-p run_id is not taken here: give --run-id RUN instead",
    ),
    (
        "-p outputs_root",
        lambda root, tmp: ["build", "manyifeval", "--run-id", "new", "-p", "outputs_root=/proc/x"],
        "-p outputs_root is not taken here: give --outputs FOLDER instead",
    ),
    (
        "... for a pipeline",
        lambda root, tmp: [
            *("run", "params/pipelines/manyifeval_smoke.yaml", "--run-id", "new"),
            *("-p", "outputs_root=/proc/x"),
        ],
        "-p outputs_root is not taken here: give --outputs FOLDER instead",
    ),
    ("status of a run that does not exist", lambda root, tmp: ["status", "nope"], "no run nope"),
    (
        "an unknown context mode",
        lambda root, tmp: ["infer", "two", "-o", "context=half"],
        "option context 'half' is not a context mode; choose full, none, bm25:K or dense:K",
    ),
    (
        "a retrieval of 0 chunks",
        lambda root, tmp: ["infer", "two", "-o", "context=full,bm25:0"],
        "option context 'bm25:0': K must be an integer >= 1",
    ),
    (
        "an OpenAI-backend infer without a key",
        lambda root, tmp: ["infer", "two", "--backend", "openai", "--model", "gpt-x"],
        "set OPENAI_API_KEY to use the OpenAI API",
    ),
    (
        "an OpenAI-backend eval over a run, without a key: refused before the build",
        lambda root, tmp: [
            *("eval", "leval", "--run-id", "two", "--backend", "openai", "--model", "gpt-x"),
        ],
        "set OPENAI_API_KEY to use the OpenAI API",
    ),
    (
        "an eval over a run with a misspelt build param",
        lambda root, tmp: ["eval", "lifbench", "--run-id", "two", "-p", "lenghts=[1]"],
        "unknown parameter 'lenghts'; did you mean lengths?",
    ),
]


@pytest.mark.parametrize(("name", "argv", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_command_is_one_line_and_changes_nothing(
    root, tmp_path, capsys, monkeypatch, name, argv, message
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    args = argv(root, tmp_path)
    before = _files(root)
    capsys.readouterr()
    code = main(["--outputs", str(root), *args])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert "Traceback" not in err
    last = err.splitlines()[-1]  # infer says its plan on stderr first
    assert last.startswith("lceval: ") and message.format(tmp=tmp_path) in last, err
    assert len(last) < 2200  # a huge value is never echoed whole
    assert _files(root) == before  # run.json, responses, scores, report: byte-identical
    assert not (root / "new").exists()


def test_a_refused_key_adds_no_model_entry(root, capsys, refusing_server):
    before = _files(root)
    code = main(
        [
            *("--outputs", str(root), "infer", "two", "--backend", "openai"),
            *("--model", "gpt-x", "-o", f"base_url={refusing_server}"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "refused the API key" in err.splitlines()[-1], err
    assert _files(root) == before


def test_show_samples_worst_as_text_is_one_line(root):
    from lceval.report.samples_page import show_samples

    with pytest.raises(LcevalError, match="worst must be a whole number >= 1 or None, got '3'"):
        show_samples("two", worst="3", outputs_root=root)
    with pytest.raises(LcevalError, match="worst must be >= 1"):
        show_samples("two", worst=0, outputs_root=root)


def test_report_on_models_of_disjoint_samples(root, capsys):
    """Issue 31 item 6: the report is written; compare.html says the pairs share nothing; each
    model has its row in the per-model tables."""
    run = RunDir("two", root)
    shutil.rmtree(run.report)
    assert main(["--outputs", str(root), "report", "two"]) == 0, capsys.readouterr().err
    page = (run.report / "compare.html").read_text()
    assert "No pair of this run's models shares a scored sample" in page
    assert "ma: 4 sample(s) (4 with a score), task(s) tpo" in page
    assert "mb: 4 sample(s) (4 with a score), task(s) financial_qa" in page
    results = json.loads((run.report / "results.json").read_text())
    assert {h["model"] for h in results["headlines"]} == {"ma", "mb"}
    assert (run.report / "index.html").exists() and (run.report / "samples.html").exists()


@pytest.mark.crash
def test_sigkill_during_report_leaves_nothing_after_the_next_command(root):
    """SIGKILL while ``lceval report`` writes its staged folder: the previous report stays and
    the next command on the run removes the staged folder (and any temporary file) it left."""
    run = RunDir("two", root)
    good = (run.report / "results.json").read_bytes()
    env = {**os.environ, "LCEVAL_OUTPUTS": str(root)}
    killed = False
    for _ in range(3):  # the staged folder is caught within a few attempts
        proc = subprocess.Popen(
            [sys.executable, "-m", "lceval.cli", "report", "two"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        while proc.poll() is None:
            if any(p.name.startswith(".report.") for p in run.path.iterdir()):
                proc.send_signal(signal.SIGKILL)
                killed = True
                break
            time.sleep(0.005)
        proc.wait()
        if killed:
            break
    assert killed, "the report finished before its staged folder was seen"
    left = [p for p in run.path.iterdir() if p.name.startswith(".report.")]
    assert left  # what the kill left
    (run.path / f"{temp_prefix('run.json')}x.tmp").write_text("")  # ours: alive, kept
    assert (run.report / "results.json").read_bytes() == good  # the last good report stayed
    assert main(["--outputs", str(root), "compare", "two", "--leaderboard"]) == 0
    hidden = sorted(p.name for p in run.path.rglob(".*") if p.name.endswith((".tmp", ".old")))
    assert hidden == [f"{temp_prefix('run.json')}x.tmp"]


def test_sweep_removes_only_dead_owners(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = temp_prefix("x").split("@")[1].rstrip(".")
    stale = tmp_path / f".run.json.{dead.pid}@{host}.abcdefgh.tmp"
    stale_dir = tmp_path / f".report.{dead.pid}@{host}.abcdefgh.tmp"
    other_host = tmp_path / f".run.json.{dead.pid}@000000.abcdefgh.tmp"
    mine = tmp_path / f"{temp_prefix('run.json')}abcdefgh.tmp"
    plain = tmp_path / ".run.json.tmp"
    for p in (stale, other_host, mine, plain):
        p.write_text("")
    stale_dir.mkdir()
    (stale_dir / "results.json").write_text("{}")
    assert sorted(sweep_temps(tmp_path)) == sorted([stale, stale_dir])
    assert mine.exists() and other_host.exists() and plain.exists()


@pytest.mark.parametrize("fails", ["write_samples", "write_meta"])
def test_a_failed_forced_rebuild_leaves_the_run_as_it_was(tmp_path, echo_bench, monkeypatch, fails):
    """``lceval build --force`` over a run with answers moves them aside and rewrites contexts,
    samples and run.json; a write failing midway (a full disk) puts everything back."""
    from lceval.core.io import write_jsonl
    from lceval.core.records import Response

    run = lceval.run.build("r", "echo", {"n": 3}, root=tmp_path)
    write_jsonl(run.responses, [Response(sample_id="e0", model="m", text="a0", config_hash="x")])
    before = _files(tmp_path)

    def full_disk(self, *args, **kwargs):
        raise LcevalError(f"cannot write {self.path}: No space left on device")

    monkeypatch.setattr(RunDir, fails, full_disk)
    with pytest.raises(LcevalError, match="No space left"):
        lceval.run.build("r", "echo", {"n": 5, "seed": 1}, root=tmp_path, force=True)
    assert _files(tmp_path) == before
    assert not [p.name for p in run.path.iterdir() if p.name.startswith(".")]


# -- issue 38 item 4: text of any Unicode through score, report and coverage ---------------------
REGRESSION = Path(__file__).parent / "fixtures" / "regression"
any_text = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=40).map(
    lambda t: t + "\ud800"  # at least one lone surrogate
)


BENCHMARKS = ("cifbench", "leval", "lifbench", "longgenbench", "manyifeval", "ruler")


@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(any_text, min_size=4 * len(BENCHMARKS), max_size=4 * len(BENCHMARKS)))
def test_lone_surrogates_through_score_report_and_coverage(texts):
    """Answers and thinking (``reasoning``) of four responses of every benchmark's regression
    fixture, in one run, replaced by any text holding lone surrogates: ``lceval score`` and
    ``lceval report`` exit 0 (the coverage lines say subset). One run of all six benchmarks and
    one example: each score and report costs seconds on the CI machine."""
    import tempfile

    from lceval.core.io import dumps, new_meta

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        run = RunDir("u", root).create()
        rows: list[dict] = []
        for i, key in enumerate(BENCHMARKS):
            for name in ("samples.jsonl", "contexts.jsonl"):
                with (run.path / name).open("a") as f:
                    f.write((REGRESSION / key / name).read_text())
            lines = (REGRESSION / key / "responses.jsonl").read_text().splitlines()[1:5]
            rows += [
                {**json.loads(line), "text": t, "reasoning": t[::-1], "reasoning_tokens": 3}
                for line, t in zip(lines, texts[4 * i : 4 * i + 4], strict=True)
            ]
        run.responses.write_text("".join(dumps(r) + "\n" for r in rows))
        run.write_meta(new_meta("u"))
        for verb in ("score", "report"):
            assert main(["--outputs", str(root), verb, "u"]) == 0, verb


# -- issue 38 items 5 and 6: lceval status on hostile progress files ------------------------------
def test_status_of_a_hostile_progress_file(root, capsys):
    """Binary bytes, a time as text, an infinite time left and a model name holding ANSI escapes:
    status prints the readable records, control characters escaped, exit 0."""
    logs = root / "two" / "logs"
    logs.mkdir(exist_ok=True)
    good = {"model": "m\x1b[31mred", "answered": 3, "total": 8, "state": "running"}
    (logs / "progress.jsonl").write_bytes(
        b"\xff\xfe\x00binary\n"
        + json.dumps({**good, "t": "abc", "eta_s": "soon", "gen_tok_s": None}).encode()
        + b"\n"
        + json.dumps({"model": "n", "answered": 1, "total": 2, "eta_s": 1e400, "t": 1e400}).encode()
        + b"\n{torn"
    )
    capsys.readouterr()
    assert main(["--outputs", str(root), "status", "two"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "\x1b" not in out and "m\\x1b[31mred: 3/8 samples answered" in out, out
    assert "n: 1/2 samples answered" in out and "? left" in out


def test_status_of_a_progress_file_that_is_dev_zero(root, capsys):
    logs = root / "two" / "logs"
    logs.mkdir(exist_ok=True)
    (logs / "progress.jsonl").symlink_to("/dev/zero")
    assert main(["--outputs", str(root), "status", "two"]) == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.endswith("progress.jsonl is a device or socket, not a regular file"), last


def test_conflicting_answers_are_counted_named_and_the_first_is_scored(root, capsys):
    """Issue 38 item 5: ten lines per key with different texts ahead of the real ones: score
    exits 0, one warning gives the count and the keys, and the first line of each key is scored
    (the store's rule: the first successful answer)."""
    path = root / "two" / "responses.jsonl"
    lines = path.read_text().splitlines()
    ma = [json.loads(line) for line in lines if json.loads(line)["model"] == "ma"]
    fakes = [json.dumps({**r, "text": f"fake {i}"}) for i in range(10) for r in ma[:2]]
    path.write_text("\n".join([*fakes, *lines]) + "\n")
    capsys.readouterr()
    assert main(["--outputs", str(root), "score", "two"]) == 0
    err = capsys.readouterr().err
    warning = [x for x in err.splitlines() if "several different answers" in x]
    ids = sorted(r["sample_id"] for r in ma[:2])
    assert len(warning) == 1, err
    assert (
        f"2 sample(s) have several different answers in {path} ({ids[0]} of ma, {ids[1]} of ma;"
        in warning[0]
    )
    assert "20 extra line(s)): the first successful answer of each is scored" in warning[0]
    scores = RunDir("two", root).read_scores()
    texts = {r.sample_id: r.text for r in lceval.core.store.ResponseStore(path) if r.model == "ma"}
    assert texts[ids[0]] == "fake 0" and texts[ids[1]] == "fake 0"
    assert len(scores[scores["model"] == "ma"]) == len(ma)
