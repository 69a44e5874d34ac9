"""The tests' oracle: a plain-numpy reduction of one micro-batch, written apart from the torch telemetry.

`add_update_numpy` takes the same per-token quantities as an ObjectiveOutput (as numpy arrays, branches as dicts
with the Branch fields: ratio, low, high, clip_low, clip_high) and adds them to a TelemetryState the way
`dhpo_suite.train.telemetry.TelemetryAccumulator.add_update` must on the device: it derives the clip flags, the
token-metric sums, histograms, outliers and samples itself, for clarity (whole-array numpy, full sorts), not speed.
Token metrics registered after this oracle was written come in as per-token values (`token_metrics`), so the
oracle still checks how they are masked, summed and merged.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from dhpo_suite.runs.records import CLIP_FLAG_BITS
from dhpo_suite.train.telemetry.bins import entropy_coarse_edges
from dhpo_suite.train.telemetry.metrics import TOKEN_METRICS
from dhpo_suite.train.telemetry.state import SIGNS, TelemetryState, sample_key

__all__ = ["add_update_numpy", "numpy_branches"]

_FLAGS = ("outside_low", "outside_high", "binding_low", "binding_high")


def numpy_branches(out) -> dict[str, dict]:
    """An ObjectiveOutput's branches as the dicts of numpy arrays `add_update_numpy` takes."""
    def arr(t):
        return None if t is None else t.numpy()

    return {k: {"ratio": b.ratio.numpy(), "low": b.low, "high": b.high, "clip_low": arr(b.clip_low),
                "clip_high": arr(b.clip_high)} for k, b in out.branches.items()}


def _with_flags(br: Mapping, m: np.ndarray) -> dict:
    """The branch plus its four flags: outside = beyond a bound, binding = the objective's clip mask (valid only)."""
    none = np.zeros(m.shape, dtype=bool)
    if br["low"] is None and br["high"] is None:
        return {**br, **dict.fromkeys(_FLAGS, none)}
    r = np.asarray(br["ratio"])
    dt = r.dtype  # compare in the ratio's own precision, as torch does with a Python bound
    return {**br,
            "outside_low": m & (r < dt.type(br["low"])), "outside_high": m & (r > dt.type(br["high"])),
            "binding_low": none if br.get("clip_low") is None else m & br["clip_low"],
            "binding_high": none if br.get("clip_high") is None else m & br["clip_high"]}


def _kept(branches: Mapping[str, Mapping], w: np.ndarray | None) -> np.ndarray:
    """κ per token, written from docs/run-format.md's definition of clip/kept_share (one pass per case)."""
    def clips(br):
        return br.get("clip_low") is not None or br.get("clip_high") is not None

    def acts(br):
        z = np.zeros(np.shape(br["ratio"]), dtype=bool)
        return (z if br.get("clip_low") is None else br["clip_low"]) | (z if br.get("clip_high") is None
                                                                         else br["clip_high"])

    if "mixed" in branches and w is not None:
        mix, tok, seq = branches["mixed"], branches["token"], branches["sequence"]
        if not clips(tok):  # unified: the clipped mix has no gradient
            return np.where(acts(mix), 0.0, 1.0)
        r, s, wd = (np.asarray(x, dtype=np.float64) for x in (tok["ratio"], seq["ratio"], w))
        r_in = (r >= tok["low"]) & (r <= tok["high"])
        s_in = (s >= seq["low"]) & (s <= seq["high"])
        frac = (wd * r * r_in + (1 - wd) * s * s_in) / np.asarray(mix["ratio"], dtype=np.float64)
        return np.where(acts(mix), frac, 1.0)
    gone = np.zeros(np.shape(next(iter(branches.values()))["ratio"]), dtype=bool)
    for br in branches.values():
        if clips(br):
            gone |= acts(br)
    return np.where(gone, 0.0, 1.0)


