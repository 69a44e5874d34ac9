"""The result of grading one response: a frozen record that always carries its reason."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

Status = Literal["ok", "no_answer", "timeout", "error"]
STATUSES: tuple[str, ...] = ("ok", "no_answer", "timeout", "error")


@dataclass(frozen=True)
class Verdict:
    """One graded response.

    correct:   True only when the extracted answer matches one of the accepted golds.
    extracted: the final answer taken from the response (None when nothing was found).
    status:    "ok" (graded), "no_answer" (nothing to extract), "timeout" (the worker ran past the
               per-item wall-clock limit and was killed) or "error" (grading raised or the worker died).
    reason:    one human-readable line saying why, e.g. "numbers equal: 25 = 25 (gold '025')".
    """

    correct: bool
    extracted: str | None
    status: Status
    reason: str

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"Verdict.status must be one of {STATUSES}, got {self.status!r}")
        if self.correct and self.status != "ok":
            raise ValueError(f"Verdict.correct=True requires status 'ok', got {self.status!r}")

    def to_dict(self) -> dict:
        return asdict(self)
