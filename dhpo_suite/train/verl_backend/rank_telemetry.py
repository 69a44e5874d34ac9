"""Per-rank telemetry of verl actor updates, merged exactly into one run directory.

One call of verl's `TrainingWorker.train_mini_batch` is one training step, numbered by verl's own
`global_steps` (which the trainer's batch carries, seam.global_step) (all mini-batches and PPO
epochs of one rollout batch). On every data-parallel rank, `run_step` (wrapped around that call by the
plugin, seam/patches.py):

1. gives each response of the step a global id: all ranks all-gather their `uid`s (verl's prompt-group
   ids), prompt p = rank of its uid in sorted order, response j = its order within the group, id =
   p·G + j with G = responses per prompt (TelemetryAccumulator's convention: group = id // G). Without
   uids the id is the response's global position and G = actor.rollout_n. The id travels with the
   rows as a tensor field, through verl's mini-batch and dynamic micro-batch reshuffles, to the loss.
   Each prompt's problem and gold answer (verl's `raw_prompt` and `reward_model.ground_truth`) are gathered
   with the uids, so the writing rank can record them with every kept response;
2. records the rollout facts of its share (reward = Σ of the first reward field present, `verl_batch.REWARD_KEYS`:
   the legacy trainer's `token_level_scores`, the v1 trainer's `rm_scores`; length; truncated = the length
   reached rollout.response_length). Padding rows that verl's v1 trainer appends so the batch divides
   into mini-batches (`upsample_batch_to_divisible_size`: empty response mask) are left out of every
   statistic;
3. lets every loss call add its ObjectiveOutput (`StepTelemetry.observe`, reached through `STATE.step`; the
   epoch is how often the rows were seen);
4. after the update, gathers the numpy partials (`TelemetryState.to_bytes`) to rank 0 of the
   data-parallel group, which merges them (exact: counts, histograms, top-K, samples) and writes the
   step through `RunWriter` with verl's grad_norm and lr.

Only ranks whose loss is a dhpo_suite loss with `policy_loss.run_dir` set take part; all others pass
through untouched. Every read of verl's objects goes through the seam (seam/reads.py).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from dhpo_suite.train.verl_backend import seam, verl_batch
from dhpo_suite.train.verl_backend.names import objective_of
from dhpo_suite.train.verl_backend.state import STATE

if TYPE_CHECKING:
    from torch import Tensor

    from dhpo_suite.runs.manifest import Manifest
    from dhpo_suite.runs.records import StepRecord
    from dhpo_suite.runs.telemetry_spec import TelemetrySpec
    from dhpo_suite.runs.writer import RunWriter
    from dhpo_suite.train.objectives import ObjectiveOutput
    from dhpo_suite.train.telemetry import Decode, TelemetryAccumulator, TelemetryState
    from dhpo_suite.train.verl_backend.seam import MicroBatch

__all__ = ["StepTelemetry", "ids_from_uids", "run_step", "note_checkpoint_loaded", "export_checkpoint", "link_tree"]

Facts = tuple["str | None", "str | None"]
"""A prompt's (problem, gold answer), None where the batch does not carry it."""


@dataclass
class StepTelemetry:
    """Telemetry of the actor update running in this process (STATE.step while it runs)."""

    acc: TelemetryAccumulator
    seen: dict[int, int] = field(default_factory=dict)  # response id -> update passes so far

    def observe(self, out: ObjectiveOutput, micro_batch: MicroBatch | None) -> None:
        """Add one loss call's ObjectiveOutput computed on `micro_batch` (no-op without response ids)."""
        rows = None if micro_batch is None else verl_batch.micro_batch_rows(micro_batch, out.response_mask.shape[-1])
        if rows is None:
            return
        ids, tokens, old = rows
        real = ids >= 0
        if not bool(real.all()):  # padding rows (v1 trainer): no tokens, not responses
            if not bool(real.any()):
                return
            out = _rows(out, real.to(out.response_mask.device))
            ids, tokens = ids[real], None if tokens is None else tokens[real]
            old = None if old is None else old[real]
        epoch = self.seen.get(int(ids[0]), 0)
        for i in ids.tolist():
            self.seen[i] = self.seen.get(i, 0) + 1
        self.acc.add_update(out, response_ids=ids, token_ids=tokens, old_log_prob=old, epoch=epoch)


def _enabled(config: Any) -> bool:
    pl = config.policy_loss
    return objective_of(pl.loss_mode) is not None and bool(getattr(pl, "run_dir", None))


