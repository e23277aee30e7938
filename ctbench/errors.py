"""The errors a user can cause: a bad setting, argument or file. The command line prints them as one message
(``ctbench: error: ...``, exit code 2) instead of a traceback; the message names the setting, argument or file,
what is wrong and how to fix it."""

from __future__ import annotations


class UserInputError(ValueError):
    """A bad setting, argument or input file (not a bug in ctbench)."""


class ConfigError(UserInputError):
    """A config value is wrong; the message names the key and what is allowed."""


class BadFileError(UserInputError):
    """An input file is missing, truncated, or not what the command expects; the message names the file."""


__all__ = ["BadFileError", "ConfigError", "UserInputError"]


class MixedInputsError(BadFileError):
    """The inputs of a report were made by different code versions (or, when publishing, with uncommitted changes)."""
