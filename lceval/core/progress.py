"""Progress: one tqdm bar per model, also appended to ``<run>/logs/progress.jsonl`` (a JSON
record a line, at most every :data:`EVERY_S` s and at the end) for ``lceval status`` and
``lceval run``. ``answered`` counts samples with an answer, ``new`` those of this call (rates are
per second of it); ``eta_s`` uses the engine's measured prefill and decode rates and the answers'
budgets where reported (:func:`work_eta`), else answers per second, and is None until
:data:`HONEST_SHARE` is answered; ``state`` is ``running``, ``done`` or ``stopped``.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import itertools
import json
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import psutil
from tqdm import tqdm  # a plain text bar: tqdm.auto needs ipywidgets in notebooks

from lceval.core.console import terminal
from lceval.core.errors import LcevalError
from lceval.core.io import read_lines

EVERY_S = 1.5
"""Least seconds between two progress lines of one model (the last is always written)."""

REFRESH_S = 10.0
"""Most seconds between two progress lines while the call runs: the time left moves with the
tokens the answers in flight generate, between answers too (issue 49: a bar showed one time left
unchanged for 30 minutes)."""

HONEST_SHARE = 0.1
"""Share of a call's samples answered (and at least 2) before the bar shows a time left."""

WORK_KEYS = (
    "sent tokens done prefill_s prefill_tokens decode_s decode_tokens in_flight budget".split()
)
"""An engine's measured work (vLLM's ``prompt_work``; see :func:`work_eta`)."""

NUMBERS = ("t", "eta_s", "prompt_tok_s", "gen_tok_s")
"""Record fields dropped (unknown) when not a finite number."""


def progress_path(run_path: str | os.PathLike[str]) -> Path:
    """``<run folder>/logs/progress.jsonl``."""
    return Path(run_path) / "logs" / "progress.jsonl"


def duration(seconds: float | None) -> str:
    """``65.0`` -> ``1m05s``, ``3700`` -> ``1h01m``; None -> ``?``."""
    if seconds is None or seconds != seconds or seconds < 0:
        return "?"
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def postfix(record: Mapping[str, Any]) -> str:
    """The part of a progress line after the counts: rates, time left, replicas (before the
    first answer of an engine that reports it: the prompt tokens prefilled so far)."""
    replicas = f"replicas {record.get('replicas_alive', 1)}/{record.get('replicas', 1)} alive"
    prefilled = record.get("prefilled")
    if not record.get("new") and prefilled is not None and record.get("state") == "running":
        return f"prefilling: {prefilled:,} prompt tokens done, first answers soon, {replicas}"
    left = "0s" if record.get("state") == "done" else duration(record.get("eta_s"))
    return (
        f"prompt {record.get('prompt_tok_s', 0):,.0f} tok/s, "
        f"generated {record.get('gen_tok_s', 0):,.1f} tok/s, {left} left, {replicas}"
    )


def render(record: Mapping[str, Any]) -> str:
    """One plain line for a progress record (what ``lceval status`` and ``lceval run`` print)."""
    return (
        f"{_label(record)}: {record.get('answered')}/{record.get('total')} samples answered, "
        f"{postfix(record)} [{record.get('state', 'running')}]"
    )


