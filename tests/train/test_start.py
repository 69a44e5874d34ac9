"""train() at start-up reads as one decision (issue 28): the config is checked once, the run directory is read
once into a new | resume | done start (under its lock), and a done run loads no model."""

from __future__ import annotations

import pytest

from dhpo_suite.train.embedded import config as config_mod
from dhpo_suite.train.embedded import run_setup, start


@pytest.fixture
def counted(monkeypatch):
    """Counts: config checks (each validate() body checks `algo` first) and reads of the run directory."""
    calls = {"validate": 0, "RunReader": 0, "read_manifest": 0, "build": 0}

    def wrap(module, name, key, when=lambda *a, **k: True):
        real = getattr(module, name)

        def counting(*args, **kwargs):
            calls[key] += bool(when(*args, **kwargs))
            return real(*args, **kwargs)
        monkeypatch.setattr(module, name, counting)

    wrap(config_mod, "_choice", "validate", when=lambda name, *a, **k: name == "algo")
    wrap(start, "RunReader", "RunReader")
    wrap(start, "read_manifest", "read_manifest")
    wrap(run_setup, "build", "build")
    return calls


def test_start_up_checks_once_and_reads_the_run_directory_once(ci_config, tmp_path, counted):
    from dhpo_suite.train.embedded import train

    small = dict(steps=2, checkpoint_every=1, prompts_per_step=2, group_size=2, eval_prompts=4, train_pool=8)
    cfg = ci_config(tmp_path / "run", **small).validate()  # as the CLI hands it over: checked already
    counted["validate"] = 0
    result = train(cfg, show_progress=False)
    assert result.last_step == 2
    assert counted == {"validate": 0, "RunReader": 0, "read_manifest": 0, "build": 1}  # new: nothing to read

    counted.update(validate=0, build=0)
    resumed = train(ci_config(tmp_path / "run", resume=True, **{**small, "steps": 3}), show_progress=False)
    assert resumed.last_step == 3 and resumed.heldout_initial == result.heldout_initial
    # the user's config once, the stored one merged with theirs once; the run directory read once
    assert counted == {"validate": 2, "RunReader": 1, "read_manifest": 1, "build": 1}

    counted.update(validate=0, RunReader=0, read_manifest=0, build=0)
    lines: list[str] = []
    done = train(ci_config(tmp_path / "run", resume=True, **{**small, "steps": 3}), show_progress=False,
                 log=lines.append)
    assert (done.last_step, done.wall_s, done.heldout_final) == (3, 0.0, resumed.heldout_final)
    assert counted == {"validate": 2, "RunReader": 1, "read_manifest": 1, "build": 0}  # done: no model loaded
    assert any("already finished at step 3 of 3" in line for line in lines), lines
