"""Checking a local Hugging Face causal-LM directory before a run spends time on it.

A model directory is data: a directory that asks for its own Python code (`auto_map` in config.json or
tokenizer_config.json) is refused with one line, and loading passes `trust_remote_code=False`, so transformers
never runs shipped code nor asks "Do you wish to run the custom code? [y/N]" on a terminal.
"""

from __future__ import annotations

import json
from pathlib import Path

import jinja2  # the errors of transformers' sandboxed template environment (check_chat_template)

__all__ = ["ModelDirError", "check_chat_template", "check_model_dir", "load_model", "refuse_custom_code"]


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
    refuse_custom_code(p)
    if not any(p.glob("*.safetensors")) and not any(p.glob("*.bin")):
        raise ModelDirError(f"{p}: no weights (*.safetensors or *.bin)")
    if not any((p / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")):
        raise ModelDirError(f"{p}: no tokenizer files (tokenizer.json / tokenizer_config.json)")
    return p


def refuse_custom_code(p: Path) -> None:
    """ModelDirError when config.json or tokenizer_config.json maps classes to the directory's own code."""
    for name in ("config.json", "tokenizer_config.json"):
        f = p / name
        if not f.is_file():
            continue
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ModelDirError(f"{f}: unreadable: {e}") from None
        if isinstance(data, dict) and data.get("auto_map"):
            raise ModelDirError(f"{f}: 'auto_map' asks to run the model's own Python code; dhpo-suite never runs "
                                f"code shipped with a model (use a model whose architecture transformers provides)")
    for f, template in _chat_templates(p):
        check_chat_template(template, f)


def _chat_templates(p: Path) -> list[tuple[Path, str]]:
    """(file, template) for each chat template the directory ships (tokenizer_config.json, chat_template.jinja
    or chat_template.json; a list of named templates counts each)."""
    found: list[tuple[Path, str]] = []
    for name, key in (("tokenizer_config.json", "chat_template"), ("chat_template.json", "chat_template"),
                      ("chat_template.jinja", None)):
        f = p / name
        if not f.is_file():
            continue
        try:
            text = f.read_text(encoding="utf-8")
            value = text if key is None else json.loads(text).get(key) if text.lstrip().startswith("{") else None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError) as e:
            raise ModelDirError(f"{f}: unreadable: {e}") from None
        items = value if isinstance(value, list) else [value]
        found += [(f, t["template"] if isinstance(t, dict) else t) for t in items
                  if isinstance(t, str) or (isinstance(t, dict) and isinstance(t.get("template"), str))]
    return found


def check_chat_template(template: str, where: Path) -> None:
    """Render `template` once (a one-turn conversation) in transformers' sandbox: a template the sandbox refuses
    (it reaches for Python internals) or that does not parse is refused naming the file, before any model loads.
    A template that raises its own error for this conversation (it wants a system turn) is left to the run."""
    from transformers.utils.chat_template_utils import render_jinja_template

    try:
        render_jinja_template([[{"role": "user", "content": "What is 1 + 1?"}]], chat_template=template,
                              add_generation_prompt=True)
    except jinja2.exceptions.SecurityError as e:
        raise ModelDirError(f"{where}: the chat template is refused by the template sandbox ({e}); dhpo-suite "
                            f"never runs code shipped with a model") from None
    except jinja2.exceptions.TemplateSyntaxError as e:
        raise ModelDirError(f"{where}: the chat template does not parse (template line {e.lineno}: {e.message})"
                            ) from None
    except Exception:  # noqa: BLE001 - the template's own raise_exception(), a missing variable: the run's
        pass


def load_model(path: Path, safetensors_only: bool = False):
    """(model, tokenizer) in float32 from a checked directory; loading errors are re-raised naming the path.

    `safetensors_only`: read weights from *.safetensors alone (checkpoints: a *.bin pickle is never opened).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    refuse_custom_code(Path(path))
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False)
        model = AutoModelForCausalLM.from_pretrained(path, dtype="float32", trust_remote_code=False,
                                                     use_safetensors=True if safetensors_only else None)
    except Exception as e:  # noqa: BLE001 - transformers raises many types; all mean "unloadable"
        raise ModelDirError(f"{path}: cannot load the model or tokenizer: {type(e).__name__}: {e}") from e
    if tokenizer.eos_token_id is None:
        raise ModelDirError(f"{path}: the tokenizer has no eos token (generation would never stop)")
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if getattr(tokenizer, "chat_template", None) is None:
        raise ModelDirError(f"{path}: the tokenizer has no chat template")
    return model, tokenizer
