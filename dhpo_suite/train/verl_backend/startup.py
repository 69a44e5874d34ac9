"""Every check of a verl launch that can run before Ray starts, on the composed `ppo_trainer` config.

One function, `check(cfg, explicit)`, serves both ways in:

    dhpo-suite train --backend verl ...          launch.plan calls it (explicit = every override it passes)
    python -m verl.trainer.main_ppo ...          verl's validate_config runs it first (seam/patches.py), in the driver,
      actor_rollout_ref.actor.policy_loss.loss_mode=dhpo_suite.dhpo-e     before Ray, vLLM or a model loads

For a dhpo_suite loss it resolves the objective's settings once (hparams.resolve: the user's, else the paper's,
never verl's YAML defaults silently) and writes them back into the config, so verl's printed config, the
workers and the loss read one truth (`policy_loss.resolved`); turns on verl's entropy for every objective (the
entropy telemetry, and DHPO-E's weight), refusing `calculate_entropy=false` where the objective needs it;
takes group advantages only (verl's YAML `gae` the user did not write becomes the paper's `grpo`, any
other non-group estimator is refused) over groups of `rollout.n >= 2`; refuses verl's rollout correction
(weights, rejection sampling, bypass mode); sets telemetry's response budget; checks that prompt + response
fit vLLM's `max_model_len`; and checks the model path and the data files. Each refusal is one line naming the
config key. In verl's own `main` the resolved table is printed once (and a plain launch's manifest written,
run_manifest.py) and a refusal exits with status 2 (`on_validate`).

Workers check again when verl binds their loss (`on_loss_fn_set`, before the first rollout): a config that
reached them without this check (a program of its own calling verl's trainer) is resolved there, strictly.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path
from typing import Any

from dhpo_suite.train.verl_backend import seam
from dhpo_suite.train.verl_backend.hparams import (
    ACTOR, PAPER, VERL_FIELDS, Resolution, objective_hparams, resolve,
)
from dhpo_suite.train.verl_backend.names import POLICY_LOSS_CONFIG, objective_of

__all__ = ["StartupError", "check", "check_data_files", "check_model_path", "on_loss_fn_set", "on_validate"]

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_WEIGHTS = ("*.safetensors", "*.bin", "*.safetensors.index.json", "*.bin.index.json")
_TOKENIZER = ("tokenizer.json", "tokenizer.model", "vocab.json", "tokenizer_config.json")
GROUP_ESTIMATORS = ("grpo", "grpo_vectorized", "grpo_passk", "rloo", "rloo_vectorized")
"""verl's advantage estimators that normalise each response's reward within its prompt's group (verl 0.9.1's
core_algos); `grpo` is the paper's eq. 1."""
PAPER_ESTIMATOR = "grpo"


class StartupError(ValueError):
    """A launch that would fail or train the wrong thing: one line naming the config key."""


def check(cfg: Any, explicit: frozenset[str] | None, inputs: bool = True) -> Resolution | None:
    """Check (and complete) a composed ppo_trainer config; the loss's resolution, or None for a loss not ours.

    `explicit`: full config keys the user set on the command line, None when unknown (module docstring).
    `inputs`: also check the model path and data files (not for a dry run).
    """
    from omegaconf import OmegaConf

    mode = OmegaConf.select(cfg, f"{ACTOR}.policy_loss.loss_mode", default=None)  # other verl configs lack it
    name = None if mode is None else objective_of(str(mode))
    if name is None:
        return None
    from dhpo_suite.train.objectives import get_objective
    from dhpo_suite.train.verl_backend.registration import check_registered

    check_registered(f"dhpo_suite.{name}")
    actor = cfg.actor_rollout_ref.actor
    user = None if explicit is None else frozenset(k[len(ACTOR) + 1:] for k in explicit if k.startswith(ACTOR + "."))
    try:
        res = resolve(name, actor, user, seam.verl_actor_defaults())
    except ValueError as e:
        raise StartupError(str(e)) from None
    _check_entropy(cfg, name, get_objective(name).needs_entropy, user)
    algorithm = {**_check_estimator(cfg, explicit), **_check_rollout_correction(cfg)}
    _check_lengths(cfg)
    if inputs:
        check_model_path(str(cfg.actor_rollout_ref.model.path), "actor_rollout_ref.model.path")
        check_data_files(cfg)
    _write_back(cfg, res)
    _telemetry_budget(cfg)
    return dataclasses.replace(res, algorithm=algorithm)


