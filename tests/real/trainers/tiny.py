"""A tokenizer and a randomly initialised causal LM small enough to train on CPU in seconds.

Nothing can come from a model hub here, so both are made on the spot: a
byte-level BPE trained on a few sentences (with a Qwen-style chat template
for conversational prompts) and a two-layer ``Qwen2ForCausalLM``. Only this
subprocess imports torch and transformers.
"""

from __future__ import annotations

from typing import Any

EOS = "<|endoftext|>"
PAD = "<|pad|>"
IM_START, IM_END = "<|im_start|>", "<|im_end|>"

# Qwen-like: role names as plain words between the markers, so a decoded prompt keeps them.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

CORPUS = [
    "Count the apples in the basket and say how many there are.",
    "Write a short poem about the sea and the wind.",
    "What is two plus three? The answer is five.",
    "Name a colour of the sky at night, then explain why.",
    "Spell the word banana backwards, one letter at a time.",
    "A careful tutor reasons step by step before answering.",
    "Lists, numbers 1 2 3 4 5 6 7 8 9 0 and punctuation: , . ; ! ?",
]


def tokenizer(corpus: list[str] | None = None, vocab_size: int = 320, *, all_bytes: bool = False) -> Any:
    """A byte-level BPE ``PreTrainedTokenizerFast`` with eos, a separate pad token, left padding and a chat
    template.

    Its alphabet is only the bytes of the corpus (ASCII), so whatever a random model samples decodes to
    valid text (with all 256 bytes it would write broken UTF-8, shown as U+FFFD). ``all_bytes`` adds
    every byte, for callers that encode text of their own and need it back exactly.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS, PAD, IM_START, IM_END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet() if all_bytes else [],
        show_progress=False,
    )
    bpe.train_from_iterator((corpus or CORPUS) * 4, trainer=trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token=EOS,
        pad_token=PAD,
        additional_special_tokens=[IM_START, IM_END],
        padding_side="left",
    )
    tok.chat_template = CHAT_TEMPLATE
    return tok


def model(tok: Any, seed: int) -> Any:
    """A random two-layer ``Qwen2ForCausalLM`` (hidden size 64) whose eos / pad ids match ``tok``."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=True,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.eos_token_id,
    )
    lm = Qwen2ForCausalLM(config)
    lm.generation_config.eos_token_id = tok.eos_token_id
    lm.generation_config.pad_token_id = tok.pad_token_id
    lm.generation_config.bos_token_id = tok.eos_token_id
    return lm
