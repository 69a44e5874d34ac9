"""verl 0.9.1's batch layout, read: the fields of one actor update's batch and of a loss call's micro-batch.

Beside the seam (seam/: what we patch and read in verl), this is the other half of what the backend knows of
verl's internals: padded (B, T) tensors from the legacy trainer, jagged nested tensors from the v1 trainer's
TransferQueue, non-tensor fields (raw prompts, reward-model records) as numpy arrays, NonTensorStacks or lists.
A verl upgrade means auditing both (docs/verl.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dhpo_suite.train.verl_backend.names import RID_KEY

if TYPE_CHECKING:
    import torch
    from torch import Tensor

    from dhpo_suite.train.verl_backend.seam import MicroBatch

__all__ = ["REWARD_KEYS", "micro_batch_rows", "padded", "prompts_and_golds", "real_rows", "response_mask",
           "rollout_rewards", "set_response_ids", "strings"]

REWARD_KEYS = ("token_level_scores", "rm_scores", "token_level_rewards")
"""Where the reward lives, first present wins: legacy trainer, v1 trainer (agent-loop scores), KL-shaped."""


def micro_batch_rows(mb: MicroBatch, width: int) -> tuple[Tensor, Tensor | None, Tensor | None] | None:
    """(response ids (B,), token ids (B, width) or None, old log-probs (B, width) or None) of a micro-batch
    that carries response ids (None otherwise): what telemetry needs beside the loss's ObjectiveOutput."""
    data = mb.data
    if RID_KEY not in data.keys():
        return None
    ids = data[RID_KEY].reshape(-1).cpu()
    responses = padded(data["responses"], 0)
    tokens = responses[:, :width] if responses.shape[-1] >= width else None
    stored = data.get("old_log_probs", None)
    stored = None if stored is None else padded(stored, 0.0)
    old = stored[:, :width] if stored is not None and stored.shape[-1] >= width else None
    return ids, tokens, old


def padded(value: Any, fill: float = 0) -> torch.Tensor:
    """A batch field as a padded (B, T) tensor: the v1 trainer hands jagged nested tensors (TransferQueue)."""
    return value.to_padded_tensor(fill) if getattr(value, "is_nested", False) else value


def _objects(data: Any, key: str) -> list | None:
    """A non-tensor field as a Python list (numpy array, NonTensorStack or list, depending on the path)."""
    from tensordict import NonTensorData  # type: ignore[import-untyped]

    if key not in data.keys():
        return None
    value = data[key]
    value = value.tolist() if hasattr(value, "tolist") else list(value)
    return [v.data if isinstance(v, NonTensorData) else v for v in value]


def strings(data: Any, key: str) -> list[str] | None:
    values = _objects(data, key)
    return None if values is None else [str(v) for v in values]


def real_rows(data: Any) -> torch.Tensor:
    """(N,) bool: rows with at least one response token (False for the v1 trainer's padding rows)."""
    return response_mask(data).sum(-1) > 0


def response_mask(data: Any) -> torch.Tensor:
    return padded(data["response_mask"])


def rollout_rewards(data: Any) -> torch.Tensor | None:
    """(N,) float64: each row's reward, Σ over the response of the first reward field present like verl's own
    score metrics (the agent loop puts the score on the last token); None without a reward field."""
    key = next((k for k in REWARD_KEYS if k in data.keys()), None)
    return None if key is None else padded(data[key], 0.0).sum(-1).double()


def set_response_ids(data: Any, ids: torch.Tensor) -> None:
    """Attach response ids (N,) to the batch: they travel with the rows through verl's reshuffles to the loss."""
    data[RID_KEY] = ids


def _last_user_turn(messages: Any) -> str | None:
    if isinstance(messages, str):
        return messages
    if hasattr(messages, "tolist"):
        messages = messages.tolist()
    users = [m.get("content") for m in messages or [] if isinstance(m, dict) and m.get("role") == "user"]
    return str(users[-1]) if users else None


def _gold(reward_model: Any) -> str | None:
    truth = reward_model.get("ground_truth") if isinstance(reward_model, dict) else None
    if truth is not None and hasattr(truth, "tolist"):  # a list column comes back from Parquet as a numpy array
        truth = truth.tolist()
    if isinstance(truth, (list, tuple)):
        return " | ".join(str(t) for t in truth) or None
    return None if truth is None else str(truth)


def prompts_and_golds(data: Any) -> tuple[list[str | None], list[str | None]] | None:
    """Each row's problem (the last user turn of verl's `raw_prompt`, the chat RLHFDataset built) and gold
    answer (`reward_model.ground_truth`, what the reward grades against); None when the batch has neither."""
    raw, rm = _objects(data, "raw_prompt"), _objects(data, "reward_model")
    if raw is None and rm is None:
        return None
    n = len(raw) if raw is not None else len(rm or [])
    prompts: list[str | None] = [_last_user_turn(r) for r in raw] if raw is not None else [None] * n
    golds: list[str | None] = [_gold(r) for r in rm] if rm is not None else [None] * n
    return prompts, golds


