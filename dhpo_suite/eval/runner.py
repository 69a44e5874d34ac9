"""One evaluation: generate the missing samples of each benchmark, grade them, append them, summarise.

Per benchmark: read what `<bench>.samples.jsonl` already holds (resume), ask the engine only for the missing
(problem, sample) pairs, and hand each finished batch of samples to a grading thread that grades them in the
grader's worker processes and appends them with one fsync. Generation never waits for the grader, and a
SIGKILL loses only samples not yet appended: those in the engine (<= batch_size) and one batch being graded.
Metrics are recomputed from the file, so resumed and uninterrupted evaluations report the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from dhpo_suite.eval.benchmarks import BENCHMARKS, load_problems
from dhpo_suite.eval.engine import Engine, Request
from dhpo_suite.eval.metrics import bench_metrics, paper_average
from dhpo_suite.eval.prompts import load_template, stop_token_ids
from dhpo_suite.eval.sink import GradingThread, Sink
from dhpo_suite.runs import eval_results as er

__all__ = ["EvalSettings", "evaluate", "regrade", "summarize", "summarize_dir", "SettingsMismatch"]


@dataclass(frozen=True)
class EvalSettings:
    """What to generate and how to grade (the paper's protocol by default)."""

    template: str | None = None
    """qwen-boxed | chat | a file with {input}; None: each benchmark's default."""
    samples: int | None = None
    """Samples per problem for every benchmark; None: the protocol's (AIME 32, AMC23 4, else 1)."""
    max_new_tokens: int = 16384
    """Response token limit (clamped to the model's context)."""
    temperature: float = 1.0
    """Sampling temperature."""
    top_p: float = 1.0
    """Nucleus sampling mass."""
    limit: int | None = None
    """Evaluate only the first N problems of each benchmark (arith: generate N)."""
    data_dir: str | None = None
    """Folder of local <bench>.jsonl files; None: env DHPO_BENCHMARKS_DIR, else the hub."""
    batch_size: int = 256
    """Samples in flight in the engine, and samples graded/appended per fsync."""
    grader_workers: int = 2
    """Grader worker processes."""
    grader_timeout: float = 10.0
    """Seconds per graded sample before its worker is killed (status "timeout")."""
    shard: tuple[int, int] = (0, 1)
    """(rank, world) of a data-parallel worker: it evaluates problems i with i % world == rank."""


class SettingsMismatch(ValueError):
    """--resume with settings that differ from the stored evaluation's config.json."""


_RESUME_KEYS = ("max_new_tokens", "temperature", "top_p", "seed")
Notify = Callable[[str], None]


def _config(engine: Engine, settings: EvalSettings) -> dict:
    return {"results_version": er.RESULTS_VERSION, "model": engine.model, "seed": engine.options.seed,
            "max_new_tokens": settings.max_new_tokens, "temperature": settings.temperature,
            "top_p": settings.top_p, "max_model_len": engine.max_model_len, "benches": {}}


def _check_resume(stored: dict, config: dict, path: Path) -> None:
    for key in _RESUME_KEYS:
        if stored.get(key) != config[key]:
            raise SettingsMismatch(f"{path}: field {key!r}: stored evaluation used {stored.get(key)!r}, this one "
                                   f"{config[key]!r}; use the same setting or another --out")


def _open_config(out_dir: Path, config: dict, resume: bool) -> dict:
    """config.json of `out_dir`: new, or the stored one (checked) when resuming."""
    path = out_dir / er.CONFIG
    has_samples = any(out_dir.glob("*.samples*.jsonl"))
    if path.exists() and has_samples:
        if not resume:
            raise FileExistsError(f"{out_dir}: holds results already; pass --resume to continue them, "
                                  f"--regrade to re-grade them, or choose another --out")
        stored = er.read_json(path)
        _check_resume(stored, config, path)
        return stored
    er.write_json_atomic(path, config)
    return config


def _clamp_note(engine: Engine, prompts: list[str], settings: EvalSettings, bench: str) -> str | None:
    longest = max(len(engine.encode(p)) for p in prompts)
    allowed = engine.max_model_len - longest
    if settings.max_new_tokens <= allowed:
        return None
    return (f"{bench}: max_new_tokens {settings.max_new_tokens} + the longest prompt ({longest} tokens) exceeds "
            f"the model's context of {engine.max_model_len} tokens; responses are clamped to "
            f"{engine.max_model_len} - prompt length (>= {allowed} tokens)")


def _evaluate_bench(engine: Engine, name: str, out_dir: Path, settings: EvalSettings, grading: GradingThread,
                    config: dict, progress, notify: Notify) -> dict:
    from vllm import SamplingParams

    bench = BENCHMARKS[name]
    n = settings.samples or bench.samples
    template = load_template(settings.template or bench.template)
    problems = load_problems(name, settings.data_dir, settings.limit, seed=engine.options.seed)
    prompts = {p.id: template.render(p.problem, engine.tokenizer, bench.system) for p in problems}
    stops = stop_token_ids(engine.tokenizer, engine.generation_config, template)
    before = config["benches"].get(name, {}).get("template", template.name)
    if before != template.name:
        raise SettingsMismatch(f"{out_dir / er.CONFIG}: field 'benches.{name}.template': stored evaluation used "
                               f"{before!r}, this one {template.name!r}; use the same --template or another --out")
    config["benches"][name] = {"samples": n, "template": template.name, "problems": len(problems),
                               "stop_token_ids": stops}
    er.write_json_atomic(out_dir / er.CONFIG, config)
    rank, world = settings.shard
    problems = problems[rank::world]
    path = er.samples_path(out_dir, name) if world == 1 else er.shard_samples_path(out_dir, name, rank, world)
    stored = er.read_bench_samples(out_dir, name)
    for problem in stored.skipped:
        notify(f"resume: {problem}")
    done = {(r["problem_id"], r["sample"]) for r in stored.records}
    requests = [Request((p,), prompts[p.id], tuple(s for s in range(n) if (p.id, s) not in done))
                for p in problems]
    requests = [r for r in requests if r.samples]
    task = progress(name, len(problems) * n, len(problems) * n - sum(len(r.samples) for r in requests))
    if requests:
        note = _clamp_note(engine, [r.prompt for r in requests], settings, name)
        if note:
            notify(note)
        params = SamplingParams(n=1, temperature=settings.temperature, top_p=settings.top_p,
                                max_tokens=settings.max_new_tokens, stop_token_ids=stops)
        with er.SampleWriter(path) as writer:
            sink = Sink(grading, writer, task)
            try:
                for (problem,), completions in engine.stream(requests, params, settings.batch_size):
                    sink.add(name, problem, prompts[problem.id], completions)
                    if sink.size >= settings.batch_size:
                        sink.flush()
            finally:
                sink.close()
    return bench_metrics(er.read_bench_samples(out_dir, name).records, n)


def summarize(out_dir: Path | str, per_bench: dict[str, dict], config: dict) -> dict:
    """Write summary.json: metrics per benchmark + AVG over the paper's benchmarks evaluated."""
    summary = {"results_version": er.RESULTS_VERSION, "model": config.get("model"), "benchmarks": per_bench,
               "AVG": paper_average({k: v for k, v in per_bench.items() if k != "arith"} or per_bench),
               "settings": {k: config.get(k) for k in (*_RESUME_KEYS, "max_model_len")}}
    er.write_json_atomic(Path(out_dir) / er.SUMMARY, summary)
    return summary


def _no_progress(name: str, total: int, done: int) -> Callable[[int], None]:
    return lambda k: None


def evaluate(engine: Engine, benches: list[str], out_dir: Path | str, settings: EvalSettings = EvalSettings(),
             *, resume: bool = False, progress=_no_progress, notify: Notify = print) -> dict:
    """Evaluate `engine`'s model on `benches` into `out_dir`; returns the summary (also in summary.json).

    `progress(name, total, done)` returns a callback `advance(k)` (rich bars in the CLI).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    config = _open_config(out_dir, _config(engine, settings), resume)
    per_bench = {}
    with GradingThread(settings.grader_workers, settings.grader_timeout) as grading:
        for name in benches:
            per_bench[name] = _evaluate_bench(engine, name, out_dir, settings, grading, config, progress, notify)
            summarize(out_dir, per_bench, config)
    return summarize(out_dir, _stored_metrics(out_dir, config, per_bench), config)


def _stored_metrics(out_dir: Path, config: dict, fresh: dict) -> dict:
    """Metrics of every benchmark stored in out_dir (earlier invocations' too), fresh ones taking priority."""
    out = {}
    for name, info in config.get("benches", {}).items():
        out[name] = fresh.get(name) or bench_metrics(er.read_bench_samples(out_dir, name).records, info["samples"])
    return out


def summarize_dir(out_dir: Path | str) -> dict:
    """Recompute summary.json from the stored samples (after data-parallel workers finish)."""
    config = er.read_json(Path(out_dir) / er.CONFIG)
    return summarize(out_dir, _stored_metrics(Path(out_dir), config, {}), config)


def _regrade_file(pool, path: Path, name: str, notify: Notify) -> int:
    stored = er.read_samples(path)
    for problem in stored.skipped:
        notify(f"regrade: {problem}")
    verdicts = pool.grade_many([(r["response"], r["gold"], name) for r in stored.records])
    records = [{**r, "extracted": v.extracted, "correct": bool(v.correct), "status": v.status, "reason": v.reason}
               for r, v in zip(stored.records, verdicts)]
    er.rewrite_samples(path, records)
    return len(records)


def regrade(out_dir: Path | str, settings: EvalSettings = EvalSettings(), *, progress=_no_progress,
            notify: Notify = print) -> dict:
    """Re-grade every stored response of `out_dir` (no generation), rewrite the files, re-summarise."""
    out_dir = Path(out_dir)
    from dhpo_suite.grading import GraderPool

    config = er.read_json(out_dir / er.CONFIG)
    with GraderPool(workers=settings.grader_workers, timeout=settings.grader_timeout) as pool:
        for name in config.get("benches", {}):
            files = er.bench_sample_files(out_dir, name)
            advance = progress(name, len(er.read_bench_samples(out_dir, name).records), 0)
            for path in files:
                advance(_regrade_file(pool, path, name, notify))
    return summarize(out_dir, _stored_metrics(out_dir, config, {}), config)
