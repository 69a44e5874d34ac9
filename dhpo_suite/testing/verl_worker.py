"""verl's real actor worker driven without Ray's trainer: the plugin's worker-level check (tests, benchmarks).

Each process builds verl's `ActorRolloutRefWorker` (role "actor": FSDP2 engine, optimizer, the wrapped
`ppo_loss`) from verl's composed config, exactly as a Ray worker would, and feeds it what verl's trainer
would, in one of two layouts (`LocalCase.feed`):

- "v1" (verl's default trainer, `trainer.use_v1=true`): the rollout goes through TransferQueue and the v1
  trainer's own methods (verl_v1_feed.py), so `update_actor` gets jagged nested tensors, `rm_scores` and
  padding rows, exactly as under Ray. One rank; needs a local Ray instance for TransferQueue.
- "legacy" (`trainer.use_v1=false`): a padded DataProto (left-padded prompts, right-padded responses,
  `token_level_scores`, `uid`s), old log-probs from the worker's own `compute_log_prob` and group-normalised
  advantages (GRPO eq. 1). Any number of ranks.

The only stand-in is the sampler: responses are random token ids, as the checks are about the update.

    case = LocalCase(model_dir, ("grpo", "dhpo-e"), run_dir=...)
    results = run_local(case)                  # world size 1, this process
    results = run_distributed(case, world=2)   # 2 processes, gloo (CPU) or NCCL (CUDA)

On CPU it uses the "cpu" verl platform (gloo, fp32); on CUDA verl's own platform.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import resource
import socket
import time
import traceback
from dataclasses import dataclass
from functools import partial
from typing import Any

from dhpo_suite.train.verl_backend.overrides import compose

__all__ = ["LocalCase", "worker_overrides", "run_local", "run_distributed"]


@dataclass(frozen=True)
class LocalCase:
    """One local run of verl's actor worker."""

    model_dir: str
    """HF model directory (the tiny Qwen3 in tests)."""
    objectives: tuple[str, ...]
    """Library objectives, run one after the other on the same worker (loss set via verl's set_loss_fn);
    "verl:<mode>" runs verl's own loss instead (e.g. "verl:vanilla", for overhead comparisons)."""
    steps: int = 2
    """Training steps (update_actor calls), each on a fresh rollout batch."""
    prompts: int = 4
    """Prompts per step."""
    group_size: int = 2
    """Responses per prompt."""
    prompt_len: int = 8
    """Prompt tokens (some left padding is added)."""
    response_len: int = 16
    """Maximum response tokens (responses end early at random)."""
    mini_batches: int = 2
    """PPO mini-batches per step (optimizer steps per step)."""
    max_tokens_per_gpu: int = 96
    """Dynamic-batch token budget: small, so a mini-batch splits into several micro-batches."""
    lr: float = 1e-3
    """Learning rate (large, so one step visibly moves a tiny model)."""
    old_log_prob_noise: float = 0.2
    """Std of noise added to the old log-probs of every other response (policy lag): their ratios leave 1
    and clipping happens, the rest keep ratio 1 so even GSPO's narrow region passes gradient."""
    run_dir: str | None = None
    """Parent of one run directory per objective, `<run_dir>/<objective>` (None: no telemetry)."""
    device: str = "cpu"
    """"cpu" or "cuda"."""
    fused_kernels: bool = False
    """verl fused kernels (entropy without the full logits; CUDA + triton)."""
    gradient_checkpointing: bool = False
    """Activation checkpointing."""
    seed: int = 0
    """Seed of the synthetic rollouts."""
    check_weights: bool = True
    """Measure the weight change of each update (copies the parameters; benchmarks turn it off)."""
    feed: str = "legacy"
    """How batches reach the worker: "v1" (TransferQueue, the v1 trainer's methods; one rank) or "legacy"."""
    ppo_mini_batch: int | None = None
    """Prompts per PPO mini-batch (None: prompts // mini_batches). With "v1", a value that does not divide
    the batch makes verl append padding rows, as its trainer does."""
    entropy: bool | None = None
    """actor.calculate_entropy (None: as launched — on for our objectives, verl's default for verl's own loss);
    False only to measure what the entropy costs (benchmarks/verl_entropy.py)."""
    save_checkpoint: int | None = None
    """After the last step, save a verl checkpoint with hf_model as global step N (`global_step_N/actor`,
    exported into the run directory), load it back as a resumed run does, and run one more step, whose
    telemetry must be numbered N + 1."""


