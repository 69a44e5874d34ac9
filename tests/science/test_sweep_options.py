"""`dhpo-suite sweep`'s pass-through options are checked as `dhpo-suite train` checks them, for every objective of
the grid, before anything runs: one error line naming the option, exit status 2, no sweep directory written.
`--hp key=value` is typed by each objective's own signature (a key one objective of the grid lacks is refused).
The accepted path (a real sweep with `--hp`) is in test_sweep.py."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from dhpo_suite.cli import app


@pytest.mark.parametrize("extra, message", [
    (["--bogus", "1"], "No such option: --bogus"),
    (["--seed", "3"], "No such option: --seed"),  # set by the sweep for each run (SWEEP_SETS)
    (["--lr", "-1"], "--lr:"),
    (["--hp", "dual_clip=3"], "--hp: objective 'gspo' has no hyper-parameter 'dual_clip'"),  # grpo has it
    (["--hp", "eps_high=wide"], "--hp:"),
    (["--hp", "eps_high"], "--hp:"),
])
def test_pass_through_options_are_checked_per_objective_before_anything_runs(tmp_path, extra, message):
    out = tmp_path / "sweep"
    result = CliRunner().invoke(app, ["sweep", str(out), "--algos", "grpo,gspo", "--seeds", "1", *extra])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and message in lines[0], result.output
    assert not out.exists()


def test_a_bad_pre_registration_is_refused_before_anything_runs(tmp_path):
    out, prereg = tmp_path / "sweep", tmp_path / "prereg.json"
    prereg.write_text('{"version": 1, "primary_metric": "final_reward", "contrasts": [{"name": "a", "arm": '
                      '"dhpo-e-branch", "baseline": "grpo", "direction": "equal"}]}')
    result = CliRunner().invoke(app, ["sweep", str(out), "--algos", "grpo", "--seeds", "1", "--prereg", str(prereg)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert lines == [f"error: --prereg: {prereg}: contrasts[0].margin: an 'equal' contrast needs a margin > 0 "
                     "(the TOST bound)"]
    assert not out.exists()


def test_a_different_pre_registration_for_a_started_sweep_is_refused(tmp_path):
    from dhpo_suite.science.prereg import digest
    from dhpo_suite.train.sweep import Sweep, SweepError, load_or_create

    first, second = b'{"version": 1}', b'{"version": 1, "alpha": 0.1}'
    load_or_create(tmp_path, Sweep(("grpo",), (), (0,), (), 4, digest(first)), first)
    assert (tmp_path / "prereg.json").read_bytes() == first
    with pytest.raises(SweepError, match="prereg_sha256 differ"):
        load_or_create(tmp_path, Sweep(("grpo",), (), (0,), (), 4, digest(second)), second)
    assert (tmp_path / "prereg.json").read_bytes() == first  # the registered file is untouched
