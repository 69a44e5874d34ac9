"""Which runs the Sweep page averages together (science/groups.py): runs are grouped by every setting that
differs between them, read from manifests as the embedded trainer writes them (TrainConfig.to_dict() as the
config, the objective's hparams plus lr and group size), never by the algorithm name alone."""

from __future__ import annotations

import dataclasses

from dhpo_suite.science.groups import differing, group_labels, one_apart, one_apart_from, run_settings, seed_means
from dhpo_suite.train.embedded.config import TrainConfig


def manifest(algo: str = "grpo", seed: int = 0, **changes) -> dict:
    """A manifest as the embedded trainer writes it (run_setup.py): hparams and the resolved config."""
    cfg = dataclasses.replace(TrainConfig(algo=algo, seed=seed, out=f"runs/{algo}-s{seed}"), **changes)
    hparams = {"eps_low": 0.2, "eps_high": 0.28, "lr": cfg.lr, "group_size": cfg.group_size, "precision": "fp32"}
    if algo.startswith("dhpo"):
        hparams |= {"clip": cfg.clip or "branch", "mixing": "entropy"}
    return {"algorithm": algo, "hparams": hparams, "model": "tiny", "task": cfg.task, "backend": "embedded",
            "seed": seed, "config": cfg.to_dict()}


def labels(manifests: dict[str, dict]) -> dict[str, str]:
    settings = {r: run_settings(m) for r, m in manifests.items()}
    base = {r: m["algorithm"] + (f"-{m['hparams']['clip']}" if "clip" in m["hparams"] else "")
            for r, m in manifests.items()}  # compare.run_label's rule
    return group_labels(settings, base)


def test_the_per_seed_warm_start_directory_is_not_a_setting():
    """The tiny model's SFT warm start is one cache entry per seed: the manifest's resolved model path differs by
    seed while the run's --model (the config's) does not."""
    runs = {f"grpo-s{s}": {**manifest(seed=s), "model": f"/cache/tiny-arithmetic-sft-{s}"} for s in range(2)}
    assert set(labels(runs).values()) == {"grpo"}


def test_seeds_output_folders_threads_and_devices_do_not_split_a_group():
    runs = {f"grpo-s{s}": manifest(seed=s, threads=1 + s, device=["cpu", "auto", "cuda"][s], eval_every=5 + s)
            for s in range(3)}
    assert differing({r: run_settings(m) for r, m in runs.items()}) == []
    assert set(labels(runs).values()) == {"grpo"}


def test_the_issue_30_case_an_lr_2e3_grpo_run_is_not_averaged_with_the_lr_1e4_seeds():
    runs = {f"grpo-s{s}": manifest(seed=s) for s in range(3)}
    runs |= {f"dhpo-e-s{s}": manifest("dhpo-e", seed=s) for s in range(3)}
    runs["grpo-lr2e-3"] = manifest(seed=0, lr=2e-3)
    got = labels(runs)
    assert got["grpo-lr2e-3"] == "grpo · lr=0.002"
    assert {got[f"grpo-s{s}"] for s in range(3)} == {"grpo · lr=0.0001"}
    assert {got[f"dhpo-e-s{s}"] for s in range(3)} == {"dhpo-e-branch · lr=0.0001"}


def test_a_setting_only_one_algorithm_has_splits_only_that_algorithm():
    avg = manifest("dhpo-e")
    avg["hparams"]["mixing"] = "avg"
    runs = {"grpo": manifest(), "dhpo-e-a": manifest("dhpo-e"), "dhpo-e-b": manifest("dhpo-e", clip="unified"),
            "dhpo-e-c": avg}
    got = labels(runs)
    assert got["grpo"] == "grpo"  # no "mixing=—" on a GRPO run: GRPO has no mixing weight
    assert got["dhpo-e-a"] == "dhpo-e-branch · mixing=entropy"
    assert got["dhpo-e-b"] == "dhpo-e-unified"  # its own group already
    assert got["dhpo-e-c"] == "dhpo-e-branch · mixing=avg"
    runs["dhpo-e-c"] = manifest("dhpo-e", temperature=0.7)  # a setting every run has is named on every run
    assert labels(runs)["grpo"] == "grpo · temperature=1"


def test_every_setting_that_differs_is_named_model_task_and_steps_too():
    runs = {"a": manifest(), "b": manifest(steps=100), "c": manifest(task="word-problems")}
    runs["d"] = manifest(model="smollm2-135m")  # --model: the config's name (the top-level path may differ)
    got = labels(runs)
    assert got["a"] == "grpo · model=tiny · steps=30 · task=arithmetic"
    assert len(set(got.values())) == 4


def test_paired_differences_pair_only_groups_one_setting_apart():
    """Issue 43: the Sweep page paired groups that differ in lr, task and model at once. DHPO's own settings
    (clip mode, mixing) belong to its algorithm: DHPO-E against GRPO at the same lr is one setting apart."""
    grpo, dhpo = run_settings(manifest("grpo")), run_settings(manifest("dhpo-e"))
    assert one_apart(grpo, dhpo) == "algorithm"
    assert one_apart(grpo, run_settings(manifest("grpo", lr=2e-3))) == "lr"
    assert one_apart(grpo, run_settings(manifest("dhpo-e", lr=2e-3))) is None  # two changes at once
    assert one_apart(grpo, run_settings(manifest("grpo", seed=3))) is None  # the same group
    settings = {"g": grpo, "d": dhpo, "gl": run_settings(manifest("grpo", lr=2e-3)),
                "dl": run_settings(manifest("dhpo-e", lr=2e-3))}
    names = {"g": "grpo", "d": "dhpo-e", "gl": "grpo · lr=0.002", "dl": "dhpo-e · lr=0.002"}
    assert one_apart_from("grpo", settings, names) == {"dhpo-e": "algorithm", "grpo · lr=0.002": "lr"}
    assert one_apart_from("nobody", settings, names) == {}


def test_seed_means_average_a_groups_runs_with_a_t_interval():
    """Dynamics' "Mean across seeds" (issue 43): per group and step, the mean over its runs and its 95 %
    t-interval, mean ± t(0.975, n−1)·sd/√n; a step only one run logged has no interval."""
    import pandas as pd
    import pytest

    frame = pd.DataFrame({"run": ["a0", "a1", "a2", "b0", "a0"], "step": [1, 1, 1, 1, 2],
                          "m": [1.0, 2.0, 3.0, 5.0, 4.0]})
    out = seed_means(frame, {"a0": "A", "a1": "A", "a2": "A", "b0": "B"}, ["m"]).set_index(["run", "step"])
    # by hand: mean 2, sd 1, n 3, t(0.975, 2) = 4.302653
    assert out.loc[("A", 1), "m"] == 2.0 and out.loc[("A", 1), "m n"] == 3
    assert out.loc[("A", 1), "m hi"] == pytest.approx(2.0 + 4.302653 / 3 ** 0.5, abs=1e-5)
    assert out.loc[("A", 1), "m lo"] == pytest.approx(2.0 - 4.302653 / 3 ** 0.5, abs=1e-5)
    assert out.loc[("B", 1), "m"] == 5.0 and pd.isna(out.loc[("B", 1), "m lo"])
    assert out.loc[("A", 2), "m"] == 4.0 and out.loc[("A", 2), "m n"] == 1
