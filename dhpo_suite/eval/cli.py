"""`dhpo-suite eval`: evaluate a model (or a training run's checkpoints) on the paper's benchmarks."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import typer
from click.core import ParameterSource
from rich.console import Console

__all__ = ["register"]

BenchOpt = typer.Option("all", "--bench", "-b", help="all (the paper's 7), a name, or a comma list; names: "
                        "aime24 aime25 amc23 olympiadbench math500 minerva_math gsm8k, and every training task "
                        "(arithmetic, arithmetic-chat, ...: the trainer's held-out problems and prompt).")


def _targets(model: Path | None, run: Path | None, steps: str, out: Path | None) -> list[tuple[str, str, Path]]:
    """(label, model dir, results dir) for --model or for each selected checkpoint of --run."""
    from dhpo_suite.runs import eval_results as er
    from dhpo_suite.runs.format import CHECKPOINTS, checkpoint_path, complete_checkpoints

    if (model is None) == (run is None):
        raise typer.BadParameter("give exactly one of --model PATH or --run RUN_DIR")
    if model is not None:
        from dhpo_suite.eval.identity import default_out_dir
        from dhpo_suite.eval.named_models import resolve_named_model

        model = resolve_named_model(str(model), lambda m: typer.echo(m, err=True)) or model  # as train does
        _check_model_dir(model, "--model")
        return [(model.name, str(model), out or default_out_dir(model))]
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


def _check_options(v: dict) -> None:
    """ValueError naming the first bad option and its allowed values (before any model, engine or worker)."""
    at_least = {"limit": 1, "samples": 1, "max_new_tokens": 1, "batch_size": 1, "tensor_parallel_size": 1,
                "data_parallel_size": 1, "max_model_len": 1, "grader_workers": 1, "seed": 0}
    flags = {"tensor_parallel_size": "--tp", "data_parallel_size": "--dp"}
    for name, low in at_least.items():
        if v[name] is not None and v[name] < low:
            raise ValueError(f"{flags.get(name, _flag(name))}: must be an integer >= {low}, got {v[name]}")
    ranges = {"temperature": (0.0, 100.0, "from 0 (greedy) to 100"), "top_p": (0.0, 1.0, "in (0, 1]"),
              "gpu_memory_utilization": (0.0, 1.0, "in (0, 1]"), "grader_timeout": (0.0, 86400.0, "in (0, 86400]")}
    for name, (low, high, allowed) in ranges.items():
        x = v[name]
        ok = (low <= x <= high) if name == "temperature" else (low < x <= high)
        if not ok:  # NaN fails both comparisons
            raise ValueError(f"{_flag(name)}: must be {allowed}, got {x}")
    if v["steps"] not in ("all", "last") and not all(s.strip().isdigit() for s in v["steps"].split(",")):
        raise ValueError(f"--steps: all, last, or a comma list of step numbers such as 10,20; got {v['steps']!r}")
    from dhpo_suite.eval.protocols import get_protocol

    get_protocol(v["protocol"])
    if v["template"] is not None:
        from dhpo_suite.eval.prompts import load_template

        try:
            load_template(v["template"])
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"--template: {v['template']}: unreadable ({e})") from None


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _lock_results(targets, stack, option: str) -> None:
    """Take each results directory's one-writer lock (creating it): a second writer is refused with one line."""
    from dhpo_suite.runs.lock import DirLock, LockHeld

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
    from dhpo_suite.runs import eval_results as er
    from dhpo_suite.runs.lock import LOCK_FILE

    try:
        if results.is_dir() and {p.name for p in results.iterdir()} <= {LOCK_FILE, er.CONFIG}:
            for p in results.iterdir():
                p.unlink()
            results.rmdir()
    except OSError:
        pass  # another process wrote into it meanwhile: keep it


def _check_model_dir(path: Path, option: str) -> None:
    if not path.is_dir():
        from dhpo_suite.eval.named_models import NAMES

        names = f"; or a name train accepts: {', '.join(NAMES)}" if option == "--model" else ""
        raise typer.BadParameter(f"{option}: {path} is not a directory (a Hugging Face model directory{names})")
    if not (path / "config.json").is_file():
        raise typer.BadParameter(f"{option}: {path} is not a Hugging Face model directory (no config.json)")
    from dhpo_suite.models.local import ModelDirError, refuse_custom_code

    try:
        refuse_custom_code(path)  # never run a model's shipped code, never prompt for it
    except ModelDirError as e:
        raise typer.BadParameter(f"{option}: {e}") from None


