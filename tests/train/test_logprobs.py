"""Chunked log-probs/entropy equal the full log-softmax (values and gradients), and match the sampler."""

from __future__ import annotations

import pytest
import torch

from dhpo_suite.train.embedded.logprobs import chunked_logprobs_entropy, response_logprobs


@pytest.mark.parametrize("recompute", [True, False])
@pytest.mark.parametrize("chunk", [1, 3, 7, 1000])
def test_chunked_equals_full_log_softmax_fp64(chunk, recompute, monkeypatch):
    """Both backward paths: chunks recomputed under activation checkpointing (large vocabularies) or kept."""
    from dhpo_suite.train.embedded import logprobs

    monkeypatch.setattr(logprobs, "KEEP_LOGITS_BYTES", 0 if recompute else 2**30)
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


@pytest.mark.parametrize("temperature", [0.7, 1.6])
def test_the_trainer_scores_exactly_what_it_sampled(tiny_model_dir, temperature):
    """At T != 1 the trainer's log π_old is the sampler's own log-prob of each sampled token (the scores
    `generate` drew it from), and the entropy is that of the same distribution, softmax(logits / T)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from dhpo_suite.train.embedded.rollout import sample
    from dhpo_suite.train.embedded.update import old_logprobs

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    prompts = [tok("Compute 1 + 2.")["input_ids"], tok("Compute 12 - 3 + 4 - 5.")["input_ids"]]
    roll = sample(model, tok, prompts, 3, 16, temperature=temperature, seed=5, keep_log_probs=True)
    m = roll.response_mask
    assert roll.temperature == temperature and int(m.sum()) > 20
    old = old_logprobs(model, roll, chunk_tokens=7)
    torch.testing.assert_close(old[m], roll.sampler_log_prob[m], atol=2e-5, rtol=1e-5)
    # Raw logits (T = 1) would score another policy: far from the sampler's log-probs.
    with torch.no_grad():
        raw, _ = response_logprobs(model, roll.input_ids, roll.attention_mask, roll.prompt_len)
    assert float((raw[m] - roll.sampler_log_prob[m]).abs().max()) > 0.05
    # The entropy the objective gets (DHPO-E's w) is that of softmax(logits / T), from one plain forward.
    with torch.no_grad():
        lp, ent = response_logprobs(model, roll.input_ids, roll.attention_mask, roll.prompt_len,
                                    temperature=temperature)
        logits = model(input_ids=roll.input_ids[:, :-1], attention_mask=roll.attention_mask[:, :-1],
                       position_ids=(roll.attention_mask[:, :-1].cumsum(-1) - 1).clamp(min=0)).logits
    logp_all = torch.log_softmax(logits[:, roll.prompt_len - 1:].double() / temperature, -1)
    ref_ent = -(logp_all.exp() * logp_all).sum(-1)
    torch.testing.assert_close(ent[m].double(), ref_ent[m], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(lp[m], old[m])
