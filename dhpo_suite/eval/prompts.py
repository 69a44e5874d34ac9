"""Prompt templates and the model's own stop tokens.

Templates: `qwen-boxed` (SimpleRL's base-model prompt, a raw string with `{input}`), `chat` (the tokenizer's
chat template with the boxed instruction), `task` (a training task's own chat, `Task.messages`, through the
chat template: exactly the trainer's prompt) or a path to a text file containing `{input}`.
Stop tokens are derived, never hard-coded: the generation config's eos ids, the tokenizer's eos, the token
that closes a turn in the tokenizer's chat template, and the first special token after `{input}` in a raw
template (a base model prompted with ChatML closes its own turn with the same `<|im_end|>`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from dhpo_suite.runs.format import RunFormatError, run_of_checkpoint
from dhpo_suite.runs.manifest import read_manifest
from dhpo_suite.tasks import get_task

__all__ = ["TEMPLATES", "PromptTemplate", "is_chat_model", "load_template", "stop_token_ids"]

QWEN_BOXED = ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n{input}\n"
              "Please reason step by step, and put your final answer within \\boxed{}.<|im_end|>\n"
              "<|im_start|>assistant\n")
TEMPLATES = {"qwen-boxed": QWEN_BOXED, "chat": None, "task": None}
"""Named templates; `chat` and `task` use the tokenizer's own chat template."""
CHAT_INSTRUCTION = "\nPlease reason step by step, and put your final answer within \\boxed{}."
"""Appended to a paper benchmark's problem under `chat`."""


@dataclass(frozen=True)
class PromptTemplate:
    """A raw template string with `{input}`, or None for the tokenizer's chat template."""

    name: str
    text: str | None

    @property
    def adds_special_tokens(self) -> bool:
        """Whether encoding adds the tokenizer's specials (BOS): a raw template yes; a chat template renders
        its own, so no (as the trainer's `encode_prompts` and vLLM's chat path do)."""
        return self.text is not None

    def render(self, problem: str, tokenizer, task: str | None = None) -> str:
        """The prompt text for one problem (the chat template adds the generation prompt). `task`: the
        training task whose `messages` the `task` template uses."""
        if self.text is not None:
            return self.text.replace("{input}", problem)
        if getattr(tokenizer, "chat_template", None) is None:
            raise ValueError(f"--template {self.name}: the tokenizer has no chat template; use qwen-boxed or a file")
        if self.name == "task":
            if task is None:
                raise ValueError("--template task: only a training task's benchmark has the trainer's prompt")
            messages = get_task(task).messages({"problem": problem})
        else:
            messages = [{"role": "user", "content": problem + CHAT_INSTRUCTION}]
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def load_template(spec: str) -> PromptTemplate:
    """A name from TEMPLATES or a path to a file containing `{input}`."""
    if spec in TEMPLATES:
        return PromptTemplate(spec, TEMPLATES[spec])
    path = Path(spec)
    if not path.is_file():
        raise ValueError(f"--template: {spec!r} is neither {' / '.join(TEMPLATES)} nor a file")
    text = path.read_text(encoding="utf-8")
    if "{input}" not in text:
        raise ValueError(f"{path}: a template file must contain the placeholder {{input}}")
    return PromptTemplate(str(path), text)


_CHAT_NAME = re.compile(r"instruct|chat|(?:^|[-_.])it(?:$|[-_.])", re.IGNORECASE)


def _names(model_dir: Path) -> list[str]:
    """What a model directory says it is: its name, config.json's `_name_or_path`, and for a training checkpoint
    (`RUN/checkpoints/step-N`) the model the run started from (its manifest)."""
    names = [model_dir.name]
    try:
        names.append(Path(str(json.loads((model_dir / "config.json").read_text()).get("_name_or_path", ""))).name)
    except (OSError, ValueError, AttributeError):
        pass
    run = run_of_checkpoint(model_dir)
    if run is not None:
        try:
            names.append(Path(read_manifest(run).model).name)
        except RunFormatError:
            pass
    return names


def is_chat_model(model_dir: Path | str, tokenizer) -> bool:
    """A chat (instruct) model: its tokenizer has a chat template AND one of its names says instruct/chat/it.

    A chat template alone is not enough: Qwen2.5-Math-7B, the paper's base model, ships one too, and SimpleRL
    evaluates it with the raw `qwen-boxed` prompt. An instruct model under `qwen-boxed` gets a Qwen system
    prompt it was not tuned on, so without --template it gets its own chat template (`chat`)."""
    has_template = getattr(tokenizer, "chat_template", None) is not None
    return has_template and any(_CHAT_NAME.search(n) for n in _names(Path(model_dir)))


def _ids(value) -> list[int]:
    return [] if value is None else [int(v) for v in (value if isinstance(value, (list, tuple)) else [value])]


def _turn_end_of_chat_template(tokenizer) -> list[int]:
    """The special token right after an assistant message in the chat template (ChatML: `<|im_end|>`)."""
    if getattr(tokenizer, "chat_template", None) is None:
        return []
    marker = "Zq9marker"
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": marker}], tokenize=False)
    return _first_special_after(tokenizer, text, marker)


def _first_special_after(tokenizer, text: str, marker: str) -> list[int]:
    tail = text.split(marker, 1)[1] if marker in text else ""
    specials = sorted(getattr(tokenizer, "all_special_tokens", []) + list(tokenizer.get_added_vocab()),
                      key=len, reverse=True)
    hits = [(tail.find(s), s) for s in specials if s and s in tail]
    return [tokenizer.convert_tokens_to_ids(min(hits)[1])] if hits else []


def stop_token_ids(tokenizer, generation_config=None, template: PromptTemplate | None = None) -> list[int]:
    """Token ids that end a response for this model and prompt template (sorted, unique). Under the `task`
    template: the tokenizer's eos alone, the one id the trainer's rollout stops at."""
    if template is not None and template.name == "task":
        return _ids(tokenizer.eos_token_id)
    ids = set(_ids(getattr(generation_config, "eos_token_id", None)))
    ids.update(_ids(tokenizer.eos_token_id))
    ids.update(_turn_end_of_chat_template(tokenizer))
    if template is not None and template.text is not None:
        ids.update(_first_special_after(tokenizer, template.text, "{input}"))
    return sorted(i for i in ids if i is not None and i >= 0)
