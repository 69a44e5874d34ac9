"""The run directory's checkpoints come from verl's HF export, wherever verl 0.9.1 writes it: FSDP at
`<ckpt>/huggingface` (fsdp_checkpoint_manager), Megatron's layout v2 at `<ckpt>/model/huggingface` (verl's
`get_hf_model_checkpoint_path`; `dhpo-suite eval --run` found nothing there before)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dhpo_suite.train.verl_backend import seam


def _megatron(ckpt: Path) -> Path:
    # verl 0.9.1, verl/utils/megatron_utils.py, get_hf_model_checkpoint_path: "``model/huggingface/`` —
    # HuggingFace-format weights, config, and tokenizer. Historically this lived at ``<checkpoint>/huggingface``;
    # as of layout schema v2 it is nested under ``model/``." (The module imports Megatron: not importable here.)
    return ckpt / "model" / "huggingface"


@pytest.mark.parametrize("layout", ["fsdp", "megatron"])
def test_hf_export_is_found_in_either_layout(layout, tmp_path, tiny_model_dir):
    from transformers import AutoModelForCausalLM

    ckpt = tmp_path / "global_step_3" / "actor"
    target = ckpt / "huggingface" if layout == "fsdp" else _megatron(ckpt)
    assert seam.hf_export(str(ckpt)) is None  # nothing written yet
    target.mkdir(parents=True)
    (target / "config.json").write_text((tiny_model_dir / "config.json").read_text())
    assert seam.hf_export(str(ckpt)) is None  # a config alone is no model
    AutoModelForCausalLM.from_pretrained(tiny_model_dir).save_pretrained(target)
    found = seam.hf_export(str(ckpt))
    assert found == target
    assert AutoModelForCausalLM.from_pretrained(found).config.model_type == "qwen3"
    assert seam.global_step_of(str(ckpt)) == 3
