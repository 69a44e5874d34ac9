"""An evaluation's plan and its cost, every setting checked, before any model loads (`eval --dry-run`, and the
first thing every `eval` does).

`Tokenizing` stands in for the engine with what the runner needs before generating (model path, tokenizer,
generation config, seed, dtype, context length) but no vLLM: seconds, not minutes. `plan()` runs the runner's own
checks with it (dhpo_suite.eval.runner.todo: the stored config's model, protocol and sampling settings, each
benchmark's template, budget, stop ids and grader, each stored sample's prompt and golds) and counts what is
left: samples to generate, prompt tokens, and the worst case of response tokens (every sample to its budget,
clamped to the context).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from dhpo_suite.eval.benchmarks import load_problems
from dhpo_suite.eval.engine import EngineOptions, _checkpoint_dtype, load_tokenizer
from dhpo_suite.eval.identity import IDENTITY, check_same
from dhpo_suite.eval.runner import EvalSettings, _config, _stored_config, check_protocol, precheck, todo
from dhpo_suite.runs import eval_results as er

__all__ = ["Tokenizing", "BenchPlan", "plan", "plan_lines"]


class Tokenizing:
    """The engine's model, tokenizer and settings without vLLM (context: --max-model-len, else the model's
    max_position_embeddings, as vLLM derives it for the models here)."""

    def __init__(self, model: str, options: EngineOptions = EngineOptions()):
        self.model, self.options = str(model), options
        self.tokenizer, self.generation_config = load_tokenizer(self.model)
        self.dtype = _checkpoint_dtype(self.model) if options.dtype == "auto" else options.dtype
        try:
            config = json.loads((Path(model) / "config.json").read_text())
        except (OSError, ValueError):
            config = {}
        self.max_model_len = int(options.max_model_len or config.get("max_position_embeddings") or 1 << 30)

    def encode(self, prompt: str, add_special_tokens: bool = True) -> list[int]:
        return self.tokenizer.encode(prompt, add_special_tokens=add_special_tokens)


@dataclass(frozen=True)
class BenchPlan:
    """One benchmark's share of the plan."""

    name: str
    problems: int
    samples: int
    """Samples per problem."""
    to_generate: int
    """Samples still missing (all of them unless resuming)."""
    max_new_tokens: int
    prompt_tokens: int
    """Prompt tokens over the samples to generate (before any prefix caching)."""
    worst_tokens: int
    """Response tokens if every sample to generate runs to its budget (clamped to the context)."""
    template: str


def plan(model_dir: str, benches: list[str], out_dir: Path | str, settings: EvalSettings, options: EngineOptions,
         resume: bool, notify=lambda msg: None) -> list[BenchPlan]:
    """The plan of `benches` into out_dir, every setting checked (FileExistsError, IdentityMismatch naming the
    field or option, ValueError) without loading the model. Writes nothing."""
    out_dir = Path(out_dir)
    precheck(out_dir, model_dir, resume)
    for name in benches:  # bad data is named before anything of the model is read
        load_problems(name, settings.data_dir, settings.limit, seed=options.seed)
    engine = Tokenizing(model_dir, options)
    config = _config(engine, settings)
    stored = _stored_config(out_dir, resume)
    if stored is not None:
        check_protocol(stored, settings.protocol, out_dir / er.CONFIG)
        # the context length is vLLM's to derive: it is checked once the model is loaded
        check_same(stored, config, [k for k in IDENTITY if k != "max_model_len"], str(out_dir / er.CONFIG))
        config = stored
    rows = []
    for name in benches:
        t = todo(engine, name, out_dir, settings, config, notify)
        todo_ids = [p.id for p in t.problems if t.missing[p.id] and p.id not in t.skips]
        budget = t.entry["max_new_tokens"]
        rows.append(BenchPlan(
            name, len(t.problems), t.entry["samples"], sum(len(m) for m in t.missing.values()), budget,
            sum(len(t.ids[i]) * len(t.missing[i]) for i in todo_ids),
            sum(engine_budget(engine.max_model_len, len(t.ids[i]), budget) * len(t.missing[i]) for i in todo_ids),
            t.entry["template"]))
    return rows


def engine_budget(max_model_len: int, prompt_len: int, requested: int) -> int:
    """The response budget of one prompt (as Engine.max_new_tokens clamps it)."""
    return max(1, min(requested, max_model_len - prompt_len))


def plan_lines(rows: list[BenchPlan], tokens_per_second: float) -> list[str]:
    """The plan as plain lines: one per benchmark, a total, and the time the worst case takes at the stated rate."""
    lines = [f"{'bench':<14} {'problems':>8} {'samples':>7} {'to do':>7} {'budget':>7} {'prompt tok':>11} "
             f"{'worst-case tok':>15}  template"]
    for r in rows:
        lines.append(f"{r.name:<14} {r.problems:>8} {r.samples:>7} {r.to_generate:>7} {r.max_new_tokens:>7} "
                     f"{r.prompt_tokens:>11} {r.worst_tokens:>15}  {r.template}")
    worst = sum(r.worst_tokens for r in rows)
    seconds = int(worst / tokens_per_second)
    lines.append(f"total: {sum(r.to_generate for r in rows)} samples to generate, {worst} response tokens at "
                 f"most; at {tokens_per_second:g} tokens/s (--tokens-per-second) that is at most "
                 f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d} (h:mm:ss) of generation")
    return lines
