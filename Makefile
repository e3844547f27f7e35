# Two commands a newcomer needs: `make test` and `make demo`. Both set up what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SIM_DIR ?= var/sim
SIM_NODES ?= 64
# What the demo shows from its first poll, on a switch fabric simulated by ibsim (runfabric --fabric: leaves
# and spines under the hosts; a healthy link trains 12X QDR, the best ibsim simulates): a host port trained at
# SDR where both ends support QDR, a 100 Gb/s RoCE port come up at 40 Gb/s (cn033: 100GbE, 4X EDR to mlx5, by
# the demo's link policy), a 12X port at 1X, a port down, a flapping link, rising symbol errors on a host port
# and on a switch port, a PCIe link trained low, a faulty inter-switch link (leaf01's uplink 25 at DDR); and
# cn064's agent stops (the node turns stale). cn012 is a GPU server laid out as a DGX (8 GPUs, 8 HCAs, 4 PCIe
# switches; healthy): its node page shows the GPU x card matrix. tests/health_db/test_health_db_demo.py checks each.
DEMO_FAULTS ?= cn002/mlx5_0/1:speed=SDR cn033/mlx5_0/1:speed=QDR cn003/mlx5_1/1:width=1X cn005/mlx5_0/1:down \
	cn006/mlx5_0/1:flap cn008/mlx5_1/1:symbol-errors=20000/h cn009:pcie=GEN3x8 leaf01/25:speed=DDR \
	leaf02/3:symbol-errors=20000/h cn012:dgx
DEMO_STOPPED_AGENT ?= cn064
DEMO_WEB ?= 127.0.0.1:8000

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

# Starts throwaway Redis and PostgreSQL on loopback ports, then lint and the whole suite. The suite starts many
# Python processes (agents, workers, manage.py): each reads the project's modules compiled once here
# instead of compiling them again, which it does where PYTHONDONTWRITEBYTECODE keeps imports from writing them.
test: setup lint
	$(BIN)/python -m compileall -q -j 0 collectors fabricweb tests bench >/dev/null
	eval "$$(scripts/test-services start)" && $(BIN)/pytest -n 4 --durations=25

# The whole pipeline on one machine: simulator (with faults), private Redis, ingest worker, beat, one node
# agent for every simulated node, and the dashboard on http://127.0.0.1:8000/. Its last lines, once the
# dashboard answers: the URL, the login operator and its password (printed once); the processes' output is
# in $(DEMO_LOG). Ctrl-C stops it all.
DEMO_LOG ?= var/demo.log
demo: setup
	DEBUG=1 LOG_LEVEL=WARNING $(BIN)/python manage.py migrate --noinput -v 0
	DEBUG=1 LOG_LEVEL=WARNING $(BIN)/python manage.py import_policies scripts/demo-policies.yaml
	DEBUG=1 $(BIN)/python -m fabricweb.runfabric --sim-dir $(SIM_DIR) --nodes $(SIM_NODES) --web $(DEMO_WEB) \
		--fabric --start-redis $(addprefix --fault=,$(DEMO_FAULTS)) --agent-stops $(DEMO_STOPPED_AGENT) --slurm \
		--log $(DEMO_LOG) --login operator

# An ibstat-like look at a simulated node.
snapshot: $(VENV)/.installed
	$(BIN)/python -m collectors simulate --out $(SIM_DIR) --nodes $(SIM_NODES) --once
	$(BIN)/python -m collectors snapshot --sysfs-root $(SIM_DIR)/cn001 --host cn001

bench: $(VENV)/.installed
	$(BIN)/python bench/bench_collect.py

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache .hypothesis
