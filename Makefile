# amem-db: `make demo` (install + run on the embedded default), `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

DATASETS ?= ../shared/datasets

.PHONY: install demo lint test test-fast test-container functions goldens eval bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[test]"
	touch $@

# The main job on the embedded default (./.amem/data): migrate, ingest the
# sample corpus (real offline model; a re-run finds it unchanged), query it,
# remember facts (one superseded) and show the entity and the history of its role.
demo: install
	$(BIN)/amem-db migrate
	$(BIN)/amem-db ingest examples/sample-corpus
	$(BIN)/amem-db query "how long do I have to return an unopened keyboard?" --k 3
	$(BIN)/amem-db query "MLWK3LL/A" --mode bm25 --k 3 --no-context
	$(BIN)/amem-db keywords list --min-document-count 2 --limit 5
	$(BIN)/amem-db remember "Alice Smith joined Acme as VP Engineering; she owns the Returns Policy." --category knowledge \
		--fact 'person:Alice Smith role=VP Engineering' --fact 'person:Alice Smith works_at->organisation:Acme' \
		--fact 'person:Alice Smith owns->policy:Returns Policy' --observed-at 2024-01-10T00:00:00Z --idempotency-key demo-fact-1
	$(BIN)/amem-db remember --fact 'person:Alice Smith role=CTO' --observed-at 2025-03-01T00:00:00Z --idempotency-key demo-fact-2
	$(BIN)/amem-db entities get person "alice smith"
	$(BIN)/amem-db entities history person "Alice Smith" role
	$(BIN)/amem-db recall "What is Alice Smith's role?" --k 5
	$(BIN)/amem-db recall "What was Alice Smith's role?" --as-of 2024-06-01 --include facts --k 3
	$(BIN)/amem-db recall "Who owns the Returns Policy, and how long is the return window?" --k 6

# ruff over the tree, mypy over amem_db/ (strict on the public client: pyproject)
lint: install
	$(BIN)/ruff check amem_db tests scripts
	$(BIN)/mypy

# the whole suite (= .ci/run = the README's second command): lint first; the 15 slowest
# tests are printed so the suite's ~15-minute budget can be watched from the CI log
test: install lint
	$(BIN)/python -m pytest -q --durations=15

# the inner loop: everything but the `slow` marker (a few minutes)
test-fast: install
	$(BIN)/python -m pytest -q -m "not slow"

# the suite against a SurrealDB container and deploy/*.compose.yaml (tests/test_container.py,
# docs/DEPLOY.md): needs Docker; without it the tests skip and -rs prints why
test-container: install
	$(BIN)/python -m pytest -q -rs tests/test_container.py

# docs/FUNCTIONS.md from the rendered surql/ (a test fails when it is stale)
functions: install
	$(BIN)/python -m amem_db.functions_doc --write

# regenerate the query-plan golden files (tests/golden/)
goldens: install
	AMEM_UPDATE_GOLDENS=1 $(BIN)/python -m pytest -q tests/test_query.py -k plan

# Retrieval quality per mode on the shared splits (docs/EVALUATION.md); LoCoMo
# (dev) is a conversation collection: turns written as memory passages, questions recalled.
eval: install
	$(BIN)/pip install -q -e ".[test,eval]"
	$(BIN)/amem-db eval $(DATASETS)/scifact
	$(BIN)/amem-db eval $(DATASETS)/cranfield
	$(BIN)/amem-db eval $(DATASETS)/cisi
	$(BIN)/amem-db eval $(DATASETS)/locomo

# Speed and scale beside the raw engine, LanceDB, bm25s and numpy (docs/BENCHMARKS.md).
bench: install
	$(BIN)/pip install -q -e ".[test,bench]"
	AMEM_DATASETS=$(DATASETS) $(BIN)/amem-db bench

clean:
	rm -rf $(VENV) .amem .pytest_cache
