# Two commands set everything up from a fresh clone: `make train` and `make test`.
# Set-up is idempotent: a .venv in the checkout, pinned dependencies, the C engine built.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
SETUP_STAMP := $(VENV)/.setup-stamp
PEER_STAMP := $(VENV)/.peer-stamp
EXACT_STAMP := $(VENV)/.exact-stamp
ENGINE_DIR := python/src/tcgleague/games/emberfront/engine
ENGINE_SOURCES := $(wildcard $(ENGINE_DIR)/*.c $(ENGINE_DIR)/*.h)
ENGINE_SO := $(ENGINE_DIR)/.built-stamp
CONFIG ?= configs/default.ini

.PHONY: setup peer exact build train report lint test test-slow bench sanitize clean

setup: $(SETUP_STAMP) $(ENGINE_SO)

# Dependencies, with torch pinned by constraints.txt so no other torch is ever resolved.
# pufferlib-core goes in with --no-deps: its metadata pins torch==2.9.0, which would replace ours.
$(SETUP_STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q -c constraints.txt --upgrade pip setuptools wheel
	$(PIP) install -q -c constraints.txt torch==2.13.0
	$(PIP) install -q -c constraints.txt numpy gymnasium pettingzoo wandb rich openskill matplotlib psutil pytest pytest-xdist ruff==0.17.6 selenium
	$(PIP) install -q --no-deps pufferlib-core==3.0.23
	$(PIP) install -q --no-deps --no-build-isolation -e .
	touch $@

# The peer trainers of `bench peer` (pyproject's [peer] extra): the tests run them, training never does.
# PuffeRL also needs pufferlib-core, already installed above with --no-deps.
peer: $(PEER_STAMP)
$(PEER_STAMP): $(SETUP_STAMP)
	$(PIP) install -q -c constraints.txt --no-build-isolation -e ".[peer]"
	touch $@

# OpenSpiel (pyproject's [exact] extra): the judge of `python -m tcgleague.exact` and of the poker
# rules' tests; training never needs it.
exact: $(EXACT_STAMP)
$(EXACT_STAMP): $(SETUP_STAMP)
	$(PIP) install -q -c constraints.txt --no-build-isolation -e ".[exact]"
	touch $@

# The C extension (CPU only: a plain setuptools Extension, nvcc is never consulted).
$(ENGINE_SO): $(ENGINE_SOURCES) setup.py $(SETUP_STAMP)
	$(PY) setup.py -q build_ext --inplace
	touch $@

build: setup

train: setup
	$(PY) train.py --config $(CONFIG)

# A run's report: make report RUN=experiments/<run_name>_<id>  (writes RUN/report/report.html)
report: setup
	@test -n "$(RUN)" || (echo "usage: make report RUN=experiments/<run_name>_<id>" >&2; exit 2)
	$(PY) -m tcgleague.report $(RUN)

# ruff lint + format check (configured in pyproject.toml); `make test` runs it first.
lint: setup
	$(VENV)/bin/ruff check python tools
	$(VENV)/bin/ruff format --check python tools

# The suite without the tests marked slow (each tens of seconds to minutes: compilation, multi-rank
# runs, training runs), under 5 minutes on 2 cores; `make test-slow` runs those, and CI runs both.
# TEST_WORKERS pytest-xdist processes, a test file to each (its module fixtures built once).
TEST_WORKERS ?= 2
test: setup peer exact lint
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not slow"

test-slow: setup peer exact
	$(PY) -m pytest -q -m slow

# The quick benchmarks; `python -m tcgleague.bench compile|league|learn` are longer (see README).
bench: setup
	$(PY) -m tcgleague.bench engine --json bench_engine.json
	$(PY) -m tcgleague.bench train --json bench_train.json

# The engine built with -fsanitize=address,undefined, driven through 1,000,000 random-legal decisions.
sanitize: setup
	$(PY) -m pytest -q -m slow python/tests/test_sanitize.py

clean:
	rm -rf build $(ENGINE_DIR)/*.so $(ENGINE_SO) *.egg-info python/src/*.egg-info
