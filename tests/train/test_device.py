"""--device and --precision: resolved once, refused in one line, and bf16 autocast where it matters.

No CUDA GPU was lent to the sessions that wrote this, so the GPU itself is not exercised here; what runs is the
code path every device shares (the model and each step's tensors on `Compute.device`, the forward passes under
`Compute.autocast`), with bf16 autocast on the CPU standing in for the GPU's.
"""

from __future__ import annotations

import json

import pytest
import torch

from dhpo_suite.train.embedded.device import Compute, resolve_compute
from dhpo_suite.train.embedded.logprobs import response_logprobs

no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only machine's resolution")


@no_gpu
def test_auto_is_the_cpu_in_fp32_without_a_gpu_and_cuda_is_refused():
    assert resolve_compute("auto", "auto") == Compute(torch.device("cpu"), "fp32")
    assert resolve_compute("cpu", "bf16") == Compute(torch.device("cpu"), "bf16")
    for bad in ("cuda", "cuda:0"):
        with pytest.raises(ValueError, match=rf"^device: '{bad}' but torch sees no CUDA GPU"):
            resolve_compute(bad, "auto")


@pytest.mark.parametrize("device,precision,message", [("tpu", "auto", "device: 'tpu' is not one of"),
                                                      ("meta", "auto", "device: 'meta' is not one of"),
                                                      ("cpu", "fp16", "precision: 'fp16' is not one of")])
def test_unknown_names_are_refused(device, precision, message):
    with pytest.raises(ValueError, match=f"^{message}"):
        resolve_compute(device, precision)


def test_bf16_autocast_runs_the_forward_in_bf16_and_keeps_log_probs_weights_and_grads_fp32(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, model.config.vocab_size, (4, 20), generator=g)
    att = torch.ones_like(ids)
    ref, _ = response_logprobs(model, ids, att, prompt_len=8)
    with Compute(torch.device("cpu"), "bf16").autocast():  # as update.py: the forward inside, the backward after
        lp, ent = response_logprobs(model, ids, att, prompt_len=8)
    lp.sum().backward()
    assert lp.dtype == ent.dtype == torch.float32  # the log-softmax runs on fp32 logits
    diff = (lp - ref).abs().max().item()
    assert 0 < diff < 0.2, diff  # the matmuls ran in bf16 (not a no-op), close to fp32
    params = list(model.parameters())
    assert all(p.dtype == torch.float32 and p.grad is not None and p.grad.dtype == torch.float32 for p in params)
    with Compute(torch.device("cpu"), "fp32").autocast():
        again, _ = response_logprobs(model, ids, att, prompt_len=8)
    assert torch.equal(again, ref)  # fp32: no autocast at all


def test_a_bf16_run_trains_end_to_end_and_records_its_precision(ci_config, tmp_path):
    from safetensors import safe_open

    from dhpo_suite.runs import RunReader
    from dhpo_suite.train.embedded import train

    logs: list[str] = []
    cfg = ci_config(tmp_path / "run", steps=2, prompts_per_step=4, checkpoint_every=2, precision="bf16",
                    device="cpu", eval_prompts=16)
    result = train(cfg, show_progress=False, log=logs.append)
    assert "device: cpu (bf16 autocast, fp32 weights)" in logs
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert manifest["hparams"]["precision"] == "bf16" and manifest["status"] == "completed"
    frame = RunReader(result.run_dir).scalars()
    cols = ["reward/mean", "entropy/mean", "grad_norm", "eval/heldout_reward"]
    assert frame[cols].iloc[-1].notna().all() and torch.isfinite(torch.tensor(frame[cols[:3]].values)).all()
    ckpt = RunReader(result.run_dir).checkpoints()[2]
    with safe_open(str(ckpt / "model.safetensors"), "pt") as f:
        assert {f.get_tensor(k).dtype for k in f.keys()} == {torch.float32}  # master weights stay fp32


@pytest.mark.slow  # starts vLLM's engine, then trains, in a fresh process
def test_threads_that_do_not_take_are_reported_when_training_starts(ci_config, tiny_model_dir, tmp_path, user_env):
    """vLLM's CPU worker replaces torch.set_num_threads with a no-op in any process that ran it (seen in the
    full suite: "CPU backend doesn't allow to use torch.set_num_threads after the thread binding"); the trainer
    then runs on vLLM's threads, which it says once it is about to train (a refused option stays one line).
    The real thing, in a fresh process: start vLLM on the tiny model, then train there with --threads 1."""
    import subprocess
    import sys

    cfg = ci_config(tmp_path / "run", steps=1, prompts_per_step=2, eval_prompts=8, threads=1, checkpoint_every=1)
    code = ("import dataclasses, json, sys, torch\n"
            "from dhpo_suite.eval.engine import Engine, EngineOptions\n"
            "from dhpo_suite.train.embedded import TrainConfig, train\n"
            "Engine(sys.argv[1], EngineOptions(seed=0))\n"
            "print('threads after vLLM', torch.get_num_threads(), flush=True)\n"
            "train(TrainConfig(**json.loads(sys.argv[2])), show_progress=False, log=print)\n")
    out = subprocess.run([sys.executable, "-c", code, str(tiny_model_dir), json.dumps(cfg.to_dict())],
                         capture_output=True, text=True, env=user_env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    pinned = int(next(line for line in out.stdout.splitlines() if line.startswith("threads after vLLM")).split()[-1])
    warnings = [line for line in out.stdout.splitlines() if line.startswith("warning: --threads")]
    if pinned == 1:  # vLLM pinned the one thread asked for: nothing to say
        assert warnings == []
    else:
        assert warnings == [f"warning: --threads 1 did not take: torch keeps {pinned} thread(s) in this process "
                            "(was vLLM run in it? its CPU worker pins torch's threads); timings will differ"]
