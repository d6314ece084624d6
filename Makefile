# One task runner. `make preview` and `make test` bootstrap .venv themselves on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
STACK  ?= p5-small

.PHONY: preview test lint typecheck format schema bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

preview: $(STAMP)  ## offline preview of the default example stack (no cloud account needed)
	$(BIN)/aicluster preview $(STACK)

test: $(STAMP)  ## the whole suite (lint, types, schema freshness, tests)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/pytest -n 2

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

schema: $(STAMP)  ## regenerate the published JSON schema and the spec reference
	$(BIN)/aicluster schema -o schema/cluster.schema.json
	$(BIN)/python -m aicluster.docs > docs/spec-reference.md

bench: $(STAMP)  ## benchmarks print figures; they never assert timings
	$(BIN)/python benchmarks/preview_scale.py
	$(BIN)/python benchmarks/preview_scale.py --base azure-nd-h100
	$(BIN)/python benchmarks/preview_scale.py --base gcp-a3mega-slurm
	$(BIN)/python benchmarks/policy_scale.py
	$(BIN)/python benchmarks/tune_hosts.py   # needs root, debootstrap, iproute2, openssh-client
	$(BIN)/python benchmarks/discover_scale.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
