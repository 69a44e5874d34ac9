"""Bad input to every command, as a table: one line on stderr, the right exit code, no traceback, and every file
already written left as it was. Each case runs the real CLI in-process (typer's runner) and fails before any
model, engine or worker starts, so the whole table takes a few seconds.

Covers the cases of issue 16 (fault injection as a new user would try it) and a few of our own.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from typer.testing import CliRunner

from dhpo_suite.cli import app
from dhpo_suite.runs.lock import LOCK_FILE
from dhpo_suite.testing.load import scaled

# ---- fixtures built by hand (no torch model anywhere) -------------------------------------------------------


def _model_dir(path: Path, **config) -> Path:
    """A directory that passes the file checks of a HF model dir (nothing here is ever loaded)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(__import__("json").dumps({"model_type": "qwen3", **config}))
    (path / "model.safetensors").write_bytes(b"\0" * 16)
    (path / "tokenizer.json").write_text("{}")
    return path


class _RunsCode:
    """Pickles as a call of os.system: loading it with a full unpickler runs `touch MARKER`."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def crafted_pickle(path: Path, marker: Path, step: int) -> Path:
    """A trainer_state.pt with every expected key, one of which runs code when unpickled."""
    import torch

    torch.save({"step": step, "optimizer": _RunsCode(marker), "scheduler": {}, "generator": torch.zeros(1),
                "torch_rng": torch.zeros(1), "python_rng": (3, (0,), None)}, path)
    return path


def train_run(path: Path, recorded: int = 6, stored_steps: int = 6, algo: str = "grpo",
              checkpoints: dict[int, Callable[[Path], None]] | None = None) -> Path:
    """A run directory as the embedded trainer leaves it: a manifest with the resolved config, `recorded` steps
    of (synthetic) telemetry and the given complete checkpoints (each filled by its function)."""
    from dhpo_suite.runs import Manifest, RunWriter
    from dhpo_suite.testing.synthetic_runs import synthetic_record
    from dhpo_suite.train.embedded.config import TrainConfig

    cfg = TrainConfig(algo=algo, steps=stored_steps, out=str(path))
    manifest = Manifest(algorithm=algo, model="tiny", task="arithmetic", backend="embedded", config=cfg.to_dict())
    with RunWriter(path, manifest, fsync=False) as w:
        for s in range(1, recorded + 1):
            w.write_step(synthetic_record(s, "grpo", s, prompts=2, group_size=2, max_len=8))
        for s, fill in (checkpoints or {}).items():
            fill(w.checkpoint_dir(s))
            w.checkpoint_complete(s)
    return path


@pytest.fixture()
def hold_lock():
    """hold_lock(dir): another process takes `dir`'s writer lock and keeps it until the test ends."""
    procs = []

    def hold(directory: Path) -> subprocess.Popen:
        code = ("import sys, time\nfrom dhpo_suite.runs.lock import DirLock\nDirLock(sys.argv[1]).acquire()\n"
                "print('held', flush=True)\ntime.sleep(120)\n")
        proc = subprocess.Popen([sys.executable, "-c", code, str(directory)], stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        assert proc.stdout.readline().strip() == "held"
        return proc

    yield hold
    for p in procs:
        p.kill()
        p.wait()


@pytest.fixture()
def busy_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


ERROR_WITHIN_S = 20.0
"""Time to the one-line error on a quiet machine (each case takes well under a second; the whole table ~20 s),
scaled by the measured slowdown (dhpo_suite.testing.load) so that a busy machine cannot fail it; a check that
came after loading a model, reading a whole sweep or grading would."""

# ---- the table -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    setup: Callable  # (tmp_path, fixtures) -> argv after `dhpo-suite`
    code: int
    expect: str  # a piece of the one line on stderr
    absent: tuple[str, ...] = ()  # paths (under the case's folder) that must not exist afterwards


def _eval(tmp: Path, *extra: str) -> list[str]:
    return ["eval", "--bench", "arith", "--model", str(_model_dir(tmp / "m")), "--out", str(tmp / "res"), *extra]


def _synthetic_run(tmp: Path) -> Path:
    from dhpo_suite.testing.synthetic_runs import write_synthetic_run

    return write_synthetic_run(tmp / "synthetic", steps=3, prompts=2, group_size=2, max_len=8)


def _custom_tokenizer(path: Path) -> Path:
    _model_dir(path)
    (path / "tokenizer_config.json").write_text('{"auto_map": {"AutoTokenizer": ["tok.T", null]}}')
    return path


def _binary(path: Path) -> Path:
    """A file of random bytes (a binary file passed where JSONL belongs)."""
    import random

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(random.Random(0).randrange(256) for _ in range(3000)))
    return path


