"""TelemetrySpec: what the telemetry records each step and at which resolution.

It is part of the run format: the writer stores it in manifest.json (`telemetry`), and readers (the dashboard)
use it to interpret the histogram layout. The reductions that follow it live in `dhpo_suite.train.telemetry`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["TelemetrySpec"]


@dataclass(frozen=True)
class TelemetrySpec:
    """What the telemetry records each step and at which resolution (written into the manifest)."""

    top_k: int = 32
    """Outlier tokens kept per branch (largest distance outside the trust region)."""
    context_tokens: int = 8
    """Tokens of context kept on each side of an outlier token."""
    n_samples: int = 4
    """Full responses kept per step (chosen by a hash of the response id: a uniform, mergeable draw)."""
    outlier_responses: int = 16
    """Responses of the farthest outlier tokens kept in full per step (distinct response and pass, in outlier
    order across branches), so an outlier opens its response; 0: none. Bounds the samples file on long
    responses (all of 3 × top_k could be ~60 MB a step at 16K tokens)."""
    sample_seed: int = 0
    """Seed of the sample-selection hash."""
    max_response_length: int = 4096
    """Upper edge of the response-length and position bins (longer values land in the last bin)."""
    epochs: str = "all"
    """Which PPO passes count: "all" (every update pass; counts are token-passes) or "first" (epoch 0)."""
    correct_threshold: float = 0.5
    """A response is correct when its reward is > this (for the all-correct / all-wrong group fractions)."""
    entropy_bins_per_decade: int = 50
    weight_bins: int = 500
    log_ratio_inside_bins: int = 40
    log_ratio_outside_bins: int = 40
    position_bins: int = 64
    length_bins: int = 64

    def __post_init__(self) -> None:
        if self.epochs not in ("all", "first"):
            raise ValueError(f"TelemetrySpec.epochs must be 'all' or 'first', got {self.epochs!r}")
        for field in ("top_k", "n_samples", "outlier_responses", "max_response_length", "entropy_bins_per_decade",
                      "weight_bins"):
            if getattr(self, field) < 0:
                raise ValueError(f"TelemetrySpec.{field} must be >= 0, got {getattr(self, field)}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "TelemetrySpec":
        return cls(**d)
