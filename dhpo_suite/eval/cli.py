"""`dhpo-suite eval`: evaluate a model (or a training run's checkpoints) on the paper's benchmarks."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import typer
from rich.console import Console

from dhpo_suite.config_cli import Spell, Values, config_command, flag, to_argv
from dhpo_suite.eval.benchmarks import BENCHMARKS, load_problems, resolve_benches
from dhpo_suite.eval.compare_cli import register as register_compare
from dhpo_suite.eval.engine import Engine, EngineOptions
from dhpo_suite.eval.engine_keywords import check_engine_keywords
from dhpo_suite.eval.identity import default_out_dir
from dhpo_suite.eval.named_models import NAMES, resolve_named_model
from dhpo_suite.eval.parallel import parse_shard, run_workers
from dhpo_suite.eval.prompts import load_template
from dhpo_suite.eval.protocols import PROTOCOLS, get_protocol
from dhpo_suite.eval.report import detail_table, headline_table, progress_bars
from dhpo_suite.eval.plan import plan, plan_lines
from dhpo_suite.eval.runner import EvalSettings, evaluate, precheck, summarize_dir
from dhpo_suite.eval.runner import regrade as regrade_dir
from dhpo_suite.models.local import ModelDirError, check_model_dir, refuse_custom_code
from dhpo_suite.runs import eval_results as er
from dhpo_suite.runs.format import CHECKPOINTS, checkpoint_path, complete_checkpoints
from dhpo_suite.runs.lock import LOCK_FILE, DirLock, LockHeld

__all__ = ["SPELL", "EvalTarget", "child_argv", "register"]


def _targets(model: Path | None, run: Path | None, steps: str, out: Path | None,
             regrade: bool = False) -> list[tuple[str, str, Path]]:
    """(label, model dir, results dir) for --model or for each selected checkpoint of --run; --regrade needs only
    --out (no model is loaded; the label is the stored model's)."""
    if regrade and model is None and run is None:
        if out is None:
            raise typer.BadParameter("--regrade: give --out DIR, the results to re-grade")
        return [(_stored_label(out), "", out)]
    if (model is None) == (run is None):
        raise typer.BadParameter("give exactly one of --model PATH or --run RUN_DIR")
    if model is not None:
        model = resolve_named_model(str(model), lambda m: typer.echo(m, err=True)) or model  # as train does
        _check_model_dir(model, "--model")
        out = out or default_out_dir(model)
        return [(_stored_label(out) if regrade else model.name, str(model), out)]
    found = list(complete_checkpoints(run))
    if not found:
        raise typer.BadParameter(f"--run: no complete checkpoints under {run / CHECKPOINTS}")
    chosen = found[-1:] if steps == "last" else found if steps == "all" else [int(s) for s in steps.split(",")]
    missing = sorted(set(chosen) - set(found))
    if missing:
        raise typer.BadParameter(f"--steps: no complete checkpoint for step(s) {missing}; have {found}")
    for s in chosen:
        _check_model_dir(checkpoint_path(run, s), "--run")
    return [(f"step {s}", str(checkpoint_path(run, s)), er.checkpoint_eval_dir(run, s)) for s in chosen]


def _stored_label(out: Path) -> str:
    """The table label of stored results: the name of the model config.json records (`<run>-step-XXXXXX` for a
    training checkpoint, as the default results directory names it)."""
    try:
        model = Path(str(er.read_json(out / er.CONFIG).get("model") or out))
    except (OSError, ValueError) as e:
        raise typer.BadParameter(f"--out: {out}: not a results directory ({' '.join(str(e).split())})") from None
    return f"{model.parents[1].name}-{model.name}" if model.parent.name == CHECKPOINTS else model.name


def _check_options(v: dict) -> None:
    """ValueError naming the first bad option and its allowed values (before any model, engine or worker)."""
    at_least = {"limit": 1, "samples": 1, "max_new_tokens": 1, "batch_size": 1, "tensor_parallel_size": 1,
                "data_parallel_size": 1, "max_model_len": 1, "grader_workers": 1, "seed": 0}
    for name, low in at_least.items():
        if v[name] is not None and v[name] < low:
            raise ValueError(f"{flag(name, SPELL)}: must be an integer >= {low}, got {v[name]}")
    ranges = {"temperature": (0.0, 100.0, "from 0 (greedy) to 100"), "top_p": (0.0, 1.0, "in (0, 1]"),
              "gpu_memory_utilization": (0.0, 1.0, "in (0, 1]"), "grader_timeout": (0.0, 86400.0, "in (0, 86400]")}
    for name, (low, high, allowed) in ranges.items():
        x = v[name]
        ok = (low <= x <= high) if name == "temperature" else (low < x <= high)
        if not ok:  # NaN fails both comparisons
            raise ValueError(f"{flag(name, SPELL)}: must be {allowed}, got {x}")
    if v["steps"] not in ("all", "last") and not all(s.strip().isdigit() for s in v["steps"].split(",")):
        raise ValueError(f"--steps: all, last, or a comma list of step numbers such as 10,20; got {v['steps']!r}")
    get_protocol(v["protocol"])
    if v["template"] is not None:
        try:
            load_template(v["template"])
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"--template: {v['template']}: unreadable ({e})") from None


