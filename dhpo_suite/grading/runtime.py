"""Which ANTLR runtime math-verify uses inside the grader's workers.

The main environment must keep antlr4-python3-runtime 4.9.3 (hydra/omegaconf, needed by verl), but with
4.9.3 math-verify 0.9.0 mis-parses inputs such as `198\\%`. The workers therefore put
`<sys.prefix>/grader-site` (antlr4 4.13.2; override with env DHPO_GRADER_SITE) first on `sys.path`
before anything imports antlr4. latex2sympy2_extended picks its generated parser from
`importlib.metadata.version("antlr4-python3-runtime")`, which also searches `sys.path` in order, so
module and metadata agree. The parent process never imports math-verify, so nothing stale can be
inherited; if a worker nevertheless finds antlr4 already imported from elsewhere (e.g. a forkserver
started by other code that preloaded it), `activate` drops those modules and imports them again.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from pathlib import Path

__all__ = ["INSTALL_HINT", "WANTED_ANTLR", "activate", "grader_site", "runtime_info", "warn_if_missing"]

WANTED_ANTLR = "4.13.2"
INSTALL_HINT = (
    "uv pip install --target .venv/grader-site --no-deps antlr4-python3-runtime==4.13.2"
    " (or `make install`)"
)
_RELOADED = ("antlr4", "latex2sympy2_extended", "math_verify")
_warned = False


def grader_site() -> Path:
    """Directory holding the workers' antlr4 4.13.2 (env DHPO_GRADER_SITE overrides)."""
    override = os.environ.get("DHPO_GRADER_SITE")
    return Path(override) if override else Path(sys.prefix) / "grader-site"


def activate() -> bool:
    """Put the grader site first on sys.path (idempotent); False when the site is missing. Call only in a
    worker process: it changes which antlr4 this interpreter imports."""
    site = grader_site()
    if not (site / "antlr4").is_dir():
        return False
    if sys.path[:1] != [str(site)]:
        sys.path.insert(0, str(site))
    loaded = sys.modules.get("antlr4")
    if loaded is not None and not str(getattr(loaded, "__file__", "")).startswith(str(site)):
        for name in [name for name in sys.modules if name.split(".", 1)[0] in _RELOADED]:
            del sys.modules[name]
    importlib.invalidate_caches()
    return True


def warn_if_missing() -> bool:
    """In the parent: warn once, with the install command, when the grader site is missing."""
    global _warned
    site = grader_site()
    if (site / "antlr4").is_dir():
        return True
    if not _warned:
        _warned = True
        warnings.warn(
            f"dhpo_suite.grading: {site} has no antlr4 runtime {WANTED_ANTLR}; the grader's workers "
            f"fall back to the main environment's antlr4, with which math-verify mis-parses inputs "
            f"such as `198\\%`. Install it with: {INSTALL_HINT}",
            RuntimeWarning,
            stacklevel=3,
        )
    return False


def runtime_info() -> dict:
    """The antlr4 this process really uses (imports math-verify's parser): version, file, site."""
    import antlr4
    from importlib.metadata import version

    import latex2sympy2_extended.antlr_parser as parser

    return {
        "antlr4_version": version("antlr4-python3-runtime"),
        "antlr4_file": str(antlr4.__file__),
        "parser_module": parser.PSParser.__module__,
        "grader_site": str(grader_site()),
        "pid": os.getpid(),
    }
