"""Log ``tracker_truth``'s run with the real MLflow library (mlflow-skinny), offline, no server.

Usage: ``python -m tests.helpers.mlflow_writer OUT BACKEND [VARIANT]`` in a child process started with
``environment(HOME)`` and ``cwd=OUT`` (MLflow puts a SQLite store's artifacts in ``./mlruns`` of the
working directory). BACKEND ``sqlite`` writes ``OUT/mlflow.db`` (the default backend since 3.7),
``file`` the legacy ``OUT/mlruns/`` folder. Variants:

- ``truth``: as verl's ``Tracking(default_backend=["mlflow"])`` logs: ``mlflow.set_experiment(project)``,
  ``start_run(run_name=...)``, ``log_params`` of the config flattened with ``/``, then
  ``log_metrics(row, step=step)`` once per step, and its validation generations as artifacts
  ``val_step<N>.json`` = ``[{input, output, score}]`` at steps 10 and 20; plus a second run holding
  +inf, -inf and NaN (``EDGE``).
- ``big``: ``BIG_STEPS`` x ``BIG_TAGS`` points, for timing readers.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from pathlib import Path

from tests.helpers import tracker_truth

EXPERIMENT = "rl-board-truth"
RUN = "grpo-tiny"
EDGE_RUN = "edge-values"
EDGE = {"edge/pos_inf": math.inf, "edge/neg_inf": -math.inf, "edge/nan": math.nan, "edge/tiny": 5e-324}
GENERATION_STEPS = (10, 20)
BIG_STEPS, BIG_TAGS = 2000, 200


def environment(home: Path) -> dict[str, str]:
    """The child's environment: a temporary HOME, MLflow's telemetry off, the file store allowed."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("MLFLOW_", "DATABRICKS"))}
    env.update(
        HOME=str(home),
        MLFLOW_DISABLE_TELEMETRY="true",
        DO_NOT_TRACK="true",
        MLFLOW_ALLOW_FILE_STORE="true",
        PYTHONPATH=str(Path(__file__).resolve().parents[2]),
    )
    return env


def flat_config(config: dict, prefix: str = "") -> dict[str, object]:
    """The config as verl hands it to ``log_params``: nested keys joined with ``/``."""
    out: dict[str, object] = {}
    for key, value in config.items():
        if isinstance(value, dict):
            out.update(flat_config(value, f"{prefix}{key}/"))
        else:
            out[f"{prefix}{key}"] = value
    return out


def generations(step: int) -> list[dict[str, object]]:
    """verl's validation samples at ``step`` as its MLflow logger writes them."""
    return [{"input": f"question {i}", "output": f"answer {i} at {step}", "score": i / 2} for i in range(3)]


def _truth(mlflow) -> None:
    mlflow.set_experiment(EXPERIMENT)
    with mlflow.start_run(run_name=RUN):
        mlflow.log_params(flat_config(tracker_truth.CONFIG))
        for step, row in tracker_truth.logged_rows():
            mlflow.log_metrics(row, step=step)
            if step in GENERATION_STEPS:
                with tempfile.TemporaryDirectory() as tmp:
                    path = Path(tmp, f"val_step{step}.json")
                    path.write_text(json.dumps(generations(step)), encoding="utf-8")
                    mlflow.log_artifact(str(path))
    with mlflow.start_run(run_name=EDGE_RUN):
        mlflow.log_metrics(EDGE, step=1)


def _big(mlflow) -> None:
    mlflow.set_experiment("big")
    tags = [f"group{t % 10}/metric_{t}" for t in range(BIG_TAGS)]
    with mlflow.start_run(run_name="big-run"):
        for step in range(BIG_STEPS):
            mlflow.log_metrics({tag: math.sin(step + t) for t, tag in enumerate(tags)}, step=step)


VARIANTS = {"truth": _truth, "big": _big}


def main(argv: list[str]) -> None:
    """Write one variant into OUT with one backend."""
    out, backend = Path(argv[0]).resolve(), argv[1]
    variant = argv[2] if len(argv) > 2 else "truth"
    import mlflow

    uri = f"sqlite:///{out / 'mlflow.db'}" if backend == "sqlite" else f"file:{out / 'mlruns'}"
    mlflow.set_tracking_uri(uri)
    VARIANTS[variant](mlflow)


if __name__ == "__main__":
    main(sys.argv[1:])
