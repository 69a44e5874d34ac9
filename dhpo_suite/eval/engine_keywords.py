"""The keywords `vllm.LLM(...)` accepts (its own parameters and EngineArgs' fields), read from vLLM's source.

`eval --engine-arg nosuch=1` used to fail inside `LLM(...)` with a TypeError, after the tokenizer and the engine
had started loading. Importing vLLM to ask takes seconds to a minute; parsing the two source files takes
milliseconds, so the check comes first with the others. When vLLM is absent (or its layout changed) nothing is
checked here and vLLM reports the keyword itself.
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
from functools import lru_cache
from pathlib import Path

__all__ = ["check_engine_keywords", "engine_keywords"]


@lru_cache(maxsize=1)
def engine_keywords() -> frozenset[str] | None:
    """Every keyword of vllm.LLM: LLM.__init__'s parameters and the fields of EngineArgs; None if unknown."""
    spec = importlib.util.find_spec("vllm")
    if spec is None or spec.origin is None:
        return None
    root = Path(spec.origin).parent
    try:
        fields = _class_names(root / "engine" / "arg_utils.py", "EngineArgs", init=False)
        params = _class_names(root / "entrypoints" / "llm.py", "LLM", init=True)
    except (OSError, SyntaxError, StopIteration):
        return None
    return frozenset(fields | params) - {"self"}


def _class_names(path: Path, cls: str, init: bool) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    if not init:
        return {n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    fn = next(n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    return {a.arg for a in fn.args.args + fn.args.kwonlyargs}


def check_engine_keywords(keys: list[str]) -> None:
    """ValueError naming the first key vllm.LLM does not take (with the nearest names)."""
    if "trust_remote_code" in keys:  # the model directory checks refuse shipped code; so does this door
        raise ValueError("--engine-arg: trust_remote_code is refused: dhpo-suite never runs code shipped with a model")
    known = engine_keywords()
    if known is None:
        return
    for key in keys:
        if key not in known:

            near = difflib.get_close_matches(key, sorted(known), n=3)
            hint = f" (did you mean {', '.join(near)}?)" if near else ""
            raise ValueError(f"--engine-arg: {key!r} is not a keyword of vllm.LLM or its EngineArgs{hint}")
