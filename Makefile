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
LIBDIR  ?= $(PREFIX)/lib
PIPFLAGS ?=
EXTRAS  ?= mcp

SOURCES := pyproject.toml $(shell find lib tools -type f ! -path '*/__pycache__/*' 2>/dev/null)

.PHONY: run test bench audit-corpus man install uninstall clean

# The venv holds the dependencies (the mcp, otel and fast extras' too: nexus-mcp and its tests need the MCP
# SDK, the OpenTelemetry tests its SDK and opentelemetry-proto; the tests and make bench read usage logs
# with orjson and without) and
# a regular (non-editable) install of nexus, reinstalled whenever a source changes: a regular
# install keeps interpreter start-up free of import hooks.
$(VENV)/.deps: pyproject.toml
	@echo "make: creating $(VENV) and installing nexus's dependencies from PyPI (the first time: a minute or two)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "setuptools>=70.1" docopt-ng pyyaml jsonlines tomli-w pytest pytest-console-scripts pytest-xdist "mcp>=2.0,<3" \
		"opentelemetry-sdk>=1.30" "opentelemetry-exporter-otlp-proto-http>=1.30" "opentelemetry-proto>=1.30" "orjson>=3.9"
	touch $@

# PYTHONWARNINGS: setuptools warns that the bundled skill folders look like packages; they are data.
$(VENV)/.installed: $(VENV)/.deps $(SOURCES)
	@echo "make: installing nexus into $(VENV)"
	PYTHONWARNINGS=ignore $(BIN)/python -m pip install --quiet --no-deps --no-build-isolation --force-reinstall .
	rm -rf build
	touch $@

run: $(VENV)/.installed
	@echo "make: $(VENV) is ready; the bundled skills and their status (nexus skills list):"
	@$(BIN)/nexus skills list

# Most tests start processes and wait for them: pytest-xdist runs them on every core (at most four
# workers: more only add contention), the tests of one xdist_group in one worker, where a module starts
# one server for all of them. `make test TEST_WORKERS=` runs them in one process.
TEST_WORKERS ?= -n auto --maxprocesses=4 --dist loadgroup
test: $(VENV)/.installed
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/pytest tests $(TEST_WORKERS) $(PYTEST_ARGS)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/pytest tests --script-launch-mode=subprocess -m 'not once' $(TEST_WORKERS) $(PYTEST_ARGS)

bench: $(VENV)/.installed
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python tests/bench/run.py

# The audit's precision over public skill collections fetched beforehand into MIRRORS (a folder of git
# repositories or folders; tests/bench/audit_corpus.py pins their commits). Never fetches; CI never runs it.
audit-corpus: $(VENV)/.installed
	$(BIN)/python tests/bench/audit_corpus.py $(MIRRORS) $(ARGS)

# man/*.1 and completions/* are generated from the usage docs and committed; tests fail when stale.
man: $(VENV)/.installed
	$(BIN)/python man/generate.py

# The package and its dependencies go to a folder of their own, $(LIBDIR)/nexus, so any PREFIX
# works and nothing else is touched; each console script is a small launcher in $(BINDIR) that
# puts that folder first on sys.path, then does what the command's script in tools/bin/ does. Launchers name
# the final paths, so DESTDIR staging works.
# EXTRAS: the optional extras installed with it (mcp: the MCP SDK that nexus-mcp needs; fast: orjson, which
# reads usage logs faster), comma-separated; EXTRAS= for none.
SCRIPTS   := $(wildcard tools/bin/nexus*)
PROGRAMS  := $(notdir $(SCRIPTS))
MANPAGES  := $(wildcard man/*.1)
PKGDIR    := $(LIBDIR)/nexus

install:
	rm -rf $(DESTDIR)$(PKGDIR)
	$(PYTHON) -m pip install --quiet --no-compile --target $(DESTDIR)$(PKGDIR) $(PIPFLAGS) "$(if $(EXTRAS),.[$(EXTRAS)],.)"
	rm -rf build $(DESTDIR)$(PKGDIR)/bin
	$(PYTHON) -m compileall -q -d $(PKGDIR) $(DESTDIR)$(PKGDIR)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	python=$$($(PYTHON) -c 'import sys; print(sys.executable)') && \
	for script in $(SCRIPTS); do \
		launcher=$(DESTDIR)$(BINDIR)/$${script#tools/bin/}; \
		awk -v python="$$python" -v pkg="$(PKGDIR)" 'NR == 1 { print "#!" python; next } { print } \
			/^import sys$$/ { print "sys.path.insert(0, \"" pkg "\")" }' $$script > $$launcher && \
		chmod 0755 $$launcher || exit 1; \
	done
	install -m 0644 $(MANPAGES) $(DESTDIR)$(MANDIR)/man1/
	for prog in $(PROGRAMS); do \
		install -m 0644 completions/nexus.bash $(DESTDIR)$(BASHCOMPDIR)/$$prog && \
		install -m 0644 completions/nexus.fish $(DESTDIR)$(FISHCOMPDIR)/$$prog.fish || exit 1; \
	done
	install -m 0644 completions/_nexus $(DESTDIR)$(ZSHCOMPDIR)/_nexus
	@case "$(BASHCOMPDIR)" in /usr/share/bash-completion/completions|/usr/local/share/bash-completion/completions) ;; \
	*) echo "nexus: the bash completion went to $(BASHCOMPDIR), where bash-completion does not look;"; \
	   echo "       to load it, add to ~/.bashrc:  source $(BASHCOMPDIR)/nexus" ;; esac
	@case "$(ZSHCOMPDIR)" in /usr/share/zsh/site-functions|/usr/local/share/zsh/site-functions) ;; \
	*) echo "nexus: the zsh completion went to $(ZSHCOMPDIR); to load it, add to ~/.zshrc before compinit:"; \
	   echo "       fpath=($(ZSHCOMPDIR) \$$fpath)" ;; esac

uninstall:
	rm -rf $(DESTDIR)$(PKGDIR)
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(PROGRAMS))
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(MANPAGES)))
	rm -f $(addprefix $(DESTDIR)$(BASHCOMPDIR)/,$(PROGRAMS))
	rm -f $(addprefix $(DESTDIR)$(FISHCOMPDIR)/,$(addsuffix .fish,$(PROGRAMS)))
	rm -f $(DESTDIR)$(ZSHCOMPDIR)/_nexus

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .bench
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
