"""Errors whose messages are safe to show to a user as they are.

Anything raised from this module is a *user* problem (a bad path, a refused
root, an unreadable file); the CLI and the pages turn it into a one-line
message at their boundary. Any other exception is a bug.
"""

from __future__ import annotations


class RLBoardError(Exception):
    """Base of every error with a message meant for the user."""


class NotFoundError(RLBoardError):
    """A path the user named does not exist or holds nothing we can read."""


class PathRefusedError(RLBoardError):
    """A path lies outside the roots the server was started to serve."""


class InvalidArgumentError(RLBoardError):
    """An argument (CLI flag, URL parameter, filter) has a value we cannot use."""
