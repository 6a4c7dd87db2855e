"""Scripts that run real trainer code on CPU (each in its own subprocess, started by
tests/real/conftest.py)."""
