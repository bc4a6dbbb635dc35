# paging-lab. `make` sets up what is missing and builds results/paper.pdf from a fresh run of the
# default profile on this machine; `make test` sets up the same way and runs every test.
#   make PROFILE=full      the paper as it is meant to be built (longer)
#   make PROFILE=seed      readyboost at the seed article's own scale (3 GiB of "RAM"; ~66 min)
#   make PROFILE=recorded  the paper from a recorded reference run (RECORDING=<machine>/<profile>),
#                          without root and without running a trial
#   make PROFILE=full EXPERIMENT=seekmodel
#                          one experiment (or several, space-separated): its trials, notebook and
#                          checks, no paper (a long profile an experiment at a time)
#   make setup             only the set-up (Debian packages, venv, native tools)
#   make bench             native tools against their peers, side by side (prints a table)
#   make check-crash       the signal sweeps: trials stopped by SIGTERM and SIGKILL at 100 points,
#                          and by SIGTERM at every change point of two emulated trials; state
#                          and scratch checked after each (docs/reliability.md)
#   make clean             remove results/ and build outputs (keeps the venv)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(abspath $(VENV)/bin)
STAMP := $(VENV)/.installed-from-lock
PROFILE ?=
SNAKEMAKE_FLAGS ?=
EXPERIMENT ?=
TARGETS := $(if $(strip $(EXPERIMENT)),$(foreach e,$(EXPERIMENT),results/$(e)/measurements.json results/$(e)/check.txt),results/paper.pdf results/index.html)
# The recorded run that `make PROFILE=recorded` rebuilds the paper from (data/recorded/<this>).
RECORDING ?= epyc-2c-linux6.18-virtio/quick
# --config takes every following word as name=value, so it comes after the target.
ifeq ($(strip $(PROFILE)),recorded)
PROFILE_FLAGS := --config recording=$(RECORDING)
else
PROFILE_FLAGS := $(if $(strip $(PROFILE)),--config profile=$(PROFILE))
endif
export PATH := $(BIN):$(PATH)

.PHONY: all paper setup system venv native test check-crash bench clean distclean

all: paper

paper: setup
	bash workflow/scripts/run_pipeline.sh --workflow-profile workflow/profiles/default $(SNAKEMAKE_FLAGS) $(TARGETS) $(PROFILE_FLAGS)
ifeq ($(strip $(EXPERIMENT)),)
	@printf '%s\n' "make: done." \
	  "  the paper:    results/paper.pdf" \
	  "  everything:   results/index.html (verdicts, comparison, each experiment's HTML and figure)" \
	  "  logs:         results/logs/ (a trial run's progress: results/logs/<experiment>.log)"
else
	@printf '%s\n' "make: done ($(strip $(EXPERIMENT)); no paper)." \
	  $(foreach e,$(EXPERIMENT),"  $(e):  results/$(e)/ (measurements.json, $(e).pdf, trials.csv)") \
	  "  logs:         results/logs/"
endif

setup: system venv native

# Debian packages (TeX Live, latexmk, fio, libfuse3, liburing, poppler-utils): installed when
# root with apt, otherwise the exact command to run is printed.
system:
	@bash workflow/scripts/setup_system.sh

# The venv is rebuilt only when the lock (or the package metadata) changes.
venv: $(STAMP)
$(STAMP): requirements.lock pyproject.toml
	@bash workflow/scripts/check_python.sh $(PYTHON)
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --disable-pip-version-check --no-input -q --require-hashes -r requirements.lock
	$(VENV)/bin/pip install --disable-pip-version-check --no-input -q --no-deps --no-build-isolation -e .
	touch $@

native:
	@$(MAKE) -s -C native

test: setup
	$(VENV)/bin/pytest

# `pagelab trial` of every experiment that changes state, stopped by SIGTERM and by SIGKILL at
# 100 points spread over a trial's phases; after each stop the state and scratch are checked.
# Too long for make test (which runs four of its stops): tests/test_crash_sweep.py.
check-crash: setup
	PAGELAB_CHECK_CRASH=1 $(VENV)/bin/pytest -s tests/test_crash_sweep.py tests/test_state.py -k 'sweep or sigterm_at_every_point'

# The native tools against their peers (fio, cat, MAP_POPULATE), side by side in one run.
bench: setup
	$(VENV)/bin/python native/bench/run.py

clean:
	rm -rf results scratch .snakemake
	$(MAKE) -C native clean

distclean: clean
	rm -rf $(VENV)
