"""One evaluation: generate the missing samples of each benchmark, grade them, append them, summarise.

Per benchmark: read what `<bench>.samples.jsonl` already holds (resume; the model and every sample-changing
setting must match, see dhpo_suite.eval.identity), ask the engine only for the missing (problem, sample)
pairs, and hand finished samples to a grading thread that grades them in the grader's worker processes and
appends them within about a second (dhpo_suite.eval.sink). Generation never waits for the grader, and a
SIGKILL loses only the requests still in the engine. A problem that cannot be generated (prompt longer than
the context, a row over the size limit) is recorded with a status and the rest runs. Metrics are recomputed
from the file, so resumed and uninterrupted evaluations report the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from dhpo_suite.eval.benchmarks import BENCHMARKS, PAPER_BENCHMARKS, data_source, load_problems, paper_order
from dhpo_suite.eval.engine import Engine, Request, sample_seed
from dhpo_suite.eval.identity import BENCH_IDENTITY, IDENTITY, IdentityMismatch, check_same, model_fingerprint
from dhpo_suite.eval.metrics import bench_metrics, paper_average
from dhpo_suite.eval.prompts import is_chat_model, load_template, stop_token_ids
from dhpo_suite.eval.protocols import PROTOCOLS, get_protocol
from dhpo_suite.eval.sink import GradingThread, Sink, skipped_records
from dhpo_suite.eval.sources import Problem, clip
from dhpo_suite.grading import GraderPool
from dhpo_suite.runs import eval_results as er

__all__ = ["EvalSettings", "evaluate", "regrade", "summarize", "summarize_dir", "precheck", "todo", "Todo",
           "check_protocol"]


@dataclass(frozen=True)
class EvalSettings:
    """What to generate and how to grade (the paper's protocol by default)."""

    template: str | None = None
    """qwen-boxed | chat | task | a file with {input}; None: each benchmark's default."""
    samples: int | None = None
    """Samples per problem for every benchmark; None: the protocol's (AIME 32, AMC23 4, else 1)."""
    max_new_tokens: int | None = None
    """Response token limit (clamped to the model's context); None: each benchmark's (16384; a task's own)."""
    temperature: float = 1.0
    """Sampling temperature (the protocol's unless given: 1.0 for both)."""
    top_p: float = 1.0
    """Nucleus sampling mass (--protocol simplerl: 0.95 unless given)."""
    limit: int | None = None
    """Evaluate only the first N problems of each benchmark (a task: N problems, default 128)."""
    data_dir: str | None = None
    """Folder of local <bench>.jsonl files; None: env DHPO_BENCHMARKS_DIR, else the hub."""
    batch_size: int = 256
    """Samples in flight in the engine (finished samples are stored within a second whatever this is)."""
    grader_workers: int = 2
    """Grader worker processes."""
    grader_timeout: float = 10.0
    """Seconds per graded sample before its worker is killed (status "timeout")."""
    shard: tuple[int, int] = (0, 1)
    """(rank, world) of a data-parallel worker: it evaluates problems i with i % world == rank."""
    protocol: str = "paper"
    """paper (each benchmark's record) or simplerl (SimpleRL-Zoo's harness; see dhpo_suite.eval.protocols)."""


Notify = Callable[[str], None]
Progress = Callable[[str, int, int], Callable[..., None]]
"""progress(benchmark, total samples, samples already done) -> advance(k, tokens=0): k more samples done, with
`tokens` response tokens among them."""


def _config(engine: Engine, settings: EvalSettings) -> dict:
    model = Path(engine.model)
    return {"results_version": er.RESULTS_VERSION, "model": str(model.resolve()) if model.exists() else engine.model,
            "model_fingerprint": model_fingerprint(model) if model.is_dir() else None,
            "seed": engine.options.seed, "temperature": settings.temperature, "top_p": settings.top_p,
            "max_model_len": engine.max_model_len, "dtype": engine.dtype, "protocol": settings.protocol,
            "benches": {}}


def _stored_config(out_dir: Path, resume: bool) -> dict | None:
    """The stored config.json when `out_dir` holds results (FileExistsError unless resuming), else None."""
    path = out_dir / er.CONFIG
    if not path.exists() or not er.has_samples(out_dir):
        return None
    if not resume:
        raise FileExistsError(f"{out_dir}: holds results already; pass --resume to continue them, "
                              f"--regrade to re-grade them, or choose another --out")
    return er.read_json(path)


def _open_config(out_dir: Path, config: dict, resume: bool) -> dict:
    """config.json of `out_dir`: new, or the stored one (checked field by field) when resuming."""
    stored = _stored_config(out_dir, resume)
    if stored is None:
        er.write_json_atomic(out_dir / er.CONFIG, config)
        return config
    check_protocol(stored, config["protocol"], out_dir / er.CONFIG)
    check_same(stored, config, IDENTITY, str(out_dir / er.CONFIG))
    return stored


def check_protocol(stored: dict, protocol: str, path: Path) -> None:
    """--resume must name the stored evaluation's --protocol (results stored before it was kept: paper's)."""
    was = stored.get("protocol", "paper")
    if was != protocol:
        raise IdentityMismatch(f"{path}: the stored evaluation used --protocol {was}, this one --protocol "
                               f"{protocol}; pass --protocol {was} to resume it, or choose another --out")


def precheck(out_dir: Path | str, model_dir: Path | str, resume: bool) -> None:
    """Before the model is loaded: stored results need --resume, and --resume needs the same model (its path
    and content fingerprint). Raises FileExistsError / IdentityMismatch (one line naming the field)."""
    model, stored = Path(model_dir), _stored_config(Path(out_dir), resume)
    if stored is not None:
        current = {"model": str(model.resolve()), "model_fingerprint": model_fingerprint(model)}
        check_same(stored, current, ("model", "model_fingerprint"), str(Path(out_dir) / er.CONFIG))


def _clamp_note(engine: Engine, longest: int, max_new_tokens: int, bench: str) -> str | None:
    """A note when the response budget does not fit the context after the longest prompt (`longest` tokens)."""
    allowed = engine.max_model_len - longest
    if max_new_tokens <= allowed:
        return None
    return (f"{bench}: max_new_tokens {max_new_tokens} + the longest prompt ({longest} tokens) exceeds "
            f"the model's context of {engine.max_model_len} tokens; responses are clamped to "
            f"{engine.max_model_len} - prompt length (>= {max(allowed, 1)} tokens)")


def _check_stored(stored: list[dict], prompts: dict, problems: dict, path: Path) -> None:
    """Each stored problem's prompt and golds must be what this invocation sends (same data and template)."""
    seen = set()
    for r in stored:
        pid = r["problem_id"]
        if pid in seen or pid not in problems:
            continue
        seen.add(pid)
        for key, now in (("prompt", prompts[pid]), ("gold", list(problems[pid].gold))):
            if r.get(key) != now:
                raise IdentityMismatch(f"{path}: problem {clip(repr(pid), 60)}: field '{key}': the stored sample's "
                                       f"differs from this invocation's (another data source, template or "
                                       f"repair); use the same data, or another --out")


def _prepare(engine: Engine, name: str, settings: EvalSettings, config: dict, path: Path, notify: Notify,
             ) -> tuple[list[Problem], dict[str, str], dict[str, list[int]], dict[str, Any]]:
    """(problems, prompts, token ids, bench config entry) of one benchmark; the entry checked against config."""
    bench = BENCHMARKS[name]
    protocol = PROTOCOLS["paper"] if bench.task else get_protocol(settings.protocol)  # a task keeps its own
    template = load_template(settings.template or default_template(engine, name, settings.protocol))
    problems = load_problems(name, settings.data_dir, settings.limit, seed=engine.options.seed, notify=notify)
    prompts = {p.id: "" if p.skip else template.render(protocol.question(p.problem, p.gold[0]), engine.tokenizer,
                                                       bench.task) for p in problems}
    ids = {pid: engine.encode(text, template.adds_special_tokens) for pid, text in prompts.items() if text}
    entry = {"template": template.name,
             "max_new_tokens": settings.max_new_tokens or protocol.max_new_tokens or bench.max_new_tokens,
             "stop_token_ids": stop_token_ids(engine.tokenizer, engine.generation_config, template),
             "grader": bench.grader, "samples": settings.samples or bench.samples, "problems": len(problems),
             "problem_ids": [p.id for p in problems], "data": data_source(name, settings.data_dir)}
    if protocol.stop:  # only then: results stored before --protocol compare equal
        entry["stop"] = list(protocol.stop)
    if name in config["benches"]:
        check_same(config["benches"][name], entry, BENCH_IDENTITY, str(path), prefix=f"benches.{name}.")
    return problems, prompts, ids, entry


def default_template(engine: Engine, name: str, protocol: str = "paper") -> str:
    """The template a benchmark gets without --template: a task's own; the protocol's; `chat` for a chat model
    (an instruct model's tokenizer chat template, see prompts.is_chat_model); else the record's (qwen-boxed)."""
    bench = BENCHMARKS[name]
    if bench.task:
        return bench.template
    return get_protocol(protocol).template or ("chat" if is_chat_model(engine.model, engine.tokenizer)
                                               else bench.template)


def _skips(problems: list[Problem], ids: dict[str, list[int]], max_model_len: int) -> dict[str, tuple[str, str]]:
    """{problem id: (status, one-line reason)} of the problems that cannot be generated."""
    out = {}
    for p in problems:
        if p.skip:
            out[p.id] = ("row_too_large", clip(p.skip))
        elif len(ids[p.id]) >= max_model_len:
            out[p.id] = ("prompt_too_long", f"prompt of {len(ids[p.id])} tokens does not fit the context of "
                                            f"{max_model_len} tokens")
    return out


@dataclass
class Todo:
    """One benchmark's work: its problems (this shard's), prompts, token ids, config entry, the sample indices
    still missing per problem, the problems that cannot be generated, and its samples file."""

    problems: list[Problem]
    prompts: dict[str, str]
    ids: dict[str, list[int]]
    entry: dict[str, Any]
    missing: dict[str, tuple[int, ...]]
    skips: dict[str, tuple[str, str]]
    path: Path


def todo(engine: Engine, name: str, out_dir: Path, settings: EvalSettings, config: dict, notify: Notify) -> Todo:
    """What is left of benchmark `name` in out_dir, every setting checked against the stored config and
    samples (IdentityMismatch naming the field). Writes nothing; `engine` needs no vLLM (see plan.Tokenizing)."""
    problems, prompts, ids, entry = _prepare(engine, name, settings, config, out_dir / er.CONFIG, notify)
    rank, world = settings.shard
    problems = problems[rank::world]
    path = er.samples_path(out_dir, name) if world == 1 else er.shard_samples_path(out_dir, name, rank, world)
    stored = er.read_bench_samples(out_dir, name)
    for problem in stored.skipped:
        notify(f"resume: {problem}")
    _check_stored(stored.records, prompts, {p.id: p for p in problems}, path)
    done = {(r["problem_id"], r["sample"]) for r in stored.records}
    n = entry["samples"]
    missing = {p.id: tuple(s for s in range(n) if (p.id, s) not in done) for p in problems}
    skips = _skips([p for p in problems if missing[p.id]], ids, engine.max_model_len)
    return Todo(problems, prompts, ids, entry, missing, skips, path)


def _evaluate_bench(engine: Engine, name: str, out_dir: Path, settings: EvalSettings, grading: GradingThread,
                    config: dict, progress: Progress, notify: Notify) -> dict:
    from vllm import SamplingParams

    t = todo(engine, name, out_dir, settings, config, notify)
    problems, prompts, entry, missing, skips, path = t.problems, t.prompts, t.entry, t.missing, t.skips, t.path
    n = entry["samples"]
    config["benches"][name] = entry
    er.write_json_atomic(out_dir / er.CONFIG, config)
    if skips:
        status, reason = next(iter(skips.values()))
        notify(f"{name}: {len(skips)} problem(s) cannot be generated and are recorded as skipped ({status}: "
               f"{reason})")
    seed = engine.options.seed
    requests = [Request((p,), prompts[p.id], missing[p.id], tuple(t.ids[p.id]),
                        tuple(sample_seed(seed, name, p.id, s) for s in missing[p.id]))
                for p in problems if missing[p.id] and p.id not in skips]
    total = len(problems) * n
    advance = progress(name, total, total - sum(len(s) for s in missing.values()))
    if not any(missing.values()):
        return _bench_summary(out_dir, name, entry)
    if requests:
        note = _clamp_note(engine, max(len(r.prompt_ids or ()) for r in requests), entry["max_new_tokens"], name)
        if note:
            notify(note)
    params = SamplingParams(n=1, temperature=settings.temperature, top_p=settings.top_p,
                            max_tokens=entry["max_new_tokens"], stop_token_ids=entry["stop_token_ids"],
                            stop=entry.get("stop") or None)
    with er.SampleWriter(path) as writer:
        sink = Sink(grading, writer, advance, bench=name, grader=entry["grader"], batch_size=settings.batch_size)
        try:
            for p in problems:
                if p.id in skips:
                    sink.store_skipped(skipped_records(name, p, prompts[p.id], missing[p.id], *skips[p.id]))
            for (problem,), completions in engine.stream(requests, params, settings.batch_size, on_step=sink.tick):
                sink.add(problem, prompts[problem.id], completions)
        finally:
            sink.close()
    return _bench_summary(out_dir, name, entry)


def _bench_summary(out_dir: Path, name: str, entry: dict) -> dict:
    """Metrics of one benchmark over the problems of its config entry (the latest invocation's `problem_ids`:
    a resume with a smaller --limit reports those problems only; entries written before them: every stored one)."""
    records = er.read_bench_samples(out_dir, name).records
    if "problem_ids" in entry:
        wanted = set(entry["problem_ids"])
        records = [r for r in records if r["problem_id"] in wanted]
    return bench_metrics(records, entry["samples"])


def summarize(out_dir: Path | str, per_bench: dict[str, dict], config: dict) -> dict:
    """Write summary.json: metrics per benchmark (Table 1's order) + AVG over the paper's benchmarks evaluated
    (over all of them when only training tasks were evaluated)."""
    per_bench = {b: per_bench[b] for b in paper_order(per_bench)}
    paper = {k: v for k, v in per_bench.items() if k in PAPER_BENCHMARKS}
    summary = {"results_version": er.RESULTS_VERSION, "model": config.get("model"), "benchmarks": per_bench,
               "AVG": paper_average(paper or per_bench),
               "settings": {k: config.get(k) for k in (*IDENTITY, "protocol")}}
    er.write_json_atomic(Path(out_dir) / er.SUMMARY, summary)
    return summary


def _no_progress(name: str, total: int, done: int) -> Callable[..., None]:
    return lambda k, tokens=0: None


def evaluate(engine: Engine, benches: list[str], out_dir: Path | str, settings: EvalSettings = EvalSettings(),
             *, resume: bool = False, progress: Progress = _no_progress, notify: Notify = print) -> dict:
    """Evaluate `engine`'s model on `benches` into `out_dir`; returns the summary (also in summary.json) of this
    invocation's benchmarks and problems."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    config = _open_config(out_dir, _config(engine, settings), resume)
    if settings.template is None and any(default_template(engine, b, settings.protocol) == "chat" for b in benches):
        notify(f"template: chat ({Path(engine.model).name} is a chat model; --template qwen-boxed for the base-model "
               f"prompt)")
    per_bench = {}
    with GradingThread(settings.grader_workers, settings.grader_timeout) as grading:
        for name in benches:
            per_bench[name] = _evaluate_bench(engine, name, out_dir, settings, grading, config, progress, notify)
            summarize(out_dir, per_bench, config)
    return summarize(out_dir, per_bench, config)


def _stored_metrics(out_dir: Path, config: dict, benches: list[str] | None = None) -> dict:
    """Metrics of `benches` (None: every benchmark of config.json) from the stored samples."""
    entries = config.get("benches", {})
    return {name: _bench_summary(out_dir, name, entries[name]) for name in (benches or entries) if name in entries}


def summarize_dir(out_dir: Path | str, benches: list[str] | None = None) -> dict:
    """Recompute summary.json from the stored samples (after data-parallel workers finish) of `benches` (None:
    all of config.json's)."""
    config = er.read_json(Path(out_dir) / er.CONFIG)
    return summarize(out_dir, _stored_metrics(Path(out_dir), config, benches), config)


def _regrade_file(pool: GraderPool, path: Path, grader: str | None, notify: Notify) -> int:
    stored = er.read_samples(path)
    for problem in stored.skipped:
        notify(f"regrade: {problem}")
    graded = [r for r in stored.records if r["status"] not in er.SKIP_STATUSES]  # skipped: nothing to grade
    if any("problem" not in r for r in graded):
        notify(f"regrade: {path.name}: samples stored before the problem text was kept are graded without it (a "
               f"restatement of the problem may then count as an answer)")
    # as the evaluation grades (sink.Sink._store): golds, policy, truncation, problem text
    verdicts = iter(pool.grade_many([{"response": r["response"], "gold": r["gold"], "bench": grader,
                                      "truncated": r.get("finish_reason") == "length", "problem": r.get("problem")}
                                     for r in graded]))
    records = []
    for r in stored.records:  # in file order; the verdicts follow the graded records
        if r["status"] not in er.SKIP_STATUSES:
            v = next(verdicts)
            r = {**r, "extracted": v.extracted, "answer_source": v.answer_source, "correct": bool(v.correct),
                 "status": v.status, "reason": v.reason}
        records.append(r)
    er.rewrite_samples(path, records)
    return len(records)


def regrade(out_dir: Path | str, settings: EvalSettings = EvalSettings(), *, progress: Progress = _no_progress,
            notify: Notify = print) -> dict:
    """Re-grade every stored response of `out_dir` (no generation), rewrite the files, re-summarise."""
    out_dir = Path(out_dir)
    config = er.read_json(out_dir / er.CONFIG)
    with GraderPool(workers=settings.grader_workers, timeout=settings.grader_timeout) as pool:
        for name, info in config.get("benches", {}).items():
            files = er.bench_sample_files(out_dir, name)
            advance = progress(name, len(er.read_bench_samples(out_dir, name).records), 0)
            for path in files:
                advance(_regrade_file(pool, path, info.get("grader", name), notify))
    return summarize(out_dir, _stored_metrics(out_dir, config), config)
