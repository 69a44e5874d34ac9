"""Per-token log-probabilities and entropies of responses, one chunk of [tokens x vocab] at a time.

For response token t of row b (input position p = P + t, P the padded prompt length), the logits come
from the hidden state at position p - 1. The LM head and log-softmax run on `chunk_tokens` rows of the
flattened (B*T, H) hidden states at a time, each chunk under activation checkpointing: the forward keeps
only the (chunk, vocab) tensor of the chunk being computed, and the backward recomputes one chunk at a
time. So peak memory is O(chunk * vocab), not O(B * T * vocab) (49 k-vocab SmolLM2: 200 MB per 1 k tokens).
When all of a batch's logits fit in `KEEP_LOGITS_BYTES` (the tiny model's 375-token vocabulary) the chunks
keep their activations instead: nothing to save, and the recompute cost 5 % of the update (same values).

    z = logits / T                                   (T: the sampling temperature, as the sampler and verl do)
    log π(y_t | y_<t) = z_y - logsumexp(z)          (with gradient)
    H_t = logsumexp(z) - Σ_v softmax(z)_v z_v        (detached: DHPO uses sg[H], eq. 10)

Scoring at the temperature the responses were sampled at makes log π_old the sampler's own log-prob
and the ratio π/π_old exactly 1 on-policy; at T ≠ 1 raw logits would score another policy.

Shared prompts: the G responses of a prompt share its P tokens, so the decoder runs each distinct prompt once
(with its KV cache), repeats the cache for the rows that share it, and runs only the response tokens on top
(`share_prompts`). The same function, equal up to fp32 rounding (~1e-5 on log-probs: SDPA's CPU kernel blocks
shorter queries differently; with eager attention the values are bit-identical) and the repeated prompt's
gradients summed in another order (tested); the prompt's share of the update's tokens (37 % in the default
run) is computed once per prompt instead of once per response.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch.utils.checkpoint import checkpoint

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = ["response_logprobs", "chunked_logprobs_entropy"]

KEEP_LOGITS_BYTES = 64 * 2**20  # below this, a batch's fp32 logits are kept for the backward, not recomputed


def _chunk(head: torch.nn.Module, h: torch.Tensor, targets: torch.Tensor,
           temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(n, H) hidden, (n,) targets -> (n,) log-prob with grad, (n,) entropy (computed without grad), at T."""
    logits = head(h)
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))  # bf16 -> fp32, fp64 kept
    if temperature != 1.0:
        logits = logits / temperature
    lse = torch.logsumexp(logits, dim=-1)
    logp = logits.gather(-1, targets[:, None]).squeeze(-1) - lse
    with torch.no_grad():
        probs = torch.softmax(logits, dim=-1)
        entropy = lse - (probs * logits).sum(-1)
    return logp, entropy


def chunked_logprobs_entropy(head: torch.nn.Module, hidden: torch.Tensor, targets: torch.Tensor,
                             chunk_tokens: int = 1024, temperature: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """hidden (N, H), targets (N,) -> log-probs (N,) (differentiable) and entropies (N,) (detached) of
    softmax(logits / temperature)."""
    logps, ents = [], []
    grad = torch.is_grad_enabled() and hidden.requires_grad
    recompute = grad and hidden.shape[0] * _vocab(head) * 4 > KEEP_LOGITS_BYTES
    for start in range(0, hidden.shape[0], chunk_tokens):
        h, y = hidden[start:start + chunk_tokens], targets[start:start + chunk_tokens]
        if recompute:
            lp, ent = checkpoint(_chunk, head, h, y, temperature, use_reentrant=False)
        else:
            lp, ent = _chunk(head, h, y, temperature)
        logps.append(lp)
        ents.append(ent.detach())
    return torch.cat(logps), torch.cat(ents)


def _vocab(head: torch.nn.Module) -> int:
    weight = getattr(head, "weight", None)
    return int(weight.shape[0]) if weight is not None else 1 << 30  # unknown head: always checkpoint


def response_logprobs(model: PreTrainedModel, input_ids: torch.Tensor, attention_mask: torch.Tensor, prompt_len: int,
                      chunk_tokens: int = 1024, temperature: float = 1.0,
                      share_prompts: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """input_ids/attention_mask (B, P + T) with prompts left-padded to P -> log-probs, entropies (B, T),
    both of the policy at `temperature` (pass the rollout's sampling temperature).

    `model` is a transformers causal LM (`model.model` the decoder, `model.lm_head` the head).
    `share_prompts`: run each distinct prompt once (module docstring); False runs every row whole.
    """
    body, head = model.get_decoder(), model.get_output_embeddings()
    positions = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)  # left padding: positions start at 0
    B, T = input_ids.shape[0], input_ids.shape[1] - prompt_len
    shared = _distinct_prompts(input_ids, attention_mask, prompt_len) if share_prompts and T > 0 else None
    if shared is None:
        hidden = body(input_ids=input_ids, attention_mask=attention_mask, position_ids=positions).last_hidden_state
        h = hidden[:, prompt_len - 1:-1]
    else:
        h = _shared_prompt_hidden(model, body, input_ids, attention_mask, positions, prompt_len, *shared)
    h = h.reshape(B * T, -1)
    y = input_ids[:, prompt_len:].reshape(B * T)
    logp, ent = chunked_logprobs_entropy(head, h, y, chunk_tokens, temperature)
    return logp.view(B, T), ent.view(B, T)


def _distinct_prompts(input_ids: torch.Tensor, attention_mask: torch.Tensor,
                      P: int) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(U,) row index of each distinct prompt (ids and padding), (B,) which of them each row has; None when
    no two rows share a prompt (nothing to save)."""
    key = torch.cat([input_ids[:, :P], attention_mask[:, :P].to(input_ids.dtype)], dim=1)
    _, inverse = torch.unique(key, dim=0, return_inverse=True)
    U = int(inverse.max()) + 1
    if U == input_ids.shape[0]:
        return None
    dev = input_ids.device
    first = torch.full((U,), input_ids.shape[0], dtype=torch.long, device=dev).scatter_reduce(
        0, inverse, torch.arange(input_ids.shape[0], device=dev), reduce="amin")
    return first, inverse


def _shared_prompt_hidden(model: PreTrainedModel, body: torch.nn.Module, input_ids: torch.Tensor,
                          attention_mask: torch.Tensor, positions: torch.Tensor, P: int, first: torch.Tensor,
                          inverse: torch.Tensor) -> torch.Tensor:
    """(B, T, H) hidden states at positions P-1 .. P+T-2 (those that predict response tokens 0 .. T-1):
    the distinct prompts' forward with a KV cache, the cache repeated per row, then the response tokens."""
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    prompt = body(input_ids=input_ids[first, :P], attention_mask=attention_mask[first, :P],
                  position_ids=positions[first, :P], past_key_values=cache, use_cache=True).last_hidden_state
    cache.batch_select_indices(inverse)  # (U, ...) -> (B, ...): a differentiable gather per layer
    resp = body(input_ids=input_ids[:, P:], attention_mask=attention_mask, position_ids=positions[:, P:],
                past_key_values=cache, use_cache=True).last_hidden_state
    return torch.cat([prompt[inverse, P - 1:], resp[:, :-1]], dim=1)
