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


def test_a_step_exported_twice_is_relinked_not_copied_onto_itself(tmp_path):
    """A killed verl job can save and export a step during the reaper's grace; the resumed job saves it again.
    The second export used to copy each file onto its own hard link (shutil.SameFileError; CI, 2026-11-29)."""
    from dhpo_suite.train.verl_backend.rank_telemetry import link_tree

    source, target = tmp_path / "global_step_13" / "huggingface", tmp_path / "checkpoints" / "step-000013"
    source.mkdir(parents=True)
    (source / "config.json").write_text("{}")
    (source / "model.safetensors").write_bytes(b"first")
    link_tree(source, target)
    link_tree(source, target)  # the same files again: kept as they are
    assert (target / "config.json").samefile(source / "config.json")
    (source / "model.safetensors").unlink()  # a save that writes new files: the export follows them
    (source / "model.safetensors").write_bytes(b"second")
    link_tree(source, target)
    assert (target / "model.safetensors").read_bytes() == b"second"
    assert (target / "model.safetensors").samefile(source / "model.safetensors")
