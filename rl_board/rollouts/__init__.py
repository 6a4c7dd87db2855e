"""Rollout logs: reading them (read/), their columnar cache (cache/), the store pages ask, derived metrics."""
