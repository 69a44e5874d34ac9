"""A tiny Qwen3-architecture causal LM and a tokenizer built locally (no hub), saved as an HF directory.

The tokenizer is a byte-level BPE trained on text of the arithmetic task (problems, solutions, chat markup)
with digits split one per token (as Qwen does), so arithmetic is learnable and any text still encodes. Its
chat template is Qwen's ChatML (`<|im_start|>role\\n...<|im_end|>\\n`); eos is `<|im_end|>`.

The model is a randomly initialised `Qwen3ForCausalLM` (~0.9 M parameters, head_dim 32 so vLLM's CPU
attention serves it). The directory loads with `AutoModelForCausalLM` / `AutoTokenizer` and with vLLM.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["build_tiny_model", "TINY_SHAPE", "CHAT_TEMPLATE"]

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
# hidden 128, 4 layers, 4 query heads x 32 dims, 2 KV heads (GQA as in Qwen3).
TINY_SHAPE = dict(hidden_size=128, intermediate_size=384, num_hidden_layers=4, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=32, max_position_embeddings=1024)
VOCAB_SIZE = 512
VERSION = 1  # bump when the tokenizer corpus or the model changes (invalidates caches)


def _corpus(seed: int) -> list[str]:
    """Text the BPE merges are learnt from: task problems/solutions in chat form plus a few common words."""
    from dhpo_suite.tasks import arithmetic

    rows = arithmetic.make_problems(2000, seed=seed, split="train", level=2, n_ops=3)
    words = ("system user assistant Solve the problem step by step . Put the final answer in \\boxed{} "
             "Compute What is How many The a an and of to is are has have more less left total each")
    chats = [f"<|im_start|>user\n{r['problem']}<|im_end|>\n<|im_start|>assistant\n{r['solution']}<|im_end|>\n"
             for r in rows]
    return chats + [words, arithmetic.SYSTEM_PROMPT]


def build_tokenizer(seed: int = 0):
    """Train the byte-level BPE and wrap it as a transformers fast tokenizer with the chat template."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\d"), behavior="isolated"),  # one token per digit
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(_corpus(seed), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None,
        unk_token=None, chat_template=CHAT_TEMPLATE, model_max_length=TINY_SHAPE["max_position_embeddings"],
        additional_special_tokens=["<|im_start|>"])


def build_tiny_model(out_dir: str | Path, seed: int = 0) -> Path:
    """Build the tokenizer and a randomly initialised tiny Qwen3 (seeded) and save both to `out_dir`."""
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(seed)
    eos, pad = tokenizer.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])
    config = Qwen3Config(vocab_size=len(tokenizer), tie_word_embeddings=True, bos_token_id=None,
                         eos_token_id=eos, pad_token_id=pad, dtype="float32", **TINY_SHAPE)
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=eos, pad_token_id=pad, do_sample=True,
                                               temperature=1.0, top_p=1.0)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
