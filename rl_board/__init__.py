"""rl-board: inspect RLHF rollouts and training metrics in the browser."""

__version__ = "0.1.0"
