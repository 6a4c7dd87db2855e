"""Readers of scalar training metrics (TensorBoard, stdout logs, DI-engine folders)."""
