# Two commands on a fresh clone:  `make demo`  and  `make test`.
# Both create .venv and install convoeval into it on first use.
VENV ?= .venv
PYTHON ?= python3
# llama-cpp-python compiles from source on first install; skip the multimodal library we don't use,
# and build for x86-64-v3 (AVX2, FMA, F16C) rather than for this CPU: a native build uses AMX on a
# CPU that announces it, and a VM that does not let processes use AMX kills the model with SIGILL.
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -e ".[dev]"
	touch $@

install: $(VENV)/.installed

# The demo suite mixes checks a 135M model meets and misses. Exit code 1 means "a test did not
# pass its threshold": the demo succeeded. Exit code 2 (invalid input) or 3 (every test errored) fails it.
demo: $(VENV)/.installed
	$(VENV)/bin/convoeval run examples/demo/travel-demo.eval.yaml || [ $$? -eq 1 ]

test: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -q

# Throughput, start-up and memory against a floor measured in the same run, then one big eval file.
bench: $(VENV)/.installed
	$(VENV)/bin/python benchmarks/run.py
	$(VENV)/bin/python benchmarks/big_file.py
	$(VENV)/bin/python benchmarks/sandbox_cost.py
	$(VENV)/bin/python benchmarks/ray_cluster.py

# Lint, format check, types, and the import layers (CONTRIBUTING.md, "Checks").
check: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests
	$(VENV)/bin/ruff format --check src tests
	$(VENV)/bin/mypy
	$(VENV)/bin/python -m pytest -q tests/test_layers.py

# The docs site (docs/, MkDocs + Material) into site/; the reference pages are generated from the code.
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

.PHONY: install demo test bench check docs
