"""Prompts shared by a group's responses run once (rollout prefill and scoring): the same function as running
every row whole, checked against transformers' own full forward and `generate` on the tiny model."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="module")
def model_tok(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(1)
    return AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval(), AutoTokenizer.from_pretrained(tiny_model_dir)


def _prompts(tok) -> list[list[int]]:
    """Three prompts of unequal lengths (left padding), as the trainer encodes them."""
    return [tok(t)["input_ids"] for t in ("Compute 1 + 2.", "Compute 12 - 3 + 4 - 5.", "What is 7?")]


def test_shared_prefill_samples_what_generate_samples(model_tok):
    """The same seed draws the same tokens with the prompt cache as transformers' `generate` on whole rows, from
    the same processed scores (up to fp32 rounding), at T = 1 and T = 0.7; G = 1 (held-out) shares nothing."""
    from dhpo_suite.train.embedded.rollout import _prompt_cache, sample

    model, tok = model_tok
    for temperature, seed in ((1.0, 0), (0.7, 4)):
        plain = sample(model, tok, _prompts(tok), 4, 16, temperature=temperature, seed=seed, keep_log_probs=True,
                       share_prompts=False)
        shared = sample(model, tok, _prompts(tok), 4, 16, temperature=temperature, seed=seed, keep_log_probs=True)
        assert int(plain.lengths.sum()) > 30 and plain.attention_mask[:, 0].eq(0).any()  # padded rows exist
        assert torch.equal(shared.input_ids, plain.input_ids) and shared.texts == plain.texts
        m = plain.response_mask
        torch.testing.assert_close(shared.sampler_log_prob[m], plain.sampler_log_prob[m], atol=5e-5, rtol=1e-5)
    assert _prompt_cache(model, _prompts(tok), 1, tok.pad_token_id) is None


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_shared_prompt_scoring_equals_the_full_forward(tiny_model_dir, model_tok, attn):
    """log-probs and entropies with each distinct prompt run once equal those of transformers' full forward of
    every row (fp64 log-softmax of its logits), for a mini-batch mixing groups; and the gradients equal those
    of scoring every row whole (the repeated prompt's gradients summed in another order)."""
    from transformers import AutoModelForCausalLM

    from dhpo_suite.train.embedded.logprobs import response_logprobs
    from dhpo_suite.train.embedded.rollout import sample

    _, tok = model_tok
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, attn_implementation=attn).eval()
    roll = sample(model, tok, _prompts(tok), 4, 16, seed=2)
    rows = torch.tensor([0, 1, 3, 4, 6, 7, 8, 11])  # 2 + 1 + 2 + ... responses of each prompt, as a shuffle gives
    ids, att, P = roll.input_ids[rows], roll.attention_mask[rows], roll.prompt_len
    m = roll.response_mask[rows]
    with torch.no_grad():
        lp, ent = response_logprobs(model, ids, att, P, chunk_tokens=5)
        logits = model(input_ids=ids[:, :-1], attention_mask=att[:, :-1],
                       position_ids=(att[:, :-1].cumsum(-1) - 1).clamp(min=0)).logits[:, P - 1:].double()
    ref = torch.log_softmax(logits, -1)
    torch.testing.assert_close(lp[m].double(), ref.gather(-1, ids[:, P:, None]).squeeze(-1)[m], atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(ent[m].double(), -(ref.exp() * ref).sum(-1)[m], atol=2e-5, rtol=1e-5)

    grads = []
    for share in (True, False):
        model.zero_grad()
        lp, _ = response_logprobs(model, ids, att, P, chunk_tokens=5, share_prompts=share)
        (lp * m * torch.linspace(-1, 1, len(rows))[:, None]).sum().backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    assert grads[1].abs().max() > 0
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-4, atol=1e-5 * float(grads[1].abs().max()))
