"""Turning rollout files into Arrow tables: line parsers, blocks, worker processes."""
