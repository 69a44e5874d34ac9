"""Chunked log-probs/entropy equal the full log-softmax (values and gradients), and match the sampler."""

from __future__ import annotations

import pytest
import torch

from dhpo_suite.train.embedded.logprobs import chunked_logprobs_entropy, response_logprobs


@pytest.mark.parametrize("chunk", [1, 3, 7, 1000])
def test_chunked_equals_full_log_softmax_fp64(chunk):
    torch.manual_seed(0)
    head = torch.nn.Linear(8, 11, bias=False).double()
    hidden = torch.randn(10, 8, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(11, (10,))
    logp, ent = chunked_logprobs_entropy(head, hidden, targets, chunk_tokens=chunk)
    logits = head(hidden)
    ref_all = torch.log_softmax(logits, -1)
    ref = ref_all.gather(-1, targets[:, None]).squeeze(-1)
    ref_ent = -(ref_all.exp() * ref_all).sum(-1)
    torch.testing.assert_close(logp, ref)
    torch.testing.assert_close(ent, ref_ent.detach())
    assert not ent.requires_grad
    weights = torch.arange(10, dtype=torch.float64)
    (g,) = torch.autograd.grad((logp * weights).sum(), hidden)
    (g_ref,) = torch.autograd.grad((ref * weights).sum(), hidden)
    torch.testing.assert_close(g, g_ref)


def test_extreme_logits_stay_finite():
    head = torch.nn.Linear(2, 5, bias=False)
    with torch.no_grad():
        head.weight.copy_(torch.tensor([[1e4, 0], [0, 1e4], [-1e4, 0], [0, 0], [5e3, 5e3]]))
    logp, ent = chunked_logprobs_entropy(head, torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.tensor([0, 2]), 1)
    assert torch.isfinite(logp).all() and torch.isfinite(ent).all()
    assert logp[0].item() == pytest.approx(0.0, abs=1e-6) and ent[0].item() == pytest.approx(0.0, abs=1e-6)


def test_response_logprobs_match_the_sampler(tiny_model_dir):
    """log π of sampled tokens recomputed with left padding equals the sampler's own scores."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from dhpo_suite.train.embedded.rollout import sample

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    prompts = [tok("Compute 1 + 2.")["input_ids"], tok("Compute 12 - 3 + 4 - 5.")["input_ids"]]  # unequal lengths
    roll = sample(model, tok, prompts, 2, 12, seed=3)
    torch.manual_seed(3)
    with torch.no_grad():
        lp, ent = response_logprobs(model, roll.input_ids, roll.attention_mask, roll.prompt_len, chunk_tokens=5)
        logits = model(input_ids=roll.input_ids[:, :-1], attention_mask=roll.attention_mask[:, :-1],
                       position_ids=(roll.attention_mask[:, :-1].cumsum(-1) - 1).clamp(min=0)).logits
    ref = torch.log_softmax(logits[:, roll.prompt_len - 1:], -1).gather(-1, roll.response_ids[..., None]).squeeze(-1)
    m = roll.response_mask
    torch.testing.assert_close(lp[m], ref[m], atol=1e-4, rtol=1e-4)
    # The same prompt alone (no padding) gives the same log-probs for its responses: padding is invisible.
    solo = sample(model, tok, prompts[:1], 2, 12, seed=3)
    with torch.no_grad():
        lp_solo, _ = response_logprobs(model, solo.input_ids, solo.attention_mask, solo.prompt_len)
    width = int(solo.response_mask.sum(-1).max())
    assert torch.isfinite(lp_solo).all() and width > 0
    assert (roll.lengths >= 1).all() and (roll.lengths <= 12).all()
    assert torch.equal(roll.truncated, ~(roll.response_ids == tok.eos_token_id).any(-1))