def _evil_template(path: Path) -> Path:
    """A model directory whose chat template reaches for Python internals (the sandbox refuses it)."""
    _model_dir(path)
    (path / "tokenizer_config.json").write_text(__import__("json").dumps(
        {"chat_template": "{{ ''.__class__.__mro__[1].__subclasses__() }}"}))
    return path


def _problems(path: Path, n: int, problem: str = "What is 1 + 1?") -> Path:
    """`data prepare` input: n JSONL rows of problem and answer (`problem` is JSON text, escapes allowed)."""
    path.write_text("".join(f'{{"problem": "{problem}", "answer": "{i}"}}\n' for i in range(n)))
    return path


def _deep_json(path: Path, depth: int = 100_000) -> Path:
    path.write_text("[" * depth + "]" * depth)
    return path


def _manifest_field(run: Path, **fields) -> Path:
    """The run with some manifest fields replaced (as a damaged or hand-edited manifest has them)."""
    import json

    data = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**data, **fields}))
    return run


def _fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "pipe.jsonl")
    return tmp / "pipe.jsonl"


def _dir_named(path: Path) -> Path:
    path.mkdir()
    return path


def _link(path: Path, target: str) -> Path:
    path.symlink_to(target)
    return path


def _rows(path: Path) -> Path:
    """A valid grade input of one row."""
    path.write_text('{"response": "so the answer is $\\\\boxed{2}$", "answer": "2"}\n')
    return path


def _file(tmp: Path) -> Path:
    (tmp / "a-file").write_text("keep me\n")
    return tmp / "a-file"


def _not_a_run(tmp: Path) -> Path:
    (tmp / "notes").mkdir()
    (tmp / "notes" / "paper.md").write_text("my notes\n")
    return tmp / "notes"


def _eval_results(tmp: Path) -> Path:
    res = tmp / "res"
    res.mkdir()
    (res / "arith.samples.jsonl").write_text('{"problem_id": "p", "sample": 0}\n')
    return res


def _deep_manifest(run: Path, depth: int = 100_000) -> Path:
    """A run whose manifest.json nests `depth` arrays (Python's JSON decoder recursed once per bracket)."""
    (run / "manifest.json").write_text("[" * depth + "]" * depth)
    return run


def _sweep_of(tmp: Path, *runs: Path) -> Path:
    """A folder holding the given run directories (what `compare` reads)."""
    import shutil

    (tmp / "sweep").mkdir()
    for r in runs:
        shutil.move(r, tmp / "sweep" / r.name)
    return tmp / "sweep"


def _read_only(path: Path) -> Path:
    path.mkdir()
    path.chmod(0o555)
    return path


_AS_ROOT = pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                              reason="root writes into a read-only folder (the check would rightly pass)")


