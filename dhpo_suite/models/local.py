"""Checking a local Hugging Face causal-LM directory before a run spends time on it."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["ModelDirError", "check_model_dir", "load_model"]


class ModelDirError(ValueError):
    """A model directory is missing, incomplete or unreadable; the message starts with the path."""


def check_model_dir(path: str | Path) -> Path:
    """Validate the files of an HF model dir: config.json (valid JSON with model_type), weights, tokenizer."""
    p = Path(path).expanduser()
    if not p.is_dir():
        raise ModelDirError(f"{p}: model directory does not exist (--model takes 'tiny', 'smollm2-135m' "
                            f"or a local Hugging Face model directory)")
    cfg = p / "config.json"
    if not cfg.is_file():
        raise ModelDirError(f"{cfg}: missing; not a Hugging Face model directory")
    try:
        config = json.loads(cfg.read_text())
    except json.JSONDecodeError as e:
        raise ModelDirError(f"{cfg}: line {e.lineno} column {e.colno}: invalid JSON ({e.msg})") from None
    if not isinstance(config, dict) or "model_type" not in config:
        raise ModelDirError(f"{cfg}: no 'model_type' field")
    if not any(p.glob("*.safetensors")) and not any(p.glob("*.bin")):
        raise ModelDirError(f"{p}: no weights (*.safetensors or *.bin)")
    if not any((p / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")):
        raise ModelDirError(f"{p}: no tokenizer files (tokenizer.json / tokenizer_config.json)")
    return p


def load_model(path: Path):
    """(model, tokenizer) in float32 from a checked directory; loading errors are re-raised naming the path."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype="float32")
    except Exception as e:  # noqa: BLE001 - transformers raises many types; all mean "unloadable"
        raise ModelDirError(f"{path}: cannot load the model or tokenizer: {type(e).__name__}: {e}") from e
    if tokenizer.eos_token_id is None:
        raise ModelDirError(f"{path}: the tokenizer has no eos token (generation would never stop)")
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if getattr(tokenizer, "chat_template", None) is None:
        raise ModelDirError(f"{path}: the tokenizer has no chat template")
    return model, tokenizer
