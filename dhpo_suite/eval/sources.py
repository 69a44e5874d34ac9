"""Where problems come from: local JSONL files (read with bounded memory), the Hugging Face hub (normalised to
SimpleRL's files), or a training task of `dhpo_suite.tasks` (the trainer's own held-out problems).

Every path yields the same `Problem` rows, so `--data-dir` and the hub give the same problems and golds:

- hub rows go through the record's field mapping and answer transform (`normalize_row`), then
  `repair_escapes` (JSON escapes decoded inside LaTeX: a form feed + `rac` was `\\frac`) and
  `derive_answer_alt` (the extra gold forms the shipped files carry in `answer_alt`);
- a row larger than `MAX_ROW_BYTES` is not parsed: it becomes a `Problem` with `skip` set (the evaluator
  records its samples with status `row_too_large`), and reading it holds at most one chunk in memory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from dhpo_suite.jsonl import parse_row
from dhpo_suite.tasks import get_task

__all__ = ["Problem", "DataError", "MAX_ROW_BYTES", "read_jsonl", "utf8_text", "normalize_row", "repair_escapes",
           "derive_answer_alt", "clip", "ANSWER_TRANSFORMS", "hub_problems", "task_problems"]

MAX_ROW_BYTES = 1 << 20
"""A benchmark row over 1 MiB is skipped with status `row_too_large` (the largest shipped row is 13 KB)."""
TASK_PROBLEMS = 128
"""Problems of a task benchmark without --limit: the trainer's default `eval_prompts` (its held-out set)."""
_CHUNK = 1 << 16


class DataError(ValueError):
    """A benchmark file or row is unusable. The message names the file, line and field."""


@dataclass(frozen=True)
class Problem:
    """One test problem: `gold` lists every accepted gold form (the answer first, then answer_alt).
    `skip` (a one-line reason) marks a problem that cannot be generated (its samples are recorded, not run)."""

    id: str
    problem: str
    gold: tuple[str, ...]
    skip: str | None = None


