# Two commands do all set-up on a fresh machine:
#   make run    create .venv, install everything, start the app on the bundled offline model
#   make test   the same set-up, then the tests (unit, real models, AppTest, browser); slow ones: make test-slow
VENV := .venv
PYTHON := $(VENV)/bin/python
# Datasets are read from $ATTRIBUTION_DATA_DIR; default to ../shared/data when it exists.
ATTRIBUTION_DATA_DIR ?= $(if $(wildcard ../shared/data),$(abspath ../shared/data),)
export ATTRIBUTION_DATA_DIR
# The bundled models need no network; set HF_HUB_OFFLINE=0 to load hub models by id.
HF_HUB_OFFLINE ?= 1
export HF_HUB_OFFLINE
PORT ?= 8501
# `make run SHARE=1` serves the app on every network interface (shared mode); by default it listens
# on 127.0.0.1 only (.streamlit/config.toml).
SHARE ?=
ADDRESS := $(if $(SHARE),0.0.0.0,127.0.0.1)

.PHONY: install browser run test test-slow bench lint

# The project itself is installed editable, without dependencies or a build environment (the
# venv's pinned setuptools builds it), so the console script `attrx` exists and `import api` works
# from any folder.
$(VENV)/.installed: requirements.txt requirements-dev.txt pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --disable-pip-version-check -q torch==2.13.0 -r requirements.txt -r requirements-dev.txt
	$(VENV)/bin/pip install --disable-pip-version-check -q --no-deps --no-build-isolation -e .
	touch $@

install: $(VENV)/.installed

# Debian's chromium drives the browser test (Playwright does not download its own browser).
browser:
	@command -v chromium >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && $$SUDO apt-get install -y -q chromium; }

run: install browser
	ATTRIBUTION_SHARED=$(if $(SHARE),1,$${ATTRIBUTION_SHARED:-}) \
	  $(VENV)/bin/streamlit run app.py --server.port $(PORT) --server.address $(ADDRESS) --server.headless true

# The default suite leaves out the tests marked slow (each over about 20 s: whole-split checks,
# retraining, Ray, most browser sessions); CI runs them too (`make test-slow`, .ci/run). Each
# suite ends with its slowest tests, so a CI log says where the time went.
test: install browser
	$(PYTHON) -m pytest -q -m "not slow" --durations=15

test-slow: install browser
	$(PYTHON) -m pytest -q -m slow --durations=15

bench: install
	$(PYTHON) -m cli bench --model minilm-sst2 --methods all --json

# ruff (api/ and engine/ select more rules in their ruff.toml) and mypy (files in pyproject.toml).
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
