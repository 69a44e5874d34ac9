"""Per-token log-probabilities and entropies of responses, one chunk of [tokens x vocab] at a time.

For response token t of row b (input position p = P + t, P the padded prompt length), the logits come
from the hidden state at position p - 1. The LM head and log-softmax run on `chunk_tokens` rows of the
flattened (B*T, H) hidden states at a time, each chunk under activation checkpointing: the forward keeps
only the (chunk, vocab) tensor of the chunk being computed, and the backward recomputes one chunk at a
time. So peak memory is O(chunk * vocab), not O(B * T * vocab) (49 k-vocab SmolLM2: 200 MB per 1 k tokens).

    z = logits / T                                   (T: the sampling temperature, as the sampler and verl do)
    log π(y_t | y_<t) = z_y - logsumexp(z)          (with gradient)
    H_t = logsumexp(z) - Σ_v softmax(z)_v z_v        (detached: DHPO uses sg[H], eq. 10)

Scoring at the temperature the responses were sampled at makes log π_old the sampler's own log-prob
and the ratio π/π_old exactly 1 on-policy; at T ≠ 1 raw logits would score another policy.
"""

from __future__ import annotations

import torch
from torch.utils.checkpoint import checkpoint

__all__ = ["response_logprobs", "chunked_logprobs_entropy"]


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
    for start in range(0, hidden.shape[0], chunk_tokens):
        h, y = hidden[start:start + chunk_tokens], targets[start:start + chunk_tokens]
        if grad:
            lp, ent = checkpoint(_chunk, head, h, y, temperature, use_reentrant=False)
        else:
            lp, ent = _chunk(head, h, y, temperature)
        logps.append(lp)
        ents.append(ent.detach())
    return torch.cat(logps), torch.cat(ents)


def response_logprobs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, prompt_len: int,
                      chunk_tokens: int = 1024, temperature: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """input_ids/attention_mask (B, P + T) with prompts left-padded to P -> log-probs, entropies (B, T),
    both of the policy at `temperature` (pass the rollout's sampling temperature).

    `model` is a transformers causal LM (`model.model` the decoder, `model.lm_head` the head).
    """
    body, head = model.get_decoder(), model.get_output_embeddings()
    positions = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)  # left padding: positions start at 0
    hidden = body(input_ids=input_ids, attention_mask=attention_mask, position_ids=positions).last_hidden_state
    B, T = input_ids.shape[0], input_ids.shape[1] - prompt_len
    h = hidden[:, prompt_len - 1:-1].reshape(B * T, -1)
    y = input_ids[:, prompt_len:].reshape(B * T)
    logp, ent = chunked_logprobs_entropy(head, h, y, chunk_tokens, temperature)
    return logp.view(B, T), ent.view(B, T)
