# ProxAI developer tasks. `just` is optional: every recipe is one plain command.
venv := ".venv/bin/"

# Install everything the tests need: .venv (the project and its dev dependencies), the agent CLIs,
# the Node SDKs, Phoenix, chromium and tmux (each step quick when its program is there)
install:
    bash .ci/install

# Install what is missing, then run the whole test suite (the same command as CI)
test *ARGS:
    bash .ci/run {{ARGS}}

# Run the demo: fake upstream + mitmdump + the real SDKs, flows saved under flows/
demo:
    {{venv}}python -m proxai demo

# Lint and type-check
lint:
    {{venv}}ruff check addon tests
    {{venv}}ruff format --check addon tests
    {{venv}}mypy

# Benchmarks (ratios against a same-process floor)
bench *ARGS:
    {{venv}}python -m bench {{ARGS}}

# Run the real-streams corpus (tests/fixtures/real) and write docs/real-streams.md
corpus:
    {{venv}}python -m corpus
