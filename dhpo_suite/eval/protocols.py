"""Evaluation protocols: the paper's (the default) and SimpleRL-Zoo's harness, for comparing with its numbers.

`paper` is what every benchmark record says (template, 16,384-token budget, the model's own stop tokens, samples
per problem). `simplerl` reproduces the generation settings of SimpleRL-Zoo's evaluation harness
(github.com/hkust-nlp/simpleRL-reason at cf1c785, `examples/simplelr_math_eval/`), a fork of Qwen2.5-Math's:

- stop strings: `math_eval.py` starts from `["</s>", "<|im_end|>", "<|endoftext|>"]` and, for a prompt type
  containing "qwen" (their `qwen-boxed`), adds `["assistant", "user", "_end", "_start"]` (lines 253-270);
- the token budget: the README's evaluation command passes `--max_tokens 16000` (`--max_tokens_per_call`);
- the template: the README's `--template qwen-boxed` (`utils.py` PROMPT_TEMPLATES, the same text as ours);
- the question: `parser.py` `parse_question` returns the problem stripped, after appending " (True or False)" or
  " (Yes or No)" when the gold answer is one of those words;
- sampling: the README's `--temperature 1.0 --top_p 0.95` (the CLI takes them unless --temperature/--top-p
  are given).

Samples per problem stay the benchmark's (`--samples` overrides); grading is ours (one grader for everything).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PROTOCOLS", "Protocol", "get_protocol", "simplerl_question"]


@dataclass(frozen=True)
class Protocol:
    """What a protocol fixes beyond the benchmark record; None/empty: the record's own."""

    name: str
    template: str | None = None
    """Default template for the paper's benchmarks (a training task keeps its own)."""
    max_new_tokens: int | None = None
    """Response token budget."""
    stop: tuple[str, ...] = ()
    """Stop strings (beside the model's stop tokens); the response ends before them."""
    strip_question: bool = False
    """Problem text as SimpleRL's parse_question builds it (see simplerl_question)."""
    temperature: float | None = None
    """Sampling temperature when --temperature is not given."""
    top_p: float | None = None
    """Nucleus mass when --top-p is not given."""

    def question(self, problem: str, gold: str) -> str:
        return simplerl_question(problem, gold) if self.strip_question else problem


PROTOCOLS = {
    "paper": Protocol("paper"),
    "simplerl": Protocol("simplerl", template="qwen-boxed", max_new_tokens=16000,
                         stop=("</s>", "<|im_end|>", "<|endoftext|>", "assistant", "user", "_end", "_start"),
                         strip_question=True, temperature=1.0, top_p=0.95),
}
"""--protocol names."""


def get_protocol(name: str | None) -> Protocol:
    """The named protocol; ValueError naming --protocol and the choices."""
    if name is None:
        return PROTOCOLS["paper"]
    if name not in PROTOCOLS:
        raise ValueError(f"--protocol: {name!r} is not one of: {', '.join(PROTOCOLS)}")
    return PROTOCOLS[name]


def simplerl_question(problem: str, gold: str) -> str:
    """SimpleRL's question text: " (True or False)" / " (Yes or No)" appended for such golds, then stripped."""
    g = gold.lower()
    if g in ("true", "false"):
        problem += " (True or False)"
    if g in ("yes", "no"):
        problem += " (Yes or No)"
    return problem.strip()
