# Quick start: `make demo` then `make test`. Both create .venv when it is missing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# --no-compile: pip compiles one file at a time (about half of a fresh install's time);
# COMPILE below does it on every core
PIP := $(BIN)/python -m pip install -q --no-compile

.PHONY: demo test test-portable test-oldest bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip

# bytecode for what was installed, in parallel: pip's own compile step is skipped above,
# and where PYTHONDONTWRITEBYTECODE is set Python writes none on import either, which
# left every process compiling numba, numpy and scipy from source (about 1.5 s of each
# `spargel label`, and of every command-line test)
COMPILE := $(BIN)/python -m compileall -q -j 0 -x '/tests?/' $(VENV)/lib src

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(PIP) -e '.[plot]'
	$(COMPILE) > /dev/null || true     # (bytecode only saves time)
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PIP) -e '.[test]'
	$(COMPILE) > /dev/null || true     # (bytecode only saves time)
	touch $@

demo: $(VENV)/.installed
	$(BIN)/spargel demo

# one test process per core; a test file runs whole in one process (its module fixtures
# are built once), and the processes share numba's on-disk cache of compiled kernels
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -n auto --dist loadfile

# the suite again as the lowest CPU of this machine kind would run it (an AVX2 machine
# without AVX-512): OpenBLAS's Haswell kernels (unless OPENBLAS_CORETYPE already names
# one), numpy without its AVX-512 paths, numba compiling for a Haswell CPU into a cache of
# its own (a kernel compiled for AVX-512 must never be loaded there). CI runs both.
PORTABLE_CACHE := $(CURDIR)/$(VENV)/numba-cache-haswell
PORTABLE_TESTS ?= tests
test-portable: $(VENV)/.installed-test
	find $(PORTABLE_CACHE) -mindepth 1 -maxdepth 1 ! -name $(SRC_HASH) -exec rm -rf {} + 2>/dev/null || true
	OPENBLAS_CORETYPE=$${OPENBLAS_CORETYPE:-Haswell} \
	NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR" \
	NUMBA_CPU_NAME=haswell NUMBA_CPU_FEATURES= \
	NUMBA_CACHE_DIR=$(PORTABLE_CACHE)/$(SRC_HASH) \
	$(BIN)/python -m pytest -q -n auto --dist loadfile $(PORTABLE_TESTS)

# the oldest versions pyproject.toml claims (ci/oldest-constraints.txt), in their own
# .venv-oldest with their own numba cache; `make test-oldest OLDEST_TESTS=tests` runs the
# whole suite there. Not part of `make test` (which tests the newest releases).
OLDEST := .venv-oldest
OLDEST_PIP := $(OLDEST)/bin/python -m pip install -q --no-compile
OLDEST_TESTS ?= tests/test_first_use.py tests/chain/test_crf_inference.py tests/test_protocol.py \
	tests/chain/test_crf_estimator.py tests/loglinear/test_loglinear.py tests/mrf tests/gaussian tests/cli/test_cli_common.py

# numba's disk cache of a kernel is not invalidated when a kernel it calls from another
# file changes (stale code after a pull or a rebase): one cache per state of src/
SRC_HASH = $(shell cat $$(find src -name '*.py' | sort) | sha1sum | cut -c1-12)

$(OLDEST)/.installed: ci/oldest-constraints.txt pyproject.toml
	test -x $(OLDEST)/bin/python || $(PYTHON) -m venv $(OLDEST)
	$(OLDEST_PIP) -c ci/oldest-constraints.txt -e '.[plot]' 'pytest>=7.4' 'pytest-xdist>=3.5' scikit-learn
	touch $@

test-oldest: $(OLDEST)/.installed
	$(OLDEST)/bin/python -c "import numba, numpy, scipy, sklearn, spargel.core.jit as j; \
	print('numba', numba.__version__, 'numpy', numpy.__version__, 'scipy', scipy.__version__, \
	'scikit-learn', sklearn.__version__, 'speed-ups', j.SPEEDUPS)"
	find $(OLDEST)/numba-cache -mindepth 1 -maxdepth 1 ! -name $(SRC_HASH) -exec rm -rf {} + 2>/dev/null || true
	NUMBA_CACHE_DIR=$(CURDIR)/$(OLDEST)/numba-cache/$(SRC_HASH) $(OLDEST)/bin/python -m pytest -q -n auto --dist loadfile $(OLDEST_TESTS)

bench: $(VENV)/.installed
	$(PIP) -e '.[bench]'

clean:
	rm -rf $(VENV) $(OLDEST) build src/*.egg-info
