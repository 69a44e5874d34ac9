"""The benchmark registry: one short declarative record per benchmark, and loading its problems.

A benchmark is data, not code: where its test set lives on the Hugging Face hub (id, config, split), which
source fields hold the id, problem and answer, how the raw answer becomes the gold string, and the paper's
protocol (samples per problem; the headline metric is Avg@samples). Every training task of
`dhpo_suite.tasks.TASKS` is a benchmark too, built from the task registry: the trainer's own held-out
problems, prompt (`task.messages` through the chat template), response budget and grader policy, so that
`dhpo-suite eval --bench arithmetic` measures what the trainer's held-out reward measures.
Problem sources are in `dhpo_suite.eval.sources`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from dhpo_suite.eval.sources import (ANSWER_TRANSFORMS, DataError, Problem, hub_problems, normalize_row, read_jsonl,
                                    task_problems)
from dhpo_suite.tasks import TASKS, get_task

__all__ = ["Benchmark", "BENCHMARKS", "PAPER_BENCHMARKS", "ALIASES", "Problem", "DataError", "resolve_benches",
           "load_problems", "read_jsonl", "normalize_row", "ANSWER_TRANSFORMS", "paper_order"]

PAPER_MAX_NEW_TOKENS = 16384
"""The paper's response budget (16K tokens)."""


@dataclass(frozen=True)
class Benchmark:
    """A test set and its protocol. `fields` maps our names (id, problem, answer) to the hub's columns;
    a missing `id` mapping means "row index". `answer` is a transform name (see `ANSWER_TRANSFORMS`)."""

    name: str
    hub_id: str
    split: str
    fields: dict = field(default_factory=dict)
    config: str | None = None
    answer: str = "text"
    samples: int = 1
    """Samples per problem in the paper's protocol; the headline is Avg@samples."""
    template: str = "qwen-boxed"
    """Default prompt template (see dhpo_suite.eval.prompts)."""
    rows: int | None = None
    """Rows of SimpleRL's file (the reference copy); a hub split with another count gets a warning."""
    task: str | None = None
    """A training task of dhpo_suite.tasks: problems, prompt, budget and grader policy come from it."""
    max_new_tokens: int = PAPER_MAX_NEW_TOKENS
    """Default response token limit (a task's: the trainer's)."""

    @property
    def grader(self) -> str | None:
        """The grader policy name passed to dhpo_suite.grading: the benchmark's name, or the task's (as the
        trainer's reward passes it)."""
        return self.name if self.task is None else get_task(self.task).bench


def _registry() -> dict[str, Benchmark]:
    paper = [
        Benchmark("aime24", "HuggingFaceH4/aime_2024", "train", {"id": "id", "problem": "problem", "answer": "answer"},
                  answer="strip_leading_zeros", samples=32, rows=30),
        Benchmark("aime25", "math-ai/aime25", "test", {"problem": "problem", "answer": "answer"}, samples=32, rows=30),
        Benchmark("amc23", "math-ai/amc23", "test", {"id": "id", "problem": "question", "answer": "answer"},
                  answer="float_to_int", samples=4, rows=40),
        Benchmark("olympiadbench", "Hothan/OlympiadBench", "train",
                  {"id": "id", "problem": "question", "answer": "final_answer"}, config="OE_TO_maths_en_COMP",
                  answer="first_without_dollars", rows=675),
        Benchmark("math500", "HuggingFaceH4/MATH-500", "test",
                  {"id": "unique_id", "problem": "problem", "answer": "answer"}, rows=500),
        Benchmark("minerva_math", "math-ai/minervamath", "test", {"problem": "question", "answer": "answer"},
                  rows=272),
        Benchmark("gsm8k", "openai/gsm8k", "test", {"problem": "question", "answer": "answer"}, config="main",
                  answer="after_hashes", rows=1319),
    ]
    tasks = [Benchmark(t.name, f"dhpo_suite.tasks:{t.name}", "test", template="task", task=t.name,
                       max_new_tokens=t.max_new_tokens) for t in TASKS.values()]
    return {b.name: b for b in paper + tasks}


