# kimi-runbooks: set up, run the demo, run the tests. `make test` is the fast loop; `.ci/run` calls `make test-all`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup tool-envs demo test test-all lint plan notebooks goldens clean

$(STAMP): pyproject.toml src/kimi_runbooks/execution/kernel.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -U pip
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/python -m kimi_runbooks.execution.kernel install > /dev/null
	# bytecode for the package: each stage kernel imports it, and PYTHONDONTWRITEBYTECODE
	# environments never write it themselves (edited files are recompiled in memory as usual)
	$(BIN)/python -m compileall -q src > /dev/null
	touch $(STAMP)

setup: $(STAMP)
	@# executed notebooks' outputs never reach a commit (.gitattributes; no-op outside a git checkout)
	@git config filter.notebook-outputs.clean '$(abspath $(BIN))/python scripts/strip_notebook_outputs.py' 2>/dev/null || true
	@git config filter.notebook-outputs.smudge cat 2>/dev/null || true

# llamacpp after bench (it exports its tokenizer with bench's transformers); its first build
# compiles llama.cpp (~8 min on 2 cores), later runs reuse the wheel kept in .venvs/.wheels/.
tool-envs: setup
	bash scripts/setup_tool_env.sh bench
	bash scripts/setup_tool_env.sh sgl-eval
	bash scripts/setup_tool_env.sh inspect
	bash scripts/setup_tool_env.sh llamacpp
	bash scripts/setup_tool_env.sh agents
	bash scripts/setup_tool_env.sh aiperf
	bash scripts/setup_tool_env.sh router

demo: setup
	bash scripts/setup_tool_env.sh bench
	bash scripts/setup_tool_env.sh sgl-eval
	$(BIN)/python scripts/demo.py

# The fast loop (units and light integration, ~3-5 min on 2 cores): before every small change.
# Three pytest-xdist workers on two cores; --dist loadfile keeps each module (and its module-scoped
# emulator) on one worker. Much of the loop waits on servers and subprocesses, so a third worker
# fills that wait (measured here: 2 workers 3 min 45 s to 4 min 11 s, 3 workers 2 min 50 s).
test: setup
	$(BIN)/pytest -q -n 3 --dist loadfile -m "not slow and not heavy" --durations=15

# Everything CI runs (.ci/run): the end-to-end runbooks and the real tool environments too.
# Two workers (its timing-sensitive end-to-end tests keep a core each): 20-35 min here against 59 min
# serial (CI's 90 min holds set-up too).
test-all: setup
	$(BIN)/pytest -q -n 2 --dist loadfile --durations=15

lint: setup
	$(BIN)/ruff check src tests scripts benchmarks
	$(BIN)/ruff format --check src tests scripts benchmarks
	$(BIN)/mypy
	$(BIN)/python scripts/make_notebooks.py --check

plan: setup
	$(BIN)/kimi-runbooks plan --platform $(or $(PLATFORM),h200)

notebooks: setup
	$(BIN)/python scripts/make_notebooks.py

clean:
	rm -rf $(VENV) .venvs .pytest_cache
goldens: setup
	bash scripts/regen_goldens.sh
