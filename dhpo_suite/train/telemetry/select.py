"""Outlier tokens and sample responses: pick a few rows of a micro-batch and bring them to the host.

Both selections are exact under merging. Outliers: per branch, the top-K valid tokens outside the trust
region under the total order (log-space distance desc, response id, position, epoch); within a micro-batch
one torch.topk over an int64 key packing (float32 distance bits, rank of (response id, position)) gives the
same order. Samples: the n responses with the smallest splitmix64(response id) key, plus the responses the
kept outlier tokens come from (offered by the same micro-batch as their outliers, so also exact under merging).
"""

from __future__ import annotations

import math
from typing import Sequence

import torch

from dhpo_suite.train.objectives.output import ObjectiveOutput
from dhpo_suite.train.telemetry.flags import ClipFlags, clip_codes
from dhpo_suite.train.telemetry.state import TelemetryState, sample_key

__all__ = ["offer_outliers", "offer_samples"]

_LOW32 = 0xFFFFFFFF


def _distance(ratio: torch.Tensor, low_side: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """float32 log-space distance outside [low, high] of ratios known to be outside (low_side: below)."""
    logr = ratio.float().clamp_min(1e-30).log()
    lo, hi = math.log(max(low, 1e-30)), math.log(high)  # low=0: one-sided region (CISPO)
    return torch.where(low_side, lo - logr, logr - hi).clamp_min(0.0)


def _key(dist: torch.Tensor, local: torch.Tensor) -> torch.Tensor:
    """int64 key ordering by (distance desc, local rank asc). dist >= 0 float32, local < 2**32."""
    bits = dist.float().contiguous().view(torch.int32).long()
    return (bits << 32) | (_LOW32 - local)


def offer_outliers(
    st: TelemetryState,
    out: ObjectiveOutput,
    flags: dict[str, ClipFlags],
    mask: torch.Tensor,
    rids: torch.Tensor,
    token_ids: torch.Tensor | None,
    token_texts: Sequence[Sequence[str]] | None,
    epoch: int,
) -> None:
    """Offer each branch's top-K outside tokens of this micro-batch (only outside tokens are touched)."""
    B, T = mask.shape
    dev = mask.device
    rank = torch.empty(B, dtype=torch.int64, device=dev)
    rank[torch.argsort(rids.to(dev), stable=True)] = torch.arange(B, device=dev)  # rank of each row's response id
    for name, br in out.branches.items():
        if br.low is None or br.high is None:
            continue
        fl = flags[name]
        outside = fl.outside_low | fl.outside_high
        if name == "sequence":  # one ratio per response: a row is the unit, pointing at its most-moved token
            rows = outside.any(-1).nonzero().squeeze(1)
            first = mask[rows].long().argmax(-1)
            dist = _distance(br.ratio[rows, first], fl.outside_low[rows, first], br.low, br.high)
            keys = _key(dist, rank[rows])
            pos = torch.where(mask[rows], out.log_ratio[rows].abs(), -1.0).argmax(-1)
        else:
            flat = outside.reshape(-1).nonzero().squeeze(1)
            rows, pos = flat // T, flat % T
            dist = _distance(br.ratio.reshape(-1)[flat], fl.outside_low.reshape(-1)[flat], br.low, br.high)
            keys = _key(dist, rank[rows] * T + pos)
        if not keys.numel():
            continue
        top = keys.topk(min(st.spec.top_k, keys.numel())).indices
        st.offer_outliers(name, _outlier_rows(out, br.ratio, fl, dist[top], mask, rows[top], pos[top], rids, token_ids,
                                             token_texts, epoch, st.spec.context_tokens))


def _outlier_rows(
    out: ObjectiveOutput,
    ratio: torch.Tensor,
    fl: ClipFlags,
    dist: torch.Tensor,
    mask: torch.Tensor,
    rows: torch.Tensor,
    pos: torch.Tensor,
    rids: torch.Tensor,
    token_ids: torch.Tensor | None,
    token_texts: Sequence[Sequence[str]] | None,
    epoch: int,
    n_ctx: int,
) -> list[dict]:
    """Host-side dicts for the selected (row, pos) tokens, with ±n_ctx tokens of context."""
    vals = {
        "distance": dist.double(),
        "log_ratio": ratio[rows, pos].double().clamp_min(1e-300).log(),
        "binding": (fl.binding_low | fl.binding_high)[rows, pos].double(),
        "low": fl.outside_low[rows, pos].double(),
        "advantage": out.advantages[rows, pos].double(),
        "length": mask[rows].long().cumsum(-1).argmax(-1).double() + 1,  # last valid index + 1
    }
    if out.entropy is not None:
        vals["entropy"] = out.entropy[rows, pos].double()
    if out.mix_weight is not None:
        vals["w"] = out.mix_weight[rows, pos].double()
    host = {k: v.cpu().tolist() for k, v in vals.items()}
    rows_l, pos_l = rows.cpu().tolist(), pos.cpu().tolist()
    ids_rows = None if token_ids is None else token_ids[rows].cpu().tolist()
    result = []
    for i, (r, p) in enumerate(zip(rows_l, pos_l)):
        end = int(host["length"][i])
        a, b = max(0, p - n_ctx), min(end, p + 1 + n_ctx)
        c = {
            "side": "low" if host["low"][i] else "high",
            "distance": host["distance"][i],
            "log_ratio": host["log_ratio"][i],
            "binding": bool(host["binding"][i]),
            "response_id": int(rids[r]),
            "position": p,
            "epoch": int(epoch),
            "advantage": host["advantage"][i],
            "entropy": host["entropy"][i] if "entropy" in host else None,
            "w": host["w"][i] if "w" in host else None,
            "token_id": None if ids_rows is None else int(ids_rows[i][p]),
        }
        if token_texts is not None:
            c.update(token_text=str(token_texts[r][p]), ctx_left_text=list(token_texts[r][a:p]),
                     ctx_right_text=list(token_texts[r][p + 1 : b]))
        if ids_rows is not None:
            c.update(ctx_left_ids=ids_rows[i][a:p], ctx_right_ids=ids_rows[i][p + 1 : b])
        result.append(c)
    return result


def offer_samples(
    st: TelemetryState,
    out: ObjectiveOutput,
    flags: dict[str, ClipFlags],
    mask: torch.Tensor,
    rids: torch.Tensor,
    token_ids: torch.Tensor | None,
    token_texts: Sequence[Sequence[str]] | None,
    log_prob: torch.Tensor | None,
    old_log_prob: torch.Tensor | None,
    epoch: int,
) -> None:
    drawn = [r for r, rid in enumerate(rids.tolist()) if st.would_keep_sample(rid, epoch)]
    # Responses of this micro-batch's kept outlier tokens (offer_outliers ran first on the same rows).
    wanted = st.wanted_outlier_responses()
    of_outliers = [r for r, rid in enumerate(rids.tolist())
                   if (rid, epoch) in wanted and f"{rid}:{epoch}" not in st.outlier_samples]
    rows = sorted(set(drawn) | set(of_outliers))
    if not rows:
        return
    idx = torch.as_tensor(rows, device=mask.device)
    m = mask[idx]
    ends = (m.long().cumsum(-1).argmax(-1) + 1).cpu().tolist()
    first = m.long().argmax(-1)
    adv = out.advantages[idx].gather(1, first[:, None])[:, 0].double().cpu().tolist()
    arrays = {"log_prob": log_prob, "old_log_prob": old_log_prob, "entropy": out.entropy, "w": out.mix_weight}
    for b, key in (("token", "token_ratio"), ("sequence", "seq_ratio"), ("mixed", "mixed_ratio")):
        arrays[key] = out.branches[b].ratio if b in out.branches else None
    host = {k: None if v is None else v[idx].float().cpu() for k, v in arrays.items()}
    for b in ("token", "sequence", "mixed"):
        host[f"clip_{b}"] = clip_codes(flags[b])[idx].cpu() if b in flags else None
    ids = None if token_ids is None else token_ids[idx].cpu()
    for i, r in enumerate(rows):
        rid, end = int(rids[r]), ends[i] if m[i].any() else 0
        cand = {
            "response_id": rid,
            "epoch": int(epoch),
            "key": sample_key(rid, st.spec.sample_seed),
            "advantage": adv[i],
            "length": int(m[i].sum()),
            "token_id": None if ids is None else ids[i, :end].tolist(),
            "token_text": None if token_texts is None else [str(t) for t in token_texts[r][:end]],
        }
        cand.update({k: None if v is None else v[i, :end].tolist() for k, v in host.items()})
        if r in drawn:
            st.offer_sample(cand)
        if r in of_outliers:
            st.offer_outlier_sample(cand)
