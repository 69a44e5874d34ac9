"""The benchmark registry: one short declarative record per benchmark, and loading its problems.

A benchmark is data, not code: where its test set lives on the Hugging Face hub (id, config, split), which
source fields hold the id, problem and answer, how the raw answer becomes the gold string, and the paper's
protocol (samples per problem; the headline metric is Avg@samples). Problems come from the hub through
`datasets`, from local JSONL files (`--data-dir`, fields id/problem/answer[/answer_alt]), or, for `arith`, from
the embedded trainer's synthetic task. Every path yields the same `Problem` rows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from dhpo_suite.jsonl import iter_jsonl

__all__ = ["Benchmark", "BENCHMARKS", "PAPER_BENCHMARKS", "Problem", "DataError", "resolve_benches",
           "load_problems", "read_jsonl", "normalize_row"]

class DataError(ValueError):
    """A benchmark file or row is unusable. The message names the file, line and field."""

@dataclass(frozen=True)
class Problem:
    """One test problem: `gold` lists every accepted gold form (the answer first, then answer_alt)."""

    id: str
    problem: str
    gold: tuple[str, ...]

@dataclass(frozen=True)
class Benchmark:
    """A test set and its protocol. `fields` maps our names (id, problem, answer) to the hub's columns;
    a missing `id` mapping means "row index". `answer` is a transform name (see `_ANSWER`)."""

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
    system: str | None = None
    """System message for the `chat` template: text, or `module:ATTRIBUTE` naming a string (None: none)."""

BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in [
    Benchmark("aime24", "HuggingFaceH4/aime_2024", "train", {"id": "id", "problem": "problem", "answer": "answer"},
              answer="strip_leading_zeros", samples=32),
    Benchmark("aime25", "math-ai/aime25", "test", {"problem": "problem", "answer": "answer"}, samples=32),
    Benchmark("amc23", "math-ai/amc23", "test", {"id": "id", "problem": "question", "answer": "answer"},
              answer="float_to_int", samples=4),
    Benchmark("olympiadbench", "Hothan/OlympiadBench", "train",
              {"id": "id", "problem": "question", "answer": "final_answer"}, config="OE_TO_maths_en_COMP",
              answer="first_without_dollars"),
    Benchmark("math500", "HuggingFaceH4/MATH-500", "test",
              {"id": "unique_id", "problem": "problem", "answer": "answer"}),
    Benchmark("minerva_math", "math-ai/minervamath", "test", {"problem": "question", "answer": "answer"}),
    Benchmark("gsm8k", "openai/gsm8k", "test", {"problem": "question", "answer": "answer"}, config="main",
              answer="after_hashes"),
    # The embedded trainer's synthetic task (offline; `make_problems(n, seed, split="test")`).
    Benchmark("arith", "dhpo_suite.tasks.arithmetic", "test", template="chat",
              system="dhpo_suite.tasks.arithmetic:SYSTEM_PROMPT"),
]}
PAPER_BENCHMARKS = ("aime24", "aime25", "amc23", "olympiadbench", "math500", "minerva_math", "gsm8k")
"""The paper's Table 1 columns, in order; `--bench all` means these."""

def _strip_leading_zeros(a) -> str:
    return str(a).strip().lstrip("0") or "0"

def _float_to_int(a) -> str:
    x = float(a)
    return str(int(x)) if x.is_integer() else str(a)

def _first_without_dollars(a) -> str:
    return str(a[0] if isinstance(a, list) else a).replace("$", "").strip()

def _after_hashes(a) -> str:
    return str(a).split("####")[-1].strip().replace(",", "")

def _last_boxed(a) -> str:
    from dhpo_suite.grading import extract_answer

    return extract_answer(str(a)) or str(a)

_ANSWER = {"text": lambda a: str(a).strip(), "strip_leading_zeros": _strip_leading_zeros,
           "float_to_int": _float_to_int, "first_without_dollars": _first_without_dollars,
           "after_hashes": _after_hashes, "last_boxed": _last_boxed}

