# Two commands a newcomer needs: `make test` and `make demo`. Both set up what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SIM_DIR ?= var/sim
SIM_NODES ?= 8

.PHONY: setup system test lint demo snapshot bench clean

system:
	scripts/system-packages

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	scripts/link-pyverbs
	touch $@

setup: system $(VENV)/.installed

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Starts throwaway Redis and PostgreSQL on loopback ports, then lint and the whole suite.
test: setup lint
	eval "$$(scripts/test-services start)" && $(BIN)/pytest

# The whole pipeline on one machine: simulator, private Redis, ingest worker, beat, one node
# agent for every simulated node, and the web server on http://127.0.0.1:8000/. Ctrl-C stops it all.
demo: setup
	DEBUG=1 $(BIN)/python -m fabricweb.runfabric --sim-dir $(SIM_DIR) --nodes $(SIM_NODES) --web --start-redis

# An ibstat-like look at a simulated node.
snapshot: $(VENV)/.installed
	$(BIN)/python -m collectors simulate --out $(SIM_DIR) --nodes $(SIM_NODES) --once
	$(BIN)/python -m collectors snapshot --sysfs-root $(SIM_DIR)/cn001 --host cn001

bench: $(VENV)/.installed
	$(BIN)/python bench/bench_collect.py

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache .hypothesis
