"""What makes two evaluations the same one: the model (its path and a content fingerprint) and every setting
that changes samples. Stored in config.json; `--resume` with any of them different refuses, naming the field,
so stored samples are never continued (or reported) under another model or protocol.

Top-level fields (`IDENTITY`) hold for the whole results directory; per-benchmark fields (`BENCH_IDENTITY`) for
each `benches.<name>` entry. The number of samples and of problems may grow on resume (only the new ones are
generated). On top of these, the runner checks that each stored sample's prompt and golds are the ones this
invocation would use (the data source: hub or local file, its repair, the template's text).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from dhpo_suite.runs.format import CHECKPOINTS

__all__ = ["IDENTITY", "BENCH_IDENTITY", "model_fingerprint", "check_same", "IdentityMismatch", "default_out_dir"]

IDENTITY = ("model", "model_fingerprint", "seed", "temperature", "top_p", "max_model_len", "dtype")
"""config.json fields every benchmark of the directory shares."""
BENCH_IDENTITY = ("template", "max_new_tokens", "stop_token_ids", "stop", "grader")
"""config.json `benches.<name>` fields."""
_HEAD = 1 << 20


class IdentityMismatch(ValueError):
    """--resume with a model or setting that differs from the stored evaluation's config.json."""


def model_fingerprint(model_dir: Path | str) -> str:
    """sha256 over every file of the model directory: its name and size, the whole content of files up to 2 MiB
    (config, tokenizer, generation config) and the first and last MiB of larger ones (weights: the safetensors
    header lists every tensor, the tail holds the last tensor's values). Seconds for a 16 GB model, and any
    retrained checkpoint differs; a 16-hex-digit prefix is stored."""
    h = hashlib.sha256()
    root = Path(model_dir)
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")):
        size = path.stat().st_size
        h.update(f"{path.relative_to(root)}\0{size}\0".encode())
        with open(path, "rb") as f:
            if size <= 2 * _HEAD:
                h.update(f.read())
            else:
                h.update(f.read(_HEAD))
                f.seek(size - _HEAD)
                h.update(f.read(_HEAD))
    return h.hexdigest()[:16]


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:60] + "...'"


def check_same(stored: dict, current: dict, fields, where: str, prefix: str = "") -> None:
    """Raise IdentityMismatch naming the first of `fields` whose value differs (one line)."""
    for key in fields:
        if stored.get(key) != current.get(key):
            raise IdentityMismatch(f"{where}: field '{prefix}{key}': the stored evaluation used "
                                   f"{_show(stored.get(key))}, this one {_show(current.get(key))}; use the same "
                                   f"setting, or another --out")


def default_out_dir(model_dir: Path | str, root: Path | str = "eval-results") -> Path:
    """`eval-results/<name>-<hash>`: for a training checkpoint `<run name>-step-XXXXXX`, else the model dir's
    name; `<hash>` (8 hex digits of the absolute path) keeps two models with the same names apart."""
    path = Path(model_dir).resolve()
    name = f"{path.parents[1].name}-{path.name}" if path.parent.name == CHECKPOINTS else path.name
    return Path(root) / f"{name}-{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"