def _lock_results(targets, stack, option: str) -> None:
    """Take each results directory's one-writer lock (creating it): a second writer is refused with one line."""
    for _, _, results in targets:
        if Path(results).exists() and not Path(results).is_dir():
            raise ValueError(f"{option}: {results} is a file, not a results directory")
        if not Path(results).exists():  # runs after the lock's release: a failed start leaves nothing behind
            stack.callback(_remove_if_unused, Path(results))
        try:
            stack.enter_context(DirLock(results))
        except LockHeld as e:
            raise ValueError(f"{option}: {e}") from None
        except OSError as e:
            raise ValueError(f"{option}: {e.filename or results}: cannot write results there "
                             f"({e.strerror or e})") from None


def _remove_if_unused(results: Path) -> None:
    """Remove a results directory this command created when it holds no samples (only the lock, config.json)."""
    try:
        if results.is_dir() and {p.name for p in results.iterdir()} <= {LOCK_FILE, er.CONFIG}:
            for p in results.iterdir():
                p.unlink()
            results.rmdir()
    except OSError:
        pass  # another process wrote into it meanwhile: keep it


def _check_model_dir(path: Path, option: str) -> None:
    if not path.is_dir():
        names = f"; or a name train accepts: {', '.join(NAMES)}" if option == "--model" else ""
        raise typer.BadParameter(f"{option}: {path} is not a directory (a Hugging Face model directory{names})")
    if not (path / "config.json").is_file():
        raise typer.BadParameter(f"{option}: {path} is not a Hugging Face model directory (no config.json)")
    try:
        refuse_custom_code(path)  # never run a model's shipped code, never prompt for it
    except ModelDirError as e:
        raise typer.BadParameter(f"{option}: {e}") from None


@dataclass(frozen=True)
class EvalTarget:
    """What to evaluate and where its results go (the command's own options)."""

    bench: str = "all"
    """all (the paper's 7), a name, or a comma list; a training task's name evaluates the trainer's held-out
    problems with its prompt."""
    model: Path | None = None
    """Hugging Face model directory, or a name train accepts: tiny, smollm2-135m (built into the trainer's cache
    on first use)."""
    run: Path | None = None
    """Training run directory: evaluates checkpoints/step-*/ into RUN_DIR/evals/step-*/."""
    steps: str = "all"
    """With --run: all, last, or a comma list of steps."""
    out: Path | None = None
    """Results directory (default eval-results/<model name or run-step>-<path hash>)."""
    resume: bool = False
    """Continue stored results: only missing samples are generated."""
    regrade: bool = False
    """Re-grade stored responses; no generation, no model load."""
    data_parallel_size: int = 1
    """Replicas: one worker process each (--tp GPUs each)."""
    in_process: bool = False
    """--run: all checkpoints in this process (not one fresh process per checkpoint)."""
    dry_run: bool = False
    """Print the plan (benchmarks, problems, samples, token budget, worst-case tokens, time) after checking every
    setting against stored results; load no model, write nothing."""
    tokens_per_second: float = 1000.0
    """--dry-run: the generation rate (response tokens/s of the whole engine) its time estimate assumes."""


SPELL = {
    "bench": Spell(names=("-b",), listed=BENCHMARKS.keys),
    "model": Spell(names=("-m",)),
    "out": Spell(names=("-o",)),
    "data_parallel_size": Spell(names=("--dp",)),
    "tensor_parallel_size": Spell(names=("--tp",)),
    "shard": Spell(hidden=True, cli_type=str, metavar="RANK/WORLD"),
    "in_process": Spell(hidden=True),
    "protocol": Spell(choices=PROTOCOLS.keys, listed=PROTOCOLS.keys),
    "extra": Spell(names=("--engine-arg",), repeat=True),
}
"""How the fields that need more than `--field-name` are spelled (dhpo_suite.config_cli)."""