def work_eta(
    work: Mapping[str, float],
    *,
    pending: int,
    lengths: Sequence[int],
    running: Sequence[tuple[int, int]] = (),
) -> float | None:
    """Seconds left: prompt tokens left / prefill rate + answer tokens left / decode rate.

    The answer tokens left are estimated from the answers' budgets, never from the mean length of
    the answers finished so far (the short ones finish first: that mean showed "0s left" for
    minutes of a decode-heavy run, issue 49). Answer lengths are a censored sample: each finished
    answer's length is observed, each answer in flight is known only to exceed the tokens it has
    generated. Their Kaplan-Meier survival curve ``S`` (:func:`scipy.stats.ecdf`; flat, so
    towards the budget, beyond the longest answer seen) gives an answer not started
    ``int_0^B S(t) dt`` more tokens and one in flight at ``g`` of its budget ``B``
    ``int_g^B S(t) dt / S(g)``: the expected rest of ``min(length, B)``, up to ``B - g``.

    Args:
        work: this call's :data:`WORK_KEYS`: samples ``sent``, their new prompt ``tokens`` (beyond
            cached prefixes), ``done`` of those prefilled; ``prefill_s`` seconds that prefilled
            ``prefill_tokens``; ``decode_s`` seconds that generated ``decode_tokens``;
            ``budget``: the answer budgets (new tokens) of the samples sent.
        pending: the call's samples; lengths: the generated tokens of each answer finished so far;
        running: ``(generated, budget)`` of each answer in flight.

    Returns:
        Seconds (unsent samples at the mean prompt and budget of those sent); None before there
        is a rate of each kind and an answer, or without budgets.
    """
    sent, tokens, done = work.get("sent", 0), work.get("tokens", 0), work.get("done", 0)
    p_s, p_tok = work.get("prefill_s", 0), work.get("prefill_tokens", 0)
    d_s, d_tok = work.get("decode_s", 0), work.get("decode_tokens", 0)
    budget = work.get("budget", 0)
    if sent <= 0 or tokens <= 0 or not lengths or min(p_s, p_tok, d_s, d_tok, budget) <= 0:
        return None
    prefill_left = max(0.0, tokens - done) + max(0, pending - sent) * tokens / sent
    survival = Survival(lengths, [g for g, _ in running])
    not_started = max(0, pending - len(lengths) - len(running))
    decode_left = not_started * survival.rest(0, budget / sent) + sum(
        survival.rest(g, b) for g, b in running
    )
    return prefill_left * p_s / p_tok + decode_left * d_s / d_tok


class Survival:
    """The Kaplan-Meier survival curve of answer lengths (:func:`work_eta`): ``finished`` lengths
    observed, ``censored`` ones known only to exceed their value (answers in flight)."""

    def __init__(self, finished: Sequence[int], censored: Sequence[int]) -> None:
        from scipy import stats  # heavy: scipy

        if finished:
            sf = stats.ecdf(stats.CensoredData(uncensored=finished, right=censored)).sf
            self.t, self.s = [0.0, *map(float, sf.quantiles)], [1.0, *map(float, sf.probabilities)]
        else:  # nothing finished: every answer may run to its budget
            self.t, self.s = [0.0], [1.0]

    def at(self, x: float) -> float:
        """``S(x)``: the share of answers longer than ``x`` tokens."""
        return self.s[bisect.bisect_right(self.t, x) - 1]

    def rest(self, g: float, budget: float) -> float:
        """The expected tokens still to come of an answer ``g`` tokens long, ``budget`` at most:
        ``int_g^budget S(t) dt / S(g)`` (``budget - g`` where ``S(g)`` is 0)."""
        if budget <= g:
            return 0.0
        start = self.at(g)
        if start <= 0:
            return budget - g
        area, edges = 0.0, [g, *(t for t in self.t if g < t < budget), budget]
        for a, b in itertools.pairwise(edges):
            area += self.at(a) * (b - a)
        return area / start


