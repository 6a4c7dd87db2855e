"""Helpers shared by the tests: data writers and page readers."""