def resolve_benches(spec: str) -> list[str]:
    """`all`, one name, or a comma list -> registry names (errors list the known ones)."""
    names = list(PAPER_BENCHMARKS) if spec.strip() == "all" else [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown or not names:
        raise DataError(f"--bench: unknown benchmark {unknown or spec!r}; known: all, {', '.join(BENCHMARKS)}")
    return names

def normalize_row(bench: Benchmark, row: dict, index: int) -> dict:
    """A hub row -> {id, problem, answer} (+ its other fields) through the field mapping and answer transform."""
    f = bench.fields
    out = dict(row)
    out["id"] = str(row[f["id"]]) if "id" in f else str(index)
    out["problem"] = row[f["problem"]]
    out["answer"] = _ANSWER[bench.answer](row[f["answer"]])
    return out

def _check_row(row, where: str) -> Problem:
    """Validate one local row; errors read `file:line: field 'x': ...`."""
    if not isinstance(row, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(row).__name__}")
    for key in ("id", "problem", "answer"):
        if key not in row:
            raise DataError(f"{where}: field {key!r}: missing (each row needs id, problem, answer)")
    if isinstance(row["id"], int) and not isinstance(row["id"], bool):
        row = {**row, "id": str(row["id"])}
    for key in ("id", "problem", "answer"):
        if not isinstance(row[key], str) or not row[key].strip():
            raise DataError(f"{where}: field {key!r}: expected a non-empty string, got {row[key]!r:.60}")
    alt = row.get("answer_alt", [])
    alt = [alt] if isinstance(alt, str) else alt
    if not isinstance(alt, list) or not all(isinstance(a, str) for a in alt):
        raise DataError(f"{where}: field 'answer_alt': expected a string or a list of strings, got {alt!r:.60}")
    return Problem(row["id"], row["problem"], (row["answer"], *[a for a in alt if a != row["answer"]]))

def read_jsonl(path: Path | str) -> list[Problem]:
    """Read and validate a local benchmark file (one JSON object per line; duplicate ids are an error)."""
    path = Path(path)
    out, seen = [], {}
    for lineno, row in iter_jsonl(path, DataError):
        p = _check_row(row, f"{path}:{lineno}")
        if p.id in seen:
            raise DataError(f"{path}:{lineno}: field 'id': duplicate {p.id!r} (first on line {seen[p.id]})")
        seen[p.id] = lineno
        out.append(p)
    if not out:
        raise DataError(f"{path}: no problems")
    return out

def _from_hub(bench: Benchmark) -> list[Problem]:
    """Load `bench` through `datasets` (needs the hub or its cache)."""
    import datasets

    ds = datasets.load_dataset(bench.hub_id, bench.config, split=bench.split)
    where = f"{bench.hub_id}[{bench.config or ''}:{bench.split}]"
    return [_check_row(normalize_row(bench, dict(r), i), f"{where} row {i}") for i, r in enumerate(ds)]

def _arith(limit: int | None, seed: int) -> list[Problem]:
    from dhpo_suite.tasks.arithmetic import make_problems

    rows = make_problems(limit or 100, seed=seed, split="test")
    return [Problem(r["id"], r["problem"], (r["answer"],)) for r in rows]

def load_problems(name: str, data_dir: Path | str | None = None, limit: int | None = None,
                  seed: int = 0) -> list[Problem]:
    """Problems of benchmark `name`: `data_dir/<name>.jsonl` if a data dir is given (or env
    DHPO_BENCHMARKS_DIR), else the hub. `limit` keeps the first N (arith: generates N, default 100)."""
    bench = BENCHMARKS[name]
    if name == "arith":
        return _arith(limit, seed)
    data_dir = data_dir or os.environ.get("DHPO_BENCHMARKS_DIR")
    if data_dir:
        path = Path(data_dir) / f"{name}.jsonl"
        if not path.is_file():
            raise DataError(f"{path}: not found (--data-dir must hold <bench>.jsonl files)")
        problems = read_jsonl(path)
    else:
        problems = _from_hub(bench)
    return problems[:limit] if limit else problems
