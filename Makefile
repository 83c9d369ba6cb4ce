# One set-up path: `make setup` builds .venv, installs the package with its test
# extras and makes sure Java 17 is there for Spark. `make test` and `make demo`
# depend on it, so either works on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup test demo java bench clean

setup: $(STAMP) java

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

java:
	@bash scripts/ensure-java.sh

test: setup
	PYSPARK_PYTHON=$(abspath $(BIN)/python) $(BIN)/python -m pytest -q

demo: setup
	PYSPARK_PYTHON=$(abspath $(BIN)/python) PATH=$(abspath $(BIN)):$$PATH bash examples/demo.sh

bench: setup
	$(BIN)/python bench/validate_manifest.py
	PYSPARK_PYTHON=$(abspath $(BIN)/python) PATH=$(abspath $(BIN)):$$PATH $(BIN)/python bench/extraction.py
	PYSPARK_PYTHON=$(abspath $(BIN)/python) PATH=$(abspath $(BIN)):$$PATH $(BIN)/python bench/pipeline.py

clean:
	rm -rf $(VENV) output .pytest_cache
