# One set-up path: `make setup` builds .venv, installs the package with its test and
# lint extras and makes sure Java 17 is there for Spark and PostgreSQL (server and JDBC
# driver) for normalization's PostgreSQL target and its tests, and headless Chromium for the
# builder's browser tests. `make test` and `make demo` depend on it, so either works on a
# fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# The `airbyte` extra (airbyte-cdk, for custom components that subclass Airbyte's classes) lives in its own
# venv: it pins isodate and xmltodict lower than the main venv has them, and `make test` proves the framework
# runs without it. `make test-airbyte` runs mypy over framework/ with airbyte-cdk's types there (the bridge's
# calls into it are checked), then the tests that need it in-process, and the parity tests against it.
# mypy and the stubs are the dev extra's; the dev extra itself would bring Spark Connect's client too.
AIRBYTE_VENV  := .venv-airbyte
AIRBYTE_STAMP := $(AIRBYTE_VENV)/.installed

.PHONY: setup test lint demo java postgres chromium bench clean test-airbyte

setup: $(STAMP) java postgres chromium

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(AIRBYTE_STAMP): pyproject.toml
	$(PYTHON) -m venv $(AIRBYTE_VENV)
	$(AIRBYTE_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(AIRBYTE_VENV)/bin/python -m pip install --quiet -e '.[test,spark,airbyte]' \
		'mypy>=1.10' types-requests types-PyYAML types-python-dateutil
	touch $(AIRBYTE_STAMP)

java:
	@bash scripts/ensure-java.sh

postgres:
	@bash scripts/ensure-postgres.sh

# headless Chromium and its driver for the builder's browser tests (tests/builder/test_browser*.py)
chromium:
	@bash scripts/ensure-chromium.sh

# ruff over the repo and mypy over framework/ (both configured in pyproject.toml); .ci/run runs it before the tests
lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy

test: setup
	PYSPARK_PYTHON=$(abspath $(BIN)/python) $(BIN)/python -m pytest -q

test-airbyte: $(AIRBYTE_STAMP)
	$(AIRBYTE_VENV)/bin/python -m mypy
	AIRBYTE_CDK_PYTHON=$(abspath $(AIRBYTE_VENV)/bin/python) PYSPARK_PYTHON=$(abspath $(AIRBYTE_VENV)/bin/python) \
		$(AIRBYTE_VENV)/bin/python -m pytest -q \
		tests/components/custom/test_airbyte*.py tests/parity tests/manifest/test_pypi_corpus_discover.py

demo: setup
	PYSPARK_PYTHON=$(abspath $(BIN)/python) PATH=$(abspath $(BIN)):$$PATH bash examples/demo.sh

# `make bench BENCH_RECORDS=200000` for a quicker run; peers missing from .venv-peers are shown as not run
# (`bash bench/peers.sh` installs them).
BENCH_RECORDS ?= 200000,2000000
bench: setup
	$(BIN)/python bench/validate_manifest.py
	PYSPARK_PYTHON=$(abspath $(BIN)/python) PATH=$(abspath $(BIN)):$$PATH $(BIN)/python bench/peers.py --records $(BENCH_RECORDS) --markdown

clean:
	rm -rf $(VENV) $(AIRBYTE_VENV) output .pytest_cache
