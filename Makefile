# vaulteval: `make demo` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# torch is pinned to the CPU build through constraints.txt (an unpinned torch pulls CUDA). A changed .pyx
# reinstalls, which rebuilds the compiled core in place.
# -qq: errors only (this machine's pip configuration warns about every package otherwise).
PIP_INSTALL := $(BIN)/pip install -qq --disable-pip-version-check -c constraints.txt

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install demo test notebook-check reliability lab bench clean

$(STAMP): pyproject.toml constraints.txt setup.py $(wildcard vaulteval/*/*.pyx)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) -e '.[dev]' --config-settings editable_mode=compat
	touch $(STAMP)

install: $(STAMP)

# make demo LAYOUT=plain runs it on a plain Obsidian vault (notes at the root beside .obsidian/).
LAYOUT ?= wiki
demo: $(STAMP)
	$(BIN)/vaulteval demo --layout $(LAYOUT)

# One pytest run: the tests, then every cell of the bundled notebooks against its stored output (nbval).
test: $(STAMP)
	$(BIN)/python -m pytest tests notebooks --nbval --nbval-current-env

# Every bundled notebook executed on the sample vault, rendered (nbconvert) and screenshotted at 1400 px in
# headless Chromium (apt-get install chromium); fails on a traceback, a NaN/None/<NA> or a table wider than the page.
# The executed notebooks, HTML pages and screenshots stay in $(NOTEBOOK_CHECK_OUT) for a person to look at.
NOTEBOOK_CHECK_OUT ?= runs/notebook-check
notebook-check: $(STAMP)
	$(BIN)/python benchmarks/notebook_check.py --out $(NOTEBOOK_CHECK_OUT)

# The full fault suites (50 kill points, 60 s of concurrent load, full disk, read-only vault); -s prints the figures.
reliability: $(STAMP)
	VAULTEVAL_RELIABILITY=full VAULTEVAL_FUZZ_EXAMPLES=2000 $(BIN)/python -m pytest tests/reliability tests/fuzz -q -s -p no:cacheprovider

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/

# Benchmark on any vault: make bench VAULT=/path/to/vault
bench: $(STAMP)
	$(BIN)/vaulteval bench --vault $(VAULT)

clean:
	rm -rf $(VENV) build *.egg-info