def worker_overrides(case: LocalCase, objective: str) -> list[str]:
    """verl overrides for the case: the algorithm's (same generator as launches) + small local settings."""
    from dhpo_suite.train.verl_backend.overrides import ACTOR, MODEL, ROLLOUT, algorithm_overrides
    from dhpo_suite.train.verl_backend.presets import algorithm_settings

    # Every response of a step is a sample (per-token arrays in the run directory, for exact checks).
    telemetry = {"max_response_length": case.response_len, "top_k": 8, "n_samples": case.prompts * case.group_size}
    run_dir = None if case.run_dir is None else f"{case.run_dir}/{objective}"
    if objective.startswith("verl:"):  # verl's own loss (e.g. verl:vanilla), the baseline for overhead
        out = [f"{ACTOR}.policy_loss.loss_mode={objective[5:]}", f"{ACTOR}.use_kl_loss=false"]
    else:
        out = algorithm_overrides(algorithm_settings(objective), run_dir, telemetry)
    if case.entropy is not None:
        out.append(f"{ACTOR}.calculate_entropy={str(case.entropy).lower()}")
    mini = case.ppo_mini_batch or case.prompts // case.mini_batches
    out += [
        f"{MODEL}.path={case.model_dir}",
        f"{MODEL}.enable_gradient_checkpointing={str(case.gradient_checkpointing).lower()}",
        f"{MODEL}.use_fused_kernels={str(case.fused_kernels).lower()}",
        f"{MODEL}.fused_kernel_options.impl_backend={'triton' if case.fused_kernels else 'torch'}",
        f"+{MODEL}.override_config.attn_implementation=sdpa",
        f"{ACTOR}.strategy=fsdp2",
        f"{ACTOR}.use_dynamic_bsz=true",
        f"{ACTOR}.ppo_max_token_len_per_gpu={case.max_tokens_per_gpu}",
        f"{ACTOR}.ppo_mini_batch_size={mini}",
        f"{ACTOR}.optim.lr={case.lr}",
        f"{ACTOR}.optim.lr_warmup_steps=0",
        f"{ACTOR}.optim.weight_decay=0.0",  # so a weight change means a gradient
        f"{ACTOR}.fsdp_config.use_torch_compile={str(case.device != 'cpu').lower()}",
        f"{ACTOR}.use_torch_compile={str(case.device != 'cpu').lower()}",
        f"{ROLLOUT}.n={case.group_size}",
        f"{ROLLOUT}.log_prob_use_dynamic_bsz=true",
        f"{ROLLOUT}.log_prob_max_token_len_per_gpu={4 * case.max_tokens_per_gpu}",
        f"{ROLLOUT}.response_length={case.response_len}",
        "algorithm.adv_estimator=grpo",  # what the trainer's advantage step (v1 feed) computes
        "algorithm.norm_adv_by_std_in_grpo=true",
        "algorithm.use_kl_in_reward=false",
    ]
    if case.save_checkpoint is not None:
        out.append(f"{ACTOR}.checkpoint.save_contents=[model,optimizer,extra,hf_model]")
    if case.device == "cpu":  # fp32 end to end: bf16 autocast is slow on CPU and blurs exact checks
        out.append(f"+{ACTOR}.fsdp_config.mixed_precision={{param_dtype:fp32,reduce_dtype:fp32,buffer_dtype:fp32}}")
    return out


def problem(step: int, prompt: int) -> str:
    """The problem text of a synthetic prompt (its user turn in `raw_prompt`, as verl's RLHFDataset builds it)."""
    return f"Synthetic problem {prompt} of step {step}: what is {step} + {prompt}?"


def gold(step: int, prompt: int) -> str:
    """Its gold answer (`reward_model.ground_truth`)."""
    return str(step + prompt)


def _objects(values: list):
    """A 1-D numpy object array (DataProto's non-tensor layout), also when the items are lists."""
    import numpy as np

    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):  # item by item: numpy would read a list of lists as a 2-D array
        out[i] = v
    return out


