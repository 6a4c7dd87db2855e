#!/usr/bin/env bash
# Install what is missing, then serve the dashboard on the bundled sample logs.
# Extra arguments go to `rl-board serve` (e.g. `bash start.sh --port 9000 /data/runs`).
# Its first line out is the address to open, with the server's token (http://127.0.0.1:8901/?token=...).
set -euo pipefail
cd "$(dirname "$0")"

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.rl-board-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip setuptools
  .venv/bin/python -m pip install --quiet -e .
  touch "$stamp"
fi

if [ $# -eq 0 ] || [[ "$1" == -* ]]; then
  set -- rollout_samples "$@"
fi
exec .venv/bin/rl-board serve "$@"