def _response_ids(data: Any, group: Any, config: Any) -> tuple[Tensor, int, list[Facts]]:
    """(ids (N,) int64, responses per prompt, each prompt's facts, indexed by response id // G) for this rank's
    rows, -1 for padding rows; see the module docstring."""
    import torch

    real = verl_batch.real_rows(data).tolist()
    uids = verl_batch.strings(data, "uid")
    found = verl_batch.prompts_and_golds(data)  # (problem, gold) of each real row, (None, None) without them
    row_facts = [(p, g) for p, g, r in zip(*found, real) if r] if found is not None else [(None, None)] * sum(real)
    mine = ([u for u, r in zip(uids, real) if r] if uids is not None else sum(real), row_facts)
    everyone, rank = _all_gather(mine, group)
    facts = [f for _, fs in everyone for f in fs]  # every real row's (problem, gold), in rank order
    ids = torch.full((len(real),), -1, dtype=torch.int64)
    where = torch.tensor(real, dtype=torch.bool)
    if uids is None:  # global positions: group = position // G
        offset = sum(int(n) for n, _ in everyone[:rank])
        ids[where] = torch.arange(offset, offset + sum(real), dtype=torch.int64)
        size = int(config.rollout_n)
        firsts = facts[::size]
    else:
        mine_ids, size, firsts = ids_from_uids([us for us, _ in everyone], facts, rank)
        ids[where] = torch.tensor(mine_ids, dtype=torch.int64)
    return ids, size, firsts


def _attach_prompts(record: StepRecord, prompts: list[Facts], group_size: int) -> None:
    """Fill the kept responses' `prompt`/`gold` columns when every prompt has both (else leave them null)."""
    problems, golds = [p for p, _ in prompts if p is not None], [g for _, g in prompts if g is not None]
    if problems and len(problems) == len(golds) == len(prompts):
        record.attach_prompts(problems, golds, group_size)


def ids_from_uids(uids_by_rank: list[list[str]], facts: list[Facts], rank: int) -> tuple[list[int], int, list[Facts]]:
    """(response ids of `rank`'s rows, responses per prompt, each prompt's facts) from every rank's uids (rank
    order, real rows only) and their rows' facts: prompt p = rank of its uid in sorted order, j = the row's
    order within its uid across ranks, id = p·G + j."""
    flat = [(u, r) for r, us in enumerate(uids_by_rank) for u in us]
    counts = Counter(u for u, _ in flat)
    about: dict[str, Facts] = {}
    for (u, _), f in zip(flat, facts):
        about.setdefault(u, f)
    size = max(counts.values())
    order = sorted(counts)
    prompt = {u: i for i, u in enumerate(order)}
    seen: dict[str, int] = {}
    mine = []
    for u, r in flat:
        j = seen.get(u, 0)
        seen[u] = j + 1
        if r == rank:
            mine.append(prompt[u] * size + j)
    return mine, size, [about[u] for u in order]


def _all_gather(obj: Any, group: Any) -> tuple[list[Any], int]:
    """(every rank's `obj` in rank order, this rank) within `group`; ([obj], 0) without distributed."""
    import torch.distributed as dist

    if not dist.is_initialized() or dist.get_world_size(group) == 1:
        return [obj], 0
    everyone: list[Any] = [None] * dist.get_world_size(group)
    dist.all_gather_object(everyone, obj, group=group)
    return everyone, dist.get_rank(group)


def _add_rollout(acc: TelemetryAccumulator, data: Any, ids: Tensor, size: int) -> None:
    rewards = verl_batch.rollout_rewards(data)
    if rewards is None:
        return  # no reward in the batch: token telemetry only
    real = ids >= 0
    lengths = verl_batch.response_mask(data)[real].sum(-1)
    acc.add_rollout(rewards[real], lengths, lengths >= acc.spec.max_response_length, size, response_ids=ids[real])


def _spec(config: Any, data: Any) -> TelemetrySpec:
    from dhpo_suite.runs import TelemetrySpec

    opts = dict(getattr(config.policy_loss, "telemetry", None) or {})
    if "max_response_length" not in opts:  # launches set it (rollout.response_length); else the batch width
        opts["max_response_length"] = int(verl_batch.response_mask(data).shape[-1])
    return TelemetrySpec(**opts)


def _decoder(config: Any) -> Decode | None:
    if STATE.decode is None:
        from dhpo_suite.train.telemetry import token_decoder

        tokenizer = seam.tokenizer(config)
        STATE.decode = token_decoder(tokenizer) if tokenizer is not None else None
    return STATE.decode


def run_step(worker: Any, data: Any, update: Callable[[], Any]) -> Any:
    """Run verl's update (`update()`) as one telemetry step of this rank; returns verl's output."""
    config = seam.actor_config(worker)
    if config is None or not _enabled(config):
        return update()
    from dhpo_suite.train.telemetry import TelemetryAccumulator

    verl_step = seam.global_step(data)  # read before verl's update consumes the batch
    group = seam.data_parallel_group(worker)
    ids, size, prompts = _response_ids(data, group, config)
    verl_batch.set_response_ids(data, ids)
    acc = TelemetryAccumulator(_spec(config, data), decode=_decoder(config))
    _add_rollout(acc, data, ids, size)
    STATE.step = StepTelemetry(acc)
    try:
        output = update()
    finally:
        STATE.step = None
    run_dir = str(config.policy_loss.run_dir)
    # verl's global_steps (the trainer's, carried by the batch); without it, count updates (steps start at 1)
    step = verl_step if verl_step is not None else STATE.steps_done.get(run_dir, STATE.resumed_at) + 1
    merged = _gather(acc, group)
    if merged is not None and seam.writes_outputs(worker):
        grad_norms, lrs = seam.step_metric(output, "grad_norm"), seam.step_metric(output, "lr")
        record = merged.to_record(step, grad_norm=sum(grad_norms) / len(grad_norms) if grad_norms else None,
                                  lr=lrs[-1] if lrs else None, decode=acc.decode)
        _attach_prompts(record, prompts, size)
        _writer(config, merged.spec).write_step(record)
    STATE.steps_done[run_dir] = step
    return output


