# objrel: `make run` sets up and opens the app on the demo; `make test` sets up and runs every test.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.objrel-installed
DEMO_STORE ?= var/demo.db
PORT   ?= 8501

.PHONY: setup run demo test test-fast bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[dev]"
	# MTCNN weights ship in facenet-pytorch, whose pins (torch<2.3, numpy<2) cannot be met: install it alone
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps "facenet-pytorch==2.6.0"
	touch $(STAMP)

demo: setup
	$(PY) -m objrel demo --store $(DEMO_STORE)

run: demo
	OBJREL_STORE=$(DEMO_STORE) $(PY) -m streamlit run app.py --server.headless true --server.port $(PORT) \
		--browser.gatherUsageStats false

test: setup
	$(PY) -m pytest -q

test-fast: setup
	$(PY) -m pytest -q -m "not slow"

bench: setup
	$(PY) benchmarks/throughput.py

clean:
	rm -rf $(VENV) var .pytest_cache test-artifacts
