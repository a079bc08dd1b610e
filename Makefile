# amem-db: `make demo` (install + run on the embedded default), `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install demo test eval bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[test]"
	touch $@

# The main job on the embedded default (./.amem/data): migrate, then show what is there.
demo: install
	$(BIN)/amem-db migrate
	$(BIN)/amem-db status

test: install
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) .amem .pytest_cache
