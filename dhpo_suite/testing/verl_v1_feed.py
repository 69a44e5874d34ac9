"""verl 0.9.1's v1 batch path in one process: the batches `update_actor` gets under `trainer.use_v1=true`.

verl's default trainer keeps a step's rollout in TransferQueue (TQ). Each response is stored per key
`{uid}_{session}_{turn}` with jagged fields, the trainer adds old log-probs and advantages to TQ, and the
worker's `@register`ed methods turn the `KVBatchMeta` they are handed back into a TensorDict of nested
tensors (`tqbridge`). This module runs that path with verl's own code and no trainer process:

    start_tq()                                        # local Ray (TQ's controller + one storage unit)
    meta = put_rollout(batch, rewards, step)          # as AgentLoopWorkerTQ._agent_loop_postprocess stores it
    output = train_step(worker, cfg, meta, noise)     # the trainer's own methods, on the in-process worker

`train_step` calls, unchanged, verl's `upsample_batch_to_divisible_size` (padding rows when the batch does
not divide into mini-batches), `PPOTrainer._compute_old_log_prob`, `_compute_advantage` and
`_update_actor`, on a stand-in trainer whose `actor_rollout_wg` is the worker itself: each call converts
the KVBatchMeta exactly as a Ray worker does. The only stand-in is the rollout (random tokens, given
rewards); see verl_worker.py.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

__all__ = ["start_tq", "stop_tq", "put_rollout", "train_step"]

PARTITION = "train"


def start_tq(num_cpus: int = 4, object_store_mb: int = 100) -> None:
    """A small local Ray instance and TransferQueue with one storage unit (TQ's actors take 1 CPU each)."""
    import ray
    import transfer_queue as tq
    from omegaconf import OmegaConf

    if not ray.is_initialized():
        _ray_init(dict(num_cpus=num_cpus, object_store_memory=object_store_mb << 20, include_dashboard=False,
                       log_to_driver=False))
    tq.init(OmegaConf.create({"backend": {"SimpleStorage": {"num_data_storage_units": 1}}}))


def _ray_init(kwargs: dict) -> None:
    """ray.init, retried once: Ray waits a fixed 30 s for its raylet to register (ray/_private/node.py), which a
    busy machine can miss; the second start finds the disk cache warm."""
    import ray

    try:
        ray.init(**kwargs)
    except Exception as e:  # noqa: BLE001 - Ray raises a bare Exception for this timeout
        if "timed out during startup" not in str(e):
            raise
        ray.shutdown()
        ray.init(**kwargs)


def stop_tq() -> None:
    import ray
    import transfer_queue as tq

    tq.close()
    ray.shutdown()


def put_rollout(batch, rewards, step: int):
    """Store a padded rollout (DataProto from verl_worker._rollout) in TQ the way verl's agent loop stores
    one response per key; returns the trainer's view of it (KVBatchMeta, like ReplayBuffer.sample)."""
    import torch
    import transfer_queue as tq
    from transfer_queue import KVBatchMeta
    from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput
    from verl.utils.model import compute_position_id_with_mask
    from verl.utils.tensordict_utils import list_of_dict_to_tensordict

    b = batch.batch
    prompt_width = b["prompts"].shape[1]
    keys, fields, tags, turns = [], [], [], {}
    for i, uid in enumerate(batch.non_tensor_batch["uid"].tolist()):
        attn = b["attention_mask"][i].bool()
        prompt = b["prompts"][i][attn[:prompt_width]].tolist()
        response = b["responses"][i][b["response_mask"][i].bool()].tolist()
        # rollout.calculate_log_probs (verl's default) asks the server for log-probs; the random sampler's are 0.
        out = AgentLoopOutput(prompt_ids=prompt, response_ids=response, response_mask=[1] * len(response),
                              response_logprobs=[0.0] * len(response), reward_score=float(rewards[i]), num_turns=2,
                              metrics=AgentLoopMetrics())
        session = turns[uid] = turns.get(uid, -1) + 1
        field = out.as_dict()
        # the prompt row's kwargs (verl's RLHFDataset row: its chat and the reward's ground truth among them)
        field.update(uid=uid, session_id=session, global_steps=step, index=i,
                     raw_prompt=batch.non_tensor_batch["raw_prompt"][i],
                     reward_model=batch.non_tensor_batch["reward_model"][i])
        # AgentLoopWorkerTQ._agent_loop_postprocess, text-only:
        input_ids = torch.cat([field["prompts"], field["responses"]])
        field["loss_mask"] = field["response_mask"]
        field["input_ids"] = input_ids
        field["position_ids"] = compute_position_id_with_mask(torch.ones_like(input_ids)[None])[0]
        field["multi_modal_inputs"] = {}
        keys.append(f"{uid}_{session}_0")
        fields.append(field)
        tags.append({"status": "success", "prompt_len": len(prompt), "response_len": len(response),
                     "seq_len": len(prompt) + len(response), "global_steps": step})
    tq.kv_batch_put(keys=keys, partition_id=PARTITION, fields=list_of_dict_to_tensordict(fields), tags=tags)
    return KVBatchMeta(partition_id=PARTITION, keys=keys, tags=tags)


def _add_policy_lag(meta, noise) -> None:
    """old_log_probs += noise (N, T) on each response's tokens: a stand-in for rollout/policy lag."""
    import torch
    import transfer_queue as tq
    from tensordict import TensorDict

    old = tq.kv_batch_get(keys=meta.keys, partition_id=meta.partition_id, select_fields=["old_log_probs"])
    rows = [r + noise[i, : r.shape[0]].to(r.dtype) for i, r in enumerate(old["old_log_probs"].unbind())]
    nested = torch.nested.as_nested_tensor(rows, layout=torch.jagged)
    tq.kv_batch_put(keys=meta.keys, partition_id=meta.partition_id,
                    fields=TensorDict({"old_log_probs": nested}, batch_size=len(rows)))


def train_step(worker, config, meta, noise=None, global_steps: int = 1) -> dict[str, Any]:
    """One v1 training step of `meta` on `worker` (an ActorRolloutRefWorker); returns verl's step metrics
    and `batch_rows`, the rows the update got.

    `config` is the whole composed ppo_trainer config (the trainer's `self.config`). Padding rows are
    appended when the batch does not divide into `ppo_mini_batch_size × rollout.n`, as verl's
    `_balance_batch` does; `noise` (N, T) is added to the old log-probs of the N real responses.
    `global_steps`: the trainer's step counter (the plugin hands it to the update's telemetry).
    """
    import transfer_queue as tq
    from verl.trainer.ppo.padding_utils import upsample_batch_to_divisible_size
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    trainer = SimpleNamespace(config=config, actor_rollout_wg=worker, distillation_config=None,
                              global_steps=global_steps)
    multiple = config.actor_rollout_ref.actor.ppo_mini_batch_size * config.actor_rollout_ref.rollout.n
    real = len(meta)
    meta = upsample_batch_to_divisible_size(meta, multiple, worker.actor.engine.model_config.tokenizer.eos_token_id)
    metrics: dict[str, Any] = {}
    meta.extra_info["temperature"] = config.actor_rollout_ref.rollout.temperature
    meta = PPOTrainer._compute_old_log_prob(trainer, meta, metrics)
    if noise is not None:
        _add_policy_lag(type(meta)(partition_id=meta.partition_id, keys=meta.keys[:real], tags=meta.tags[:real]),
                        noise)
    meta = PPOTrainer._compute_advantage(trainer, meta, metrics)
    PPOTrainer._update_actor(trainer, meta, metrics)
    tq.kv_clear(keys=meta.keys, partition_id=meta.partition_id)
    metrics["batch_rows"] = len(meta)  # real responses + verl's padding rows
    return metrics
