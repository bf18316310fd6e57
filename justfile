# ProxAI developer tasks. `just` is optional: every recipe is one plain command.
venv := ".venv/bin/"

# Install the project and its dev dependencies into .venv
install:
    python3 -m venv .venv && {{venv}}pip install -q -c constraints.txt -e '.[dev]'

# Run the whole test suite (the same command as CI)
test:
    {{venv}}python -m pytest -q

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