def _set(cfg: Any, key: str, value: Any) -> None:
    from omegaconf import OmegaConf

    OmegaConf.update(cfg, key, value, force_add=True)


def _write_back(cfg: Any, res: Resolution) -> None:
    """verl's fields and `policy_loss.hparams` hold every setting; our config class carries them to workers."""
    if str(cfg.actor_rollout_ref.actor.policy_loss.get("_target_", "")) == seam.VERL_POLICY_LOSS_CONFIG:
        _set(cfg, f"{ACTOR}.policy_loss._target_", POLICY_LOSS_CONFIG)
    for field, value in res.verl_writes.items():
        _set(cfg, f"{ACTOR}.{field}", value)
    _set(cfg, f"{ACTOR}.policy_loss.hparams", {k: v for k, v in res.hparams.items() if k not in VERL_FIELDS})
    _set(cfg, f"{ACTOR}.policy_loss.resolved", True)


def _check_entropy(cfg: Any, name: str, needed: bool, user: frozenset[str] | None) -> None:
    """verl computes the entropy for every objective (telemetry's entropy/* and DHPO-E's weight, eq. 10)."""
    if bool(cfg.actor_rollout_ref.actor.calculate_entropy):
        return
    if user is None or "calculate_entropy" not in user:  # verl's YAML default (false), not the user's choice
        _set(cfg, f"{ACTOR}.calculate_entropy", True)
    elif needed:
        raise StartupError(f"{ACTOR}.calculate_entropy=false: dhpo_suite.{name} mixes by the token entropy "
                           f"(eq. 10); set it to true (or leave it out)")


def _check_estimator(cfg: Any, explicit: frozenset[str] | None) -> dict[str, tuple[Any, str]]:
    """Group advantages for the paper's objectives (eq. 1), over groups of at least two responses.

    verl's YAML default `gae` (PPO with a critic) that the user did not write is replaced by the paper's `grpo`,
    as verl's clip and aggregation defaults are (hparams.resolve); one the user wrote, or any other estimator that
    does not normalise within a prompt's group, is refused. A group size of one is refused whoever set it:
    raising it multiplies a step's rollouts, which is not ours to decide silently."""
    key, estimator = "algorithm.adv_estimator", str(cfg.algorithm.adv_estimator)
    source = key
    if estimator not in GROUP_ESTIMATORS:
        default = seam.verl_default(key)
        if explicit is None or key in explicit or estimator != default:
            raise StartupError(f"{key}={estimator}: dhpo_suite objectives take group-normalised advantages (the "
                               f"paper's eq. 1): set {key}=grpo (group-based: {', '.join(GROUP_ESTIMATORS)})")
        _set(cfg, key, PAPER_ESTIMATOR)
        estimator, source = PAPER_ESTIMATOR, f"{PAPER} (verl's YAML: {default})"
    n = int(cfg.actor_rollout_ref.rollout.n)
    if n < 2:
        raise StartupError(f"actor_rollout_ref.rollout.n={n}: {key}={estimator} normalises each response's reward "
                           f"within its prompt's group, so a group of {n} gets advantage 0 and nothing learns; set "
                           f"actor_rollout_ref.rollout.n >= 2 (the paper: 16)")
    return {"adv_estimator": (estimator, source), "rollout.n": (n, "actor_rollout_ref.rollout.n")}


def _check_rollout_correction(cfg: Any) -> dict[str, tuple[Any, str]]:
    """verl's rollout correction is refused, each part naming its key: IS weights (our losses take none),
    rejection sampling (it rewrites the response mask the loss and its telemetry read), and bypass mode (old
    log-probs from the rollout engine, not the actor: another ratio than the paper's)."""
    key = "algorithm.rollout_correction"
    correction = cfg.get("algorithm", {}).get("rollout_correction", None) or {}
    if correction.get("rollout_is", None) is not None:
        raise StartupError(f"{key}.rollout_is={correction.rollout_is}: dhpo_suite objectives take no "
                           "rollout-correction importance weights; set it to null")
    if correction.get("rollout_rs", None) is not None:
        raise StartupError(f"{key}.rollout_rs={correction.rollout_rs}: rejection sampling rewrites the response "
                           "mask that dhpo_suite losses and their telemetry read (not the paper's method); set it "
                           "to null")
    if bool(correction.get("bypass_mode", False)):
        raise StartupError(f"{key}.bypass_mode=true: old log-probs would be the rollout engine's, not the actor's "
                           "(not the paper's ratio); set it to false")
    return {"rollout_correction": ("off", key)}


