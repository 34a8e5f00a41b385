# `make demo` and `make test` are the two commands of the README's quickstart: each sets up
# everything it needs in .venv on a fresh machine.
# .venv is made from the fastest build on PATH of `python3`'s version (tools/pick_python.py: a
# distribution's optimised build runs the suite on about 16% less CPU than pyenv's plain
# one); `make PYTHON=python3.12 ...` chooses one.
PYTHON ?= $(shell python3 tools/pick_python.py 2>/dev/null || echo python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The default pins the CPU build of torch; the package itself only sets a floor (pyproject.toml),
# so GPU users keep their CUDA build with e.g. `make TORCH=torch test`.
TORCH  ?= torch==2.13.0
# Parallel workers, each test file kept on one (its module fixtures, such as a shared study or
# cluster, start once), taking the files in tests/conftest.py's order, the longest first (xdist
# would reorder them by their number of tests); `make test PYTEST_PARALLEL=` runs serially.
PYTEST_PARALLEL ?= -n 3 --dist loadfile --no-loadscope-reorder
# The suite starts hundreds of Python processes (drivers, services, Ray's workers, each test
# worker collecting every test file): with Python's bytecode cache on, whatever the caller's
# PYTHONDONTWRITEBYTECODE says, each reads searchsvc and the tests compiled instead of
# compiling them again (collection alone: 15 -> 10 CPU-seconds a test worker).
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest

.PHONY: demo test lint install browser postgres clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet "$(TORCH)"
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/searchsvc run spaces/quickstart.yaml --overwrite

# The browser tests use Debian's chromium (Playwright drives it; it never downloads its own);
# the store tests start a private PostgreSQL server from Debian's postgresql binaries.
browser:
	@command -v chromium >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

postgres:
	@command -v pg_ctl >/dev/null || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql; }

# The store's tests also run against a real PostgreSQL server: the test session starts a private
# one from the machine's PostgreSQL binaries (Debian's postgresql package, installed by
# `postgres` when missing) and deletes it after.
test: $(STAMP) browser postgres
	$(BIN)/ruff check searchsvc objectives tests examples benchmarks docs tools
	$(BIN)/mypy
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet  # the docs site, into site/
	$(PYTEST) -q $(PYTEST_PARALLEL) -m "not last" --durations=15
	$(PYTEST) -q -m last tests/last  # after the others: what the suite left behind

lint: $(STAMP)
	$(BIN)/ruff check searchsvc objectives tests examples benchmarks docs tools
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache *.egg-info
