"""Tiny causal LMs built locally: a BPE tokenizer trained on given text + a random Qwen2-style model.

No hub is reachable, so tests, recipes and benchmarks build their own model:

    path = build_tiny_lm("runs/tiny", corpus=texts, size="small")   # saved with save_pretrained
    policy = LMPolicy.load(path)                                     # reloaded with from_pretrained

The tokenizer is byte-level BPE (any text encodes), wrapped as `PreTrainedTokenizerFast` with a
ChatML chat template (the Qwen2 one without tool blocks), so the same code paths that serve a
real Qwen model serve the tiny one. `tokenizer_config.json` names `PreTrainedTokenizerFast`
explicitly: `AutoTokenizer` beside a Qwen2 config would otherwise build a different tokenizer.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import torch

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")

#: ChatML, as Qwen2 renders it (system message optional, generation prompt "<|im_start|>assistant\n").
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

#: Model sizes: (hidden, intermediate, layers, heads, kv_heads). "small" ~ 2-4M parameters.
SIZES: dict[str, tuple[int, int, int, int, int]] = {
    "micro": (64, 192, 2, 4, 2),
    "small": (128, 384, 4, 4, 2),
    "base": (192, 576, 4, 6, 2),
    "bench": (192, 576, 6, 6, 2),  # ~3.5M parameters with a 4k vocabulary: the size TRL was measured on
}


def train_tokenizer(corpus: Iterable[str], vocab_size: int = 2048, min_frequency: int = 2):
    """Byte-level BPE trained on `corpus`, wrapped as a `PreTrainedTokenizerFast` with a chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(list(corpus), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def tiny_config(vocab_size: int, size: str = "small", max_positions: int = 2048):
    from transformers import Qwen2Config

    if size not in SIZES:
        raise ValueError(f"unknown tiny model size {size!r}; choose one of {', '.join(SIZES)}")
    hidden, inter, layers, heads, kv = SIZES[size]
    return Qwen2Config(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=inter,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        rms_norm_eps=1e-6,
        torch_dtype="float32",
    )


def build_tiny_lm(
    out_dir: str | Path,
    corpus: Iterable[str],
    *,
    size: str = "small",
    vocab_size: int = 2048,
    seed: int = 0,
    max_positions: int = 2048,
) -> Path:
    """Train a tokenizer on `corpus`, random-init a Qwen2-style model, save both to `out_dir`."""
    from transformers import Qwen2ForCausalLM

    from harnessrl.policies.lm_load import _quiet_transformers, save_tokenizer

    _quiet_transformers()

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer(corpus, vocab_size=vocab_size)
    config = tiny_config(len(tokenizer), size, max_positions)
    config.eos_token_id = tokenizer.eos_token_id
    config.pad_token_id = tokenizer.pad_token_id
    config.bos_token_id = None
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out)
    # Pin the tokenizer class: AutoTokenizer must not swap in a Qwen2Tokenizer built from the config.
    save_tokenizer(tokenizer, out)
    return out


def count_parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
