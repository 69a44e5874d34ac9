"""Read a W&B offline run back: its `run-<id>.wandb` transaction log, decoded with wandb's own protobufs.

wandb 0.31 has no Python reader any more (its datastore moved into the Go `wandb-core`), so this follows the
file format wandb-core writes and `wandb sync` reads: a 7-byte header (":W&B", magic 0xBEE1, version 0),
then the LevelDB log format (32 KiB blocks; each chunk: CRC-32 (4 bytes), length (2, little-endian), type
(1: full, 2: first, 3: middle, 4: last)) holding serialized `wandb_internal_pb2.Record` messages.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

BLOCK = 32768
HEADER = 7


def records(path: Path):
    """Every Record in a .wandb file, in order (checks each chunk's CRC-32, as wandb's reader does)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = Path(path).read_bytes()
    ident, magic, version = struct.unpack("<4sHB", data[:HEADER])
    assert (ident, magic, version) == (b":W&B", 0xBEE1, 0), (ident, hex(magic), version)
    pos, pending = HEADER, b""
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:  # block trailer padding
            pos += left
            continue
        crc, length, kind = struct.unpack("<IHB", data[pos:pos + HEADER])
        chunk = data[pos + HEADER:pos + HEADER + length]
        if crc == 0 and length == 0 and kind == 0:  # zero fill up to the next block
            pos += left
            continue
        assert zlib.crc32(chunk, zlib.crc32(bytes([kind]))) & 0xFFFFFFFF == crc, f"bad CRC at byte {pos}"
        pos += HEADER + length
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            rec = pb.Record()
            rec.ParseFromString(pending)
            yield rec
            pending = b""


def offline_run(root: Path) -> Path:
    """The single offline-run-* directory under `root`/wandb."""
    runs = sorted((Path(root) / "wandb").glob("offline-run-*"))
    assert len(runs) == 1, runs
    return runs[0]


def history(run_dir: Path) -> dict[int, dict]:
    """{step: {key: value}} from the run's history records (values JSON-decoded; rows of one step merged)."""
    out: dict[int, dict] = {}
    for rec in records(next(Path(run_dir).glob("run-*.wandb"))):
        if rec.WhichOneof("record_type") != "history":
            continue
        row: dict = {}
        for item in rec.history.item:
            value = json.loads(item.value_json)
            if item.key or len(item.nested_key) == 1:
                row[item.key or item.nested_key[0]] = value
            else:  # a media object's field: nested_key = (name, field), e.g. ("entropy", "bins")
                *path, leaf = item.nested_key
                row.setdefault("/".join(path), {})[leaf] = value
        step = int(row.get("_step", rec.history.step.num))
        out.setdefault(step, {}).update(row)
    return out


def config(run_dir: Path) -> dict:
    """The run config (last value of each key) from the run's config records."""
    out = {}
    for rec in records(next(Path(run_dir).glob("run-*.wandb"))):
        kind = rec.WhichOneof("record_type")
        if kind in ("config", "run"):
            for item in (rec.config.update if kind == "config" else rec.run.config.update):
                key = item.key or "/".join(item.nested_key)
                out[key] = json.loads(item.value_json)
    return out
