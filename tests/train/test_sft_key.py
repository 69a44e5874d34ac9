"""The warm-start cache key covers what its stop test measures: another temperature or token budget is
another warm-started model, never a cache hit."""

from __future__ import annotations

import dataclasses

from dhpo_suite.tasks import get_task
from dhpo_suite.train.embedded import TrainConfig
from dhpo_suite.train.embedded.run_setup import sft_stop_test
from dhpo_suite.train.embedded.sft import _recipe_key


def _key(cfg: TrainConfig) -> str:
    task = get_task(cfg.task)
    return _recipe_key(task.name, cfg.sft_target, cfg.sft_max_steps, cfg.seed, sft_stop_test(cfg, task))


def test_cache_key_follows_the_stop_test():
    base = TrainConfig()
    assert _key(base) == _key(dataclasses.replace(base, steps=base.steps + 5, lr=base.lr / 2))  # RL-only fields
    assert _key(dataclasses.replace(base, temperature=0.7)) != _key(base)
    assert _key(dataclasses.replace(base, max_new_tokens=7)) != _key(base)
    assert _key(dataclasses.replace(base, seed=base.seed + 1)) != _key(base)


def test_concurrent_requests_build_the_warm_start_once(tmp_path):
    """Two processes asking for the same uncached warm-start: one builds, the other waits and reuses it."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import sys, time, json
        from pathlib import Path
        import dhpo_suite.train.embedded.sft as sft
        def fake_build(tmp, final, task, **kw):  # stands in for the minutes-long supervised run
            time.sleep(1.0)
            tmp.mkdir()
            (tmp / "sft.json").write_text(json.dumps({{"by": sys.argv[1]}}))
            print("built", flush=True)
        sft._build = fake_build
        class Task: name = "arithmetic"
        d = sft.warm_started_tiny_model(Path({str(tmp_path)!r}), Task(), target=0.25, max_steps=1, seed=0,
                                        accuracy_fn=None, stop_test={{}}, log=print)
        print(json.loads((d / "sft.json").read_text())["by"], flush=True)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code, str(i)], stdout=subprocess.PIPE, text=True) for i in (1, 2)]
    outs = [p.communicate(timeout=120)[0].split() for p in procs]
    assert sum(o.count("built") for o in outs) == 1, outs
    assert outs[0][-1] == outs[1][-1]  # both got the one entry
