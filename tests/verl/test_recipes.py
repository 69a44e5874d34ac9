"""examples/verl/*.sh, the paper's runs as plain verl launches: each script, expanded by bash as a user runs it,
composed by verl's own Hydra and checked by verl's validate_config, trains the paper's settings (Appendix D,
typed in test_presets.py), and the files are what the generator writes (they cannot drift)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from dhpo_suite.train.verl_backend.presets import PRESETS
from dhpo_suite.train.verl_backend.recipes import FAMILIES, recipe
from tests.verl.test_plain_verl import _main_config, _verl_validate
from tests.verl.test_presets import APPENDIX_D, BATCHES, DHPO_SEQUENCE_BRANCH, EQS_3_6_7_AGGREGATION

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "verl"
SCRIPTS = [(preset, family) for preset in sorted(PRESETS) for family in FAMILIES]


def test_the_scripts_are_the_generators_output():
    on_disk = sorted(p.name for p in EXAMPLES.glob("*.sh"))
    assert on_disk == sorted(f"run_{family}_{preset}.sh" for preset, family in SCRIPTS)
    for preset, family in SCRIPTS:
        path = EXAMPLES / f"run_{family}_{preset}.sh"
        assert path.read_text() == recipe(preset, family), f"{path.name}: regenerate with the command in its header"
        assert os.access(path, os.X_OK)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path_factory.mktemp("recipe-data")
    for name in ("train", "val"):
        pq.write_table(pa.table({"prompt": ["What is 1 + 1?"] * 512, "answer": ["2"] * 512}), root / f"{name}.parquet")
    return root


def _expanded(script: Path, env: dict[str, str]) -> list[str]:
    """The arguments bash hands to `python3` when the script runs (python3 replaced by a printer)."""
    printer = 'python3() { printf "%s\\0" "$@"; }; export -f python3; exec bash "$0"'
    out = subprocess.run(["bash", "-c", printer, str(script)], env={**os.environ, **env}, capture_output=True,
                         check=True).stdout.decode()
    args = out.split("\0")[:-1]
    assert args[:2] == ["-m", "verl.trainer.main_ppo"]
    return args[2:]


@pytest.mark.parametrize("preset, family", SCRIPTS)
def test_each_script_trains_the_papers_settings(preset, family, data, tmp_path, capsys):
    loss = "dhpo-a" if family == "dhpo" and preset == "qwen3-4b" else FAMILIES[family]  # LOSS= picks DHPO-A
    env = {"DATA": str(data), "RUN_DIR": str(tmp_path / "run"), **({"LOSS": loss} if family == "dhpo" else {})}
    cfg = _main_config(_expanded(EXAMPLES / f"run_{family}_{preset}.sh", env))
    _verl_validate(cfg)
    table = capsys.readouterr().out
    actor = cfg.actor_rollout_ref.actor
    assert actor.policy_loss.loss_mode == f"dhpo_suite.{loss}"
    assert "paper default (verl's YAML" not in table  # the script spells every setting itself
    if loss in APPENDIX_D:
        assert (actor.clip_ratio_low, actor.clip_ratio_high) == APPENDIX_D[loss]
    if family == "dhpo":
        assert (actor.policy_loss.hparams.seq_eps_low, actor.policy_loss.hparams.seq_eps_high) == DHPO_SEQUENCE_BRANCH
        assert actor.policy_loss.hparams.mixing == ("avg" if loss == "dhpo-a" else "entropy")
    assert actor.loss_agg_mode == EQS_3_6_7_AGGREGATION and actor.calculate_entropy
    # Appendix D's protocol, shared by every algorithm.
    assert (actor.optim.lr, actor.optim.lr_warmup_steps, actor.optim.weight_decay) == (1e-6, 10, 0.1)
    assert (actor.ppo_mini_batch_size, actor.ppo_micro_batch_size_per_gpu) == BATCHES[preset]
    rollout = cfg.actor_rollout_ref.rollout
    assert (rollout.n, rollout.temperature, rollout.top_p) == (16, 1.0, 1.0) and cfg.data.train_batch_size == 512
    assert rollout.max_model_len >= cfg.data.max_prompt_length + cfg.data.max_response_length
    assert actor.policy_loss.run_dir == str(tmp_path / "run")
    # Telemetry's truncation budget is the rollout's, on every rank (the plugin's check writes it, issue 42).
    assert actor.policy_loss.telemetry.max_response_length == cfg.data.max_response_length == 4096
    assert "rollout.n           16                     actor_rollout_ref.rollout.n" in table
