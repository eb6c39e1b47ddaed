"""lceval plan: the token trie, the size table, the GPU-time arithmetic, the CLI, infer's lines."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lceval.run
import lceval.run.inference
from lceval.cli import main
from lceval.core.io import RunDir, new_meta
from lceval.core.records import Context, Sample
from lceval.core.tokens import count_tokens
from lceval.models.base import Backend, GenerationConfig
from lceval.run import plan


def _trie_size(rows):
    """Brute force: the number of distinct non-empty prefixes of the rows."""
    return len({tuple(r[: i + 1]) for r in rows for i in range(len(r))})


def test_prefix_shares_by_hand():
    rows = [[1, 2, 3], [5], [1, 2, 4]]
    shares = plan.prefix_shares([(tuple(r),) for r in rows])
    assert shares == [0, 0, 2]  # sorted: [1, 2, 3], [1, 2, 4], [5]
    assert sum(map(len, rows)) - sum(shares) == 5 == _trie_size(rows)
    assert plan.unique_prefix_positions(rows) == [0, 1, 2, 0, 2]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=12), min_size=1, max_size=12))
def test_flat_rows_give_the_trie_size(rows):
    shares = plan.prefix_shares([(tuple(r),) for r in rows])
    assert sum(map(len, rows)) - sum(shares) == _trie_size(rows)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 2), min_size=3, max_size=3), min_size=1, max_size=3),
    st.lists(st.lists(st.integers(0, 2), min_size=5, max_size=5), min_size=1, max_size=3),
    st.lists(st.lists(st.integers(0, 2), min_size=2, max_size=2), min_size=1, max_size=3),
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 2)), min_size=1),
)
def test_segmented_rows_give_the_trie_of_their_tokens(heads, bodies, tails, picks):
    """Segments of one length per position (none a proper prefix of another): exact."""
    rows, flat = [], []
    for h, b, t in picks:
        segs = (
            tuple(heads[h % len(heads)]),
            tuple(bodies[b % len(bodies)]),
            tuple(tails[t % len(tails)]),
        )
        rows.append(segs)
        flat.append([x for s in segs for x in s])
    shares = plan.prefix_shares(rows)
    assert sum(map(len, flat)) - sum(shares) == _trie_size(flat)


def _run(tmp_path, n=6, budget=32):
    run = RunDir("r", tmp_path).create()
    text = "A shared document line. " * 200
    ctx = Context(id="c0", text=text, n_tokens=count_tokens(text), encoding="o200k_base")
    common = {
        "benchmark": "lifbench",
        "description": "Read the document.",
        "max_new_tokens": budget,
    }
    samples = [
        Sample(
            f"s{i}",
            task="LSI" if i % 2 else "LOI",
            instruction=f"Question {i}: what is said?",
            context_id="c0" if i < n - 1 else None,
            **common,
        )  # fmt: skip
        for i in range(n)
    ]
    run.write_samples(samples, [ctx])
    run.write_meta(new_meta("r"))
    return run, samples, ctx


def test_plan_counts_a_shared_context_once(tmp_path):
    run, samples, ctx = _run(tmp_path)
    p = plan.plan_run(run)
    total = p.total()
    whole = [
        count_tokens(
            s.joiner.join(
                x for x in (s.description, ctx.text if s.context_id else "", s.instruction) if x
            )
        )
        for s in samples
    ]
    assert total["samples"] == 6 and total["budget"] == 6 * 32
    # Segments tokenized apart: within two tokens of the whole prompt per seam.
    assert abs(total["prompt_tokens"] - sum(whole)) <= 2 * 2 * len(samples)
    n_ctx = count_tokens(ctx.text)
    assert n_ctx < total["unique_tokens"] < n_ctx + sum(w - n_ctx for w in whole[:-1]) + whole[-1]
    tasks = p.sizes.set_index("task")
    assert set(tasks.index) == {"LOI", "LSI", "*"}
    assert tasks.loc["LSI", "samples"] == 3
    assert p.tokenizer == "o200k_base"


def test_counted_contexts_keep_prompt_tokens_and_bound_unique(tmp_path, tiny_model_dir):
    """Contexts counted from their recorded lengths (large runs): the same prompt tokens, unique
    tokens no fewer than the exact trie's."""
    run, _, _ = _run(tmp_path)
    exact, counted = plan.plan_run(run), plan.plan_run(run, exact=False)
    assert exact.exact and not counted.exact
    assert counted.total()["prompt_tokens"] == exact.total()["prompt_tokens"]
    assert counted.total()["unique_tokens"] >= exact.total()["unique_tokens"]
    assert "at most" in counted.lines()[0] and "upper bound" in plan.render(counted)
    a, b = plan.Counted(-1, 500), plan.Counted(-2, 300)
    rows = [((1, 2), a, (3,)), ((1, 2), a, (4,)), ((1, 2), b, (3,))]
    shares = plan.prefix_shares(rows)
    assert sorted(shares) == [0, 2, 502]  # b shares only the head; a's second row all but one
    with pytest.raises(plan.LcevalError, match="only when tokenized"):
        plan.plan_run(run, model=str(tiny_model_dir), exact=False)