def _bins(edges: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Bin [e_i, e_i+1) of each value; out-of-range values land in the end bins."""
    return np.searchsorted(edges[1:-1], np.asarray(x, dtype=np.float64), side="right")


def _hist(st: TelemetryState, name: str, idx: np.ndarray, n: int, sel: np.ndarray) -> None:
    st.add_hist(name, np.bincount(idx[sel].reshape(-1), minlength=n)[:n])


def add_update_numpy(
    st: TelemetryState,
    *,
    mask: np.ndarray,
    advantages: np.ndarray,
    log_ratio: np.ndarray,
    branches: Mapping[str, Mapping[str, np.ndarray | float | None]],
    response_ids: np.ndarray,
    loss_mat: np.ndarray | None = None,
    entropy: np.ndarray | None = None,
    w: np.ndarray | None = None,
    token_ids: np.ndarray | None = None,
    log_prob: np.ndarray | None = None,
    old_log_prob: np.ndarray | None = None,
    epoch: int = 0,
    nonfinite: int = 0,
    token_metrics: Mapping[str, np.ndarray] | None = None,
) -> None:
    """Numpy version of TelemetryAccumulator.add_update; all arrays (B, T) except response_ids (B,).

    token_metrics: per-token values (B, T) of registered token metrics this oracle has no formula for."""
    if st.spec.epochs == "first" and epoch > 0:
        return
    m = np.asarray(mask, dtype=bool)
    for b, br in branches.items():
        st.set_bounds(b, br["low"], br["high"])
    branches = {b: _with_flags(br, m) for b, br in branches.items()}
    kept = _kept(branches, w)
    _token_metrics(st, m, log_ratio, loss_mat, {"clip/kept_share": kept, **(token_metrics or {})})
    _token_stats(st, m, advantages, branches, entropy, w, nonfinite)
    for b, br in branches.items():  # κ summed over the tokens where branch b's clip binds
        st.add_sum(f"kept/{b}", float(kept[br["binding_low"] | br["binding_high"]].sum()))
    _histograms(st, m, advantages, branches, entropy, w)
    rids = np.asarray(response_ids, dtype=np.int64)
    if st.spec.top_k:
        _outliers(st, m, advantages, log_ratio, branches, entropy, w, rids, token_ids, epoch)
    if st.spec.n_samples:
        if log_prob is None and old_log_prob is not None:
            log_prob = old_log_prob + log_ratio
        _samples(st, m, advantages, branches, entropy, w, rids, token_ids, log_prob, old_log_prob, epoch)


def _token_metrics(st, m, log_ratio, loss_mat, given) -> None:
    lr = np.asarray(log_ratio, dtype=np.float64)
    own = {"loss/token_mean": loss_mat if loss_mat is not None else np.zeros(m.shape),
           "kl/k1": -lr, "kl/k3": np.expm1(lr) - lr}  # the definitions in docs/run-format.md
    for name in TOKEN_METRICS:
        if name not in own and name not in given:
            raise KeyError(f"the oracle has no formula for token metric {name!r}: pass its values in token_metrics")
        values = own[name] if name in own else given[name]
        st.add_sum(name, float(np.where(m, np.asarray(values, dtype=np.float64), 0.0).sum()))


def _token_stats(st, m, adv, branches, entropy, w, nonfinite) -> None:
    def total(x):
        return float(np.where(m, np.asarray(x, dtype=np.float64), 0.0).sum())

    st.add_count("tokens", m.sum())
    st.add_count("nonfinite", nonfinite)
    a = np.asarray(adv, dtype=np.float64)
    st.add_sum("adv", total(a))
    st.add_sum("adv_sq", total(a * a))
    st.add_count("adv_pos", (m & (a > 0)).sum())
    st.add_count("adv_neg", (m & (a < 0)).sum())
    if m.any():
        st.add_extrema("adv", a[m].min(), a[m].max())
    for b, br in branches.items():
        st.add_sum(f"ratio/{b}", total(br["ratio"]))
        for f in _FLAGS:
            st.add_count(f"clip/{b}/{f}", (m & br[f]).sum())
    if entropy is not None:
        st.add_count("entropy_tokens", m.sum())
        st.add_sum("entropy", total(entropy))
        st.add_count("entropy_below_0.01", (m & (entropy < 0.01)).sum())
    if w is not None:
        st.add_count("w_tokens", m.sum())
        st.add_sum("w", total(w))


def _histograms(st, m, adv, branches, entropy, w) -> None:
    sign = np.where(adv > 0, 0, np.where(adv < 0, 1, 2))
    for b, br in branches.items():
        edges = st.edges(f"log_ratio/{b}/pos")[0]
        idx = _bins(edges, np.log(np.maximum(np.asarray(br["ratio"], dtype=np.float64), 1e-300)))
        for s, sname in enumerate(SIGNS):
            _hist(st, f"log_ratio/{b}/{sname}", idx, len(edges) - 1, m & (sign == s))
    if w is not None:
        edges = st.edges("w")[0]
        _hist(st, "w", _bins(edges, w), len(edges) - 1, m)
    if entropy is None:
        return
    edges = st.edges("entropy")[0]
    _hist(st, "entropy", _bins(edges, entropy), len(edges) - 1, m)
    ce = entropy_coarse_edges()
    ie, ne = _bins(ce, entropy), len(ce) - 1
    pe = st.edges("entropy_x_position")[1]
    pos = np.broadcast_to(np.arange(m.shape[1]), m.shape)
    ip, npos = _bins(pe, pos), len(pe) - 1
    _hist(st, "entropy_x_position", ie * npos + ip, ne * npos, m)
    le = st.edges("log_ratio/token/pos")[0]
    tok = np.log(np.maximum(np.asarray(branches["token"]["ratio"], dtype=np.float64), 1e-300))
    il, nl = _bins(le, tok), len(le) - 1
    _hist(st, "entropy_x_log_ratio", ie * nl + il, ne * nl, m)


def _distance(br) -> np.ndarray:
    logr = np.log(np.maximum(np.asarray(br["ratio"], dtype=np.float32), np.float32(1e-30)))
    lo, hi = math.log(max(br["low"], 1e-30)), math.log(br["high"])
    d = np.where(br["outside_low"], lo - logr, np.where(br["outside_high"], logr - hi, 0.0))
    return np.maximum(d.astype(np.float32), 0.0)


def _outliers(st, m, adv, log_ratio, branches, entropy, w, rids, token_ids, epoch) -> None:
    n_ctx = st.spec.context_tokens
    ends = np.where(m.any(-1), m.shape[1] - np.argmax(m[:, ::-1], -1), 0)
    for b, br in branches.items():
        if br["low"] is None or br["high"] is None:
            continue
        dist = _distance(br)
        outside = np.asarray(br["outside_low"]) | np.asarray(br["outside_high"])
        if b == "sequence":
            rows = np.nonzero(outside.any(-1))[0]
            pos = np.argmax(np.where(m, np.abs(log_ratio), -1.0), -1)[rows]
        else:
            rows, pos = np.nonzero(outside)
        d = dist.max(-1)[rows] if b == "sequence" else dist[rows, pos]
        top = np.lexsort((pos, rids[rows], -d.astype(np.float64)))[: st.spec.top_k]  # the outlier_order
        rows, pos = rows[top], pos[top]
        cands = []
        for r, p in zip(rows.tolist(), pos.tolist()):
            a, e = max(0, p - n_ctx), min(int(ends[r]), p + 1 + n_ctx)
            c = {
                "side": "low" if br["outside_low"][r, p] else "high",
                "distance": float(dist[r].max() if b == "sequence" else dist[r, p]),
                "log_ratio": float(np.log(max(float(br["ratio"][r, p]), 1e-300))),
                "binding": bool(br["binding_low"][r, p] or br["binding_high"][r, p]),
                "response_id": int(rids[r]), "position": int(p), "epoch": int(epoch),
                "advantage": float(adv[r, p]),
                "entropy": None if entropy is None else float(entropy[r, p]),
                "w": None if w is None else float(w[r, p]),
                "token_id": None if token_ids is None else int(token_ids[r, p]),
            }
            if token_ids is not None:
                c.update(ctx_left_ids=token_ids[r, a:p].tolist(), ctx_right_ids=token_ids[r, p + 1 : e].tolist())
            cands.append(c)
        st.offer_outliers(b, cands)


def clip_codes_numpy(br) -> np.ndarray:
    code = np.zeros(np.shape(br["ratio"]), dtype=np.int8)
    for name, bit in CLIP_FLAG_BITS.items():
        code |= np.asarray(br[name], dtype=np.int8) * bit
    return code


def _samples(st, m, adv, branches, entropy, w, rids, token_ids, log_prob, old_log_prob, epoch) -> None:
    arrays = {"log_prob": log_prob, "old_log_prob": old_log_prob, "entropy": entropy, "w": w,
              "token_ratio": branches["token"]["ratio"], "seq_ratio": branches["sequence"]["ratio"],
              "mixed_ratio": branches["mixed"]["ratio"] if "mixed" in branches else None}
    codes = {f"clip_{b}": clip_codes_numpy(branches[b]) if b in branches else None
             for b in ("token", "sequence", "mixed")}
    drawn = {r for r, rid in enumerate(rids.tolist()) if st.would_keep_sample(rid, epoch)}
    wanted = st.wanted_outlier_responses()
    of_outliers = {r for r, rid in enumerate(rids.tolist()) if (rid, epoch) in wanted}
    for r, rid in enumerate(rids.tolist()):
        if r not in drawn and r not in of_outliers:
            continue
        end = int(m.shape[1] - np.argmax(m[r, ::-1])) if m[r].any() else 0
        cand = {
            "response_id": rid, "epoch": int(epoch), "key": sample_key(rid, st.spec.sample_seed),
            "advantage": float(adv[r, int(np.argmax(m[r]))]), "length": int(m[r].sum()),
            "token_id": None if token_ids is None else token_ids[r, :end].tolist(), "token_text": None,
        }
        cand.update({k: None if v is None else np.asarray(v[r, :end], dtype=np.float32).tolist()
                     for k, v in arrays.items()})
        cand.update({k: None if v is None else v[r, :end].tolist() for k, v in codes.items()})
        if r in drawn:
            st.offer_sample(cand)
        if r in of_outliers:
            st.offer_outlier_sample(cand)
