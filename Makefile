# Quick start: `make demo` then `make test`. Both create .venv when it is missing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# --no-compile: no bytecode for every installed module (about half of a fresh install's
# time); Python writes it on first import for the few modules a run uses
PIP := $(BIN)/python -m pip install -q --no-compile

.PHONY: demo test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(PIP) -e '.[plot]'
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PIP) -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/spargel demo

# one test process per core; a test file runs whole in one process (its module fixtures
# are built once), and the processes share numba's on-disk cache of compiled kernels
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -n auto --dist loadfile

bench: $(VENV)/.installed
	$(PIP) -e '.[bench]'

clean:
	rm -rf $(VENV) build src/*.egg-info
