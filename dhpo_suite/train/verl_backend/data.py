"""Training data for verl: problems + answers -> verl's RL Parquet (what `dhpo-suite data prepare` writes).

One output row per problem, in the layout verl's RLHFDataset and reward manager read:

    data_source   "simplerl-zoo/level3to5" or the input file's stem
    prompt        [{"role": "user", "content": problem + INSTRUCTION}]   (chat list; verl applies the template)
    ability       "math"
    reward_model  {"style": "rule", "ground_truth": answer}              (graded by reward.compute_score)
    extra_info    {"split", "index", "id", "problem"}

Sources: the paper's training set, SimpleRL-Zoo's Qwen-format level 3-5 split on the hub
(`hkust-nlp/SimpleRL-Zoo-Data`, `simplelr_qwen_level3to5/{train,test}.parquet`), or any local JSONL/JSON/
Parquet file of problems and answers (column names below are recognised; first match wins).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from dhpo_suite.jsonl import input_problem, iter_jsonl
from dhpo_suite.runs.out_paths import dir_problem
from dhpo_suite.runs.safe_write import staged_dir

__all__ = ["INSTRUCTION", "HUB_ID", "HUB_SPLIT_FILES", "DataError", "PrepareResult", "prepare", "read_rows"]

INSTRUCTION = "\nPlease reason step by step, and put your final answer within \\boxed{}."
HUB_ID = "hkust-nlp/SimpleRL-Zoo-Data"
HUB_SPLIT_FILES = {"train": "simplelr_qwen_level3to5/train.parquet", "test": "simplelr_qwen_level3to5/test.parquet"}
HUB_SOURCE = "simplerl-zoo"
PROBLEM_FIELDS = ("problem", "question", "query", "prompt", "instruction", "input")
ANSWER_FIELDS = ("answer", "ground_truth_answer", "gt_answer", "final_answer", "ground_truth", "target", "solution")
ID_FIELDS = ("id", "unique_id", "idx", "index")


class DataError(ValueError):
    """A bad input row or file; the message names the file, the row and the field."""


@dataclass(frozen=True)
class PrepareResult:
    """What `prepare` wrote."""

    train: Path
    val: Path
    n_train: int
    n_val: int
    notes: tuple[str, ...] = ()
    """What was done other than asked (a clamped --val-size), one line each."""


def _text(value: Any) -> str | None:
    """A problem/answer cell as text: chat lists give their last user message; lists give their first item."""
    if value is None:
        return None
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, list):
        users = [m.get("content") for m in value if isinstance(m, dict) and m.get("role") == "user"]
        value = users[-1] if users else (value[0] if value else None)
    if isinstance(value, dict):
        value = value.get("ground_truth", value.get("content"))
    text = None if value is None else str(value).strip()
    return text or None


def _pick(row: dict, fields: tuple[str, ...]) -> str | None:
    """The first of `fields` that holds text (`ground_truth` also inside a `reward_model` record)."""
    nested = row.get("reward_model") if isinstance(row.get("reward_model"), dict) else {}
    for f in fields:
        value = _text(nested.get("ground_truth")) if f == "ground_truth" and nested else None
        value = value or _text(row.get(f))
        if value is not None:
            return value
    return None


def normalise(row: dict, where: str, index: int, split: str, source: str) -> dict:
    """One verl row from an input row; DataError naming `where` (file:line) and the missing field."""
    problem = _pick(row, PROBLEM_FIELDS)
    if problem is None:
        raise DataError(f"{where}: no problem text (looked for fields: {', '.join(PROBLEM_FIELDS)})")
    answer = _pick(row, ANSWER_FIELDS)
    if answer is None:
        raise DataError(f"{where}: no answer (looked for fields: {', '.join(ANSWER_FIELDS)})")
    ident = _pick(row, ID_FIELDS)
    for name, text in (("problem", problem), ("answer", answer), ("id", ident)):
        if text is not None and not _is_unicode(text):
            raise DataError(f"{where}: the {name} holds a lone surrogate (an unpaired \\ud800-\\udfff escape), "
                            f"which is not text and cannot be stored as UTF-8")
    return {
        "data_source": source,
        "prompt": [{"role": "user", "content": problem + INSTRUCTION}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": answer},
        "extra_info": {"split": split, "index": index, "id": ident or f"{split}-{index}", "problem": problem},
    }


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_rows(path: Path) -> Iterator[tuple[str, dict]]:
    """(where, row) for each row of a local .jsonl/.json/.parquet file; `where` is "file:line" or "file:row".
    JSON goes through the readers `grade` and `compare` use (bounded nesting, the file and line named)."""
    suffix = path.suffix.lower()
    if suffix not in (".parquet", ".jsonl", ".json"):
        raise DataError(f"{path}: unsupported file type {suffix!r} (use .jsonl, .json or .parquet)")
    if problem := input_problem(path):  # a FIFO would block for ever, a directory raise IsADirectoryError
        raise DataError(problem)
    if suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except (pa.ArrowException, OSError) as e:
            raise DataError(f"{path}: not a readable Parquet file ({str(e).splitlines()[0] if str(e) else e})"
                            ) from None
        for i, row in enumerate(table.to_pylist()):
            yield f"{path}:row {i + 1}", row
    elif suffix == ".jsonl":
        for line_no, row in iter_jsonl(path, DataError):
            yield f"{path}:{line_no}", row
    else:
        from dhpo_suite.runs.format import RunFormatError
        from dhpo_suite.runs.json_text import check_depth

        try:
            text = path.read_text(encoding="utf-8")
            check_depth(text, path)  # Python's decoder recursed once per bracket: RecursionError
            rows = json.loads(text)
        except UnicodeDecodeError as e:
            raise DataError(f"{path}: not UTF-8 (byte {e.start + 1} of the file)") from None
        except RunFormatError as e:
            raise DataError(str(e)) from None
        except json.JSONDecodeError as e:
            raise DataError(f"{path}:{e.lineno}: invalid JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(rows, list):
            raise DataError(f"{path}: expected a JSON list of objects, got {type(rows).__name__}")
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise DataError(f"{path}:item {i + 1}: expected a JSON object, got {type(row).__name__}")
            yield f"{path}:item {i + 1}", row


def _hub_rows(split: str) -> Iterator[tuple[str, dict]]:
    """Rows of the paper's training set from the hub (needs network access and `datasets`)."""
    from datasets import load_dataset

    ds = load_dataset(HUB_ID, data_files={split: HUB_SPLIT_FILES[split]}, split=split)
    for i, row in enumerate(ds):
        yield f"{HUB_ID}/{HUB_SPLIT_FILES[split]}:row {i + 1}", row