def test_budget_cap_and_model_window(tmp_path, tiny_model_dir):
    run, _, _ = _run(tmp_path, budget=64)
    capped = plan.plan_run(run, generation=GenerationConfig(max_new_tokens=10))
    assert capped.total()["budget"] == 60
    p = plan.plan_run(run, model=str(tiny_model_dir))
    assert p.window == 1024
    assert p.rows["prompt_tokens"].max() <= 1024 - 64
    assert p.rows["truncated"].iloc[0] > 0  # the 1,000-word document does not fit 1,024 tokens
    assert p.estimates["model"].iloc[0] == str(tiny_model_dir)  # its own shape comes first


def test_estimate_arithmetic_by_hand():
    shape, gpu = plan.SHAPES["8B"], plan.GPUS["H100-80GB"]
    assert round(shape.params / 1e9, 2) == 8.03
    assert round(plan.SHAPES["70B"].params / 1e9, 1) == 70.6
    assert round(plan.SHAPES["1B"].params / 1e9, 2) == 1.24
    assert plan.gpus_needed(shape, gpu) == 1 and plan.gpus_needed(plan.SHAPES["70B"], gpu) == 4
    import pandas as pd

    u, m = 1000, 10
    rows = pd.DataFrame(
        {
            "unique_tokens": [u],
            "position_sum": [u * (u - 1) // 2],
            "prompt_tokens": [u],
            "budget": [m],
        }
    )
    e = plan.estimate(rows, shape, gpu, efficiency=2.0)
    attn = 4 * 32 * 32 * 128
    prefill = (2 * shape.dense * u + attn * u * (u - 1) / 2) / gpu.flops
    attended = m * u + m * (m - 1) / 2
    flops = m * 2 * (shape.dense + shape.vocab * shape.hidden) + attn * attended
    memory = m * 2 * shape.params / plan.MAX_BATCH + shape.kv_bytes * attended
    decode = max(flops / gpu.flops, memory / gpu.bandwidth)
    assert math.isclose(e["prefill_h"] * 3600, prefill)
    assert math.isclose(e["decode_h"] * 3600, decode)
    assert math.isclose(e["estimate_h"], 2 * e["floor_h"]) and e["gpu_hours"] == e["estimate_h"]
    # A 128k-token sequence leaves room for only a few beside the weights: batch shrinks.
    long = rows.assign(prompt_tokens=[131072])
    assert plan.estimate(long, shape, gpu)["decode_h"] > e["decode_h"] * 100
    with pytest.raises(plan.LcevalError, match="efficiency"):
        plan.estimate(rows, shape, gpu, efficiency=0)


def test_cli_plan_prints_records_and_writes_csv(tmp_path, capsys):
    _run(tmp_path)
    out_csv = tmp_path / "plan.csv"
    assert main(["--outputs", str(tmp_path), "plan", "r", "--csv", str(out_csv)]) == 0
    text = capsys.readouterr().out
    assert "unique_tokens" in text and "H100-80GB" in text and "not measured on a GPU" in text
    assert out_csv.exists() and (tmp_path / "plan_estimate.csv").exists()
    meta = json.loads((tmp_path / "r" / "run.json").read_text())
    assert meta["plan"]["samples"] == 6 and "8B H100-80GB" in meta["plan"]["gpu_hours"]
    assert main(["--outputs", str(tmp_path), "plan", "r", "--tasks", "LSI"]) == 0
    assert json.loads((tmp_path / "r" / "run.json").read_text())["plan"]["samples"] == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["plan", "nope"], "nope"),
        (["plan", "r", "--csv", "x.txt"], "--csv must name a .csv file"),
        (["plan", "r", "--max-new-tokens", "0"], "--max-new-tokens must be >= 1"),
        (["plan", "r", "--efficiency", "-1"], "--efficiency must be > 0"),
        (["plan", "r", "--tasks", "XX"], "XX"),
        (["plan", "r", "--model", "/no/such/model"], "model path /no/such/model does not exist"),
        (["plan", "r", "--gpus", "0"], "--gpus must be >= 1"),
    ],
)
def test_cli_plan_bad_input_is_one_line(tmp_path, capsys, args, message):
    _run(tmp_path)
    assert main(["--outputs", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_cli_plan_gpus_gives_the_wall_clock(tmp_path, capsys):
    run, _, _ = _run(tmp_path)
    assert main(["--outputs", str(tmp_path), "plan", "r", "--gpus", "8"]) == 0
    assert "wall clock on 8 GPU(s)" in capsys.readouterr().out
    p = plan.plan_run(run)
    table = plan.wall_clock(p, 8)
    est = p.estimates
    for row, e in zip(table.itertuples(), est.itertuples(), strict=True):
        replicas = 8 // e.gpus
        assert row.replicas == replicas
        if replicas:  # 8 GPUs hold 8 // gpus replicas, each a share of the samples
            assert row.wall_h == pytest.approx(e.estimate_h / replicas)
        else:
            assert row.wall_h != row.wall_h  # NaN: the model does not fit 8 GPUs
    one = plan.wall_clock(p, 1)
    assert (one["wall_h"][one["replicas"] == 1] == est["estimate_h"][one["replicas"] == 1]).all()


def test_infer_announces_the_plan(monkeypatch, tmp_path, capsys):
    from lceval.core.records import Response

    class Echo(Backend):
        name = "echo"

        def generate(self, samples, contexts, config):
            return [Response(s.id, self.name, "ok", config.hash()) for s in samples]

        def info(self):
            return {"backend": "echo"}

        def close(self):
            pass

    run, _, _ = _run(tmp_path)
    monkeypatch.setattr(lceval.run.inference, "load_backend", lambda *a, **k: Echo())
    # limit is per task: 2 a task
    lceval.run.infer("r", backend="auto", model="embedded", root=tmp_path, limit=2, progress=False)
    err = capsys.readouterr().err
    assert "plan: 4 samples" in err and "estimate for an 8B model" in err
    # issue 49: this machine's estimate for the model (calibrated, or why not), then a line
    # while the engine starts
    said = err[err.index("estimate for an 8B model") :].splitlines()[1]
    engine = lceval.models.backends.resolve_backend("auto")
    assert "calibrat" in said and f"SmolLM2-135M-Instruct on {engine}" in said, err
    assert f"lceval: starting the {engine} engine for embedded ..." in err
    assert run.read_meta().plan["samples"] == 4


def test_hours_print_as_h_mm():
    """GPU time reads as hours and minutes, never as ``3.9e-06``."""
    from lceval.run.plan import _hours

    assert [_hours(h) for h in (3.9e-06, 0.0, 0.5, 1.25, 1234.09, None)] == [
        "<0:01",
        "0:00",
        "0:30",
        "1:15",
        "1,234:05",
        "?",
    ]
