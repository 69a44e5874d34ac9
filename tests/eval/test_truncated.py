"""The evaluator tells the grader which responses were cut at the token budget (issues 27, 29: a truncated aime25
response was scored correct from a number the fallback found in its last line). Through the real parts: the
evaluator's Sink and grading thread, the real grader pool, the samples file as written."""

from __future__ import annotations

from dhpo_suite.eval.engine import Completion
from dhpo_suite.eval.sink import GradingThread, Sink
from dhpo_suite.eval.sources import Problem
from dhpo_suite.runs import eval_results as er

PROBLEM = Problem(id="aime25-1", problem="Find the measure of angle ABC in degrees.", gold=("60",))
# The same text twice: once finished by the model, once cut by the budget where a sentence happened to end (the
# model had not committed to anything: it was going on). Only the finish reason tells them apart.
TEXT = "The triangle is equilateral, so every angle is the same. The measure of angle ABC is 60 degrees."


def test_a_truncated_response_is_graded_only_on_a_committed_answer(tmp_path):
    path = tmp_path / "aime25.samples.jsonl"
    writer = er.SampleWriter(path)
    with GradingThread(workers=1, timeout=10) as grading:
        sink = Sink(grading, writer, lambda n, tokens: None, bench="aime25", grader=None, batch_size=8)
        sink.add(PROBLEM, "prompt", [Completion(0, TEXT, 20, "stop"), Completion(1, TEXT, 20, "length"),
                                     Completion(2, TEXT + " \\boxed{60}", 24, "length")])
        sink.close()
    writer.close()
    records = {r["sample"]: r for r in er.read_samples(path).records}
    assert records[0]["correct"] is True  # a finished response's answer sentence
    assert records[1]["correct"] is False and "token budget" in records[1]["reason"]  # cut: no fallback answer
    assert records[2]["correct"] is True  # a box before the cut is a committed answer
