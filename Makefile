# paging-lab. `make` sets up what is missing and builds results/paper.pdf from a fresh run of the
# default profile on this machine; `make test` sets up the same way and runs every test.
#   make PROFILE=full      the paper as it is meant to be built (longer)
#   make PROFILE=seed      readyboost at the seed article's own scale (3 GiB of "RAM"; ~66 min)
#   make PROFILE=recorded  the paper from a recorded reference run (RECORDING=<machine>/<profile>),
#                          without root and without running a trial
#   make PROFILE=full EXPERIMENT=seekmodel
#                          one experiment (or several, space-separated): its trials, notebook and
#                          checks, no paper (a long profile an experiment at a time)
#   make setup             only the set-up (the venv, config/config.yaml checked, Debian packages,
#                          native tools; PROFILE=recorded: the venv and the paper's packages, no
#                          native build)
#   make report            the run above (same PROFILE, EXPERIMENT, RECORDING), then Snakemake's own
#                          report of it, results/report.html: its rules and their runtimes, the
#                          paper, the verdict table and each experiment's figure and trials
#                          table with their captions (workflow/report/)
#   make bench             native tools against their peers, side by side (prints a table)
#   make check-crash       the signal sweeps: trials stopped by SIGTERM and SIGKILL at 90 points,
#                          and by SIGTERM at every change point of two emulated trials; state
#                          and scratch checked after each (docs/reliability.md)
#   make check-flaky       the timing-sensitive tests 20 times beside a CPU hog on one core;
#                          prints how many failed (docs/testing.md)
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
RECORDED := $(filter recorded,$(strip $(PROFILE)))
# The Debian packages of the route (workflow/scripts/setup_system.sh): `paper` for the paper from
# a recording (no compiler, FUSE, fio or Slurm, and no native build), `measure` to run the trials,
# `test` for every test.
PACKAGE_SET := $(if $(RECORDED),paper,measure)
# In this order, one step at a time (.NOTPARALLEL, also under make -j): the venv (local to the
# checkout), config/config.yaml validated, then the route's Debian packages, then the native build.
SETUP := venv config system $(if $(RECORDED),,native)

# Validation first: make's own variables (PROFILE, EXPERIMENT, RECORDING) with the standard
# library only, then config/config.yaml when a current venv can read it, all before anything is
# installed, built or changed; a refusal is one line naming the variable or key, and exit 2. On a
# fresh clone the configuration is validated right after the venv is made (the `config` step),
# before any Debian package of the route is installed, before the native build and before
# `pagelab state recover`. The one system package that may come first is python3-venv, when
# python3 has no venv module to make the venv with (workflow/scripts/check_python.sh says so).
CHECK := workflow/scripts/check_make.py --profile '$(strip $(PROFILE))' --experiment '$(strip $(EXPERIMENT))' \
  --recording '$(strip $(RECORDING))'
ifneq ($(filter-out clean distclean,$(or $(MAKECMDGOALS),all)),)
VENV_CURRENT := $(shell test -x $(BIN)/pagelab && test $(STAMP) -nt requirements.lock && test $(STAMP) -nt pyproject.toml && echo yes)
REFUSAL := $(shell command -v $(PYTHON) >/dev/null && $(PYTHON) $(CHECK) $(if $(VENV_CURRENT),--pagelab $(BIN)/pagelab) 2>&1 >/dev/null)
$(if $(REFUSAL),$(error $(REFUSAL)))
endif
export PATH := $(BIN):$(PATH)

.NOTPARALLEL:
.PHONY: all paper report setup system venv config native test check-crash check-flaky bench clean distclean

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

# Snakemake's report of the run just made (the files marked report() in workflow/rules/), for the
# same targets and configuration; it reads the run's metadata in .snakemake/ and runs no job.
report: paper
	snakemake --workflow-profile workflow/profiles/default --report results/report.html $(TARGETS) $(PROFILE_FLAGS)
	@echo "make: Snakemake's report of the run: results/report.html"

setup: $(SETUP)

# The route's Debian packages: installed when root with apt, otherwise the exact command to run
# is printed. After `config` in every route, so a bad configuration changes nothing system-wide.
system:
	@bash workflow/scripts/setup_system.sh $(PACKAGE_SET)

# The venv is rebuilt only when the lock (or the package metadata) changes. check_python.sh
# installs python3-venv alone first (as root with apt) when python3 cannot make a venv. The
# venv's pip is first replaced by the lock's own (its entry alone, hash-checked): the pip that
# python3 -m venv brings can be years older, and an old pip spends most of its time reading every
# release on the index pages (with a warm cache, 50 s for the lock with pip 23.2, 22 s with the
# lock's 26.3). pip installs without compiling (it compiles on one core, about half its time);
# compileall then writes the same bytecode on every core, and pagelab's own (src/, which an
# editable install leaves uncompiled: where PYTHONDONTWRITEBYTECODE is set, every process
# compiled it again), leaving out the packages' own test suites (a quarter of their code), which
# nothing here imports.
venv: $(STAMP)
$(STAMP): requirements.lock pyproject.toml
	@bash workflow/scripts/check_python.sh $(PYTHON)
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	awk '/^pip==/ {p = 1; print; next} p && /^ / {print; next} {p = 0}' requirements.lock > $(VENV)/pip.lock
	$(VENV)/bin/pip install --disable-pip-version-check --no-input -q --no-compile --require-hashes --no-deps -r $(VENV)/pip.lock
	$(VENV)/bin/pip install --disable-pip-version-check --no-input -q --no-compile --require-hashes -r requirements.lock
	$(VENV)/bin/pip install --disable-pip-version-check --no-input -q --no-compile --no-deps --no-build-isolation -e .
	$(VENV)/bin/python -m compileall -q -j 0 -x '/tests?/' $(VENV)/lib src >/dev/null
	touch $@

# config/config.yaml with the venv's pagelab (again, when it was already checked before set-up).
config: venv
	@$(BIN)/python $(CHECK) --pagelab $(BIN)/pagelab

native:
	@$(MAKE) -s -C native

# The tests need the native tools and the test set of packages on every route.
test check-flaky: PACKAGE_SET := test
check-crash bench: PACKAGE_SET := measure
test check-flaky check-crash bench: venv config system native

# Every test: the files that touch nothing on the machine run beside the rest, at nice 19
# (workflow/scripts/run_tests.sh); `.venv/bin/pytest` alone runs them all in one process.
test:
	bash workflow/scripts/run_tests.sh $(VENV)/bin

# `pagelab trial` of every experiment that changes state, stopped by SIGTERM and by SIGKILL at
# 90 points spread over a trial's phases; after each stop the state and scratch are checked.
# Too long for make test (which runs four of its stops): tests/test_crash_sweep.py. The tests
# marked check_crash, which make test skips, and no other.
check-crash:
	PAGELAB_CHECK_CRASH=1 $(VENV)/bin/pytest -s -m check_crash

# The tests that judge time (workflow/scripts/check_flaky.py lists them), FLAKY_RUNS times
# (20) while a busy loop holds one core; exits 1 if any run had a failure.
check-flaky:
	$(VENV)/bin/python workflow/scripts/check_flaky.py

# The native tools against their peers (fio, cat, MAP_POPULATE), side by side in one run.
bench:
	$(VENV)/bin/python native/bench/run.py

clean:
	rm -rf results scratch .snakemake
	$(MAKE) -C native clean

distclean: clean
	rm -rf $(VENV)
