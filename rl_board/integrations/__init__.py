"""Hooks that write rl-board rollout logs from training libraries (each optional at import time)."""
