# kimi-runbooks: set up, run the demo, run the tests. `.ci/run` calls `make test` (the README's test command).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup tool-envs demo test plan notebooks goldens clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -U pip
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/python -m ipykernel install --sys-prefix > /dev/null
	touch $(STAMP)

setup: $(STAMP)

tool-envs: setup
	bash scripts/setup_tool_env.sh bench
	bash scripts/setup_tool_env.sh sgl-eval
	bash scripts/setup_tool_env.sh inspect

demo: setup
	$(BIN)/kimi-runbooks plan --platform h200
	$(BIN)/kimi-runbooks plan --platform mi350x --tp 8 || echo "(as expected: the AITER rule refuses tp 8 on MI350X with SGLang 0.5.9)"

test: setup
	$(BIN)/pytest -q

plan: setup
	$(BIN)/kimi-runbooks plan --platform $(or $(PLATFORM),h200)

notebooks: setup
	$(BIN)/python scripts/make_notebooks.py

clean:
	rm -rf $(VENV) .venvs .pytest_cache