def _rows(out: ObjectiveOutput, keep: Tensor) -> ObjectiveOutput:
    """ObjectiveOutput `out` restricted to rows `keep`: every (B, ...) tensor, branches included."""
    import torch

    from dhpo_suite.train.objectives.output import Branch

    def pick(v: Any) -> Any:
        return v[keep] if isinstance(v, torch.Tensor) and v.dim() >= 1 and v.shape[0] == keep.shape[0] else v

    branches = {name: Branch(pick(b.ratio), b.low, b.high, pick(b.clip_low), pick(b.clip_high))
                for name, b in out.branches.items()}
    fields = {f.name: pick(getattr(out, f.name)) for f in dataclasses.fields(out) if f.name != "branches"}
    return dataclasses.replace(out, branches=branches, **fields)


def _gather(acc: TelemetryAccumulator, group: Any) -> TelemetryState | None:
    """Merged TelemetryState on rank 0 of `group`, None elsewhere (exact merge of the partials)."""
    import torch.distributed as dist

    from dhpo_suite.train.telemetry import reduce_across_ranks

    if not dist.is_initialized() or dist.get_world_size(group) == 1:
        return acc.state()
    return reduce_across_ranks(acc, group, dst=0)


def _writer(config: Any, spec: TelemetrySpec) -> RunWriter:
    """This process's RunWriter of the run (opened once, resuming the launcher's run directory)."""
    from dhpo_suite.runs import RunWriter

    run_dir = str(config.policy_loss.run_dir)
    if run_dir not in STATE.writers:
        STATE.writers[run_dir] = RunWriter(run_dir, _manifest(config, spec), resume=True)
    return STATE.writers[run_dir]


def _manifest(config: Any, spec: TelemetrySpec) -> Manifest:
    """The run's manifest: the launcher's (if it wrote one) or one built from the actor config."""
    from dhpo_suite.runs import Manifest, read_manifest, run_hparams
    from dhpo_suite.runs.format import manifest_path
    from dhpo_suite.train.verl_backend.hparams import objective_hparams, verl_shared_hparams

    run_dir = Path(config.policy_loss.run_dir)
    if manifest_path(run_dir).exists():
        return read_manifest(run_dir)
    name = objective_of(config.policy_loss.loss_mode)
    assert name is not None  # only runs with a dhpo_suite loss write (_enabled)
    model = getattr(getattr(config, "model_config", None), "path", "") or ""
    return Manifest(
        algorithm=name,
        hparams=run_hparams(objective_hparams(name, config, config.loss_agg_mode), verl_shared_hparams(config)),
        model=str(model),
        backend="verl",
        telemetry=spec.to_dict(),
    )


# ---- checkpoints ----
def note_checkpoint_loaded(local_path: str) -> None:
    """verl resumed from `.../global_step_N/...`: the next step is N+1."""
    step = seam.global_step_of(local_path)
    if step is not None:
        STATE.resumed_at = step
        STATE.steps_done.clear()


def export_checkpoint(worker: Any, local_path: str, global_step: int) -> Path | None:
    """Expose verl's HF export of a checkpoint as the run directory's `checkpoints/step-NNNNNN/` (hard links,
    copies across filesystems), marked complete."""
    import torch.distributed as dist

    config = seam.actor_config(worker)
    if config is None or not _enabled(config) or (dist.is_initialized() and dist.get_rank() != 0):
        return None
    source = seam.hf_export(local_path)
    if source is None:
        return None
    from dhpo_suite.runs import checkpoint_path, mark_checkpoint_complete

    target = checkpoint_path(config.policy_loss.run_dir, global_step)
    link_tree(source, target)
    mark_checkpoint_complete(target, step=int(global_step), source=str(source))
    return target


def link_tree(source: Path, target: Path) -> None:
    """`target` mirrors `source` by hard links (copies across filesystems). A step exported before (a killed job
    that saved it during the reaper's grace, then saved again on resume) is relinked: a file already linked to its
    source is kept, any other is replaced (copying a file onto its own link raised SameFileError)."""

    def link(src: str, dst: str) -> None:
        if os.path.lexists(dst):
            if os.path.exists(dst) and os.path.samefile(src, dst):
                return
            os.unlink(dst)
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, copy_function=link, dirs_exist_ok=True)
