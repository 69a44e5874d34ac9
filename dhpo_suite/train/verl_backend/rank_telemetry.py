"""Per-rank telemetry of verl actor updates, merged exactly into one run directory.

One call of verl's `TrainingWorker.train_mini_batch` is one training step (all mini-batches and PPO
epochs of one rollout batch). On every data-parallel rank, `run_step` (wrapped around that call by
hooks.py):

1. gives each response of the step a global id: all ranks all-gather their `uid`s (verl's prompt-group
   ids), prompt p = rank of its uid in sorted order, response j = its order within the group, id =
   p·G + j with G = responses per prompt (TelemetryAccumulator's convention: group = id // G). Without
   uids the id is the response's global position and G = actor.rollout_n. The id travels with the
   rows as a tensor field, through verl's mini-batch and dynamic micro-batch reshuffles, to the loss;
2. records the rollout facts of its share (reward = Σ of the first reward field present, `REWARD_KEYS`:
   the legacy trainer's `token_level_scores`, the v1 trainer's `rm_scores`; length; truncated = the length
   reached rollout.response_length). Padding rows that verl's v1 trainer appends so the batch divides
   into mini-batches (`upsample_batch_to_divisible_size`: empty response mask) are left out of every
   statistic;
3. lets every loss call add its ObjectiveOutput (`observe`; the epoch is how often the rows were seen);
4. after the update, gathers the numpy partials (`TelemetryState.to_bytes`) to rank 0 of the
   data-parallel group, which merges them (exact: counts, histograms, top-K, samples) and writes the
   step through `RunWriter` with verl's grad_norm and lr.

Only ranks whose loss is a dhpo_suite loss with `policy_loss.run_dir` set take part; all others pass
through untouched.

Batch fields come in two layouts: padded (B, T) tensors (legacy trainer) or jagged nested tensors
(verl's v1 trainer reads them from TransferQueue); every read goes through `_padded`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

__all__ = ["active", "observe", "run_step", "note_checkpoint_loaded", "export_checkpoint", "RID_KEY", "REWARD_KEYS"]

RID_KEY = "dhpo_response_id"
REWARD_KEYS = ("token_level_scores", "rm_scores", "token_level_rewards")
"""Where the reward lives, first present wins: legacy trainer, v1 trainer (agent-loop scores), KL-shaped."""


@dataclass
class _Step:
    """Telemetry of the step running in this process."""

    acc: Any  # TelemetryAccumulator
    seen: dict[int, int] = field(default_factory=dict)  # response id -> update passes so far


@dataclass
class _Process:
    steps: dict[str, int] = field(default_factory=dict)  # run_dir -> last step finished
    resumed_at: int = 0  # verl's global step of the checkpoint this process resumed from
    writers: dict[str, Any] = field(default_factory=dict)  # run_dir -> RunWriter (writing rank only)
    decode: Callable | None = None


_CURRENT: _Step | None = None
_PROC = _Process()


def active() -> bool:
    """True while a telemetry step is running in this process."""
    return _CURRENT is not None


def _actor_config(worker) -> Any | None:
    loss_fn = getattr(worker, "loss_fn", None)
    config = getattr(loss_fn, "keywords", {}).get("config") if loss_fn is not None else None
    return config if config is not None and hasattr(config, "policy_loss") else None


def _enabled(config) -> bool:
    from dhpo_suite.train.verl_backend.registration import objective_of

    pl = config.policy_loss
    return objective_of(pl.loss_mode) is not None and bool(getattr(pl, "run_dir", None))


def _padded(value, fill=0):
    """A batch field as a padded (B, T) tensor: the v1 trainer hands jagged nested tensors (TransferQueue)."""
    return value.to_padded_tensor(fill) if getattr(value, "is_nested", False) else value


def _strings(data, key: str) -> list[str] | None:
    if key not in data.keys():
        return None
    value = data[key]
    value = value.tolist() if hasattr(value, "tolist") else list(value)
    return [str(v) for v in value]


def _real_rows(data):
    """(N,) bool: rows with at least one response token (False for the v1 trainer's padding rows)."""
    return _padded(data["response_mask"]).sum(-1) > 0


def _response_ids(data, group, config) -> tuple[Any, int]:
    """(ids (N,) int64, responses per prompt) for this rank's rows, -1 for padding rows; see the module
    docstring."""
    import torch
    import torch.distributed as dist

    real = _real_rows(data).tolist()
    uids = _strings(data, "uid")
    n = sum(real)
    world = dist.get_world_size(group) if dist.is_initialized() else 1
    rank = dist.get_rank(group) if dist.is_initialized() else 0
    everyone = [None] * world
    mine = [u for u, r in zip(uids, real) if r] if uids is not None else n
    if world > 1:
        dist.all_gather_object(everyone, mine, group=group)
    else:
        everyone = [mine]
    ids = torch.full((len(real),), -1, dtype=torch.int64)
    where = torch.tensor(real, dtype=torch.bool)
    if uids is None:
        offset = sum(int(x) for x in everyone[:rank])
        ids[where] = torch.arange(offset, offset + n, dtype=torch.int64)
        return ids, int(config.rollout_n)
    counts: dict[str, int] = {}
    flat = [(u, r) for r, us in enumerate(everyone) for u in us]
    for u, _ in flat:
        counts[u] = counts.get(u, 0) + 1
    size = max(counts.values())
    prompt = {u: i for i, u in enumerate(sorted(counts))}
    j: dict[str, int] = {}
    mine_ids = []
    for u, r in flat:
        k = j.get(u, 0)
        j[u] = k + 1
        if r == rank:
            mine_ids.append(prompt[u] * size + k)
    ids[where] = torch.tensor(mine_ids, dtype=torch.int64)
    return ids, size


def _add_rollout(acc, data, ids, size: int) -> None:
    key = next((k for k in REWARD_KEYS if k in data.keys()), None)
    if key is None:
        return  # no reward in the batch: token telemetry only
    real = ids >= 0
    mask = _padded(data["response_mask"])[real]
    # Σ over the response like verl's own score metrics (the agent loop puts the score on the last token).
    rewards = _padded(data[key], 0.0)[real].sum(-1).double()
    lengths = mask.sum(-1)
    acc.add_rollout(rewards, lengths, lengths >= acc.spec.max_response_length, size, response_ids=ids[real])


def _spec(config, data):
    from dhpo_suite.runs import TelemetrySpec

    opts = dict(getattr(config.policy_loss, "telemetry", None) or {})
    if "max_response_length" not in opts:  # launches set it (rollout.response_length); else the batch width
        opts["max_response_length"] = int(_padded(data["response_mask"]).shape[-1])
    return TelemetrySpec(**opts)


def _decoder(config):
    if _PROC.decode is None:
        from dhpo_suite.train.telemetry import token_decoder

        tokenizer = getattr(getattr(config, "model_config", None), "tokenizer", None)
        _PROC.decode = token_decoder(tokenizer) if tokenizer is not None else None
    return _PROC.decode


def run_step(worker, data, update: Callable[[], Any]) -> Any:
    """Run verl's update (`update()`) as one telemetry step of this rank; returns verl's output."""
    global _CURRENT
    config = _actor_config(worker)
    if config is None or not _enabled(config):
        return update()
    from dhpo_suite.train.telemetry import TelemetryAccumulator

    engine = worker.engine
    group = engine.get_data_parallel_group()
    ids, size = _response_ids(data, group, config)
    data[RID_KEY] = ids
    acc = TelemetryAccumulator(_spec(config, data), decode=_decoder(config))
    _add_rollout(acc, data, ids, size)
    _CURRENT = _Step(acc)
    try:
        output = update()
    finally:
        _CURRENT = None
    run_dir = str(config.policy_loss.run_dir)
    step = _PROC.steps.get(run_dir, _PROC.resumed_at) + 1  # verl's global_steps starts at 1
    merged = _gather(acc, group)
    if merged is not None and engine.is_mp_src_rank_with_outputs():
        _write(config, merged, step, acc.decode, output)
    _PROC.steps[run_dir] = step
    return output


def observe(out, config, micro_batch) -> None:
    """Add one loss call's ObjectiveOutput to the running step (no-op outside a step)."""
    step = _CURRENT
    if step is None or micro_batch is None or RID_KEY not in micro_batch.data.keys():
        return
    data = micro_batch.data
    ids = data[RID_KEY].reshape(-1).cpu()
    width = out.response_mask.shape[-1]
    tokens = _padded(data["responses"], 0)
    tokens = tokens[:, :width] if tokens.shape[-1] >= width else None
    old = data.get("old_log_probs", None)
    old = None if old is None else _padded(old, 0.0)
    old = old[:, :width] if old is not None and old.shape[-1] >= width else None
    real = ids >= 0
    if not bool(real.all()):  # padding rows (v1 trainer): no tokens, not responses
        if not bool(real.any()):
            return
        out = _rows(out, real.to(out.response_mask.device))
        ids, tokens = ids[real], None if tokens is None else tokens[real]
        old = None if old is None else old[real]
    epoch = step.seen.get(int(ids[0]), 0)
    for i in ids.tolist():
        step.seen[i] = step.seen.get(i, 0) + 1
    step.acc.add_update(out, response_ids=ids, token_ids=tokens, old_log_prob=old, epoch=epoch)


def _rows(out, keep):
    """ObjectiveOutput `out` restricted to rows `keep`: every (B, ...) tensor, branches included."""
    import dataclasses

    import torch

    from dhpo_suite.train.objectives.output import Branch

    def pick(v):
        return v[keep] if isinstance(v, torch.Tensor) and v.dim() >= 1 and v.shape[0] == keep.shape[0] else v

    branches = {name: Branch(pick(b.ratio), b.low, b.high, pick(b.outside_low), pick(b.outside_high),
                             pick(b.binding_low), pick(b.binding_high)) for name, b in out.branches.items()}
    fields = {f.name: pick(getattr(out, f.name)) for f in dataclasses.fields(out) if f.name != "branches"}
    return dataclasses.replace(out, branches=branches, **fields)


def _gather(acc, group):
    """Merged TelemetryState on rank 0 of `group`, None elsewhere (exact merge of the partials)."""
    import torch.distributed as dist

    from dhpo_suite.train.telemetry import reduce_across_ranks

    if not dist.is_initialized() or dist.get_world_size(group) == 1:
        return acc.state()
    return reduce_across_ranks(acc, group, dst=0)


def _metric(output, name: str, reduce: Callable) -> float | None:
    from verl.utils import tensordict_utils as tu

    metrics = tu.get(output, "metrics") if output is not None else None
    values = (metrics or {}).get(name)
    values = [float(v) for v in (values if isinstance(values, list) else [values]) if v is not None]
    return reduce(values) if values else None


def _write(config, state, step: int, decode, output) -> None:
    from dhpo_suite.runs import RunWriter

    run_dir = str(config.policy_loss.run_dir)
    if run_dir not in _PROC.writers:
        _PROC.writers[run_dir] = RunWriter(run_dir, _manifest(config, state.spec), resume=True)
    grad_norm = _metric(output, "grad_norm", lambda v: sum(v) / len(v))
    lr = _metric(output, "lr", lambda v: v[-1])
    _PROC.writers[run_dir].write_step(state.to_record(step, grad_norm=grad_norm, lr=lr, decode=decode))


def _manifest(config, spec):
    """The run's manifest: the launcher's (if it wrote one) or one built from the actor config."""
    from dhpo_suite.runs import Manifest, read_manifest
    from dhpo_suite.train.verl_backend.policy_loss import objective_hparams
    from dhpo_suite.train.verl_backend.registration import objective_of

    run_dir = Path(config.policy_loss.run_dir)
    if (run_dir / "manifest.json").exists():
        return read_manifest(run_dir)
    name = objective_of(config.policy_loss.loss_mode)
    model = getattr(getattr(config, "model_config", None), "path", "") or ""
    return Manifest(
        algorithm=name,
        hparams=objective_hparams(name, config, config.loss_agg_mode),
        model=str(model),
        backend="verl",
        telemetry=spec.to_dict(),
    )


# ---- checkpoints ----
def note_checkpoint_loaded(local_path: str) -> None:
    """verl resumed from `.../global_step_N/...`: the next step is N+1."""
    match = re.search(r"global_step_(\d+)", str(local_path))
    if match:
        _PROC.resumed_at = int(match.group(1))
        _PROC.steps.clear()


def export_checkpoint(worker, local_path: str, global_step: int) -> Path | None:
    """Expose verl's HF export (`<local_path>/huggingface`, saved when actor.checkpoint.save_contents holds
    hf_model) as the run directory's `checkpoints/step-NNNNNN/` (hard links, copies across filesystems)."""
    import shutil

    import torch.distributed as dist

    config = _actor_config(worker)
    if config is None or not _enabled(config) or (dist.is_initialized() and dist.get_rank() != 0):
        return None
    source = Path(local_path) / "huggingface"
    if not (source / "config.json").exists() or not any(source.glob("*.safetensors")):
        return None
    from dhpo_suite.runs import checkpoint_path, mark_checkpoint_complete

    target = checkpoint_path(config.policy_loss.run_dir, global_step)

    def link(src, dst):
        try:
            import os

            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, copy_function=link, dirs_exist_ok=True)
    mark_checkpoint_complete(target, step=int(global_step), source=str(source))
    return target