def register(app: typer.Typer) -> None:
    register_compare(app)

    @app.command(help="Evaluate a model (or a run's checkpoints) on the paper's math benchmarks.")
    @config_command(EvalTarget, EvalSettings, EngineOptions, spell=SPELL)
    def eval(ctx: typer.Context, v: Values) -> None:  # noqa: A001 - the command's name
        os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")  # stdout: the results tables only

        t = EvalTarget(**v.of(EvalTarget))
        console = Console(stderr=True)
        stack = contextlib.ExitStack()  # the results directories' writer locks, held until the command ends
        try:
            _check_options(v.values)
            names = resolve_benches(t.bench)
            targets = _targets(t.model, t.run, t.steps, t.out, t.regrade)
            rank_world = parse_shard(v["shard"]) if v["shard"] else (0, 1)
            extra = _engine_args(v["extra"] or [])
            sweep = len(targets) > 1 and not (t.regrade or t.in_process or t.data_parallel_size > 1 or v["shard"]
                                              or t.dry_run)
            if v["shard"] is None and not sweep and not t.dry_run:  # a --dp worker runs under its parent's lock
                _lock_results(targets, stack, "--out" if t.model is not None else "--run")
        except ValueError as e:
            stack.close()
            typer.echo(f"error: {e}", err=True)  # one line, never wrapped
            raise typer.Exit(2)
        temperature, top_p = _protocol_sampling(v.given, v["protocol"], v["temperature"], v["top_p"])
        settings = EvalSettings(**{**v.of(EvalSettings), "temperature": temperature, "top_p": top_p,
                                   "shard": rank_world})
        options = EngineOptions(**{**v.of(EngineOptions), "extra": extra})
        with stack:
            if t.dry_run:
                _sequential(targets, names, settings, options, t.resume, False, console, t.tokens_per_second)
                return
            if t.data_parallel_size > 1 and not t.regrade:
                summaries = _data_parallel(targets, names, settings, t.data_parallel_size,
                                           options.tensor_parallel_size, t.resume, console)
            elif sweep:  # each child process takes its own results directory's lock
                summaries = _sweep(targets, ctx)
            else:
                summaries = _sequential(targets, names, settings, options, t.resume, t.regrade, console)
        if t.run is not None and v["shard"] is None:  # accuracy vs step, every evaluated checkpoint of the run
            from dhpo_suite.eval.compare import run_table, write_csv

            write_csv(run_table(t.run), er.checkpoint_eval_dir(t.run, 0).parent / "accuracy.csv")
            console.print(f"checkpoints: {er.checkpoint_eval_dir(t.run, 0).parent / 'accuracy.csv'}")
        out_console = Console(width=None if sys.stdout.isatty() else 160)  # files/pipes get the full table
        out_console.print(headline_table(summaries))
        for label, s in summaries.items():
            out_console.print(detail_table(s, title=f"Details: {label}"))


def _engine_args(pairs: list[str]) -> dict:
    """--engine-arg KEY=VALUE (repeatable): any other `vllm.LLM` keyword; VALUE read as JSON, else a string."""
    extra = {}
    for pair in pairs:
        key, eq, raw = pair.partition("=")
        if not eq or not key.isidentifier():
            raise ValueError(f"--engine-arg: expected KEY=VALUE with a vllm.LLM keyword, got {pair!r}")
        try:
            extra[key] = json.loads(raw)
        except json.JSONDecodeError:
            extra[key] = raw
    check_engine_keywords(list(extra))  # before the engine: vLLM's own TypeError came after loading
    return extra


def _protocol_sampling(given: frozenset[str], protocol: str, temperature: float, top_p: float) -> tuple[float, float]:
    """--temperature/--top-p as given, else the protocol's (simplerl: SimpleRL's README command's)."""
    p = get_protocol(protocol)
    return (temperature if "temperature" in given or p.temperature is None else p.temperature,
            top_p if "top_p" in given or p.top_p is None else p.top_p)


