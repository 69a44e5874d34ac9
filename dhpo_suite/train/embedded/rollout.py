"""Rollout: G samples per prompt at the run's temperature (the paper's 1.0 by default) with Hugging Face
`generate` (KV cache). The rollout records its temperature: the update scores π_old, π and the entropy at it.

The G rows of a prompt share its tokens: the prompt's KV cache (all but its last token) is computed once per
prompt and repeated for its rows before `generate` (`share_prompts`), which then runs the last prompt token and
the decode steps as usual. Same sampling: the same processed scores up to fp32 rounding, the same seeded draws.

Why HF generate and not vLLM on CPU: docs/train.md, "Rollout engine" (measured by benchmarks/train.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from transformers import DynamicCache, PreTrainedModel, PreTrainedTokenizerBase

__all__ = ["Rollout", "encode_prompts", "sample"]


@dataclass(frozen=True)
class Rollout:
    """N = n_prompts * G responses; the G responses of a prompt are contiguous (response id = p*G + j)."""

    input_ids: torch.Tensor  # (N, P + T) left-padded prompt followed by the right-padded response
    attention_mask: torch.Tensor  # (N, P + T) 1 on prompt and response tokens (eos included)
    prompt_len: int  # P
    response_mask: torch.Tensor  # (N, T) bool: response tokens up to and including the first eos
    lengths: torch.Tensor  # (N,) int64 valid response tokens
    truncated: torch.Tensor  # (N,) bool: no eos within max_new_tokens
    texts: list[str]  # N decoded responses (special tokens removed)
    temperature: float = 1.0  # the sampling temperature: log-probs and entropies are computed at it
    sampler_log_prob: torch.Tensor | None = None  # (N, T) the sampler's own log-probs (keep_log_probs=True)

    @property
    def response_ids(self) -> torch.Tensor:
        return self.input_ids[:, self.prompt_len:]


def encode_prompts(tokenizer: PreTrainedTokenizerBase, messages: list[list[dict]]) -> list[list[int]]:
    """Chat-template each conversation (with the generation prompt) into token ids."""
    texts = [tokenizer.apply_chat_template(m, tokenize=False, add_generation_prompt=True) for m in messages]
    return [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]


def _left_pad(rows: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(map(len, rows))
    ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows])
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
    return ids, mask


def _prompt_cache(model: PreTrainedModel, prompts: list[list[int]], group_size: int, pad: int) -> DynamicCache | None:
    """A DynamicCache of each prompt's first P - 1 (left-padded) tokens, computed once and repeated for its
    `group_size` rows; None when there is nothing to share (G = 1 or one-token prompts)."""
    from transformers import DynamicCache

    ids, mask = (t.to(model.device) for t in _left_pad(prompts, pad))
    if group_size == 1 or ids.shape[1] < 2:
        return None
    cache = DynamicCache(config=model.config)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)  # as generate's: pad positions do not matter (masked)
    model.get_decoder()(input_ids=ids[:, :-1], attention_mask=mask[:, :-1], position_ids=positions[:, :-1],
                        past_key_values=cache, use_cache=True)
    cache.batch_repeat_interleave(group_size)
    return cache


@torch.no_grad()
def sample(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, prompts: list[list[int]], group_size: int,
           max_new_tokens: int, *,
           temperature: float = 1.0, seed: int = 0, keep_log_probs: bool = False,
           share_prompts: bool = True) -> Rollout:
    """Sample `group_size` responses for each prompt (token ids), top-p 1.0, no top-k, seeded.

    keep_log_probs: also return the log-probs of the sampled tokens under the very scores `generate` drew
    them from (after its temperature), for checking the trainer's scoring; costs (steps, N, vocab) memory.
    share_prompts: prefill each prompt once for its G rows (module docstring); False prefills every row.
    """
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    pad = eos if pad is None else pad
    rows = [p for p in prompts for _ in range(group_size)]
    ids, mask = (t.to(model.device) for t in _left_pad(rows, pad))
    torch.manual_seed(seed)  # seeds the CPU and every CUDA generator
    was_training = model.training
    model.eval()
    cache = _prompt_cache(model, prompts, group_size, pad) if share_prompts else None
    out = model.generate(input_ids=ids, attention_mask=mask, do_sample=True, temperature=temperature,
                         top_p=1.0, top_k=0, max_new_tokens=max_new_tokens, eos_token_id=eos,
                         pad_token_id=pad, use_cache=True, output_scores=keep_log_probs,
                         return_dict_in_generate=True, **({"past_key_values": cache} if cache is not None else {}))
    model.train(was_training)
    P = ids.shape[1]
    seqs = out.sequences
    resp = seqs[:, P:]
    is_eos = resp == eos
    # tokens up to and including the first eos are the response; generate pads the rest.
    response_mask = (is_eos.long().cumsum(-1) - is_eos.long()) == 0
    lengths = response_mask.sum(-1)
    truncated = ~is_eos.any(-1)
    full_mask = torch.cat([mask, response_mask.long()], dim=-1)
    texts = tokenizer.batch_decode(torch.where(response_mask, resp, pad), skip_special_tokens=True)
    sampler_lp = None
    if keep_log_probs:  # scores[k]: the processed logits step k sampled from
        scores = torch.stack(out.scores, dim=1).float()
        sampler_lp = torch.log_softmax(scores, -1).gather(-1, resp[..., None]).squeeze(-1)
    return Rollout(seqs, full_mask, P, response_mask, lengths, truncated, texts, float(temperature), sampler_lp)
