#!/usr/bin/env bash
# Install the test needs (venv with the `test`, `real`, `spark` and `trackers` extras, Debian's chromium and,
# for PySpark, a Java runtime), lint and type-check (ruff, ruff format --check, mypy) and run the whole
# suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.rl-board-test-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip setuptools
  .venv/bin/python -m pip install --quiet -e ".[test,real,spark,trackers]"
  touch "$stamp"
fi

if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
apt_updated=""
apt_install() {  # Debian packages the tests need: chromium (browser tier), a JRE (spark tier)
  if [ -z "$apt_updated" ]; then $SUDO apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}
if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
  echo "installing Debian's chromium for the browser tests..."
  apt_install chromium
fi
if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
  echo "installing Debian's Java runtime for the spark tests (pyspark 4 needs Java 17+)..."
  apt_install default-jre-headless
fi

export RL_BOARD_CACHE_DIR="${RL_BOARD_CACHE_DIR:-$(mktemp -d)}"
.venv/bin/ruff check rl_board tests benchmarks  # lint ([tool.ruff] in pyproject.toml, line length on)
.venv/bin/ruff format --check rl_board tests benchmarks  # the layout is ruff format's
.venv/bin/python -m mypy  # the type check ([tool.mypy] in pyproject.toml); an error stops the run here
exec .venv/bin/python -m pytest "$@"
