"""Readers of scalar training metrics (TensorBoard, stdout logs, DI-engine folders).

Entry point: `load_metrics(path, *, cache_dir=None) -> MetricsBundle`; `metrics_signature(path)`
changes exactly when its answer could.
"""

from rl_board.metrics.reader import MetricsBundle, RunInfo, load_metrics, metrics_signature
from rl_board.metrics.table import Problem

__all__ = ["MetricsBundle", "Problem", "RunInfo", "load_metrics", "metrics_signature"]