CASES = [
    # -- train: options (validated before the run directory, the grader and the model)
    Case("train-steps-0", lambda t, f: ["train", "--steps", "0"], 2, "--steps: must be an integer >= 1, got 0"),
    Case("train-steps-not-int", lambda t, f: ["train", "--steps", "x"], 2, "Invalid value for '--steps'"),
    Case("train-unknown-algo", lambda t, f: ["train", "--algo", "ppo"], 2, "--algo: 'ppo' is not one of"),
    Case("train-temperature-0", lambda t, f: ["train", "--temperature", "0"], 2, "--temperature: must be > 0"),
    Case("train-device-unknown", lambda t, f: ["train", "--device", "tpu"], 2, "--device: 'tpu' is not one of"),
    Case("train-device-absent", lambda t, f: ["train", "--device", "cuda:99"], 2, "--device: 'cuda:99' but torch sees"),
    Case("train-precision-unknown", lambda t, f: ["train", "--precision", "fp16"], 2,
         "--precision: 'fp16' is not one of: auto, fp32, bf16"),
    Case("train-tiny-needs-solutions", lambda t, f: ["train", "--task", "word-problems"], 2,
         "--task: the tiny model's warm-start needs reference solutions"),
    Case("train-unknown-option", lambda t, f: ["train", "--bogus"], 2, "unknown option(s) for the embedded"),
    Case("unknown-command", lambda t, f: ["trian"], 2, "No such command 'trian'"),
    # -- issue 44: a NaN or infinite setting is refused before the model loads (NaN passes every < and >)
    *[Case(f"train-{a.replace(' ', '').replace('--', '-')}", (lambda a: lambda t, f: ["train", *a.split()])(a), 2, msg)
      for a, msg in [
          ("--algo dhpo-a --hp avg_weight=nan", "--hp: objective 'dhpo-a': avg_weight=nan must be a finite number"),
          ("--hp eps_low=nan", "--hp: objective 'dhpo-e': eps_low=nan must be a finite number"),
          ("--eps-low nan", "--eps-low: objective 'dhpo-e': eps_low=nan must be a finite number"),
          ("--eps-high nan", "--eps-high: objective 'dhpo-e': eps_high=nan must be a finite number"),
          ("--hp seq_eps_high=inf", "--hp: objective 'dhpo-e': seq_eps_high=inf must be a finite number"),
          ("--algo grpo --hp dual_clip=inf", "dual_clip=inf must be a finite number"),
          ("--weight-decay nan", "--weight-decay: must be a finite number >= 0, got nan"),
          ("--max-grad-norm inf", "--max-grad-norm: must be > 0 (a finite number), got inf"),
          # cross-option checks, before the model (they came after it, leaving a run folder)
          ("--train-pool 3", "--train-pool: 3 problems cannot give the 16 distinct prompts of a step"),
          ("--seed 9223372036854775808", "--seed: must be an integer from 0 to 4294967295"),
      ]],
    Case("train-template-sandbox", lambda t, f: ["train", "--model", str(_evil_template(t / "m"))], 2,
         "m/tokenizer_config.json: the chat template is refused by the template sandbox"),
    Case("eval-template-sandbox", lambda t, f: _eval(t)[:4] + [str(_evil_template(t / "m2"))], 2,
         "m2/tokenizer_config.json: the chat template is refused by the template sandbox"),
    Case("eval-engine-arg-unknown", lambda t, f: _eval(t, "--engine-arg", "nosuch=1"), 2,
         "--engine-arg: 'nosuch' is not a keyword of vllm.LLM"),
    *[Case(f"sweep-workers{n}", (lambda n: lambda t, f: ["sweep", str(t / "sw"), "--algos", "grpo", "--seeds", "1",
                                                          "--workers", n])(n), 2,
           f"--workers: must be an integer >= 0 (0: one per core), got {n}") for n in ("-1", "-500")],
    Case("data-limit-negative", lambda t, f: ["data", "prepare", str(t / "p.jsonl"), "--limit", "-3"], 2,
         "Invalid value for '--limit'"),
    Case("data-val-size-negative", lambda t, f: ["data", "prepare", str(t / "p.jsonl"), "--val-size", "-1"], 2,
         "Invalid value for '--val-size'"),
    # -- train: paths
    Case("train-out-is-a-file", lambda t, f: ["train", "--out", str(_file(t))], 2, "is a file, not a run directory"),
    Case("train-out-under-a-file", lambda t, f: ["train", "--out", str(_file(t) / "run")], 2,
         "cannot write the run directory there (Not a directory)"),
    Case("train-out-not-a-run", lambda t, f: ["train", "--out", str(_not_a_run(t))], 2,
         "exists and is not a run directory"),
    Case("train-out-holds-a-run", lambda t, f: ["train", "--out", str(train_run(t / "run"))], 2,
         "already holds a run; pass --resume"),
    Case("train-resume-no-run", lambda t, f: ["train", "--resume", "--out", str(_not_a_run(t))], 2,
         "no run to resume (manifest.json missing)"),
    # -- train: models that ask to run their own code are refused (never a prompt)
    Case("train-model-custom-code", lambda t, f: ["train", "--model", str(_model_dir(
        t / "m", auto_map={"AutoModelForCausalLM": "modeling_x.X"}))], 2, "'auto_map' asks to run the model's own"),
    Case("eval-model-custom-code", lambda t, f: ["eval", "--bench", "arith", "--model", str(_model_dir(
        t / "m", auto_map={"AutoModelForCausalLM": "modeling_x.X"}))], 2, "'auto_map' asks to run the model's own"),
    Case("train-tokenizer-custom-code", lambda t, f: ["train", "--model", str(_custom_tokenizer(t / "m"))], 2,
         "tokenizer_config.json: 'auto_map' asks to run the model's own Python code"),
    # -- train --resume semantics
    Case("resume-fewer-steps", lambda t, f: ["train", "--resume", "--out", str(train_run(t / "run")),
                                             "--steps", "3"], 2, "--steps: 3 is fewer than the 6 steps"),
    Case("resume-explicit-default-differs", lambda t, f: ["train", "--resume", "--out", str(train_run(t / "run")),
                                                          "--algo", "dhpo-e"], 2,
         "--algo: the run being resumed used 'grpo'; cannot change it to 'dhpo-e'"),
    Case("resume-explicit-lr-differs", lambda t, f: ["train", "--resume", "--out", str(train_run(t / "run")),
                                                     "--lr", "1e-3"], 2,
         "--lr: the run being resumed used 0.0001; cannot change it to 0.001"),
    Case("resume-precision-differs", lambda t, f: ["train", "--resume", "--out", str(train_run(t / "run")),
                                                   "--precision", "bf16"], 2,
         "--precision: the run being resumed computed in fp32; --precision bf16 is bf16 here (give --precision fp32)"),
    Case("resume-crafted-pickle", lambda t, f: ["train", "--resume", "--out", str(train_run(
        t / "run", recorded=4, stored_steps=8, checkpoints={4: lambda d: crafted_pickle(
            d / "trainer_state.pt", t / "PWNED", 4)}))], 2,
         "holds objects other than tensors and plain data (refused: loading it could run code)"),
    # a trainer state that unpickles but cannot continue the run (issue 29): refused by name before the model
    # loads; with an older good checkpoint resume falls back to it (tests/train/test_resume_state.py)
    *[Case(f"resume-state-{name}", (lambda damage: lambda t, f: ["train", "--resume", "--out", str(train_run(
        t / "run", recorded=4, stored_steps=8, checkpoints={4: lambda d: _state(d, 4, damage)}))])(damage), 2,
        "step-000004/trainer_state.pt: " + field) for name, damage, field in [
        ("nan-lr", lambda s: s["optimizer"]["param_groups"][0].update(lr=float("nan")),
         "optimizer.param_groups[0].lr: must be a finite number, got nan"),
        ("rng-size", lambda s: s.update(torch_rng=s["torch_rng"][:64]),
         "torch_rng: not a CPU RNG state (expected torch.uint8 [5056], got torch.uint8 [64])"),
        ("two-groups", lambda s: s["optimizer"]["param_groups"].append(dict(s["optimizer"]["param_groups"][0])),
         "optimizer.param_groups: 2 groups; the trainer's AdamW has 1"),
        ("python-rng", lambda s: s.update(python_rng=(3, (1, 2), None)),
         "python_rng: not a Python random state"),
    ]],
    Case("resume-not-an-embedded-run", lambda t, f: ["train", "--resume", "--out", str(_synthetic_run(t))], 2,
         "was written by the 'synthetic' backend, not the embedded trainer"),
    Case("resume-second-writer", lambda t, f: ["train", "--resume", "--out", str(
        _held(f, train_run(t / "run", recorded=2, stored_steps=8)))], 2, "another writer is using it (pid"),
    # -- eval: options (before the engine)
    *[Case(f"eval{a.replace(' ', '')}", (lambda a: lambda t, f: _eval(t, *a.split()))(a), 2, msg) for a, msg in [
        ("--limit -5", "--limit: must be an integer >= 1, got -5"),
        ("--limit 0", "--limit: must be an integer >= 1, got 0"),
        ("--samples 0", "--samples: must be an integer >= 1, got 0"),
        ("--batch-size 0", "--batch-size: must be an integer >= 1, got 0"),
        ("--temperature -1", "--temperature: must be from 0 (greedy) to 100, got -1.0"),
        ("--max-new-tokens 0", "--max-new-tokens: must be an integer >= 1, got 0"),
        ("--top-p 1.5", "--top-p: must be in (0, 1], got 1.5"),
        ("--tp 0", "--tp: must be an integer >= 1, got 0"),
        ("--grader-timeout 0", "--grader-timeout: must be in (0, 86400], got 0.0"),
        ("--template /no/such/template.txt", "--template: '/no/such/template.txt' is neither"),
    ]],
    Case("eval-unknown-protocol", lambda t, f: _eval(t, "--protocol", "qwen"), 2,
         "--protocol: 'qwen' is not one of: paper, simplerl"),
    Case("eval-missing-model-says-names", lambda t, f: ["eval", "--bench", "math500", "--model", "smollm2"], 2,
         "smollm2 is not a directory (a Hugging Face model directory; or a name train accepts: tiny, smollm2-135m)"),
    # the hub unreachable (offline here): one line naming --data-dir, and no results directory left behind
    Case("eval-hub-unreachable", lambda t, f: (f["offline"](t), _eval(t, "--bench", "math500"))[1], 2,
         "math500: cannot load HuggingFaceH4/MATH-500 from the Hugging Face hub"),
    Case("eval-steps-garbage", lambda t, f: ["eval", "--run", str(t), "--steps", "ten"], 2,
         "--steps: all, last, or a comma list"),
    Case("eval-out-under-a-file", lambda t, f: _eval(t)[:-1] + [str(_file(t) / "res")], 2,
         "cannot write results there (Not a directory)"),
    Case("eval-out-is-a-file", lambda t, f: _eval(t)[:-1] + [str(_file(t))], 2, "is a file, not a results"),
    Case("eval-second-writer", lambda t, f: (_held(f, _eval_results(t)), _eval(t, "--resume"))[1], 2,
         "another writer is using it (pid"),
    # -- data files: a binary file is one line naming the file and line (before any engine or worker). The
    # evaluator's --data-dir case is the evaluator's to add once its reader names the file (issue 16).
    Case("grade-binary-file", lambda t, f: ["grade", str(_binary(t / "rows.jsonl")), "--out", str(t / "g.jsonl")],
         2, "rows.jsonl:1: "),
    # -- JSON nested past any real file (issue 29): the reader refuses it by name, before parsing
    Case("resume-deep-manifest", lambda t, f: ["train", "--resume", "--out", str(_deep_manifest(train_run(
        t / "run")))], 2, "manifest.json: nested 100000 levels deep; at most 64 levels"),
    Case("export-deep-manifest", lambda t, f: ["export", str(_deep_manifest(_synthetic_run(t))), "--to",
                                               "tensorboard", "--out", str(t / "tb")], 2,
         "manifest.json: nested 100000 levels deep"),
    Case("compare-deep-manifest", lambda t, f: ["compare", str(_sweep_of(t, _deep_manifest(_synthetic_run(t))))],
         2, "manifest.json: nested 100000 levels deep"),
    # -- where compare/export write: checked before any run is read (issue 29)
    Case("compare-csv-missing-folder", lambda t, f: ["compare", str(_sweep_of(t, _synthetic_run(t))), "--csv",
                                                     str(t / "no" / "m.csv")], 2,
         "no does not exist"),
    Case("compare-csv-is-a-folder", lambda t, f: ["compare", str(_sweep_of(t, _synthetic_run(t))), "--csv",
                                                  str(t)], 2, "is a directory, not a file"),
    Case("compare-csv-under-a-file", lambda t, f: ["compare", str(_sweep_of(t, _synthetic_run(t))), "--csv",
                                                   str(_file(t) / "m.csv")], 2, "a-file is not a directory"),
    pytest.param(Case("compare-csv-read-only", lambda t, f: ["compare", str(_sweep_of(t, _synthetic_run(t))),
                                                             "--csv", str(_read_only(t / "ro") / "m.csv")], 2,
                      "--csv: the folder"), marks=_AS_ROOT, id="compare-csv-read-only"),
    Case("export-out-under-a-file", lambda t, f: ["export", str(_synthetic_run(t)), "--to", "tensorboard", "--out",
                                                  str(_file(t) / "tb")], 2,
         "a-file is a file, not a directory (cannot create"),
    Case("export-out-is-a-file", lambda t, f: ["export", str(_synthetic_run(t)), "--to", "wandb", "--out",
                                               str(_file(t))], 2, "--out: "),
    pytest.param(Case("export-out-read-only", lambda t, f: ["export", str(_synthetic_run(t)), "--to", "tensorboard",
                                                            "--out", str(_read_only(t / "ro") / "tb")], 2,
                      "is not writable (cannot create"), marks=_AS_ROOT, id="export-out-read-only"),
    # -- grade: options and --out checked before any row is graded (issue 29)
    *[Case(f"grade-timeout{v}", (lambda v: lambda t, f: ["grade", str(_rows(t / "r.jsonl")), "--timeout", v])(v), 2,
           f"--timeout: must be in (0, 86400] seconds, got {float(v)}") for v in ("inf", "nan", "0", "-1")],
    Case("grade-out-missing-dir", lambda t, f: ["grade", str(_rows(t / "r.jsonl")), "--out", str(t / "no" / "g.jsonl")],
         2, "--out: "),
    Case("grade-out-is-a-dir", lambda t, f: ["grade", str(_rows(t / "r.jsonl")), "--out", str(t)], 2,
         "is a directory, not a file"),
    Case("grade-out-unwritable", lambda t, f: ["grade", str(_rows(t / "r.jsonl")), "--out", "/proc/g.jsonl"], 2,
         "--out: cannot write /proc/g.jsonl"),
    # -- dashboard
    Case("dashboard-port-70000", lambda t, f: ["dashboard", str(t), "--port", "70000"], 2,
         "--port: must be an integer from 1 to 65535, got 70000"),
    Case("dashboard-address-999", lambda t, f: ["dashboard", str(t), "--address", "999.1.1.1"], 2,
         "--address: '999.1.1.1' is not an IP address"),
    # -- train --backend verl: the launcher's checks before composition, Ray or any model (issue 25)
    Case("verl-model-path-missing", lambda t, f: ["train", "--backend", "verl", "--out", str(t / "run"),
                                                  "actor_rollout_ref.model.path=/no/such/model"], 2,
         "actor_rollout_ref.model.path=/no/such/model: no such model directory"),
    Case("verl-model-path-not-a-model", lambda t, f: ["train", "--backend", "verl", "--out", str(t / "run"),
                                                      f"actor_rollout_ref.model.path={_file(t).parent}"], 2,
         "not a model directory: no config.json, no weights (*.safetensors or *.bin), no tokenizer (tokenizer.json, "
         "tokenizer.model or vocab.json)"),
    Case("verl-data-missing", lambda t, f: ["train", "--backend", "verl", "--out", str(t / "run"),
                                            f"data.train_files={t / 'none.parquet'}"], 2,
         "data.train_files: "),
    # -- issue 44: every output through runs.safe_write: a full disk (a small tmpfs) is one line naming the file,
    # exit 2, the earlier output intact and no temporary file left (the snapshot covers the disk's files)
    Case("grade-full-disk", lambda t, f: ["grade", str(_rows(t / "r.jsonl")), "--workers", "1", "--out",
                                          str(f["disk"](t / "disk") / "g.jsonl")], 2,
         "disk/g.jsonl: cannot write it (No space left on device)", ("disk/.tmp-",)),
    Case("compare-csv-full-disk", lambda t, f: ["compare", str(_sweep_of(t, _synthetic_run(t))), "--csv",
                                                str(f["disk"](t / "disk") / "g.jsonl")], 2,
         "disk/g.jsonl: cannot write it (No space left on device)", ("disk/.tmp-",)),
    Case("compare-export-full-disk", lambda t, f: ["compare", str(_sweep_of(t, _synthetic_run(t))), "--export",
                                                   str(f["disk"](t / "disk") / "kept")], 2,
         "cannot write it (No space left on device)", ("disk/kept", "disk/.tmp-")),
    Case("export-tensorboard-full-disk", lambda t, f: ["export", str(_synthetic_run(t)), "--to", "tensorboard",
                                                       "--out", str(f["disk"](t / "disk"))], 2,
         "disk: cannot write it (No space left on device)", ("disk/.tmp-",)),
    Case("data-prepare-full-disk", lambda t, f: ["data", "prepare", str(_problems(t / "p.jsonl", 40)), "--out",
                                                 str(f["disk"](t / "disk") / "data")], 2,
         "No space left on device", ("disk/data", "disk/.tmp-")),
    # -- issue 44: manifests type-checked when read; data prepare and grade inputs said as what they are
    Case("compare-algorithm-a-number", lambda t, f: ["compare", str(_sweep_of(t, _manifest_field(
        _synthetic_run(t), algorithm=7)))], 2, "manifest.json: field 'algorithm' must be a string, got int"),
    Case("export-seed-a-string", lambda t, f: ["export", str(_manifest_field(_synthetic_run(t), seed="0")), "--to",
                                               "tensorboard", "--out", str(t / "tb")], 2,
         "manifest.json: field 'seed' must be an integer, got str"),
    Case("data-deep-json", lambda t, f: ["data", "prepare", str(_deep_json(t / "p.json")), "--out", str(t / "d")], 2,
         "p.json: nested 100000 levels deep", ("d",)),
    Case("data-out-onto-a-file", lambda t, f: ["data", "prepare", str(_problems(t / "p.jsonl", 20)), "--out",
                                               str(_file(t))], 2, "--out: "),
    Case("data-lone-surrogate", lambda t, f: ["data", "prepare", str(_problems(t / "p.jsonl", 20, "\\udc80")),
                                              "--out", str(t / "d")], 2,
         "p.jsonl:1: the problem holds a lone surrogate", ("d",)),
    *[Case(f"{cmd}-input-{kind}", (lambda cmd, make: lambda t, f: [*cmd.split("-"), str(make(t))])(cmd, make), 2,
           msg) for cmd in ("grade", "data-prepare") for kind, make, msg in [
        ("fifo", _fifo, "is a FIFO (named pipe), not a regular file"),
        ("directory", lambda t: _dir_named(t / "d.jsonl"), "d.jsonl: is a directory, not a regular file"),
        ("dev-zero", lambda t: Path("/dev/zero") if cmd == "grade" else _link(t / "z.jsonl", "/dev/zero"),
         "is a device, not a regular file"),
    ]],
    Case("dashboard-port-in-use", lambda t, f: ["dashboard", str(t), "--address", "127.0.0.1", "--port",
                                                str(f["port"])], 2, "is already in use"),
]