BENCHMARKS: dict[str, Benchmark] = _registry()
PAPER_BENCHMARKS = ("aime24", "aime25", "amc23", "olympiadbench", "math500", "minerva_math", "gsm8k")
"""The paper's Table 1 columns, in order; `--bench all` means these."""
ALIASES = {"arith": "arithmetic"}
"""Old names still accepted by --bench."""


def paper_order(names: Iterable[str]) -> list[str]:
    """`names` in Table 1's order (the paper's benchmarks first, in the paper's order), then the others."""
    rank = {b: i for i, b in enumerate(PAPER_BENCHMARKS)}
    names = list(dict.fromkeys(names))
    return sorted(names, key=lambda b: (rank.get(b, len(rank)), names.index(b)))


def resolve_benches(spec: str) -> list[str]:
    """`all`, one name, or a comma list -> registry names (errors list the known ones)."""
    names = list(PAPER_BENCHMARKS) if spec.strip() == "all" else [s.strip() for s in spec.split(",") if s.strip()]
    names = [ALIASES.get(n, n) for n in names]
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown or not names:
        raise DataError(f"--bench: unknown benchmark {unknown or spec!r}; known: all, {', '.join(BENCHMARKS)}")
    return list(dict.fromkeys(names))


def data_source(name: str, data_dir: Path | str | None = None) -> str:
    """Where `load_problems` reads `name` from (recorded in config.json)."""
    bench = BENCHMARKS[name]
    if bench.task:
        return f"task {bench.task} (test split)"
    data_dir = data_dir or os.environ.get("DHPO_BENCHMARKS_DIR")
    if data_dir:
        return str(Path(data_dir).resolve() / f"{name}.jsonl")
    return f"hub {bench.hub_id} [{bench.config or 'default'}:{bench.split}]"


def load_problems(name: str, data_dir: Path | str | None = None, limit: int | None = None, seed: int = 0,
                  notify: Callable[[str], None] | None = None) -> list[Problem]:
    """Problems of benchmark `name`: a task's test split (`seed`, `limit` problems, default 128), else
    `data_dir/<name>.jsonl` if a data dir is given (or env DHPO_BENCHMARKS_DIR), else the hub (a row count
    that differs from SimpleRL's file is reported through `notify`). `limit` keeps the first N."""
    bench = BENCHMARKS[name]
    if bench.task:
        return task_problems(bench.task, limit, seed)
    data_dir = data_dir or os.environ.get("DHPO_BENCHMARKS_DIR")
    if data_dir:
        path = Path(data_dir) / f"{name}.jsonl"
        if not path.is_file():
            raise DataError(f"{path}: not found (--data-dir must hold <bench>.jsonl files)")
        problems = read_jsonl(path)
    else:
        problems = _from_hub(bench)
        if bench.rows and len(problems) != bench.rows and notify:
            notify(f"{name}: the hub split has {len(problems)} rows, SimpleRL's file {bench.rows}; for the "
                   f"paper's exact set use --data-dir with the shipped files")
    return problems[:limit] if limit else problems


def _from_hub(bench: Benchmark) -> list[Problem]:
    """hub_problems, with any failure to reach the hub (offline, a proxy, a renamed dataset: `datasets` raises
    many types, after ~30 s of retries) one DataError saying how to evaluate offline."""
    try:
        return hub_problems(bench)
    except DataError:
        raise
    except Exception as e:  # noqa: BLE001 - re-raised as one line with its type and first line
        reason = (str(e).strip().splitlines() or [""])[0][:200]
        raise DataError(f"{bench.name}: cannot load {bench.hub_id} from the Hugging Face hub ({type(e).__name__}: "
                        f"{reason}); pass --data-dir DIR (or set DHPO_BENCHMARKS_DIR) to a folder of <bench>.jsonl "
                        f"files, such as SimpleRL's shipped test sets") from None
