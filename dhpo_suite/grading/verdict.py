"""The result of grading one response: a frozen record that always carries its reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Status = Literal["ok", "no_answer", "timeout", "error"]
STATUSES: tuple[str, ...] = get_args(Status)
AnswerSource = Literal["boxed", "marker", "fallback"]
ANSWER_SOURCES: tuple[str, ...] = get_args(AnswerSource)


@dataclass(frozen=True)
class Verdict:
    """One graded response.

    correct:   True only when the extracted answer matches one of the accepted golds.
    extracted: the final answer taken from the response (None when nothing was found).
    status:    "ok" (graded), "no_answer" (nothing to extract), "timeout" (the worker ran past the
               per-item wall-clock limit and was killed) or "error" (grading raised or the worker died).
    reason:    one human-readable line saying why, e.g. "numbers equal: 25 = 25 (gold '025')".
    answer_source: where `extracted` came from: "boxed" (the last \\boxed{}), "marker" (an answer
               line: "Final Answer: ...", "the answer is ...", "####"), "fallback" (no box and no
               marker: the last math segment or standalone number), None when nothing was found.
               A reward policy may pay a "fallback" answer less (see `--reward-unmarked`).
    answer_rule: the rule that gave `extracted`, finer than answer_source, so a reader can audit a
               verdict: "box", "boxes" (boxes written as one list), "answer line", "A: line", "#### line",
               "json answer", "answer tag", "bold" or "fallback" (grading/README.md lists them in order).
    """

    correct: bool
    extracted: str | None
    status: Status
    reason: str
    answer_source: AnswerSource | None = None
    answer_rule: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"Verdict.status must be one of {STATUSES}, got {self.status!r}")
        if self.correct and self.status != "ok":
            raise ValueError(f"Verdict.correct=True requires status 'ok', got {self.status!r}")
        if self.answer_source not in (None, *ANSWER_SOURCES):
            raise ValueError(f"Verdict.answer_source must be one of {ANSWER_SOURCES} or None, "
                             f"got {self.answer_source!r}")