def _offline(monkeypatch, tmp: Path) -> None:
    """No hub: HF's offline switches (no network is reached) and an empty HF cache; no benchmark dir."""
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("HF_HOME", str(tmp.parent / "hf-home"))
    monkeypatch.delenv("DHPO_BENCHMARKS_DIR", raising=False)
    # HF reads those variables once, when imported: in a pytest process where an earlier test imported them, set
    # the constants too (else the case reaches for the network and waits ~20 s for it to fail).
    for module, names in (("huggingface_hub.constants", ("HF_HUB_OFFLINE",)),
                          ("datasets.config", ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))):
        if module in sys.modules:
            for name in names:
                if hasattr(sys.modules[module], name):
                    monkeypatch.setattr(sys.modules[module], name, True)


@pytest.fixture()
def small_disk():
    """small_disk(dir): a full 64 KiB tmpfs mounted at `dir` (root only) holding an earlier output file; unmounted
    when the test ends."""
    mounted = []

    def mount(directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(directory)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(directory)
        (directory / "g.jsonl").write_text("an earlier output\n")
        fd = os.open(directory / "fill", os.O_WRONLY | os.O_CREAT)
        try:  # fill the disk to its last byte
            while os.write(fd, b"\0" * 1024):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        return directory

    yield mount
    for d in mounted:
        subprocess.run(["umount", "-l", str(d)], check=False)


def _held(fixtures: dict, directory: Path) -> Path:
    fixtures["hold"](directory)
    return directory


def _snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != LOCK_FILE}


