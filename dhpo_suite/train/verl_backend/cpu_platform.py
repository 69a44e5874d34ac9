"""A CPU platform for verl, so its real FSDP2 engine runs on a laptop or in CI (gloo, no GPU).

verl resolves its device through `verl.plugin.platform` (CUDA, NPU, ROCm built in). This module adds
a "cpu" platform; it is chosen only on request, `VERL_PLATFORM=cpu` (our plugin registers it in
every verl process) or `use_cpu_platform()`, never by auto-detection. verl registers its FSDP
engine for `device=["cuda", "npu"]` only, so `use_cpu_platform()` also sets
`VERL_ENGINE_DEVICE=cuda`, verl's documented override that picks the same engine class.
"""

from __future__ import annotations

import os
import types
from contextlib import contextmanager
from typing import Any, Optional

import torch

__all__ = ["PlatformCPU", "use_cpu_platform"]


def _device_module() -> types.ModuleType:
    """`torch.cpu` plus the CUDA-style calls verl makes (memory stats read 0, cache calls do nothing)."""
    mod = types.ModuleType("dhpo_suite_verl_cpu_device")
    for name in ("synchronize", "current_stream", "stream", "Stream", "Event", "device_count", "is_available"):
        setattr(mod, name, getattr(torch.cpu, name))
    mod.current_device = lambda: 0
    mod.set_device = lambda index: None
    mod.empty_cache = lambda: None
    mod.ipc_collect = lambda: None
    mod.get_device_name = lambda index=0: "cpu"
    mod.set_per_process_memory_fraction = lambda fraction, device=None: None
    mod.get_rng_state = lambda device=None: torch.get_rng_state()
    mod.set_rng_state = lambda state, device=None: torch.set_rng_state(state)
    mod.manual_seed = mod.manual_seed_all = torch.manual_seed
    for stat in ("memory_allocated", "memory_reserved", "max_memory_allocated", "max_memory_reserved"):
        setattr(mod, stat, lambda device=None: 0)
    mod.reset_peak_memory_stats = lambda device=None: None
    mod.mem_get_info = _mem_get_info
    return mod


def _mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of host memory, the CPU analogue of cudaMemGetInfo."""
    import psutil

    vm = psutil.virtual_memory()
    return vm.available, vm.total


def _platform_class():
    from verl.plugin.platform import PlatformBase, PlatformRegistry

    @PlatformRegistry.register(platform="cpu")
    class PlatformCPU(PlatformBase):
        """verl platform for host CPUs: gloo collectives, no accelerator resources in Ray."""

        _module = _device_module()
        device_name = property(lambda self: "cpu")
        vendor_name = property(lambda self: "cpu")
        device_module = property(lambda self: self._module)

        def is_available(self) -> bool:
            return True

        def is_platform_available(self, use_smi_check: bool = False) -> bool:
            return os.environ.get("VERL_PLATFORM", "").strip().lower() == "cpu"

        def current_device(self) -> str:
            # verl passes this straight to .to(...)/torch.device(...); an int would mean an accelerator.
            return "cpu"

        def device_count(self) -> int:
            return 1

        def set_device(self, device_index: int) -> None:
            return None

        def synchronize(self, device_index: Optional[int] = None) -> None:
            return None

        def manual_seed(self, seed: int) -> None:
            torch.manual_seed(seed)

        def manual_seed_all(self, seed: int) -> None:
            torch.manual_seed(seed)

        def set_allocator_settings(self, settings: str) -> None:
            return None

        def empty_cache(self) -> None:
            return None

        def get_device_capability(self, device_index: int = 0):
            return None, None

        def communication_backend_name(self) -> str:
            return "gloo"

        def visible_devices_envvar(self) -> str:
            return "CUDA_VISIBLE_DEVICES"

        @contextmanager
        def nvtx_range(self, msg: str):
            yield

        def profiler_start(self) -> None:
            return None

        def profiler_stop(self) -> None:
            return None

        def ray_resource_name(self) -> str:
            return "CPU"

        def ray_resource_options(self, num_gpus: float) -> dict[str, Any]:
            return {"num_cpus": num_gpus}

        def ray_noset_envvars(self) -> list[str]:
            return []

        def is_ipc_supported(self) -> bool:
            return False

        def cudart(self) -> Any:
            return None

    return PlatformCPU


PlatformCPU = None  # set by register(); a class needs verl, which this module does not import eagerly


def register() -> type:
    """Register the "cpu" platform with verl (idempotent); returns the class."""
    global PlatformCPU
    if PlatformCPU is None:
        PlatformCPU = _platform_class()
    return PlatformCPU


def use_cpu_platform() -> None:
    """Make this process (and its children) run verl on the CPU. Call before verl resolves a device."""
    os.environ["VERL_PLATFORM"] = "cpu"
    os.environ.setdefault("VERL_ENGINE_DEVICE", "cuda")
    register()
    from verl.plugin.platform import get_platform, set_platform

    if get_platform().device_name != "cpu":
        set_platform(PlatformCPU())
