"""Runs that log token ids (NeMo-RL, prime-rl): ids as ids, or as text with a local tokenizer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from rl_board.errors import NotFoundError
from rl_board.rollouts.store import RolloutStore
from rl_board.rollouts.tokens import TokenText
from tests.helpers import trainer_dumps as T
from tests.helpers.same import rows_as_lists


def write_tokenizer(path: Path, size: int = 200_000) -> Path:
    """A word-level tokenizer whose token for id i is 'w{i}' (made here: nothing is downloaded)."""
    vocab = {f"w{i}": i for i in range(size)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))
    return path


def nemo_store(tmp_path: Path, cache_dir: Path) -> RolloutStore:
    dump = T.write_nemo_rl(tmp_path / "out")
    return RolloutStore.open(dump.run_dir, cache_dir=cache_dir)


def test_token_ids_without_a_tokenizer_are_shown_as_ids(tmp_path: Path, cache_dir: Path) -> None:
    store = nemo_store(tmp_path, cache_dir)
    detail = store.sample(step=store.steps[0], index=0)
    ids = detail.fields["response_token_ids"]
    assert detail.tokens_from == "ids" and list(detail.tokens["token"]) == [f"#{i}" for i in ids]
    logp = detail.tokens["logp"].to_numpy()
    assert len(logp) == len(ids) and (logp <= 0).all()  # the engine's log-probs, one per response token
    assert len(detail.fields["train_logprobs"]) == len(ids)


def test_token_ids_with_a_tokenizer_become_text(tmp_path: Path, cache_dir: Path) -> None:
    store = nemo_store(tmp_path, cache_dir)
    text = TokenText(write_tokenizer(tmp_path / "tok" / "tokenizer.json").parent)  # a folder works too
    detail = store.sample(step=store.steps[0], index=0, tokenizer=text)
    ids = detail.fields["response_token_ids"]
    pieces = list(detail.tokens["token"])
    assert detail.tokens_from == "tokenizer" and [p.strip() for p in pieces] == [f"w{i}" for i in ids]
    whole = Tokenizer.from_file(str(tmp_path / "tok" / "tokenizer.json")).decode(list(ids))
    assert "".join(pieces) == whole, "a word-level decoder's spaces go with the word after them"


def test_prime_rl_token_exports_carry_ids_and_logprobs(tmp_path: Path, cache_dir: Path) -> None:
    dump = T.write_prime_rl_token_exports(tmp_path / "out")
    store = RolloutStore.open(tmp_path / "out" / "token_exports", cache_dir=cache_dir)
    assert store.num_samples == dump.samples
    detail = store.sample(step=store.steps[0], index=0)
    assert detail.tokens_from == "ids" and len(detail.tokens) == len(detail.fields["response_token_ids"])


def test_a_missing_or_bad_tokenizer_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no tokenizer.json"):
        TokenText(tmp_path)
    (tmp_path / "bad.json").write_text("{not a tokenizer")
    with pytest.raises(NotFoundError, match="not a tokenizer file"):
        TokenText(tmp_path / "bad.json")


def test_per_token_advantage_and_entropy_reach_the_token_view(tmp_path: Path, cache_dir: Path) -> None:
    store = nemo_store(tmp_path, cache_dir)
    detail = store.sample(step=store.steps[0], index=0)
    assert (
        detail.tokens["advantage"] == detail.fields["advantage"]
    ).all()  # GRPO: the sample's, on every token
    T.write_prime_rl_token_exports(tmp_path / "prime")
    prime = RolloutStore.open(tmp_path / "prime" / "token_exports", cache_dir=cache_dir)
    tokens = prime.sample(step=prime.steps[0], index=0).tokens
    assert "entropy" in tokens.columns and tokens["entropy"].notna().any()


def test_untrained_tokens_inside_an_answer_are_kept_and_marked(tmp_path: Path, cache_dir: Path) -> None:
    import json

    from rl_board.formats.nested import PRIME_RL_TOKENS
    from rl_board.ui.chips import chips_html

    record = {
        "step": 1,
        "rank": 0,
        "token_ids": [7, 8, 9, 10, 11],
        "loss_mask": [0, 1, 0, 1, 0],
        "inference_logprobs": [-1.0, -0.1, -0.2, -0.3, -9.0],
        "advantages": [0, 0.5, 0.5, 0.5, 0],
    }
    sample = rows_as_lists(PRIME_RL_TOKENS.nested(record)[0])
    assert sample["response_token_ids"] == [8, 9, 10] and sample["token_loss_mask"] == [1.0, 0.0, 1.0]
    run = tmp_path / "token_exports" / "step_1"
    run.mkdir(parents=True)
    (run / "rank_0.jsonl").write_text(json.dumps(record) + "\n")
    (run / "STABLE").write_text("")
    store = RolloutStore.open(tmp_path / "token_exports", cache_dir=cache_dir)
    tokens = store.sample(step=1, index=0).tokens
    assert tokens["loss_mask"].tolist() == [1.0, 0.0, 1.0]
    html = chips_html(tokens, "logp")
    assert html.count("rlb-untrained") == 1 and "(not trained on)" in html


def byte_of_char() -> dict[str, int]:
    """The byte each character of a byte-level BPE vocabulary stands for (GPT-2's printable byte alphabet)."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    shifted = [b for b in range(256) if b not in printable]
    return {**{chr(b): b for b in printable}, **{chr(256 + k): b for k, b in enumerate(shifted)}}


def byte_level_bpe(path: Path, seed: int) -> Tokenizer:
    """A small byte-level BPE trained here on English, Chinese and emoji: most multi-byte characters stay
    split over several tokens."""
    from tokenizers import decoders, trainers

    rng = np.random.default_rng(seed)
    words = ["the answer is", "数学", "答案", "我们", "🙂", "🚀", "let me think", "步骤", "😀 done"]
    corpus = [" ".join(rng.choice(words, size=12)) for _ in range(200)]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=300, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))
    return tok