def clip(text, limit: int = 200) -> str:
    """`text` as one line of at most `limit` characters (errors never echo a whole problem)."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 25] + f"... ({len(s)} characters)"


# ---------------------------------------------------------------- repairs of hub text
# LaTeX commands whose backslash + first letter a JSON decoder reads as an escape (\f \b \t \r, and \v \a in
# some tools). A control character followed by the rest of one of these words was that command. Newlines are
# left alone: SimpleRL's own minerva_math row 116 has a newline + "u_{S}" that must stay as shipped.
_ESCAPED = {"\f": "f", "\b": "b", "\t": "t", "\r": "r", "\v": "v", "\a": "a"}
_COMMANDS = ("frac", "forall", "flat", "bar", "binom", "boxed", "beta", "bigl", "bigr", "big", "bmod", "bot",
             "begin", "bullet", "triangle", "times", "text", "theta", "tan", "tau", "tfrac", "tilde", "to", "top",
             "tbinom", "right", "rangle", "rfloor", "rceil", "rho", "rm", "vec",
             "varphi", "vee", "vdots", "alpha", "approx", "angle", "arcsin", "arccos", "arctan")
_REPAIR = re.compile("([\f\b\t\r\v\a])(" + "|".join(sorted({c[1:] for c in _COMMANDS}, key=len, reverse=True))
                     + r")(?![a-z])")


def repair_escapes(text: str) -> str:
    """Undo JSON-escape damage in LaTeX: control char + the rest of a known command -> `\\command`.

    Only words that complete a LaTeX command are repaired (a tab + `riangle` -> `\\triangle`; a tab before
    "Find" stays a tab). The shipped aime25 was repaired this way (rows 18, 19, 27)."""
    def fix(m: re.Match) -> str:
        word = _ESCAPED[m.group(1)] + m.group(2)
        return "\\" + word if word in _COMMANDS else m.group(0)

    return _REPAIR.sub(fix, text)


# ---------------------------------------------------------------- extra gold forms
_E_NOTATION = re.compile(r"^(-?\d+(?:\.\d+)?)e([+-]?\d+)$")
_DOT_FRACTION = re.compile(r"^(-?)(\d+)\./(\d+)$")
_NP_CALL = re.compile(r"^np\.(arcsin|arccos|arctan|sin|cos|tan|log|exp|sqrt)\((\d+)/(\d+)\)$")
_PREFIX = re.compile(r"^[a-zA-Z]_\{\\\w+ ?\}\s*=\s*(.+)$|^[a-zA-Z]([(\[][^,]*,[^,]*[)\]])$")


def derive_answer_alt(answer: str) -> list[str]:
    """LaTeX forms of a gold that math-verify 0.9.0 misreads (the rules behind the shipped `answer_alt`):
    `4.5e33` -> `4.5 \\times 10^{33}`, `-1./3` -> `-\\frac{1}{3}`, `np.arcsin(10/13)` ->
    `\\arcsin\\left(\\frac{10}{13}\\right)`, a stray `$ $` removed, a `m_{\\max}=` prefix dropped, `t(0,4]` ->
    `(0,4]`. Plain `k=1` gets none (math-verify reads equations)."""
    a = answer.strip()
    if m := _E_NOTATION.match(a):
        return [f"{m.group(1)} \\times 10^{{{int(m.group(2))}}}"]
    if m := _DOT_FRACTION.match(a):
        return [f"{m.group(1)}\\frac{{{m.group(2)}}}{{{m.group(3)}}}"]
    if m := _NP_CALL.match(a):
        return [f"\\{m.group(1)}\\left(\\frac{{{m.group(2)}}}{{{m.group(3)}}}\\right)"]
    if "$ $" in a:
        return [a.replace("$ $", "")]
    if m := _PREFIX.match(a):
        return [m.group(1) or m.group(2)]
    return []


# ---------------------------------------------------------------- local JSONL, bounded
def _lines(path: Path, max_bytes: int) -> Iterator[tuple[int, bytes | None, bytes]]:
    """(line number, line or None if longer than max_bytes, first bytes) with at most one chunk in memory."""
    with open(path, "rb") as f:
        for lineno, line in enumerate(iter(lambda: f.readline(max_bytes + 1), b""), 1):
            if len(line) <= max_bytes or line.endswith(b"\n"):
                yield lineno, line, line[:4096]
                continue
            head = line[:4096]
            while line and not line.endswith(b"\n"):  # drain the rest of the oversize line chunk by chunk
                line = f.readline(_CHUNK)
            yield lineno, None, head


def _oversize(path: Path, lineno: int, head: bytes, max_bytes: int) -> Problem:
    m = re.search(rb'"id"\s*:\s*"?([\w./-]{1,80})', head)
    pid = m.group(1).decode() if m else f"line-{lineno}"
    reason = f"{path.name}:{lineno}: row larger than {max_bytes} bytes; not read"
    return Problem(pid, "", (), skip=reason)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_text(text: str) -> str:
    """`text` with each lone surrogate (a `"\\ud800"` escape in JSON, which json.loads keeps) replaced by U+FFFD,
    as the reader already replaces bytes that are not UTF-8. A tokenizer cannot encode a lone surrogate: such a
    row failed after the model loaded (`TextEncodeInput must be Union[...]`), leaving a results directory with
    only config.json. `dhpo-suite grade` reads the same rows (its grader takes any str)."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def _check_row(row, where: str) -> Problem:
    """Validate one row; errors read `file:line: field 'x': ...`. Text fields come back as UTF-8-encodable."""
    for key in ("id", "problem", "answer"):
        if key not in row:
            raise DataError(f"{where}: field {key!r}: missing (each row needs id, problem, answer)")
    if isinstance(row["id"], int) and not isinstance(row["id"], bool):
        row = {**row, "id": str(row["id"])}
    for key in ("id", "problem", "answer"):
        if not isinstance(row[key], str) or not row[key].strip():
            raise DataError(f"{where}: field {key!r}: expected a non-empty string, got {clip(repr(row[key]), 60)}")
    alt = row.get("answer_alt", [])
    alt = [alt] if isinstance(alt, str) else alt
    if not isinstance(alt, list) or not all(isinstance(a, str) for a in alt):
        raise DataError(f"{where}: field 'answer_alt': expected a string or a list of strings, got "
                        f"{clip(repr(alt), 60)}")
    gold = (utf8_text(a) for a in [row["answer"], *alt])
    return Problem(utf8_text(row["id"]), utf8_text(row["problem"]), tuple(dict.fromkeys(gold)))


