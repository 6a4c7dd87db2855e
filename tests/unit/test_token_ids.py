"""Runs that log token ids (NeMo-RL, prime-rl): ids as ids, or as text with a local tokenizer."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from rl_board.errors import NotFoundError
from rl_board.rollouts.store import RolloutStore
from rl_board.rollouts.tokens import TokenText
from tests.helpers import trainer_dumps as T


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
    assert detail.tokens_from == "tokenizer" and list(detail.tokens["token"]) == [f"w{i}" for i in ids]


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
    assert (detail.tokens["advantage"] == detail.fields["advantage"]).all()  # GRPO: the sample's, on every token
    T.write_prime_rl_token_exports(tmp_path / "prime")
    prime = RolloutStore.open(tmp_path / "prime" / "token_exports", cache_dir=cache_dir)
    tokens = prime.sample(step=prime.steps[0], index=0).tokens
    assert "entropy" in tokens.columns and tokens["entropy"].notna().any()


def test_untrained_tokens_inside_an_answer_are_kept_and_marked(tmp_path: Path, cache_dir: Path) -> None:
    import json

    from rl_board.formats.nested import PRIME_RL_TOKENS
    from rl_board.ui.chips import chips_html

    record = {"step": 1, "rank": 0, "token_ids": [7, 8, 9, 10, 11], "loss_mask": [0, 1, 0, 1, 0],
              "inference_logprobs": [-1.0, -0.1, -0.2, -0.3, -9.0], "advantages": [0, 0.5, 0.5, 0.5, 0]}  # fmt: skip
    [sample] = PRIME_RL_TOKENS.nested(record)
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