class Progress:
    """A model's progress: a tqdm bar on the terminal and lines in progress.jsonl.

    Args:
        path: the progress file (None: terminal only).
        total: samples of this call (answered earlier included); initial: answered before it.
        replicas: engine replicas answering (1 in-process).
        stream: where the bar goes (default: :func:`lceval.core.console.terminal`).
        prefilled: returns the prompt tokens prefilled so far (shown before the first answer).
        work: returns the engine's measured work (:data:`WORK_KEYS`, and ``running``: the
            ``(generated, budget)`` of its answers in flight) for :func:`work_eta`.
    """

    def __init__(
        self,
        path: Path | None,
        model: str,
        total: int,
        initial: int = 0,
        *,
        desc: str | None = None,
        replicas: int = 1,
        show: bool = True,
        stream: TextIO | None = None,
        prefilled: Callable[[], int | None] | None = None,
        work: Callable[[], Mapping[str, float] | None] | None = None,
    ) -> None:
        self.path, self.model, self.total = path, model, total
        self.answered, self.new = initial, 0
        self.prompt_tokens = self.gen_tokens = 0
        self.lengths: list[int] = []  # this call's answers' generated tokens
        self.replicas = self.alive = replicas
        self.desc = desc or f"infer {model}"
        self.t0 = time.perf_counter()
        self._last = 0.0
        self._lock = threading.Lock()
        self.bar = tqdm(
            total=total,
            initial=initial,
            desc=self.desc,
            unit="sample",
            disable=not show,
            file=stream or terminal(),
            bar_format="{desc}: {n_fmt}/{total_fmt} samples answered |{bar}|{postfix}",
        )
        self.extra: dict[str, str] = {}
        self.prefilled, self.work = prefilled, work
        self._prefilled0, self._work0 = self._read_prefilled(), self._read_work()
        self._dirty = False
        self._closed = threading.Event()
        self._write("running", force=True)
        threading.Thread(target=self._tick, name="lceval-progress", daemon=True).start()

    def _read_prefilled(self) -> int | None:
        try:
            got = self.prefilled() if self.prefilled is not None else None
        except Exception:  # noqa: BLE001 - a view: a failing count is not shown
            return None
        return got if isinstance(got, int) else None

    def _read_work(self) -> dict[str, Any] | None:
        """The engine's :data:`WORK_KEYS` (0 where not reported) and ``running``: the
        ``(generated, budget)`` of its answers in flight."""
        try:
            got = self.work() if self.work is not None else None
            if not got:
                return None
            out: dict[str, Any] = {k: float(got.get(k, 0.0)) for k in WORK_KEYS}
            running: Any = got.get("running") or ()
            out["running"] = [(int(g), int(b)) for g, b in running]
            return out
        except Exception:  # noqa: BLE001 - a view: a failing count falls back to answers/s
            return None

    def _tick(self) -> None:
        """Every half second: redraw while prefilling, write what the last event left unwritten,
        and every :data:`REFRESH_S` seconds the time left anew."""
        seen, drawn = self._prefilled0, time.perf_counter()
        while not self._closed.wait(0.5):
            with self._lock:
                if self._closed.is_set():
                    return
                now = self._read_prefilled()
                self._dirty |= now != seen
                seen = now
                t = time.perf_counter()
                due = self._dirty and t - self._last >= EVERY_S
                if due or t - max(drawn, self._last) >= REFRESH_S:
                    self._write("running", force=not due)
                    drawn = t

    def record(self, state: str = "running") -> dict[str, Any]:
        """The current progress as a progress.jsonl record (see the module docstring)."""
        dt = max(time.perf_counter() - self.t0, 1e-9)
        left = self.total - self.answered
        pending = self.total - (self.answered - self.new)  # this call's samples
        honest = self.new >= max(2, HONEST_SHARE * pending)
        now = self._read_prefilled()
        return {
            "time": _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
            "t": round(time.time(), 3),
            "pid": os.getpid(),
            "model": self.model,
            "desc": self.desc,
            "answered": self.answered,
            "total": self.total,
            "new": self.new,
            "prompt_tok_s": round(self.prompt_tokens / dt, 1),
            "gen_tok_s": round(self.gen_tokens / dt, 2),
            "eta_s": 0.0 if left <= 0 else (round(self._eta(dt, pending), 1) if honest else None),
            "prefilled": None if now is None else now - (self._prefilled0 or 0),
            "replicas": self.replicas,
            "replicas_alive": self.alive,
            "state": state,
        }

    def _eta(self, dt: float, pending: int) -> float:
        """:func:`work_eta` of this call's work, else the samples left at this call's rate."""
        now, base = self._read_work(), self._work0
        if now is not None and base is not None:
            work = {k: now[k] - base[k] for k in WORK_KEYS}
            got = work_eta(work, pending=pending, lengths=self.lengths, running=now["running"])
            if got is not None:
                return got
        return (self.total - self.answered) * dt / self.new

    def add(self, n: int, prompt_tokens: int, gen_tokens: int) -> None:
        """Count ``n`` samples answered now with their prompt and generated tokens."""
        with self._lock:
            self.answered += n
            self.new += n
            self.prompt_tokens += prompt_tokens
            self.gen_tokens += gen_tokens
            self.lengths += [gen_tokens // n + (i < gen_tokens % n) for i in range(n)]
            self.bar.n += n  # drawn once below, with its new postfix
            self._write("running")

    def set_alive(self, alive: int) -> None:
        """Replicas still answering (a replica died)."""
        with self._lock:
            self.alive = alive
            self._write("running", force=True)

    def _write(self, state: str, force: bool = False) -> None:
        now = time.perf_counter()
        rec = self.record(state)
        extra = "".join(f", {k} {v}" for k, v in self.extra.items())
        self.bar.set_postfix_str(postfix(rec) + extra, refresh=True)
        self._dirty = self.path is not None
        if self.path is None or (not force and now - self._last < EVERY_S):
            return
        self._last = now
        self._dirty = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(rec) + "\n")
        except OSError:  # progress is a view: a full disk must not stop the answers
            pass

    def close(self, state: str = "done") -> None:
        """Write the last line (``done`` or ``stopped``) and close the bar."""
        with self._lock:
            self._closed.set()
            self._write(state, force=True)
            self.bar.close()


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _records(lines: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """The progress records among ``lines`` (others skipped; a bad number dropped: unknown)."""
    for line in lines:
        try:
            rec = json.loads(line.decode("utf-8"))
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            continue
        if isinstance(rec, dict) and "model" in rec:
            yield {k: v for k, v in rec.items() if k not in NUMBERS or _finite(v)}


def _label(rec: Mapping[str, Any]) -> str:
    return str(rec.get("desc") or rec.get("model"))


def read(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """The records of a progress file (lines that do not parse are skipped).

    Raises:
        LcevalError: not a regular file, or a line over :data:`lceval.core.io.MAX_LINE_BYTES`.
    """
    if os.path.lexists(path):
        yield from _records(line for _, line in read_lines(path))


def latest(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The last record per bar label (``desc``), in first-seen order."""
    return {_label(rec): rec for rec in read(path)}


def status(run_path: str | os.PathLike[str], now: float | None = None) -> str:
    """What ``lceval status RUN`` prints: one line per model of the latest inference, with its age.

    Raises:
        LcevalError: the run has no progress file yet.
    """
    path = progress_path(run_path)
    recs = latest(path)
    if not recs:
        raise LcevalError(f"no progress recorded yet in {path} (lceval infer or run writes it)")
    now = time.time() if now is None else now
    return "\n".join(
        f"{render(_checked(rec))} ({duration(max(0.0, now - rec.get('t', now)))} ago)"
        for rec in recs.values()
    )


def writer_alive(rec: Mapping[str, Any]) -> bool | None:
    """Whether the process that wrote ``rec`` (its ``pid``, on this machine) still runs: False
    when no process has that pid or the one that has it started after the record was written
    (the pid reused); None when the record names no pid."""
    pid, t = rec.get("pid"), rec.get("t")
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return None
    try:
        started = psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return False
    except (psutil.Error, OSError, OverflowError):
        return None
    return not (isinstance(t, int | float) and _finite(t) and started > t + 1)


def _checked(rec: dict[str, Any]) -> dict[str, Any]:
    """``rec`` with a ``running`` state whose writer is gone (SIGKILL, a crash) said as such."""
    if rec.get("state", "running") == "running" and writer_alive(rec) is False:
        return {**rec, "state": f"not running: writer pid {rec['pid']} is gone"}
    return rec


class Watcher:
    """Shows, on this terminal, the bars another process (a notebook's kernel) writes to a
    progress file while a block runs: a line per label when it changes, the last at the end."""

    def __init__(self, path: Path, stream: TextIO, every_s: float = 2.0) -> None:
        self.path, self.stream, self.every_s = path, stream, every_s
        self._stop = threading.Event()
        self._shown: dict[str, str] = {}
        self._thread = threading.Thread(target=self._loop, name="lceval-progress", daemon=True)
        try:
            self._pos = path.stat().st_size  # earlier runs' lines are not shown
        except OSError:
            self._pos = 0

    def _new_records(self) -> dict[str, dict[str, Any]]:
        """The last new record per label, reading whole lines from where the last read ended."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self._pos)
                data = f.read()
        except OSError:
            return {}
        end = data.rfind(b"\n") + 1
        self._pos += end
        return {_label(rec): rec for rec in _records(data[:end].splitlines())}

    def _show(self) -> None:
        for label, rec in self._new_records().items():
            line = render(rec)
            if self._shown.get(label) != line:
                self._shown[label] = line
                try:  # on a line of its own: tqdm clears this process's bars (lceval run's
                    # cell bar) on the stream, writes the line and draws them again below it
                    tqdm.write(line, file=self.stream)
                except (OSError, ValueError):
                    pass

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self._show()

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._show()
