"""The command line's one exception: a user error, reported as one line with exit status 2."""

from __future__ import annotations

__all__ = ["CLIError"]


class CLIError(Exception):
    """A mistake in the command line or in its input files.

    :func:`sklearn_ltr.cli.main` prints it as ``sklearn-ltr: error: <message>`` on
    standard error and returns 2, the exit status argparse uses for usage errors,
    instead of showing a traceback (``--traceback`` shows it). The message names the
    file, the line or the parameter at fault and, where there is one, the fix.
    """
