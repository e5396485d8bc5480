# Quick start: `make demo` then `make test`. Both create .venv when it is missing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[plot]'
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/spargel demo

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q

bench: $(VENV)/.installed
	$(BIN)/python -m pip install -q -e '.[bench]'

clean:
	rm -rf $(VENV) build src/*.egg-info
