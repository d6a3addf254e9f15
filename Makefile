# evalfarm: `make demo` sets up and runs the main job; `make test` sets up and runs the tests.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# The demo needs the farm only (the worker's and the gateway's extras); the tests need everything.
DEMO_STAMP := $(VENV)/.demo
STAMP := $(VENV)/.installed
# setuptools' notice on every editable install (an information, not a warning of ours).
PIP := PYTHONWARNINGS="ignore:Editable installation" $(BIN)/python -m pip
# mypy reads the package as a wheel installs it (`evalfarm.<room>` for each top-level folder), from a
# copy installed here: it cannot follow the editable install's import hook.
TYPECHECK := build/typecheck

.PHONY: setup demo test check lint docs bench clean

# The farm: the client, the worker's and the gateway's extras.
$(DEMO_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e '.[all]'
	touch $(DEMO_STAMP)

# Everything: the farm, the tests' and the GRPO test's extras, the foreign clients the tests drive.
$(STAMP): $(DEMO_STAMP) tests/clients-requirements.txt
	$(PIP) install --quiet -e '.[all,dev,grpo]'
	$(PIP) install --quiet --no-deps -r tests/clients-requirements.txt
	touch $(STAMP)

setup: $(STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/evalfarm demo

# The whole suite (what CI runs), with the slowest tests named at the end.
test: setup
	$(BIN)/python -m pytest --durations=25

# The quick loop, under 2 minutes on 2 cores: the unit tests, one case per sandbox layer and one
# real farm round trip (tests marked `check`).
check: setup
	$(BIN)/python -m pytest -m "check or not (slow or integration or sandbox or minatar or chaos)" \
		--durations=10

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	rm -rf $(TYPECHECK) build/lib
	$(PIP) install --quiet --no-deps --no-build-isolation --no-compile --target $(TYPECHECK) .
	rm -rf build/lib
	$(BIN)/mypy $(TYPECHECK)/evalfarm

# The documentation site, in build/site; strict: a broken link or a page outside the nav fails.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: setup
	@for script in bench/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache
