"""Bad input is refused with a clear message; bad numbers are reported, not propagated."""

import pytest
import torch

from dhpo_suite.train.objectives import aggregate, get_objective, group_advantages
from tests.objectives.batches import make_batch


@pytest.mark.parametrize(
    "mutate,match",
    [
        (lambda a: {**a, "old_log_prob": a["old_log_prob"][:, :-1]}, r"old_log_prob has shape"),
        (lambda a: {**a, "advantages": torch.zeros(3)}, r"advantages has shape"),
        (lambda a: {**a, "response_mask": a["response_mask"].double() * 2}, r"boolean-like"),
        (lambda a: {**a, "log_prob": a["log_prob"].long()}, r"floating"),
        (lambda a: {**a, "log_prob": a["log_prob"][0]}, r"\(B, T\)"),
        (lambda a: {**a, "response_mask": a["response_mask"].tolist()}, r"torch.Tensor"),
        (lambda a: {**a, "entropy": a["entropy"][:, :2]}, r"entropy has shape"),
    ],
)
def test_bad_inputs_are_named(mutate, match):
    lp, old, adv, mask, ent = make_batch()
    args = dict(log_prob=lp, old_log_prob=old, advantages=adv, response_mask=mask, entropy=ent)
    with pytest.raises((ValueError, TypeError), match=match):
        get_objective("dhpo-e")(**mutate(args))


def test_entropy_mixing_requires_entropy():
    lp, old, adv, mask, _ = make_batch()
    with pytest.raises(ValueError, match="needs the per-token entropy"):
        get_objective("dhpo-e")(lp, old, adv, mask)


@pytest.mark.parametrize(
    "name,hp,match",
    [
        ("dhpo-x", {}, "unknown objective 'dhpo-x'; known objectives: cispo, dhpo"),
        ("dhpo", {"eps": 0.2}, "has no hyper-parameter 'eps'"),
        ("dhpo", {"clip": "both"}, "clip='both' is not one of branch, unified"),
        ("grpo", {"eps_low": -0.1}, "must be a number >= 0"),
        ("grpo", {"eps_low": 1.5}, "must be <= 1"),
        ("gspo", {"loss_agg_mode": "mean"}, "is not one of token-mean"),
    ],
)
def test_bad_hyperparameters_are_named(name, hp, match):
    with pytest.raises(ValueError, match=match):
        get_objective(name, **hp)


def test_integer_mask_is_accepted():
    lp, old, adv, mask, ent = make_batch()
    a = get_objective("dhpo-e")(lp, old, adv, mask, ent).loss
    b = get_objective("dhpo-e")(lp, old, adv, mask.long(), ent).loss
    torch.testing.assert_close(a, b)


def test_nonfinite_tokens_are_counted_and_excluded():
    lp, old, adv, mask, ent = make_batch(empty_row=False)
    bad_lp = lp.detach().clone()
    bad_lp[0, 0] = float("nan")
    bad_lp[1, 0] = float("-inf")
    bad_lp.requires_grad_(True)
    out = get_objective("dhpo-e")(bad_lp, old, adv, mask, ent)
    assert int(out.nonfinite) == 2
    assert not out.response_mask[0, 0] and not out.response_mask[1, 0]
    (g,) = torch.autograd.grad(out.loss, bad_lp)
    assert torch.isfinite(out.loss) and torch.isfinite(g).all()


def test_extreme_log_ratios_are_clamped_like_verl():
    lp, old, adv, mask, ent = make_batch(empty_row=False)
    out = get_objective("grpo")(lp.detach() + 1000, old, adv, mask)
    assert torch.isfinite(out.loss)
    assert out.log_ratio.max() == 20.0


def test_fully_masked_batch_gives_zero_loss():
    lp, old, adv, mask, ent = make_batch()
    for name in ("grpo", "gspo", "dhpo-e", "gmpo"):
        out = get_objective(name)(lp, old, adv, torch.zeros_like(mask), ent)
        assert out.loss == 0


def test_group_advantages_eq1():
    r = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    a = group_advantages(r, 4)
    g = r[:4]
    torch.testing.assert_close(a[:4], (g - g.mean()) / (g.std() + 1e-6))
    assert (a[4:] == 0).all(), "a zero-variance group carries no signal"
    torch.testing.assert_close(group_advantages(r, 4, std_normalize=False)[:4], g - g.mean())
    with pytest.raises(ValueError, match="groups of group_size=3"):
        group_advantages(r, 3)
    with pytest.raises(ValueError, match="NaN"):
        group_advantages(torch.tensor([1.0, float("nan")]), 2)


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"])
def test_aggregate_by_hand(mode):
    loss = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0], [9.0, 9.0, 9.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0], [0, 0, 0]], dtype=torch.bool)
    expected = {
        "token-mean": (1 + 2 + 3 + 4) / 4,
        "seq-mean-token-mean": (2.0 + 4.0) / 2,
        "seq-mean-token-sum": (6.0 + 4.0) / 2,
        "seq-mean-token-sum-norm": (6.0 + 4.0) / 2 / 3,
    }[mode]
    assert aggregate(loss, mask, mode).item() == pytest.approx(expected, rel=1e-6)
    with pytest.raises(ValueError, match="required when dp_size > 1"):
        aggregate(loss, mask, mode, dp_size=2)