def completed_by(tok: Tokenizer, ids: list[int]) -> list[str]:
    """Worked out from the tokens' bytes: each character goes to the token holding its last byte."""
    table = byte_of_char()
    spans = [bytes(table[c] for c in tok.id_to_token(i)) for i in ids]
    ends = np.cumsum([len(s) for s in spans])
    out = [""] * len(ids)
    at = 0
    for char in b"".join(spans).decode("utf-8"):
        at += len(char.encode("utf-8"))
        out[int(np.searchsorted(ends, at))] += char
    return out


def test_characters_split_over_byte_level_tokens_go_to_the_token_that_completes_them(tmp_path: Path) -> None:
    tok = byte_level_bpe(tmp_path / "bpe" / "tokenizer.json", seed=2)
    text = "答案是 42 🙂, 然后 ⛔ 我们 😀 rare 龘𠀋 done"  # 龘, 𠀋 and ⛔ were never seen in training
    ids = tok.encode(text).ids
    pieces = TokenText(tmp_path / "bpe").pieces(ids)
    assert len(pieces) == len(ids)
    assert "".join(pieces) == tok.decode(ids) == text
    assert pieces == completed_by(tok, ids)
    assert "" in pieces and not any("\ufffd" in p for p in pieces), "split characters were in the sample"
    assert any(p.endswith("𠀋") for p in pieces) and any(p.endswith("🙂") for p in pieces)


def test_a_sequence_cut_inside_a_character_ends_with_its_replacement(tmp_path: Path) -> None:
    tok = byte_level_bpe(tmp_path / "tokenizer.json", seed=3)
    ids = tok.encode("龘 🙂 end").ids
    text = TokenText(tmp_path / "tokenizer.json")
    cuts = [k for k in range(1, len(ids)) if "\ufffd" in tok.decode(ids[:k])]
    assert cuts, "the test needs a cut inside a character"
    for k in cuts:
        pieces = text.pieces(ids[:k])
        assert "".join(pieces) == tok.decode(ids[:k]) and pieces[-1].endswith("\ufffd")
    unknown = 10**6
    pieces = text.pieces([*ids, unknown, *ids])
    assert pieces == [*text.pieces(ids), f"#{unknown}", *text.pieces(ids)]
