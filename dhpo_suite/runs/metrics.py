"""The metric namespace: every scalar a step record can hold, with a one-line definition (STYLE 12).

Mirrored in docs/run-format.md. `{b}` is a branch: token, sequence, mixed (mixed only for DHPO). A column
that is absent was not measured (e.g. entropy when the backend passes none, w for non-DHPO objectives).
Token counts are token-passes when TelemetrySpec.epochs == "all" and a step runs several PPO epochs.
The values are computed in `dhpo_suite.train.telemetry` (its step-metric registries refuse a name missing here);
docs/run-format.md shows adding one.
"""

from __future__ import annotations

__all__ = ["METRICS", "BRANCHES"]

BRANCHES = ("token", "sequence", "mixed")

_BASE = {
    "tokens/count": "valid (masked-in, finite) response tokens seen by the update passes",
    "tokens/nonfinite": "valid tokens dropped because an input was NaN/inf",
    "responses/count": "responses reported by add_rollout",
    "groups/count": "prompt groups reported by add_rollout",
    "loss/token_mean": "mean per-token loss (loss_mat) over valid tokens",
    "entropy/mean": "mean token entropy (nats)",
    "entropy/p10": "10th percentile of token entropy (from the 50-bins-per-decade histogram)",
    "entropy/p50": "median token entropy (histogram percentile)",
    "entropy/p90": "90th percentile of token entropy (histogram percentile)",
    "entropy/p99": "99th percentile of token entropy (histogram percentile)",
    "entropy/frac_below_0.01": "fraction of tokens with entropy < 0.01 nats (exact count)",
    "length/mean": "mean response length (tokens)",
    "length/p50": "median response length (exact)",
    "length/p90": "90th percentile of response length (exact)",
    "length/max": "longest response (tokens)",
    "length/truncated_frac": "fraction of responses cut at the length limit",
    "reward/mean": "mean reward per response",
    "reward/std": "standard deviation of reward per response",
    "groups/all_correct_frac": "fraction of groups whose responses are all correct (reward > threshold)",
    "groups/all_wrong_frac": "fraction of groups whose responses are all wrong",
    "adv/mean": "mean advantage over valid tokens",
    "adv/std": "standard deviation of advantage over valid tokens",
    "adv/min": "smallest advantage",
    "adv/max": "largest advantage",
    "adv/pos_frac": "fraction of valid tokens with A > 0",
    "adv/neg_frac": "fraction of valid tokens with A < 0",
    "adv/zero_frac": "fraction of valid tokens with A = 0 (e.g. all-correct/all-wrong groups)",
    "kl/k1": "approximate KL(π_old‖π) = mean(−log r) over valid tokens (k1 estimator)",
    "kl/k3": "approximate KL(π_old‖π) = mean(r − 1 − log r) (k3 estimator, ≥ 0)",
    "w/mean": "mean mixing weight w (DHPO)",
    "w/p10": "10th percentile of w (500-bin histogram)",
    "w/p50": "median of w (500-bin histogram)",
    "w/p25": "25th percentile of w (500-bin histogram)",
    "w/p75": "75th percentile of w (500-bin histogram)",
    "w/p90": "90th percentile of w (500-bin histogram)",
    "clip/kept_share": "mean over valid tokens of κ, the share of a token's policy gradient its objective's clip kept "
                       "(1 unclipped; GRPO 0 or 1; DHPO branch clipping fractional; telemetry/kept.py)",
    "grad_norm": "gradient norm before clipping, as passed by the backend",
    "lr": "learning rate, as passed by the backend",
}

_PER_BRANCH = {
    "ratio/{b}/mean": "mean importance ratio of branch {b}",
    "clip/{b}/outside_low": "fraction of valid tokens whose {b} ratio is below 1−ε_low",
    "clip/{b}/outside_high": "fraction of valid tokens whose {b} ratio is above 1+ε_high",
    "clip/{b}/binding_low": "fraction of valid tokens where the low clip of {b} removes the gradient (A<0 side)",
    "clip/{b}/binding_high": "fraction of valid tokens where the high clip of {b} removes the gradient (A>0 side)",
    "clip/{b}/binding": "binding_low + binding_high of branch {b}",
    "clip/{b}/binding_kept": "mean κ (clip/kept_share) over the tokens where the clip of {b} binds: what a "
                             "'binding' token of {b} still keeps (GRPO 0; DHPO branch clipping > 0)",
}

METRICS: dict[str, str] = {**_BASE, **{k.format(b=b): v.format(b=b) for b in BRANCHES for k, v in _PER_BRANCH.items()}}