def read_jsonl(path: Path | str, max_row_bytes: int = MAX_ROW_BYTES) -> list[Problem]:
    """Read and validate a local benchmark file (one JSON object per line; duplicate ids are an error).
    A row over `max_row_bytes` is returned as a skipped Problem, never parsed."""
    path = Path(path)
    out, seen = [], {}
    for lineno, raw, head in _lines(path, max_row_bytes):
        if raw is None:
            p = _oversize(path, lineno, head, max_row_bytes)
        else:
            text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if not text.strip():
                continue
            p = _check_row(parse_row(text, f"{path}:{lineno}", DataError), f"{path}:{lineno}")
        if p.id in seen:
            raise DataError(f"{path}:{lineno}: field 'id': duplicate {clip(repr(p.id), 60)} (first on line "
                            f"{seen[p.id]})")
        seen[p.id] = lineno
        out.append(p)
    if not out:
        raise DataError(f"{path}: no problems")
    return out


# ---------------------------------------------------------------- the hub
ANSWER_TRANSFORMS: dict[str, Callable] = {
    "text": lambda a: str(a).strip(),
    "strip_leading_zeros": lambda a: str(a).strip().lstrip("0") or "0",
    "float_to_int": lambda a: str(int(float(a))) if float(a).is_integer() else str(a),
    "first_without_dollars": lambda a: str(a[0] if isinstance(a, list) else a).replace("$", "").strip(),
    "after_hashes": lambda a: str(a).split("####")[-1].strip().replace(",", ""),
}


def normalize_row(bench, row: dict, index: int) -> dict:
    """A hub row -> {id, problem, answer, answer_alt} (+ its other fields): the record's field mapping and
    answer transform, the escape repair, and the derived extra gold forms (kept if the row has its own)."""
    f = bench.fields
    out = dict(row)
    out["id"] = str(row[f["id"]]) if "id" in f else str(index)
    out["problem"] = repair_escapes(str(row[f["problem"]]))
    out["answer"] = ANSWER_TRANSFORMS[bench.answer](row[f["answer"]])
    if not row.get("answer_alt"):
        out["answer_alt"] = derive_answer_alt(out["answer"])
    return out


def hub_problems(bench, max_row_bytes: int = MAX_ROW_BYTES) -> list[Problem]:
    """Load `bench` through `datasets` (needs the hub or its cache); rows over the size limit are skipped."""
    import datasets

    ds = datasets.load_dataset(bench.hub_id, bench.config, split=bench.split)
    where = f"{bench.hub_id}[{bench.config or ''}:{bench.split}]"
    out = []
    for i, r in enumerate(ds):
        size = sum(len(str(v)) for v in r.values())
        if size > max_row_bytes:
            out.append(Problem(str(i), "", (), skip=f"{where} row {i}: row larger than {max_row_bytes} bytes"))
            continue
        out.append(_check_row(normalize_row(bench, dict(r), i), f"{where} row {i}"))
    return out


def task_problems(task_name: str, n: int | None, seed: int) -> list[Problem]:
    """The training task's test-split problems, exactly as the trainer's held-out reward draws them
    (`task.make_problems(n, seed=seed, split="test")`; n defaults to the trainer's 128 eval prompts)."""
    rows = get_task(task_name).make_problems(n or TASK_PROBLEMS, seed=seed, split="test")
    return [Problem(r["id"], r["problem"], (r["answer"],)) for r in rows]
