# One task runner. `make preview` and `make test` bootstrap .venv themselves on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
STACK  ?= p5-small
# pip's and setuptools' output while setting up: kept here, shown only when the set-up fails
SETUP_LOG ?= .work/setup.log
PIP    := $(BIN)/python -m pip --disable-pip-version-check --no-input

.PHONY: preview test lint typecheck format schema bench clean

$(STAMP): pyproject.toml
	@echo "setting up $(VENV) (first run, or pyproject.toml changed: a few minutes)..."
	@mkdir -p $(dir $(SETUP_LOG))
	@{ $(PYTHON) -m venv $(VENV) && $(PIP) install --upgrade pip && $(PIP) install -e '.[dev]'; } \
		>$(SETUP_LOG) 2>&1 || { \
		echo "setting up $(VENV) failed; the end of $(SETUP_LOG):" >&2; tail -n 40 $(SETUP_LOG) >&2; \
		test -x $(BIN)/python || echo "($(PYTHON) could not make a venv: it needs Python 3.11+ with venv and ensurepip;" \
			"on Debian/Ubuntu: apt-get install python3-venv)" >&2; \
		exit 1; }
	@rm -f $(VENV)/.installed-*
	@touch $@
	@echo "$(VENV) is ready (log: $(SETUP_LOG))"

preview: $(STAMP)  ## offline preview of the default example stack (no cloud account needed)
	$(BIN)/aicluster preview $(STACK)

# mypy reads about 2,700 modules from a cold cache (about 30 s of CPU on a fresh checkout; it skips the provider SDK
# modules the code does not use: pyproject.toml): it runs beside the tests, whose workers wait on apt, sshd and
# slurmctld part of the time (hence four workers on two cores: with warm caches the CPUs stay busy from start to end;
# pytest alone took 467 s with three); its report follows.
# pytest hands each worker one test at a time, and tests/conftest.py starts the longest first; it lists the slowest 20.
# The tests run with Python's bytecode cache on even where the environment turns it off (PYTHONDONTWRITEBYTECODE, as
# some CI images do): otherwise every worker rewrites the asserts of every test module again (about 4 s of CPU each)
# and every `aicluster` the tests start compiles the project's modules again.
test: $(STAMP)  ## the whole suite (lint, types, schema freshness, tests)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@mkdir -p .work
	@$(BIN)/mypy > .work/mypy.log 2>&1 & types=$$!; \
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest -n 4 --maxschedchunk=1 --durations=20; tests=$$?; \
	wait $$types; typed=$$?; echo "mypy:"; cat .work/mypy.log; \
	test $$tests -eq 0 && test $$typed -eq 0

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
	$(BIN)/python -m aicluster.burst.config > schema/aicluster-burst.schema.json
	$(BIN)/python -m aicluster.repair.config > schema/aicluster-repair.schema.json

bench: $(STAMP)  ## benchmarks print figures; they never assert timings
	$(BIN)/python benchmarks/preview_scale.py
	$(BIN)/python benchmarks/preview_scale.py --base azure-nd-h100
	$(BIN)/python benchmarks/preview_scale.py --base gcp-a3mega-slurm
	$(BIN)/python benchmarks/preview_scale.py --base eks-p5
	$(BIN)/python benchmarks/preview_scale.py --base gke-a3mega
	$(BIN)/python benchmarks/preview_scale.py --base aks-nd-h100
	$(BIN)/python benchmarks/policy_scale.py
	$(BIN)/python benchmarks/onprem_scale.py
	$(BIN)/python benchmarks/rack_scale.py
	$(BIN)/python benchmarks/tune_hosts.py   # needs root, debootstrap, iproute2, openssh-client
	$(BIN)/python benchmarks/discover_scale.py
	$(BIN)/python benchmarks/size_scale.py
	$(BIN)/python benchmarks/published_runs.py   # the sizing model beside published training runs

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
