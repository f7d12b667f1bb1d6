"""Helpers of the command-line tests: run ``main`` in-process and check a one-line user error."""

from __future__ import annotations

from sklearn_ltr.cli import main


def run(capsys, *args):
    """``main(args)``: ``(exit status, stdout, stderr)``."""
    status = main([str(arg) for arg in args])
    out, err = capsys.readouterr()
    return status, out, err


def assert_user_error(capsys, args, *fragments):
    """The command fails with status 2 and one ``sklearn-ltr: error:`` line naming ``fragments``."""
    status, _, err = run(capsys, *args)
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sklearn-ltr: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]
