#!/usr/bin/env bash
# Install the test needs (venv with the `test` and `real` extras, Debian's chromium) and run
# the whole suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.rl-board-test-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip setuptools
  .venv/bin/python -m pip install --quiet -e ".[test,real]"
  touch "$stamp"
fi

if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
  echo "installing Debian's chromium for the browser tests..."
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

export RL_BOARD_CACHE_DIR="${RL_BOARD_CACHE_DIR:-$(mktemp -d)}"
exec .venv/bin/python -m pytest "$@"