def _write(splits: dict[str, list[dict]], out: Path) -> None:
    """Each split's rows as `out/<split>.parquet`, both or neither (runs.safe_write.staged_dir: a full disk is
    one line naming the file, and no empty or half-written folder is left)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = {name: pa.Table.from_pylist(rows) for name, rows in splits.items()}
    with staged_dir(out) as tmp:
        for name, table in tables.items():
            pq.write_table(table, tmp / name, compression="zstd")


def _convert(rows: Iterable[tuple[str, dict]], split: str, source: str, limit: int | None) -> list[dict]:
    out = []
    for where, row in rows:
        if limit is not None and len(out) >= limit:
            break
        out.append(normalise(row, where, len(out), split, source))
    return out


def prepare(
    source: str | Path,
    out_dir: str | Path,
    *,
    limit: int | None = None,
    val_size: int = 64,
    seed: int = 0,
) -> PrepareResult:
    """Write `out_dir/train.parquet` and `out_dir/val.parquet` from `source`.

    source: "simplerl-zoo" (the hub's level 3-5 Qwen split; val = its test split) or a local file
    (val = `val_size` rows held out at random with `seed`, at most a tenth of the file).
    """
    out = Path(out_dir)
    if problem := dir_problem(out):  # before anything is read: an --out onto a file was a FileExistsError
        raise DataError(f"--out: {problem}")
    notes = []
    if str(source) == HUB_SOURCE:
        name = "simplerl-zoo/level3to5"
        train = _convert(_hub_rows("train"), "train", name, limit)
        val = _convert(_hub_rows("test"), "test", name, limit)
    else:
        path = Path(source)
        rows = _convert(read_rows(path), "train", path.stem, limit)
        if len(rows) < 2:
            raise DataError(f"{path}: needs at least 2 problems, found {len(rows)}")
        if not _is_unicode(path.stem):
            raise DataError(f"{path}: the file name is not valid UTF-8 (it names the data source in every row)")
        n_val = max(1, min(val_size, len(rows) // 10))
        if n_val != val_size:
            notes.append(f"--val-size {val_size}: held out {n_val} of the {len(rows)} problems (at least 1, at most "
                         f"a tenth of them)")
        held = set(random.Random(seed).sample(range(len(rows)), n_val))
        val = [{**r, "extra_info": {**r["extra_info"], "split": "val"}} for i, r in enumerate(rows) if i in held]
        train = [r for i, r in enumerate(rows) if i not in held]
    _write({"train.parquet": train, "val.parquet": val}, out)
    return PrepareResult(out / "train.parquet", out / "val.parquet", len(train), len(val), tuple(notes))