def _telemetry_budget(cfg: Any) -> None:
    """Telemetry counts a response as truncated when it reached the rollout's budget (data.max_response_length,
    through rollout.response_length), not each rank's longest response."""
    budget = f"{ACTOR}.policy_loss.telemetry.max_response_length"
    from omegaconf import OmegaConf

    if OmegaConf.select(cfg, budget, default=None) is None:
        _set(cfg, budget, int(cfg.actor_rollout_ref.rollout.response_length))


def _check_lengths(cfg: Any) -> None:
    rollout = cfg.actor_rollout_ref.rollout
    prompt, response, limit = int(cfg.data.max_prompt_length), int(rollout.response_length), rollout.max_model_len
    if limit is not None and int(limit) < prompt + response:
        raise StartupError(
            f"actor_rollout_ref.rollout.max_model_len={limit} < data.max_prompt_length + rollout.response_length = "
            f"{prompt} + {response}: vLLM would cut responses short of the budget; raise it or leave it unset")


def check_model_path(path: str, key: str) -> str:
    """A local model directory (config, weights, tokenizer) or a hub id; returns "local" or "hub id"."""
    if "://" in path:
        return "remote"
    local = Path(path).expanduser()
    if not local.exists() and _HUB_ID.match(path) and not path.startswith("."):
        return "hub id"
    if not local.is_dir():
        raise StartupError(f"{key}={path}: no such model directory (nor a hub id such as Qwen/Qwen3-1.7B-Base)")
    missing = [what for what, ok in (
        ("config.json", (local / "config.json").is_file()),
        ("weights (*.safetensors or *.bin)", any(next(local.glob(p), None) for p in _WEIGHTS)),
        ("tokenizer (tokenizer.json, tokenizer.model or vocab.json)", any((local / t).is_file() for t in _TOKENIZER)),
    ) if not ok]
    if missing:
        raise StartupError(f"{key}={path}: not a model directory: no {', no '.join(missing)}")
    return "local"


def check_data_files(cfg: Any) -> None:
    """data.train_files / data.val_files exist and are readable Parquet; a step's prompts fit the training set."""
    import pyarrow.parquet as pq

    rows = 0
    for key in ("train_files", "val_files"):
        value = cfg.data[key]
        for f in [str(value)] if isinstance(value, str) else [str(v) for v in value]:
            if "://" in f:
                continue
            if not Path(f).expanduser().is_file():
                raise StartupError(f"data.{key}: {f} not found (run `dhpo-suite data prepare` first)")
            try:
                n = pq.ParquetFile(f).metadata.num_rows
            except Exception as e:  # pyarrow's errors name no file
                raise StartupError(f"data.{key}: {f} is not a readable Parquet file ({e})") from None
            rows += n if key == "train_files" else 0
    if rows and rows < int(cfg.data.train_batch_size):  # verl would divide by zero steps per epoch
        raise StartupError(f"data.train_files: {rows} problems, fewer than data.train_batch_size="
                           f"{cfg.data.train_batch_size} (one step's prompts)")


def on_validate(cfg: Any) -> None:
    """seam's hook in verl's validate_config: in verl's own main, print the resolved table or exit 2."""
    keys = seam.command_line_keys()
    if keys is None:  # not verl's main: a program of its own validating a config; errors are its to report
        check(cfg, None)
        return
    try:
        res = check(cfg, keys)
    except (StartupError, ValueError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    if res is not None:
        print(res.table(), flush=True)
        from dhpo_suite.train.verl_backend import run_manifest

        run_manifest.write_if_absent(cfg, res.hparams, res.objective)  # a plain launch's; a launcher wrote its own


def on_loss_fn_set(worker: Any) -> None:
    """seam's hook after a worker bound its loss (init_model): resolve it now, not at the first update."""
    config = seam.actor_config(worker)
    name = None if config is None else objective_of(str(config.policy_loss.loss_mode))
    if name is None:
        return
    from dhpo_suite.train.objectives import get_objective

    objective_hparams(name, config)
    if get_objective(name).needs_entropy and not config.calculate_entropy:
        raise StartupError(f"{ACTOR}.calculate_entropy=false: dhpo_suite.{name} mixes by the token entropy (eq. 10)")
    if float(config.entropy_coeff) == 0:  # no entropy bonus: no gradient through it (dhpo_suite/train/entropy.py)
        from dhpo_suite.train.entropy import entropy_without_grad

        seam.use_entropy_function(worker, entropy_without_grad)
