# Two commands matter: `make book` and `make test`. Everything else is optional.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

CH ?=
SOURCE ?= recorded
ENGINE ?=
TARGET ?=
RECORDING ?=
RECORD_TO ?=
PAGE ?=
ALLOW_SERVER_CHANGES ?=
PARAMS ?=

.PHONY: setup book chapter record .chapter-run .record-run test lab bench-perftools bench-driver bench-book native pg-named clean clean-pg help

# Native microbenchmarks: every native/<name>.c becomes native/build/<name>.
CC ?= cc
NATIVE_CFLAGS ?= -O2 -g -std=c11 -Wall -Wextra -Werror -pthread
NATIVE_SRC := $(wildcard native/*.c)
NATIVE_BIN := $(patsubst native/%.c,native/build/%,$(NATIVE_SRC))

help:
	@echo "make book      execute every chapter on its recorded data and build the HTML book"
	@echo "make test      run everything CI checks (starts and stops its own PostgreSQL)"
	@echo "make chapter CH=ghost-cleanup [SOURCE=live ENGINE=postgres|sqlserver TARGET=DSN_OR_ENV_VAR] [RECORDING=id|dir]"
	@echo "             [PAGE=out.ipynb]  the executed page to that file instead of the book (no HTML; the book is left as it is)"
	@echo "make record CH=<chapter> ENGINE=<engine> [TARGET=...]   a live run, kept as a new recording under data/"
	@echo "make lab       JupyterLab on notebooks/"
	@echo "make bench-perftools   parse-speed and memory benchmark of the stack importers"
	@echo "make bench-driver      the sessions driver against pgbench on the same single-row insert"
	@echo "make bench-book        make book: a full rebuild, then with nothing changed"
	@echo "make native    build the C microbenchmarks in native/ (chapters build them on demand too)"
	@echo "make pg-named  build PostgreSQL 15 unstripped, with frame pointers (named stacks; PG_BINDIR=...)"

# Every package at its locked version, checked against its hash; then this project itself.
$(STAMP): requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -m compileall -q src  # pip compiled the packages; the first book build need not compile ours
	$(BIN)/python -m contention_book.perftools.native_build
	@touch $(STAMP)

setup: $(STAMP)

book: setup
	$(BIN)/python -m contention_book.harness.book build

# Values reach Python through the environment, never through a shell line, and are not echoed.
export CH SOURCE ENGINE TARGET RECORDING RECORD_TO ALLOW_SERVER_CHANGES PARAMS PAGE

# make chapter / make record end with the line that says why they did not succeed (a refusal, a failure) and
# exit non-zero.  make adds its own "Error N" after a failed recipe, so the run's recipe may fail quietly (-s and
# -; the run leaves that line, or its exit status, in OUTCOME) and the step after it ends make with the line
# ($(error): exit status 2, as for any failed make).
ifneq ($(filter chapter record,$(MAKECMDGOALS)),)
MAKEFLAGS += -s
OUTCOME := $(or $(TMPDIR),/tmp)/contention-book-make-$(shell echo $$PPID).outcome
endif
export CONTENTION_BOOK_MAKE_OUTCOME := $(OUTCOME)
# A stop signal that reached make too leaves no file behind (make is ending anyway): the shell's traps exit.
TRAP_STOP = trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM;
KEEP_STATUS = status=$$?; if [ $$status -ne 0 ] && [ ! -s "$(OUTCOME)" ]; then \
	echo "make $(patsubst .%-run,%,$@): exit status $$status" > "$(OUTCOME)"; fi; exit $$status
END_WITH_OUTCOME = $(if $(wildcard $(OUTCOME)),$(error $(file < $(OUTCOME))$(shell rm -f "$(OUTCOME)")))

chapter: .chapter-run
	$(END_WITH_OUTCOME)

# record: a live run whose recording stays under data/<chapter>/ (the same as chapter SOURCE=live)
record: .record-run
	$(END_WITH_OUTCOME)

.chapter-run: setup
	-@$(TRAP_STOP) $(BIN)/python -m contention_book.harness.book from-make; $(KEEP_STATUS)

.record-run: setup
	-@$(TRAP_STOP) SOURCE=live $(BIN)/python -m contention_book.harness.book from-make; $(KEEP_STATUS)

# The suite on every CPU and one more (pytest-xdist): many tests wait on a server, a subprocess or a signal rather
# than compute, so one worker more than the hardware threads keeps both CPUs busy (measured on 2 CPUs: 20 min 0 s
# with 2 workers, 17 min 55 s with 3).  TEST_WORKERS=0 runs it in this process.  Each worker starts its own
# embedded PostgreSQL, journal and lock folders in its own temporary directory; the tests that build the book into
# book/_build or read that build run on one worker, in order, and a file's tests that share a module fixture on
# one worker (tests/conftest.py).
TEST_WORKERS ?= $(shell echo $$(( $$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1) + 1 )))
test: setup
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=25

lab: setup
	$(BIN)/python -m pip install --quiet -r requirements-lab.txt
	$(BIN)/jupyter lab notebooks/

bench-perftools: setup
	$(BIN)/python benchmarks/bench_perftools.py

bench-driver: setup
	$(BIN)/python benchmarks/bench_driver.py

bench-book: setup
	$(BIN)/python benchmarks/bench_book.py

native: $(NATIVE_BIN)

# PostgreSQL 15 from Debian's source package, unstripped and with frame pointers: perf then names every frame of a
# backend's stack. The references are recorded on it (PG_BINDIR=.cache/pg15-named/bin).
pg-named:
	bash scripts/build_pg_named.sh

# Written under a temporary name, then renamed: two builds at once (test workers, two chapters) never run or
# overwrite a half-written program.
native/build/%: native/%.c native/common.h
	@mkdir -p native/build
	$(CC) $(NATIVE_CFLAGS) -o $@.$$$$.tmp $< -lm && mv -f $@.$$$$.tmp $@

clean:
	rm -rf book/_build book/chapters .pytest_cache native/build

clean-pg: setup
	$(BIN)/python -c "from contention_book.harness.embedded_pg import EmbeddedPostgres; EmbeddedPostgres().destroy()"