class HeavyWorkStarted(AssertionError):
    pass


@pytest.fixture()
def no_heavy_work(monkeypatch):
    """Loading a model, building the tiny one or starting the vLLM engine fails the case: every check must come
    first. (The real parts run everywhere else; here they would only make a late check slow instead of wrong.)"""
    import dhpo_suite.eval.engine as engine
    import dhpo_suite.models.local as local
    import dhpo_suite.train.embedded.run_setup as run_setup

    def heavy(what):
        def fail(*a, **k):
            raise HeavyWorkStarted(f"heavy work started ({what}) before the bad input was refused")
        return fail

    monkeypatch.setattr(local, "load_model", heavy("model load"))
    monkeypatch.setattr(run_setup, "resolve_model_dir", heavy("model build"))
    monkeypatch.setattr(engine.Engine, "__init__", heavy("vLLM engine"))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input_gets_one_line_and_loses_nothing(case, tmp_path, hold_lock, busy_port, no_heavy_work, monkeypatch,
                                                   small_disk):
    monkeypatch.chdir(tmp_path)  # a default run directory (runs/...) would land here
    monkeypatch.setenv("DHPO_SUITE_CACHE", str(tmp_path / "cache"))  # no case may build the tiny model
    work = tmp_path / "w"
    work.mkdir()
    argv = case.setup(work, {"hold": hold_lock, "port": busy_port, "offline": lambda t: _offline(monkeypatch, t),
                             "disk": small_disk})
    before = _snapshot(work)
    started = time.monotonic()
    res = CliRunner().invoke(app, argv)
    took = time.monotonic() - started
    assert "heavy work started" not in res.stderr, res.stderr
    assert took < scaled(ERROR_WITHIN_S), f"{took:.1f} s to the error"  # checks come first: no model, sweep or grading
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.exit_code == case.code, (res.stderr, res.exception)
    assert len(lines) == 1 and "Traceback" not in res.output, res.stderr
    assert case.expect in lines[0], lines[0]
    after = _snapshot(work)
    assert {k: after.get(k) for k in before} == before  # nothing already written was lost or changed
    assert not (work / "PWNED").exists()  # the crafted pickle ran no code
    for path in case.absent:  # no folder made for nothing, no temporary file left ("x/.tmp-": any such name)
        folder, _, prefix = path.rpartition("/")
        assert not [p for p in (work / folder).iterdir() if p.name.startswith(prefix)], f"{path} left behind"
    assert not (work / "res").exists() or before.get("res/arith.samples.jsonl"), "a failed eval left results"
    assert not (tmp_path / "cache").exists(), "a model was built: the check came after heavy work"


