# nexus: `make run` lists the bundled skills, `make test` passes the suite; both set up from nothing.
PYTHON  ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d

SOURCES := pyproject.toml $(shell find lib tools -type f ! -path '*/__pycache__/*' 2>/dev/null)

.PHONY: run test bench install uninstall clean

# The venv holds the dependencies and a regular (non-editable) install of nexus, reinstalled
# whenever a source changes: a regular install keeps interpreter start-up free of import hooks.
$(VENV)/.deps: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "setuptools>=70.1" docopt-ng pyyaml jsonlines tomli-w pytest pytest-console-scripts
	touch $@

# PYTHONWARNINGS: setuptools warns that the bundled skill folders look like packages; they are data.
$(VENV)/.installed: $(VENV)/.deps $(SOURCES)
	PYTHONWARNINGS=ignore $(BIN)/python -m pip install --quiet --no-deps --no-build-isolation --force-reinstall .
	rm -rf build
	touch $@

run: $(VENV)/.installed
	$(BIN)/nexus skills list

test: $(VENV)/.installed
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/pytest tests $(PYTEST_ARGS)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/pytest tests --script-launch-mode=subprocess -m 'not once' $(PYTEST_ARGS)

bench: $(VENV)/.installed
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python tests/bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .bench
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