def _rollout(case: LocalCase, step: int, vocab: int):
    """A verl rollout batch (all prompts of the step): DataProto with uid, token_level_scores and the dataset
    row's non-tensor fields verl's trainers carry (raw_prompt, reward_model)."""
    import torch
    from verl import DataProto

    g = torch.Generator().manual_seed(case.seed * 1000 + step)
    n, p, r = case.prompts * case.group_size, case.prompt_len, case.response_len
    prompts = torch.randint(3, vocab, (case.prompts, p), generator=g).repeat_interleave(case.group_size, 0)
    pmask = torch.ones(n, p, dtype=torch.long)
    pad = torch.randint(0, p // 2, (case.prompts,), generator=g).repeat_interleave(case.group_size)
    pmask[torch.arange(p) < pad[:, None]] = 0
    lengths = torch.randint(r // 2, r + 1, (n,), generator=g)
    rmask = (torch.arange(r) < lengths[:, None]).long()
    responses = torch.randint(3, vocab, (n, r), generator=g) * rmask
    rewards = torch.randint(0, 2, (n,), generator=g).float()
    scores = torch.zeros(n, r)
    scores[torch.arange(n), lengths - 1] = rewards
    attn = torch.cat([pmask, rmask], 1)
    batch = DataProto.from_dict(
        tensors=dict(prompts=prompts * pmask, responses=responses, input_ids=torch.cat([prompts * pmask, responses], 1),
                     attention_mask=attn, position_ids=(attn.cumsum(1) - 1).clamp(min=0), response_mask=rmask,
                     token_level_scores=scores, token_level_rewards=scores),
        non_tensors=dict(uid=_objects([f"step{step}-prompt{i // case.group_size}" for i in range(n)]),
                         raw_prompt=_objects([[{"role": "user", "content": problem(step, i // case.group_size)}]
                                              for i in range(n)]),
                         reward_model=_objects([{"style": "rule", "ground_truth": gold(step, i // case.group_size)}
                                                for i in range(n)])),
    )
    noise = torch.randn(n, r, generator=g) * case.old_log_prob_noise * (torch.arange(n) % 2)[:, None]
    return batch, rewards, noise


def _update_inputs(worker, case: LocalCase, batch, rewards, noise, calculate_entropy: bool, rank: int, world: int):
    """This rank's share of the batch with old log-probs (worker forward + lag noise) and advantages, as verl's
    trainer sends them."""
    from verl.utils import tensordict_utils as tu
    from verl.workers.utils.padding import left_right_2_no_padding, no_padding_2_padding

    from dhpo_suite.train.objectives import group_advantages

    adv = group_advantages(rewards, case.group_size)  # on the whole batch, as verl's driver does
    share = slice(rank * len(batch) // world, (rank + 1) * len(batch) // world)
    batch, adv, noise = batch[share], adv[share], noise[share]
    td = left_right_2_no_padding(batch.to_tensordict())
    tu.assign_non_tensor(td, calculate_entropy=False, compute_loss=False, temperature=1.0)
    old = no_padding_2_padding(tu.get(worker.compute_log_prob(td), "log_probs"), td).float()
    mask = batch.batch["response_mask"].float()
    batch.batch["old_log_probs"] = (old + noise) * mask
    batch.batch["advantages"] = adv[:, None] * mask
    td = left_right_2_no_padding(batch.to_tensordict())
    mini = case.prompts // case.mini_batches * case.group_size
    tu.assign_non_tensor(td, calculate_entropy=calculate_entropy, global_batch_size=mini, mini_batch_size=mini,
                         epochs=1, seed=case.seed, dataloader_kwargs={"shuffle": False}, compute_loss=True,
                         temperature=1.0)
    return td


def _params(worker):
    """Full copies of the (possibly sharded) parameters."""
    return [p.detach().full_tensor().clone() if hasattr(p, "full_tensor") else p.detach().clone()
            for p in worker.actor.engine.module.parameters()]


def _peak_memory(device: str) -> float:
    import torch

    if device == "cuda":
        return torch.cuda.max_memory_allocated() / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB


def _worker(case: LocalCase):
    from verl.workers.engine_workers import ActorRolloutRefWorker

    cfg = compose(worker_overrides(case, case.objectives[0]))
    worker = ActorRolloutRefWorker(cfg.actor_rollout_ref, role="actor")
    worker.init_model()
    return worker


def _use_objective(worker, case: LocalCase, objective: str):
    """Point the worker's loss at `objective` through verl's own set_loss_fn; returns the actor config."""
    from verl.utils.config import omega_conf_to_dataclass
    from verl.workers import engine_workers

    actor = omega_conf_to_dataclass(compose(worker_overrides(case, objective)).actor_rollout_ref.actor)
    actor.model_config = worker.actor.engine.model_config
    worker.actor.set_loss_fn(partial(engine_workers.ppo_loss, config=actor))
    return actor


def run_local(case: LocalCase, rank: int = 0, world: int = 1) -> list[dict[str, Any]]:
    """Run `case` on this process as data-parallel rank `rank` of `world` (process group must exist)."""
    if case.feed == "v1":
        from dhpo_suite.testing import verl_v1_feed as v1_feed

        if world != 1:
            raise ValueError("feed='v1' runs one rank (TransferQueue needs the Ray trainer to dispatch ranks)")
        v1_feed.start_tq()
    worker = _worker(case)
    model_config = worker.actor.engine.model_config
    vocab = min(model_config.hf_config.vocab_size, len(model_config.tokenizer))
    results = []
    for objective in case.objectives:
        actor = _use_objective(worker, case, objective)
        for step in range(1, case.steps + 1):
            batch, rewards, noise = _rollout(case, step, vocab)
            if case.feed == "v1":
                cfg, meta = compose(worker_overrides(case, objective)), v1_feed.put_rollout(batch, rewards, step)
            else:
                td = _update_inputs(worker, case, batch, rewards, noise, actor.calculate_entropy, rank, world)
            before = _params(worker) if case.check_weights else None
            _sync(case.device, reset_peak=True)
            start, cpu_start = time.perf_counter(), time.process_time()
            # timed: the update (v1: the trainer's methods from old log-probs to the update, as one step)
            if case.feed == "v1":
                metrics = v1_feed.train_step(worker, cfg, meta, noise, global_steps=step)
            else:
                metrics = _lists(worker.update_actor(td))
            _sync(case.device)
            seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
            after = _params(worker) if case.check_weights else None
            results.append(dict(
                objective=objective, step=step, rank=rank, seconds=seconds, cpu_seconds=cpu_seconds,
                peak_memory_gib=_peak_memory(case.device),
                weight_change=float(sum((a - b).abs().sum() for a, b in zip(after, before))) if before else None,
                metrics=metrics, rewards=rewards.tolist(),
                lengths=batch.batch["response_mask"].sum(-1).tolist(),
                entropy_function=getattr(getattr(worker.actor.engine, "compute_entropy_from_logits", None),
                                         "__name__", None),
            ))
    if case.save_checkpoint is not None and case.run_dir is not None:  # verl saves <dir>/global_step_N/actor
        path = f"{case.run_dir}/verl/global_step_{case.save_checkpoint}/actor"
        worker.save_checkpoint(path, global_step=case.save_checkpoint)
        worker.load_checkpoint(path)
        batch, rewards, noise = _rollout(case, case.steps + 1, vocab)
        worker.update_actor(_update_inputs(worker, case, batch, rewards, noise, actor.calculate_entropy, rank, world))
    return results


def _lists(output) -> dict[str, Any]:
    """verl's per-micro-batch metric lists from an update_actor output."""
    from verl.utils import tensordict_utils as tu

    metrics = tu.get(output, "metrics") if output is not None else {}
    return {k: v for k, v in metrics.items() if isinstance(v, list)}


def _sync(device: str, reset_peak: bool = False) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()
        if reset_peak:
            torch.cuda.reset_peak_memory_stats()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _setup(rank: int, world: int, port: int, device: str) -> None:
    import torch

    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    if device == "cpu":
        from dhpo_suite.train.verl_backend.cpu_platform import use_cpu_platform

        use_cpu_platform()
        torch.set_num_threads(max(1, int(os.environ.get("DHPO_TORCH_THREADS", "1"))))
    else:
        torch.cuda.set_device(rank)
    if not torch.distributed.is_initialized():
        backend = "gloo" if device == "cpu" else "cpu:gloo,cuda:nccl"
        torch.distributed.init_process_group(backend, rank=rank, world_size=world,
                                             init_method=f"tcp://127.0.0.1:{port}")


def _spawned(rank: int, world: int, port: int, case: LocalCase, queue) -> None:
    _setup(rank, world, port, case.device)
    try:
        queue.put((rank, run_local(case, rank, world), None))
    except BaseException as e:  # the parent reports it; a silent child would hang the test
        queue.put((rank, None, "".join(traceback.format_exception(e))))
        raise
    finally:
        import torch

        torch.distributed.destroy_process_group()
        if case.feed == "v1":
            from dhpo_suite.testing import verl_v1_feed as v1_feed

            v1_feed.stop_tq()


def run_distributed(case: LocalCase, world: int = 2, timeout: float = 600.0) -> list[list[dict[str, Any]]]:
    """Run `case` in `world` fresh processes (spawned); returns each rank's results, rank order."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_spawned, args=(r, world, port, case, queue)) for r in range(world)]
    for p in procs:
        p.start()
    results: dict[int, Any] = {}
    try:
        for _ in range(world):
            rank, res, err = queue.get(timeout=timeout)
            if err is not None:
                raise RuntimeError(f"rank {rank} failed:\n{err}")
            results[rank] = res
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    return [results[r] for r in range(world)]
