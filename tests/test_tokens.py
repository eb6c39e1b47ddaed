import pytest

from lceval.core.errors import LcevalError
from lceval.core.tokens import count_tokens, count_tokens_batch, get_encoding


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_encodings_load_offline_and_round_trip(name):
    enc = get_encoding(name)
    text = "Long contexts, long outputs: 128k tokens ✓"
    assert enc.decode(enc.encode(text)) == text
    assert count_tokens(text, name) == len(enc.encode(text))


def test_batch_counts_match_single_counts():
    text = "tokenization differs between encodings " * 20
    assert count_tokens_batch([text, "a"], "cl100k_base") == [
        count_tokens(text, "cl100k_base"),
        1,
    ]


def test_unknown_encoding_is_a_clear_error():
    with pytest.raises(LcevalError, match="unknown tiktoken encoding 'p50k'"):
        get_encoding("p50k")


def test_missing_encoding_files_name_the_fix(monkeypatch):
    import lceval.core.tokens as t

    get_encoding.cache_clear()
    monkeypatch.setattr(t, "_candidate_dirs", lambda: [])
    try:
        with pytest.raises(LcevalError, match="not available offline"):
            get_encoding("cl100k_base")
    finally:
        get_encoding.cache_clear()
