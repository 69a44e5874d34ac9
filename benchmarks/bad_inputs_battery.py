"""A battery of bad (and a few good) inputs to every command, tallied by outcome (issue 44).

Each case runs the real CLI in this process (typer's runner), in a fresh temporary folder, with a per-case alarm.
Loading a model, building the tiny one or starting the vLLM engine counts against the case: every refusal must
come first; so does starting a sweep's runs or the evaluator's workers (processes the alarm would not stop).
Outcomes:

    one-line exit 2   the refusal: exit status 2, one line on stderr starting "error:", no traceback
    ok                exit 0, and the case's check of what was written or printed holds
    generic exception exit 1 with an exception's name ("run with --debug"), a traceback, or heavy work started
    hang              the case's alarm went off (60 s)
    silent wrong      exit 0 where an error was due, an ok whose check fails, or an error of several lines or
                      of another exit status

    PYTHONPATH=. .venv/bin/python benchmarks/bad_inputs_battery.py [--only SUBSTRING] [--show]

None of these cases is a row of tests/test_bad_inputs.py: other options, other files, other values.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

# ---- fixtures -------------------------------------------------------------------------------------------------


def model_dir(path: Path, config: dict | str | None = None, weights: bool = True, **files: str) -> Path:
    """A directory that passes the file checks of an HF model dir (never loaded here)."""
    path.mkdir(parents=True, exist_ok=True)
    text = config if isinstance(config, str) else json.dumps({"model_type": "qwen3", **(config or {})})
    (path / "config.json").write_text(text)
    if weights:
        (path / "model.safetensors").write_bytes(b"\0" * 16)
    (path / "tokenizer.json").write_text("{}")
    for name, body in files.items():
        (path / name.replace("__", ".")).write_text(body)
    return path


def synthetic(path: Path, steps: int = 3, **manifest) -> Path:
    from dhpo_suite.testing.synthetic_runs import write_synthetic_run

    return synthetic_edit(write_synthetic_run(path, steps=steps, prompts=2, group_size=2, max_len=8), manifest)


def synthetic_edit(run: Path, fields: dict) -> Path:
    """The run with these manifest fields replaced (as a damaged or hand-edited manifest has them)."""
    data = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**data, **fields}))
    return run


def sweep_of(t: Path, **manifest) -> Path:
    synthetic(t / "sweep" / "run", **manifest)
    return t / "sweep"


def embedded_run(path: Path, **config) -> Path:
    """A run directory of the embedded trainer with a manifest only (what --resume reads first)."""
    from dhpo_suite.runs import Manifest, RunWriter
    from dhpo_suite.train.embedded.config import TrainConfig

    cfg = {**TrainConfig(algo="grpo", steps=4, out=str(path)).to_dict(), **config}
    with RunWriter(path, Manifest(algorithm="grpo", task="arithmetic", backend="embedded", config=cfg),
                   fsync=False):
        pass
    return path


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return path


def problems(path: Path, n: int, **extra) -> Path:
    return write(path, "".join(json.dumps({"problem": f"{i} + 1?", "answer": str(i + 1), **extra}) + "\n"
                               for i in range(n)))


def rows(path: Path, *items: dict) -> Path:
    return write(path, "".join(json.dumps(r) + "\n" for r in items))


GOOD_ROW = {"response": "so $\\boxed{2}$", "answer": "2"}
EVIL = "{{ cycler.__init__.__globals__.os.system('touch PWNED') }}"

# ---- the cases ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    argv: Callable[[Path], list[str]]
    error: bool = True  # an error is due (else: ok, and `check` holds)
    check: Callable[[Path, str], bool] | None = None  # (folder, stdout + stderr) -> what was done is right


E = Case  # a case whose input is refused


def train(*a: str) -> Callable[[Path], list[str]]:
    return lambda t: ["train", "--out", str(t / "run"), *a]


def ev(*a: str) -> Callable[[Path], list[str]]:
    return lambda t: ["eval", "--bench", "arith", "--model", str(model_dir(t / "m")), "--out", str(t / "res"), *a]


def sweep(*a: str) -> Callable[[Path], list[str]]:
    return lambda t: ["sweep", str(t / "sw"), *a]


TRAIN_OPTIONS = """
--lr inf | --lr 0 | --lr 1e-400 | --lr nan | --temperature inf | --temperature nan | --temperature 1e-320 |
--max-grad-norm nan | --max-grad-norm -1 | --weight-decay inf | --weight-decay -1 | --reward-unmarked inf |
--reward-unmarked -0.5 | --sft-target 2 | --steps -1 | --steps 1e3 | --group-size 1 | -G 0 | --prompts-per-step
0 | --ppo-epochs 0 | --mini-batches 1000 | --micro-batch 0 | --warmup-steps -1 | --checkpoint-every 0 |
--eval-every -1 | --eval-prompts 0 | --train-pool 0 | --train-pool 7 --prompts-per-step 8 | --chunk-tokens 0 |
--threads 0 | --grader-workers 0 | --max-new-tokens 0 | --seed -1 | --seed 4294967296 | --sft-max-steps -5 |
--logger foo | --logger tensorboard,foo | --task nosuch | --clip diagonal | --loss-agg-mode nosuch | --hp
nosuch=1 | --hp eps_low | --hp eps_low=abc | --hp eps_low=-0.1 | --hp eps_low=1.5 | --hp eps_high=-inf | --hp
seq_eps_low=nan | --algo sapo --hp tau_pos=nan | --algo sapo --hp tau_neg=inf | --algo sapo --hp tau_pos=0 |
--algo cispo --hp eps_high=nan | --algo gmpo --eps-low inf | --algo grpo --hp dual_clip=nan | --algo grpo --hp
dual_clip=-1 | --hp mixing=avg | --algo dhpo-a --hp avg_weight=1e309 | --eps-low 0.1 --hp eps_low=0.2 | --hp
eps_low=0.1 --hp eps_low=0.2 | --backend tpu | --precision nan | --device cuda:-1 | --seq-eps-high 1e999
""".replace("\n", " ").split(" | ")  # each refused before the model loads

CASES: list[Case] = [
    *[E("train" + re.sub(r"[^\w^.]+", "-", opts), train(*opts.split())) for opts in TRAIN_OPTIONS],
    # train: model directories and run files
    E("train-model-missing", train("--model", "/no/such/model")),
    E("train-model-config-invalid", lambda t: train("--model", str(model_dir(t / "m", "{nope")))(t)),
    E("train-model-config-a-list", lambda t: train("--model", str(model_dir(t / "m", "[]")))(t)),
    E("train-model-no-weights", lambda t: train("--model", str(model_dir(t / "m", weights=False)))(t)),
    E("train-template-jinja-file", lambda t: train("--model", str(model_dir(t / "m", chat_template__jinja=EVIL)))(t)),
    E("train-template-syntax", lambda t: train("--model", str(model_dir(
        t / "m", tokenizer_config__json=json.dumps({"chat_template": "{% for %}"}))))(t)),
    E("train-template-json-list", lambda t: train("--model", str(model_dir(t / "m", tokenizer_config__json=json.dumps(
        {"chat_template": [{"name": "default", "template": EVIL}]}))))(t)),
    E("train-resume-without-out", lambda t: ["train", "--resume"]),
    E("train-out-empty-string", lambda t: ["train", "--out", ""]),
    E("train-resume-manifest-lr-nan", lambda t: ["train", "--resume", "--out", str(embedded_run(t / "r", lr=float(
        "nan")))]),
    E("train-resume-manifest-seed-text", lambda t: ["train", "--resume", "--out", str(_edit(embedded_run(
        t / "r"), seed="0"))]),
    E("train-resume-manifest-algorithm-number", lambda t: ["train", "--resume", "--out", str(_edit(embedded_run(
        t / "r"), algorithm=7))]),
    E("train-resume-manifest-config-pool", lambda t: ["train", "--resume", "--out", str(embedded_run(
        t / "r", train_pool=2))]),
    # sweep: refused before any run starts
    E("sweep-workers-minus-2", sweep("--algos", "grpo", "--seeds", "1", "--workers", "-2")),
    E("sweep-algos-empty", sweep("--algos", "", "--seeds", "1")),
    E("sweep-seeds-negative", sweep("--algos", "grpo", "--seeds", "-1")),
    E("sweep-seeds-repeated", sweep("--algos", "grpo", "--seeds", "1,1")),
    E("sweep-seeds-text", sweep("--algos", "grpo", "--seeds", "a")),
    E("sweep-seed-past-max", sweep("--algos", "grpo", "--seeds", "0,4294967296")),
    E("sweep-algo-unknown", sweep("--algos", "nosuch", "--seeds", "1")),
    E("sweep-hp-nan", sweep("--algos", "grpo", "--seeds", "1", "--hp", "eps_low=nan")),
    E("sweep-lr-nan", sweep("--algos", "grpo", "--seeds", "1", "--lr", "nan")),
    E("sweep-clip-without-dhpo", sweep("--algos", "grpo", "--seeds", "1", "--clip", "branch")),
    E("sweep-clip-unknown", sweep("--algos", "dhpo-e", "--seeds", "1", "--clip", "diag")),
    E("sweep-prereg-missing", sweep("--algos", "grpo", "--seeds", "1", "--prereg", "/no/prereg.json")),
    E("sweep-prereg-deep", lambda t: sweep("--algos", "grpo", "--seeds", "1", "--prereg", str(write(
        t / "p.json", "[" * 50000 + "]" * 50000)))(t)),
    E("sweep-pool-below-prompts", sweep("--algos", "grpo", "--seeds", "1", "--train-pool", "2",
                                        "--prompts-per-step", "4")),
    E("sweep-temperature-inf", sweep("--algos", "grpo", "--seeds", "2", "--temperature", "inf")),
    # compare
    E("compare-missing", lambda t: ["compare", str(t / "nothing")]),
    E("compare-a-file", lambda t: ["compare", str(write(t / "f.txt", "x"))]),
    *[E(f"compare-late-frac-{v}", (lambda v: lambda t: ["compare", str(sweep_of(t)), "--late-frac", v])(v))
      for v in ("nan", "0", "inf", "-0.5")],
    *[E(f"compare-manifest-{cid}", (lambda m: lambda t: ["compare", str(sweep_of(t, **m))])(m)) for cid, m in [
        ("hparams-a-list", {"hparams": [1]}), ("status-bogus", {"status": "bogus"}), ("seed-text", {"seed": "x"}),
        ("format-version-999", {"format_version": 999}), ("argv-numbers", {"argv": [1, 2]}),
        ("started-at-number", {"started_at": 5}), ("seed-bool", {"seed": True}), ("task-a-dict", {"task": {}}),
        ("error-number", {"error": 3}), ("name-null", {"name": None}),
    ]],
    E("compare-manifest-binary", lambda t: ["compare", str(_raw_manifest(sweep_of(t), b"\xff\xfe{\x00"))]),
    E("compare-csv-in-proc", lambda t: ["compare", str(sweep_of(t)), "--csv", "/proc/x.csv"]),
    E("compare-empty-folder", lambda t: ["compare", str(_mkdir(t / "empty"))]),
    Case("compare-ok", lambda t: ["compare", str(sweep_of(t)), "--csv", str(t / "m.csv")], error=False,
         check=lambda t, out: (t / "m.csv").read_text().count("\n") == 2 and not list(t.glob(".tmp-*"))),
    Case("compare-escapes-bidi", lambda t: ["compare", str(sweep_of(t, algorithm="grpo\u202eevil"))],
         error=False, check=lambda t, out: "\u202e" not in out),
    # export
    E("export-to-unknown", lambda t: ["export", str(synthetic(t / "r")), "--to", "nosuch"]),
    E("export-run-missing", lambda t: ["export", str(t / "nothing"), "--to", "tensorboard"]),
    E("export-manifest-model-number", lambda t: ["export", str(synthetic(t / "r", model=3)), "--to", "tensorboard",
                                                 "--out", str(t / "tb")]),
    E("export-table-every-negative", lambda t: ["export", str(synthetic(t / "r")), "--to", "wandb",
                                                "--table-every", "-1"]),
    Case("export-ok", lambda t: ["export", str(synthetic(t / "r")), "--to", "tensorboard", "--out", str(t / "tb")],
         error=False, check=lambda t, out: len(list((t / "tb").glob("events.out.tfevents*"))) == 1
         and not list((t / "tb").glob(".tmp-*")) and "3 steps" in out),
    # grade
    E("grade-row-missing-answer", lambda t: ["grade", str(rows(t / "r.jsonl", {"response": "x"}))]),
    E("grade-answer-a-list", lambda t: ["grade", str(rows(t / "r.jsonl", {"response": "x", "answer": [1]}))]),
    E("grade-response-a-number", lambda t: ["grade", str(rows(t / "r.jsonl", {"response": 3, "answer": "3"}))]),
    E("grade-workers-0", lambda t: ["grade", str(rows(t / "r.jsonl", GOOD_ROW)), "--workers", "0"]),
    E("grade-empty-file", lambda t: ["grade", str(write(t / "r.jsonl", "\n\n"))]),
    E("grade-utf16", lambda t: ["grade", str(write(t / "r.jsonl", json.dumps(GOOD_ROW).encode("utf-16")))]),
    E("grade-deep-line", lambda t: ["grade", str(write(t / "r.jsonl", "[" * 100000 + "]" * 100000 + "\n"))]),
    E("grade-truncated-bool", lambda t: ["grade", str(rows(t / "r.jsonl", {**GOOD_ROW, "truncated": "yes"}))]),
    E("grade-timeout-huge", lambda t: ["grade", str(rows(t / "r.jsonl", GOOD_ROW)), "--timeout", "1e300"]),
    E("grade-out-into-missing-folder", lambda t: ["grade", str(rows(t / "r.jsonl", GOOD_ROW)), "--out",
                                                  str(t / "a" / "b" / "g.jsonl")]),
    E("grade-socket-input", lambda t: ["grade", str(_socket(t / "s.jsonl"))]),
    Case("grade-ok-capped", lambda t: ["grade", str(rows(t / "r.jsonl", GOOD_ROW, {**GOOD_ROW, "answer": "3"})),
                                       "--workers", "64"], error=False,
         check=lambda t, out: [json.loads(x)["correct"] for x in (t / "r.graded.jsonl").read_text().splitlines()]
         == [True, False] and "capped at" in out),
    # data prepare
    E("data-missing", lambda t: ["data", "prepare", str(t / "none.jsonl")]),
    E("data-unsupported", lambda t: ["data", "prepare", str(write(t / "p.txt", "x"))]),
    E("data-json-object", lambda t: ["data", "prepare", str(write(t / "p.json", "{}")), "--out", str(t / "d")]),
    E("data-json-number-item", lambda t: ["data", "prepare", str(write(t / "p.json", "[1]")), "--out", str(t / "d")]),
    E("data-one-problem", lambda t: ["data", "prepare", str(problems(t / "p.jsonl", 1)), "--out", str(t / "d")]),
    E("data-missing-answer", lambda t: ["data", "prepare", str(write(t / "p.jsonl", '{"problem": "x"}\n')),
                                        "--out", str(t / "d")]),
    E("data-limit-0", lambda t: ["data", "prepare", str(problems(t / "p.jsonl", 5)), "--limit", "0"]),
    E("data-not-parquet", lambda t: ["data", "prepare", str(write(t / "p.parquet", "PAR1 not really")),
                                     "--out", str(t / "d")]),
    E("data-json-latin1", lambda t: ["data", "prepare", str(write(t / "p.json", '[{"problem": "caf\xe9"}]'.encode(
        "latin-1"))), "--out", str(t / "d")]),
    E("data-answer-surrogate", lambda t: ["data", "prepare", str(write(t / "p.jsonl", "".join(
        '{"problem": "p", "answer": "\\ud800"}\n' for _ in range(5)))), "--out", str(t / "d")]),
    E("data-jsonl-deep", lambda t: ["data", "prepare", str(write(t / "p.jsonl", "{\"a\":" * 100000 + "1" +
                                                                 "}" * 100000 + "\n")), "--out", str(t / "d")]),
    E("data-out-under-a-file", lambda t: ["data", "prepare", str(problems(t / "p.jsonl", 20)), "--out",
                                          str(write(t / "f", "x") / "d")]),
    Case("data-val-size-0-noted", lambda t: ["data", "prepare", str(problems(t / "p.jsonl", 30)), "--out",
                                             str(t / "d"), "--val-size", "0"], error=False,
         check=lambda t, out: "held out 1 of the 30" in out and (t / "d" / "val.parquet").is_file()),
    Case("data-ok", lambda t: ["data", "prepare", str(problems(t / "p.jsonl", 30)), "--out", str(t / "d")],
         error=False, check=lambda t, out: "(27 problems)" in out and "(3 problems)" in out
         and sorted(p.name for p in (t / "d").iterdir()) == ["train.parquet", "val.parquet"]),
    # eval
    E("eval-engine-arg-trust-remote-code", ev("--engine-arg", "trust_remote_code=true")),
    E("eval-engine-arg-not-identifier", ev("--engine-arg", "1abc=2")),
    E("eval-engine-arg-typo", ev("--engine-arg", "max_num_seq=4")),
    E("eval-top-p-nan", ev("--top-p", "nan")),
    E("eval-temperature-inf", ev("--temperature", "inf")),
    E("eval-gpu-memory-nan", ev("--gpu-memory-utilization", "nan")),
    E("eval-seed-negative", ev("--seed", "-1")),
    E("eval-samples-negative", ev("--samples", "-1")),
    E("eval-bench-unknown", ev("--bench", "nosuch")),
    E("eval-model-and-run", lambda t: ev("--run", str(t))(t)),
    E("eval-run-checkpoint-not-a-model", lambda t: ["eval", "--bench", "arith", "--run", str(synthetic(t / "r"))]),
    E("eval-steps-half-numbers", lambda t: ["eval", "--run", str(t), "--steps", "1,x"]),
    E("eval-max-model-len-0", ev("--max-model-len", "0")),
    E("eval-grader-timeout-nan", ev("--grader-timeout", "nan")),
    E("eval-dp-0", ev("--dp", "0")),
    E("eval-template-jinja-file", lambda t: ["eval", "--bench", "arith", "--model", str(model_dir(
        t / "m", chat_template__jinja=EVIL))]),
    # dashboard
    E("dashboard-port-0", lambda t: ["dashboard", str(t), "--port", "0"]),
    E("dashboard-port-negative", lambda t: ["dashboard", str(t), "--port", "-1"]),
    E("dashboard-address-garbage", lambda t: ["dashboard", str(t), "--address", "::1::"]),
]


def _edit(run: Path, **fields) -> Path:
    return synthetic_edit(run, fields)


def _raw_manifest(sweep: Path, data: bytes) -> Path:
    write(sweep / "run" / "manifest.json", data)
    return sweep


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


def _socket(path: Path) -> Path:
    import socket

    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    _KEEP.append(s)
    return path


_KEEP: list = []

# ---- running and tallying -------------------------------------------------------------------------------------


class Hang(BaseException):
    pass


def _guard_heavy_work() -> None:
    """Loading a model, building the tiny one or starting the engine fails the case (a check came too late)."""
    import dhpo_suite.eval.cli as eval_cli
    import dhpo_suite.eval.engine as engine
    import dhpo_suite.models.local as local
    import dhpo_suite.train.sweep as sweep
    import dhpo_suite.train.embedded.run_setup as run_setup

    def heavy(what):
        def fail(*a, **k):
            raise RuntimeError(f"heavy work started ({what}) before the bad input was refused")
        return fail

    local.load_model = heavy("model load")
    run_setup.resolve_model_dir = heavy("model build")
    engine.Engine.__init__ = heavy("vLLM engine")
    sweep.run_sweep = heavy("a sweep's training runs")  # child processes: the alarm would not stop them
    eval_cli.run_workers = heavy("evaluator worker processes")


def outcome(case: Case, res, folder: Path) -> str:
    out = res.stdout + res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    if res.exit_code == 1 or "Traceback" in out or "heavy work started" in out or (
            res.exception is not None and not isinstance(res.exception, SystemExit)):
        return "generic exception"
    if case.error:
        if res.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error:"):
            return "one-line exit 2"
        return "silent wrong"
    if res.exit_code == 0 and case.check is not None and case.check(folder, out):
        return "ok"
    return "silent wrong"


def run_case(case: Case, root: Path, timeout_s: int) -> tuple[str, str, float]:
    from typer.testing import CliRunner

    from dhpo_suite.cli import app

    folder = root / case.id
    folder.mkdir()
    os.chdir(folder)
    started = time.monotonic()
    signal.signal(signal.SIGALRM, lambda *a: (_ for _ in ()).throw(Hang()))
    signal.alarm(timeout_s)
    try:
        argv = case.argv(folder)
        res = CliRunner().invoke(app, argv, catch_exceptions=True)
        verdict = outcome(case, res, folder)
        shown = (res.stderr.strip().splitlines() or res.stdout.strip().splitlines() or [""])[-1]
    except Hang:
        verdict, shown = "hang", f"no answer within {timeout_s} s"
    finally:
        signal.alarm(0)
    if (folder / "PWNED").exists():  # a model's template ran code
        verdict, shown = "silent wrong", "PWNED"
    return verdict, shown, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run the cases whose id contains this")
    parser.add_argument("--show", action="store_true", help="print every case's last line")
    parser.add_argument("--timeout", type=int, default=60)
    args = parser.parse_args()
    cases = [c for c in CASES if args.only in c.id]
    assert len({c.id for c in CASES}) == len(CASES), "case ids repeat"
    with tempfile.TemporaryDirectory(prefix="battery-") as tmp:
        os.environ["DHPO_SUITE_CACHE"] = str(Path(tmp) / "cache")  # no case may build the tiny model
        os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", COLUMNS="200")
        _guard_heavy_work()
        tally: collections.Counter[str] = collections.Counter()
        bad, started = [], time.monotonic()
        for case in cases:
            verdict, shown, took = run_case(case, Path(tmp), args.timeout)
            tally[verdict] += 1
            good = verdict in ("one-line exit 2", "ok")
            if args.show or not good:
                print(f"{'  ' if good else '!!'} {case.id:42s} {verdict:18s} {took:5.1f}s  {shown[:150]}")
            if not good:
                bad.append(case.id)
        if (Path(tmp) / "cache").exists():
            tally["silent wrong"] += 1
            bad.append("a case built a model in the cache")
    wall = time.monotonic() - started
    print(f"\n{len(cases)} cases in {wall:.0f} s: " + ", ".join(
        f"{k} {tally[k]}" for k in ("one-line exit 2", "ok", "generic exception", "hang", "silent wrong")))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