def test_the_crafted_pickle_would_run_code_with_a_full_unpickler(tmp_path):
    """The table's crafted pickle is a real threat: torch.load(weights_only=False) runs it; the trainer's reader
    refuses it."""
    import torch

    from dhpo_suite.train.embedded.checkpoint import CheckpointError, read_trainer_state

    crafted_pickle(tmp_path / "trainer_state.pt", tmp_path / "PWNED", 4)
    with pytest.raises(CheckpointError, match="refused"):
        read_trainer_state(tmp_path)
    assert not (tmp_path / "PWNED").exists()
    torch.load(tmp_path / "trainer_state.pt", weights_only=False)  # the unsafe way the trainer used to read it
    assert (tmp_path / "PWNED").exists()


def test_resume_with_the_stored_values_given_explicitly_is_accepted(tmp_path, monkeypatch):
    """Explicit options equal to the stored run pass the check (the run then says it is finished)."""
    monkeypatch.setenv("DHPO_SUITE_CACHE", str(tmp_path / "cache"))
    run = train_run(tmp_path / "run", checkpoints={6: lambda d: _state(d, 6)})
    res = CliRunner().invoke(app, ["train", "--resume", "--out", str(run), "--algo", "grpo", "--steps", "6",
                                   "--seed", "0", "--threads", "2"])
    assert res.exit_code == 0, res.stderr
    assert "already finished at step 6 of 6" in res.stderr