def _sequential(targets, names, settings, options, resume, regrade, console, dry_run_rate=None) -> dict:
    summaries = {}
    for label, model_dir, results in targets:
        try:
            if dry_run_rate is not None:
                rows = _checked_plan(model_dir, results, names, settings, options, resume, console.print)
                typer.echo(f"{label} -> {results} (dry run: no model loaded, nothing written)")
                typer.echo("\n".join(plan_lines(rows, dry_run_rate)))
                continue
            summaries[label] = _run_one(model_dir, results, names, settings, options, resume, regrade, console)
        except (ValueError, FileExistsError, FileNotFoundError) as e:
            typer.echo(f"error: {' '.join(str(e).split())}", err=True)  # one line, even for a multi-line message
            raise typer.Exit(2)
        console.print(f"results: {results}")
    return summaries


_SWEEP_REPLACED = {"run", "steps", "out", "model", "shard", "in_process", "data_parallel_size"}


def child_argv(params, values: dict, model: str, out) -> list[str]:
    """The `eval` command line for one checkpoint: every option the user set (click `params` and their
    `values`), with --run/--steps/--out replaced by --model MODEL --out OUT."""
    args = to_argv(params, values, keep=lambda name: name not in _SWEEP_REPLACED)
    return [sys.executable, "-m", "dhpo_suite.cli", "eval", *args, "--model", str(model), "--out", str(out)]


def _sweep(targets, ctx) -> dict:
    """--run over several checkpoints: one fresh evaluator process per checkpoint, one at a time (vLLM does not
    reliably free GPU memory when an engine is deleted, so the next checkpoint starts from an empty GPU); the
    combined table reads each child's summary.json."""
    summaries = {}
    for label, model_dir, results in targets:
        typer.echo(f"{label}: {model_dir} (own process)", err=True)
        argv = child_argv(ctx.command.params, ctx.params, model_dir, results)
        code = subprocess.run(argv, stdout=subprocess.DEVNULL).returncode  # its progress on our stderr, no tables
        if code != 0:
            typer.echo(f"error: {label}: the evaluator exited with code {code}; rerun with --resume", err=True)
            raise typer.Exit(code)
        summaries[label] = er.read_json(Path(results) / er.SUMMARY)
    return summaries


def _data_parallel(targets, names, settings, world, tp, resume, console) -> dict:
    """--dp N: N worker processes (see dhpo_suite.eval.parallel), then summaries from all shards."""
    try:
        for name in names:
            load_problems(name, settings.data_dir, settings.limit, notify=console.print)
        for _, _, results in targets:
            if not resume and er.has_samples(results):
                raise FileExistsError(f"{results}: holds results already; pass --resume to continue them")
        console.print(f"data parallel: {world} workers x {tp} GPU(s) ...")
        run_workers(sys.argv[1:], world, tp)
    except (ValueError, FileExistsError, RuntimeError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2)
    return {label: summarize_dir(results, names) for label, _, results in targets}


def _checked_plan(model_dir, results, names, settings, options, resume, notify=lambda m: None) -> list:
    """The plan (dhpo_suite.eval.plan), after the checks that name the user's mistake first: another model's
    results, bad data, a model directory the engine would refuse."""
    precheck(results, model_dir, resume)  # another model's results fail now, not after loading this one
    for name in names:  # bad data fails now, not after minutes of model loading
        load_problems(name, settings.data_dir, settings.limit, seed=options.seed)
    try:
        check_model_dir(model_dir)  # model_type, weights, tokenizer: refused here, not from inside the engine
    except ModelDirError as e:
        raise ValueError(str(e)) from None
    return plan(model_dir, names, results, settings, options, resume, notify=notify)


def _run_one(model_dir, results, names, settings, options, resume, regrade, console) -> dict:
    """Evaluate (or re-grade) one model into `results` with progress bars."""
    notify = lambda msg: console.print(f"[yellow]{msg}[/yellow]")  # noqa: E731
    if regrade:
        with progress_bars(console) as bars:
            return regrade_dir(results, settings, progress=bars, notify=notify)
    # every setting, the data and the stored results are checked now, not after minutes of model loading
    rows = _checked_plan(model_dir, results, names, settings, options, resume)
    console.print(plan_lines(rows, 1.0)[-1].split(";")[0], markup=False, highlight=False)
    console.print(f"loading {model_dir} ...")
    engine = Engine(model_dir, options)
    try:
        with progress_bars(console) as bars:
            return evaluate(engine, names, results, settings, resume=resume, progress=bars, notify=notify)
    finally:
        engine.close()