def register(app: typer.Typer) -> None:
    @app.command(help="Evaluate a model (or a run's checkpoints) on the paper's math benchmarks.")
    def eval(  # noqa: A001 - the command's name
        ctx: typer.Context,
        bench: str = BenchOpt,
        model: Path = typer.Option(None, "--model", "-m", help="HF model directory, or a name train accepts: "
                                   "tiny, smollm2-135m (built into the trainer's cache on first use)."),
        run: Path = typer.Option(None, "--run", help="Training run dir: evaluates checkpoints/step-*/ into "
                                 "RUN_DIR/evals/step-*/."),
        steps: str = typer.Option("all", help="With --run: all, last, or a comma list of steps."),
        out: Path = typer.Option(None, "--out", "-o", help="Results dir (default eval-results/<model name or "
                                 "run-step>-<path hash>)."),
        data_dir: Path = typer.Option(None, help="Folder of <bench>.jsonl files (id, problem, answer[, "
                                      "answer_alt]); default env DHPO_BENCHMARKS_DIR, else the HF hub."),
        samples: int = typer.Option(None, help="Samples per problem (default: AIME 32, AMC23 4, others 1)."),
        limit: int = typer.Option(None, help="Only the first N problems of each benchmark (a task: N, default 128)."),
        template: str = typer.Option(None, help="qwen-boxed | chat | task | FILE with {input} (default: a task's "
                                     "own; chat for an instruct model; else qwen-boxed)."),
        protocol: str = typer.Option("paper", help="paper (the benchmarks' records) or simplerl (SimpleRL-Zoo's "
                                     "harness: its stop strings, 16,000 tokens, stripped questions, top-p 0.95)."),
        max_new_tokens: int = typer.Option(None, help="Response token limit, clamped to the context (default: 16384; "
                                           "a training task's own)."),
        temperature: float = typer.Option(1.0),
        top_p: float = typer.Option(1.0),
        seed: int = typer.Option(0, help="Engine seed."),
        batch_size: int = typer.Option(256, help="Samples in flight (finished ones are stored within ~1 s)."),
        tensor_parallel_size: int = typer.Option(1, "--tp", help="GPUs per replica."),
        data_parallel_size: int = typer.Option(1, "--dp", help="Replicas: one worker process each (tp GPUs)."),
        shard: str = typer.Option(None, hidden=True, help="RANK/WORLD: run as data-parallel worker RANK."),
        max_model_len: int = typer.Option(None, help="Context length (default: the model's)."),
        dtype: str = typer.Option("auto"),
        gpu_memory_utilization: float = typer.Option(0.9),
        grader_workers: int = typer.Option(2),
        grader_timeout: float = typer.Option(10.0, help="Seconds per graded sample."),
        resume: bool = typer.Option(False, help="Continue stored results: only missing samples are generated."),
        regrade: bool = typer.Option(False, help="Re-grade stored responses; no generation, no model load."),
        in_process: bool = typer.Option(False, hidden=True, help="--run: all checkpoints in this process."),
    ) -> None:
        os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")  # stdout: the results tables only

        from dhpo_suite.eval.benchmarks import resolve_benches
        from dhpo_suite.eval.engine import EngineOptions
        from dhpo_suite.eval.parallel import parse_shard
        from dhpo_suite.eval.report import detail_table, headline_table
        from dhpo_suite.eval.runner import EvalSettings

        console = Console(stderr=True)
        stack = contextlib.ExitStack()  # the results directories' writer locks, held until the command ends
        try:
            _check_options(locals())
            names = resolve_benches(bench)
            targets = _targets(model, run, steps, out)
            rank_world = parse_shard(shard) if shard else (0, 1)
            sweep = len(targets) > 1 and not (regrade or in_process or data_parallel_size > 1 or shard)
            if shard is None and not sweep:  # a --dp worker (--shard) runs under its parent's lock
                _lock_results(targets, stack, "--out" if model is not None else "--run")
        except ValueError as e:
            stack.close()
            typer.echo(f"error: {e}", err=True)  # one line, never wrapped
            raise typer.Exit(2)
        temperature, top_p = _protocol_sampling(ctx, protocol, temperature, top_p)
        settings = EvalSettings(protocol=protocol, template=template, samples=samples, max_new_tokens=max_new_tokens,
                                temperature=temperature, top_p=top_p, limit=limit,
                                data_dir=str(data_dir) if data_dir else None, batch_size=batch_size,
                                grader_workers=grader_workers, grader_timeout=grader_timeout, shard=rank_world)
        options = EngineOptions(tensor_parallel_size=tensor_parallel_size, max_model_len=max_model_len, dtype=dtype,
                                seed=seed, gpu_memory_utilization=gpu_memory_utilization)
        with stack:
            if data_parallel_size > 1 and not regrade:
                summaries = _data_parallel(targets, names, settings, data_parallel_size, tensor_parallel_size,
                                           resume, console)
            elif sweep:  # each child process takes its own results directory's lock
                summaries = _sweep(targets, ctx)
            else:
                summaries = _sequential(targets, names, settings, options, resume, regrade, console)
        out_console = Console(width=None if sys.stdout.isatty() else 160)  # files/pipes get the full table
        out_console.print(headline_table(summaries))
        for label, s in summaries.items():
            out_console.print(detail_table(s, title=f"Details: {label}"))


