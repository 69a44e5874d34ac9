"""The entropy the verl objectives get without its memory (dhpo_suite/train/entropy.py): the same values as an
fp64 reference and as verl's own `entropy_from_logits`, no gradient, and verl's engine uses it."""

from __future__ import annotations

import math

import pytest
import torch

from dhpo_suite.train.entropy import entropy_without_grad


def _reference(logits: torch.Tensor) -> torch.Tensor:
    """H = -Σ p log p in fp64, from the definition."""
    p = torch.softmax(logits.double(), dim=-1)
    return -(p * torch.log_softmax(logits.double(), dim=-1)).sum(-1)


@pytest.mark.parametrize("vocab", [151936, 1000, 151936 // 64, 37])  # Qwen3's vocabulary; uneven slices; few tokens
def test_equals_the_fp64_reference_and_verls_own_function(vocab):
    from verl.utils.torch_functional import entropy_from_logits

    g = torch.Generator().manual_seed(vocab)
    logits = torch.randn(3, 50, vocab, generator=g) * torch.tensor([0.1, 3.0, 30.0])[:, None, None]  # flat .. peaked
    got = entropy_without_grad(logits)
    assert got.shape == (3, 50) and got.dtype == torch.float32
    torch.testing.assert_close(got.double(), _reference(logits), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got, entropy_from_logits(logits), rtol=1e-4, atol=1e-4)  # verl's fp32 rounding
    assert abs(float(entropy_without_grad(torch.zeros(1, vocab))[0]) - math.log(vocab)) < 1e-5  # uniform: log V


def test_bf16_logits_as_verl_hands_them_and_no_gradient():
    logits = (torch.randn(64, 4096) * 4).to(torch.bfloat16).requires_grad_()
    got = entropy_without_grad(logits, chunk_size=2048)  # verl's chunking keyword is accepted
    assert got.dtype == torch.bfloat16 and not got.requires_grad and got.grad_fn is None
    torch.testing.assert_close(got.double(), _reference(logits.detach()), rtol=1e-2, atol=1e-2)  # bf16's rounding
