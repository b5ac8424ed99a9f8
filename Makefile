# objrel: `make run` sets up and opens the app on the demo; `make test` sets up and runs every test.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.objrel-installed
DEMO_STORE ?= var/demo.db
PORT   ?= 8501

HOST   ?= 127.0.0.1
# System programs the tests drive: Debian's chromium (end-to-end browser test) and a PostgreSQL server.
SYSTEM_PACKAGES := chromium postgresql

.PHONY: setup system-deps run demo test test-fast bench docs clean

setup: $(STAMP)

# Seconds between the lines a long step prints while it works (pip is silent for a minute installing torch).
HEARTBEAT_S ?= 10
# $(call step,what,command): say what starts, run the command with a line every HEARTBEAT_S seconds, then
# say how long it took (or that it failed, with its exit status, which the step returns).
define step
	@echo "objrel: $(1) ..."; start=$$(date +%s); \
	( while sleep $(HEARTBEAT_S); do echo "objrel:   ... still working, $$(( $$(date +%s) - start )) s"; done ) & beat=$$!; \
	$(2); status=$$?; kill $$beat 2>/dev/null; wait $$beat 2>/dev/null; \
	if [ $$status -eq 0 ]; then echo "objrel: done in $$(( $$(date +%s) - start )) s: $(1)"; \
	else echo "objrel: failed (exit status $$status): $(1)"; fi; exit $$status
endef

$(STAMP): pyproject.toml setup.py
	$(call step,[1/4] virtual environment $(VENV),test -x $(PY) || $(PYTHON) -m venv $(VENV))
	$(call step,[2/4] installing packages (the first time: a few minutes),$(PY) -m pip install --disable-pip-version-check -e ".[dev]")
	# MTCNN weights ship in facenet-pytorch, whose pins (torch<2.3, numpy<2) cannot be met: install it alone
	$(call step,[3/4] installing facenet-pytorch without its pins,$(PY) -m pip install --disable-pip-version-check --no-deps "facenet-pytorch==2.6.0")
	# irrCAC, the reference the agreement coefficients are tested against, pins scipy==1.12.0 and pandas<3
	$(call step,[4/4] installing irrCAC without its pins,$(PY) -m pip install --disable-pip-version-check --no-deps "irrCAC==0.4.4")
	@touch $(STAMP)

# The demo's review samples are drawn here; their LIME runs in the app's own LIME queue (started by the first
# reviewer who opens one, capped by $$OBJREL_LIME_PROCESSES, ended with the app).
demo: setup
	$(call step,demo store $(DEMO_STORE),$(PY) -m objrel demo --no-lime --store $(DEMO_STORE))

run: demo
	@echo "objrel: serving http://$(HOST):$(PORT) (store $(DEMO_STORE); bind elsewhere with make run HOST=0.0.0.0; a proxy in front names its origins in OBJREL_ALLOWED_ORIGINS)"
	OBJREL_STORE=$(DEMO_STORE) $(PY) -m streamlit run serve.py --server.headless true --server.port $(PORT) \
		--server.address $(HOST) --server.fileWatcherType none --browser.gatherUsageStats false

# Installs what the tests drive when missing: as root with apt-get, otherwise it stops with the command to run.
system-deps:
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "objrel: installing$$missing with apt-get (about a minute)"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null) \
	      || { echo "objrel: apt-get could not install$$missing"; exit 1; }; \
	  else \
	    echo "objrel: the tests drive$$missing; install them first with:"; \
	    echo "    sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi

# pytest-xdist workers (one per core with auto; WORKERS=0 runs every test in this process).  Each test file is
# one group, run by one worker, and the browser tests share one (tests/conftest.py), so the workers never build
# a module's fixtures twice nor drive two browsers at once.
WORKERS ?= auto
PARALLEL = -n $(WORKERS) --dist loadgroup
# What the fast loop leaves out: the tests marked (pyproject.toml [tool.pytest.ini_options]) as running the
# pretrained models or starting a browser, a PostgreSQL server, a Ray runtime or other processes.
FAST = not slow and not browser and not postgres and not ray and not subprocess

# The linter (rules in pyproject.toml [tool.ruff]), the type checker ([tool.mypy]: the lower stages) and the
# docs build first, then every test, the 25 slowest named at the end; a skipped test fails the run
# (tests/conftest.py) unless OBJREL_ALLOW_SKIPS=1.
test: setup system-deps
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(PY) -m mkdocs build --strict --quiet
	$(PY) -m pytest -q $(PARALLEL) --durations=25

# The loop to run while editing: every test but those FAST leaves out, in parallel.
test-fast: setup
	$(PY) -m pytest -q $(PARALLEL) --durations=10 -m "$(FAST)"

# The docs site (mkdocs.yml) into site/: guides, method, generated CLI, API and performance pages.
docs: setup
	$(PY) -m mkdocs build --strict

bench: setup
	$(PY) benchmarks/throughput.py

clean:
	rm -rf $(VENV) var .pytest_cache test-artifacts site