def _protocol_sampling(ctx, protocol: str, temperature: float, top_p: float) -> tuple[float, float]:
    """--temperature/--top-p as given, else the protocol's (simplerl: SimpleRL's README command's)."""
    from dhpo_suite.eval.protocols import get_protocol

    p = get_protocol(protocol)
    given = lambda name: ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)  # noqa: E731
    return (temperature if given("temperature") or p.temperature is None else p.temperature,
            top_p if given("top_p") or p.top_p is None else p.top_p)


def _sequential(targets, names, settings, options, resume, regrade, console) -> dict:
    summaries = {}
    for label, model_dir, results in targets:
        try:
            summaries[label] = _run_one(model_dir, results, names, settings, options, resume, regrade, console)
        except (ValueError, FileExistsError, FileNotFoundError) as e:
            typer.echo(f"error: {' '.join(str(e).split())}", err=True)  # one line, even for a multi-line message
            raise typer.Exit(2)
        console.print(f"results: {results}")
    return summaries


def _sweep(targets, ctx) -> dict:
    """--run over several checkpoints: one fresh evaluator process per checkpoint (vLLM does not reliably free
    GPU memory when an engine is deleted, so the next checkpoint starts from an empty GPU)."""
    from dhpo_suite.eval.sweep import child_argv, run_child
    from dhpo_suite.runs import eval_results as er

    summaries = {}
    for label, model_dir, results in targets:
        typer.echo(f"{label}: {model_dir} (own process)", err=True)
        code = run_child(child_argv(ctx.command.params, ctx.params, model_dir, results))
        if code != 0:
            typer.echo(f"error: {label}: the evaluator exited with code {code}; rerun with --resume", err=True)
            raise typer.Exit(code)
        summaries[label] = er.read_json(Path(results) / er.SUMMARY)
    return summaries


def _data_parallel(targets, names, settings, world, tp, resume, console) -> dict:
    """--dp N: N worker processes (see dhpo_suite.eval.parallel), then summaries from all shards."""
    from dhpo_suite.eval.benchmarks import load_problems
    from dhpo_suite.eval.parallel import run_workers
    from dhpo_suite.eval.runner import summarize_dir
    from dhpo_suite.runs import eval_results as er

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
    return {label: summarize_dir(results) for label, _, results in targets}


def _run_one(model_dir, results, names, settings, options, resume, regrade, console) -> dict:
    """Evaluate (or re-grade) one model into `results` with progress bars."""
    from dhpo_suite.eval.report import progress_bars
    from dhpo_suite.eval.runner import evaluate
    from dhpo_suite.eval.runner import regrade as regrade_dir

    notify = lambda msg: console.print(f"[yellow]{msg}[/yellow]")  # noqa: E731
    if regrade:
        with progress_bars(console) as bars:
            return regrade_dir(results, settings, progress=bars, notify=notify)
    from dhpo_suite.eval.benchmarks import load_problems
    from dhpo_suite.eval.engine import Engine
    from dhpo_suite.eval.runner import precheck

    precheck(results, model_dir, resume)  # another model's results fail now, not after loading this one
    for name in names:  # bad data fails now, not after minutes of model loading
        load_problems(name, settings.data_dir, settings.limit, seed=options.seed)
    console.print(f"loading {model_dir} ...")
    engine = Engine(model_dir, options)
    try:
        with progress_bars(console) as bars:
            return evaluate(engine, names, results, settings, resume=resume, progress=bars, notify=notify)
    finally:
        engine.close()
