"""Per-step telemetry on the training device: ObjectiveOutput micro-batches -> one mergeable StepRecord.

    acc = TelemetryAccumulator(TelemetrySpec(max_response_length=4096), decode=token_decoder(tokenizer))
    acc.add_rollout(rewards, lengths, truncated, group_size, response_ids=rids)   # once per step (per rank)
    for micro in micro_batches:                                                   # every update pass
        out = objective(lp, old_lp, adv, mask, entropy)
        acc.add_update(out, response_ids=micro.rids, token_ids=micro.tokens, old_log_prob=old_lp, epoch=e)
    record = acc.to_record(step, grad_norm=gn, lr=lr)                             # RunWriter.write_step(record)

Each micro-batch is reduced over its valid tokens only (one gather; padding costs nothing after it):
counts, float64 sums and fixed-bin histograms (bincount) stay on the device until `state()`; outlier
candidates (only tokens outside a trust region are examined) and sample rows, a few per micro-batch,
come to the host. Cost: ~1 % of an embedded-trainer micro-step (benchmarks/telemetry.py). Which passes count:
TelemetrySpec.epochs = "all" (default: every PPO pass, counts are token-passes, like verl's pg_clipfrac
averaged over mini-batches) or "first" (epoch 0 only). Samples keep the latest epoch seen per response.

Across data-parallel ranks: `acc.state()` is a numpy TelemetryState; `.to_bytes()` ships it, `merge` adds it
(exact for counts, histograms, percentiles, outliers and samples), `reduce_across_ranks` does both with
torch.distributed. Response ids must be unique within a step across ranks; the group of a response is
`group_ids` or response_id // group_size (use response_id = prompt_index * group_size + j).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import torch

from dhpo_suite.runs.records import StepRecord
from dhpo_suite.runs.telemetry_spec import TelemetrySpec
from dhpo_suite.train.objectives.output import ObjectiveOutput
from dhpo_suite.train.telemetry.bins import entropy_coarse_edges, length_edges
from dhpo_suite.train.telemetry.flags import ClipFlags, clip_flags
from dhpo_suite.train.telemetry.metrics import TOKEN_METRICS, Tokens
from dhpo_suite.train.telemetry.select import offer_outliers, offer_samples
from dhpo_suite.train.telemetry.state import SIGNS, Decode, TelemetryState

__all__ = ["TelemetryAccumulator", "reduce_across_ranks", "token_decoder"]

Gather = Callable[[torch.Tensor], torch.Tensor]
"""A (B, T) tensor -> its valid tokens as a 1-D tensor (one index_select)."""
ENTROPY_LOW = 0.01  # nats: the "collapsed token" threshold of entropy/frac_below_0.01


class TelemetryAccumulator:
    """Accumulates one step's telemetry (one rank). See the module docstring for the call sequence."""

    def __init__(self, spec: TelemetrySpec | None = None, *, decode: Decode | None = None):
        self.spec = spec or TelemetrySpec()
        self.decode = decode
        self.reset()

    def reset(self) -> None:
        """Start a new step."""
        self._state = TelemetryState(self.spec)
        self._dev: dict[str, torch.Tensor] = {}
        self._edges: dict[tuple[str, str], torch.Tensor] = {}

    # ---- inputs ----
    @torch.no_grad()
    def add_update(
        self,
        output: ObjectiveOutput,
        *,
        response_ids: torch.Tensor | Sequence[int],
        token_ids: torch.Tensor | None = None,
        token_texts: Sequence[Sequence[str]] | None = None,
        log_prob: torch.Tensor | None = None,
        old_log_prob: torch.Tensor | None = None,
        epoch: int = 0,
    ) -> None:
        """Record one micro-batch of one update pass.

        output: the objective's result, tensors (B, T) with response token t at column t.
        response_ids: (B,) ints, unique within the step across ranks.
        token_ids (B, T) or token_texts (B lists of T strings): for outlier context and sample text.
        log_prob / old_log_prob (B, T): for samples; log_prob defaults to old_log_prob + log_ratio.
        epoch: PPO pass index (0-based); ignored entirely when spec.epochs == "first" and epoch > 0.
        """
        if self.spec.epochs == "first" and epoch > 0:
            return
        mask = output.response_mask.bool()
        if mask.dim() != 2:
            raise ValueError(f"response_mask must be (B, T), got shape {tuple(mask.shape)}")
        rids = torch.as_tensor(response_ids, dtype=torch.int64).reshape(-1).cpu()
        if rids.numel() != mask.shape[0]:
            raise ValueError(f"response_ids has {rids.numel()} entries for a batch of {mask.shape[0]} rows")
        if rids.unique().numel() != rids.numel():
            raise ValueError("response_ids repeat within a micro-batch; they must be unique within a step")
        for name, br in output.branches.items():
            self._state.set_bounds(name, br.low, br.high)
        flags = {name: clip_flags(br, mask) for name, br in output.branches.items()}
        # Reduce over the valid tokens only (one gather per quantity; padding costs nothing after this).
        sel = mask.reshape(-1).nonzero().squeeze(1)
        v = lambda t: t.reshape(-1).index_select(0, sel)  # noqa: E731
        self._add_token_stats(output, flags, mask, v, Tokens(output, sel))
        self._add_histograms(output, v, sel % mask.shape[1])
        if self.spec.top_k:
            offer_outliers(self._state, output, flags, mask, rids, token_ids, token_texts, epoch)
        if self.spec.n_samples:
            if log_prob is None and old_log_prob is not None:
                log_prob = old_log_prob + output.log_ratio
            offer_samples(self._state, output, flags, mask, rids, token_ids, token_texts, log_prob, old_log_prob,
                          epoch)

    def add_rollout(
        self,
        rewards: Any,
        lengths: Any,
        truncated: Any,
        group_size: int,
        *,
        response_ids: Any = None,
        group_ids: Any = None,
        correct: Any = None,
    ) -> None:
        """Per-response facts of the step's rollout (N,): reward, length in tokens, truncated flag.

        `response_ids` default to 0..N-1; `group_ids` (the prompt of each response) default to
        response_id // group_size; `correct` defaults to reward > spec.correct_threshold.
        """
        rewards = _np(rewards, np.float64)
        n = len(rewards)
        lengths, truncated = _np(lengths, np.int64), _np(truncated, bool)
        rids = np.arange(n, dtype=np.int64) if response_ids is None else _np(response_ids, np.int64)
        correct = rewards > self.spec.correct_threshold if correct is None else _np(correct, bool)
        if group_size < 1:
            raise ValueError(f"add_rollout: group_size must be >= 1, got {group_size}")
        groups = rids // int(group_size) if group_ids is None else _np(group_ids, np.int64)
        checks = (("lengths", lengths), ("truncated", truncated), ("response_ids", rids), ("correct", correct),
                  ("group_ids", groups))
        for name, arr in checks:
            if arr.shape != (n,):
                raise ValueError(f"add_rollout: {name} has shape {arr.shape}, expected ({n},) like rewards")
        self._state.add_responses(
            response_id=rids, reward=rewards, length=lengths, truncated=truncated, correct=correct, group_id=groups
        )

    # ---- outputs ----
    def state(self) -> TelemetryState:
        """The numpy partial of this rank (moves device counters to the host); keeps accumulating after."""
        for key, t in self._dev.items():
            kind, name = key.split(":", 1)
            if kind == "h":
                self._state.add_hist(name, t.cpu().numpy())
            elif kind == "c":
                self._state.add_count(name, int(t))
            elif kind == "s":
                self._state.add_sum(name, float(t))
            elif kind == "min":
                self._state.add_extrema(name, float(t), float(self._dev[f"max:{name}"]))
        self._dev = {}
        return self._state

    def merge(self, other: "TelemetryAccumulator | TelemetryState") -> "TelemetryAccumulator":
        """Add another rank's accumulator or (deserialised) state into this one; returns self."""
        theirs = other.state() if isinstance(other, TelemetryAccumulator) else other
        self.state().merge(theirs)
        return self

    def to_record(
        self, step: int, grad_norm: float | None = None, lr: float | None = None, extra: dict | None = None
    ) -> StepRecord:
        """The StepRecord of everything added (and merged) so far."""
        return self.state().to_record(step, grad_norm=grad_norm, lr=lr, decode=self.decode, extra=extra)

    # ---- device-side reductions ----
    def _add(self, kind: str, name: str, value: torch.Tensor) -> None:
        key = f"{kind}:{name}"
        old = self._dev.get(key)
        if old is None:
            self._dev[key] = value.clone()
        elif kind == "min":
            self._dev[key] = torch.minimum(old, value)
        elif kind == "max":
            self._dev[key] = torch.maximum(old, value)
        else:
            self._dev[key] = old + value

    def _add_token_stats(
        self, out: ObjectiveOutput, flags: dict[str, ClipFlags], mask: torch.Tensor, v: Gather, tokens: Tokens
    ) -> None:
        """Counts and float64 sums over the valid tokens; `v(t)` gathers t's valid tokens as a 1-D tensor."""
        f64 = torch.float64
        self._add("c", "tokens", mask.count_nonzero())
        self._add("c", "nonfinite", out.nonfinite.reshape(()).long())
        for name, metric in TOKEN_METRICS.items():  # summed here, divided by the step's tokens in the record
            self._add("s", name, metric(tokens).sum())
        adv = tokens.advantages
        self._add("s", "adv", adv.sum())
        self._add("s", "adv_sq", (adv * adv).sum())
        self._add("c", "adv_pos", (adv > 0).sum())
        self._add("c", "adv_neg", (adv < 0).sum())
        if adv.numel():
            self._add("min", "adv", adv.min())
            self._add("max", "adv", adv.max())
        for b, br in out.branches.items():
            self._add("s", f"ratio/{b}", v(br.ratio).sum(dtype=f64))
            for side in ("outside_low", "outside_high", "binding_low", "binding_high"):
                # Clip flags are False on masked tokens (clip_flags): no gather needed.
                self._add("c", f"clip/{b}/{side}", getattr(flags[b], side).count_nonzero())
            binding = v(flags[b].binding_low | flags[b].binding_high)
            self._add("s", f"kept/{b}", (tokens.kept * binding).sum())  # over binding tokens: clip/{b}/binding_kept
        if out.entropy is not None:
            self._add("c", "entropy_tokens", mask.count_nonzero())
            ent = v(out.entropy)
            self._add("s", "entropy", ent.sum(dtype=f64))
            self._add("c", f"entropy_below_{ENTROPY_LOW}", (ent < ENTROPY_LOW).sum())
        if out.mix_weight is not None:
            self._add("c", "w_tokens", mask.count_nonzero())
            self._add("s", "w", v(out.mix_weight).sum(dtype=f64))

    def _bins(self, name: str, x: torch.Tensor) -> tuple[torch.Tensor, int]:
        """Bin index of every element of x (bins [e_i, e_i+1), out-of-range values in the end bins)."""
        key = (name, str(x.device))
        if key not in self._edges:
            if name == "entropy_coarse":
                edges = entropy_coarse_edges()
            elif name == "position":
                edges = length_edges(self.spec.max_response_length, self.spec.position_bins)
            else:
                edges = self._state.edges(name)[0]
            self._edges[key] = torch.as_tensor(edges[1:-1], dtype=torch.float64, device=x.device)
        inner = self._edges[key]
        return torch.bucketize(x.double(), inner, right=True), inner.numel() + 1

    def _hist(self, name: str, idx: torch.Tensor, n: int) -> None:
        self._add("h", name, torch.bincount(idx, minlength=n)[:n])

    def _add_histograms(self, out: ObjectiveOutput, v: Gather, positions: torch.Tensor) -> None:
        adv = v(out.advantages)
        sign = torch.where(adv > 0, 0, torch.where(adv < 0, 1, 2))  # pos, neg, zero
        token_idx = None
        for b, br in out.branches.items():
            idx, n = self._bins(f"log_ratio/{b}/pos", v(br.ratio).double().clamp_min(1e-300).log())
            token_idx = (idx, n) if b == "token" else token_idx
            counts = torch.bincount(sign * n + idx, minlength=3 * n)
            for s, sname in enumerate(SIGNS):  # one pass for the three advantage signs
                self._add("h", f"log_ratio/{b}/{sname}", counts[s * n : (s + 1) * n])
        if out.mix_weight is not None:
            self._hist("w", *self._bins("w", v(out.mix_weight)))
        if out.entropy is None:
            return
        ent = v(out.entropy)
        self._hist("entropy", *self._bins("entropy", ent))
        ie, ne = self._bins("entropy_coarse", ent)
        ip, npos = self._bins("position", positions)
        self._hist("entropy_x_position", ie * npos + ip, ne * npos)
        if token_idx is not None:  # the contract always has a token branch; stay safe without one
            il, nl = token_idx
            self._hist("entropy_x_log_ratio", ie * nl + il, ne * nl)


def _np(x: Any, dtype: type) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    return np.asarray(x).astype(dtype).reshape(-1)


def token_decoder(tokenizer: Any) -> Decode:
    """A Decode callback for a Hugging Face tokenizer: each id decoded on its own (readable pieces)."""
    return lambda ids: tokenizer.batch_decode([[int(i)] for i in ids])


def reduce_across_ranks(acc: TelemetryAccumulator, group: Any = None, dst: int = 0) -> TelemetryState | None:
    """Gather every rank's state of `group` on its rank `dst` (the rank within `group`, e.g. a data-parallel
    subgroup; global rank for the default group) and merge them; None on the other ranks."""
    import torch.distributed as dist

    rank = dist.get_rank(group)  # rank within the group; -1 outside it
    if rank < 0:
        return None
    blob = acc.state().to_bytes()
    gathered: list[Any] = [None] * dist.get_world_size(group)
    dist.gather_object(blob, gathered if rank == dst else None, group=group, group_dst=dst)
    if rank != dst:
        return None
    merged = TelemetryState(acc.spec)
    for b in gathered:
        merged.merge(TelemetryState.from_bytes(b))
    return merged