def _state(directory: Path, step: int, damage: Callable[[dict], None] | None = None) -> None:
    """A trainer state with plain data only (what save_checkpoint writes, for a one-parameter model), changed
    by `damage` if given."""
    import random

    import torch

    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))])
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    state = {"step": step, "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
             "generator": torch.Generator().get_state(), "torch_rng": torch.get_rng_state(),
             "python_rng": random.getstate()}
    if damage is not None:
        damage(state)
    torch.save(state, directory / "trainer_state.pt")


def test_unexpected_errors_are_one_line_unless_debug(monkeypatch):
    """Any exception a command does not handle: one line and exit 1; --debug or DHPO_DEBUG=1 lets it through."""
    import typer

    from dhpo_suite.cli import _OneLineErrors

    demo = typer.Typer(cls=_OneLineErrors)

    @demo.command()
    def boom() -> None:
        raise RuntimeError("engine died\nwith a long log after it")

    @demo.command()
    def other() -> None:  # a second command: a group, like dhpo-suite
        pass

    monkeypatch.delenv("DHPO_DEBUG", raising=False)
    res = CliRunner().invoke(demo, ["boom"])
    assert res.exit_code == 1
    assert res.stderr.strip() == ("error: RuntimeError: engine died (run with --debug or DHPO_DEBUG=1 for the "
                                  "traceback)")
    monkeypatch.setenv("DHPO_DEBUG", "1")
    res = CliRunner().invoke(demo, ["boom"])
    assert isinstance(res.exception, RuntimeError)  # propagates: Python prints the traceback


def test_debug_flag_sets_the_switch(monkeypatch):
    monkeypatch.setenv("DHPO_DEBUG", "0")  # restored after the test: the flag sets it for the whole process
    res = CliRunner().invoke(app, ["--debug", "train", "--steps", "0"])
    assert res.exit_code == 2 and os.environ.get("DHPO_DEBUG") == "1"


def test_the_installed_command_prints_one_line(tmp_path):
    """The real entry point in a fresh interpreter (what a user's shell runs)."""
    out = subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "eval", "--bench", "arith", "--model",
                          str(_model_dir(tmp_path / "m")), "--limit", "-5"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == ["error: --limit: must be an integer >= 1, got -5"]
