"""Output files of the command line: checked before any work, written whole or not at all.

Every file the command line writes (``train``'s model, ``predict``'s scores) goes through
:func:`write_atomically`: into a temporary file beside the target, flushed to disk, then
renamed over it, so that a failed or interrupted write (a full disk, an error of the
serializer, Ctrl-C) leaves the previous file as it was and no fragment. Before any work,
:func:`refuse_input_as_output` checks that the output is none of the command's inputs
(compared after resolving symbolic links, and by inode for hard links), and
:func:`check_output_path` that its folder exists and accepts a new file. :func:`write_scores`
writes ``predict``'s scores, one per line.
"""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

from sklearn_ltr import _atomic
from sklearn_ltr._atomic import is_special_file
from sklearn_ltr.cli._errors import CLIError

__all__ = ["check_output_path", "refuse_input_as_output", "write_atomically", "write_scores"]


def _same_file(a, b):
    """Whether paths ``a`` and ``b`` name one file: the same real path (symlinks and ``./`` resolved), or hard links."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): not the same file
        return False


def refuse_input_as_output(path, option, inputs):
    """Raise :class:`CLIError` when output ``path`` (``option``) is one of ``inputs``, ``[(description, path)]``.

    Paths are compared after resolving symbolic links and relative spellings, and by
    device and inode when both exist (hard links). ``-`` (standard output) is never an input.
    """
    if path == "-" or not path:
        return
    for description, input_path in inputs:
        if input_path is not None and _same_file(path, input_path):
            raise CLIError(f"{option} {path!r} is {description}: writing it would destroy that input. "
                           f"Give {option} another file name; nothing was written.")


def check_output_path(path, what="output file", option="--out"):
    """Fail before any work when ``path`` cannot be written (``-`` is standard output).

    The folder must exist and accept a new file (tried by creating and removing a
    temporary file in it, which is how :func:`write_atomically` writes), and an
    existing file must be a writable file, not a folder.
    """
    if path == "-":
        return
    if not path:
        raise CLIError(f"{option} is empty; give a file name for the {what}.")
    target = os.path.realpath(path)
    if os.path.isdir(target):
        raise CLIError(f"{option} {path!r} is a directory; give a file name for the {what}.")
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise CLIError(f"cannot write {what} {option} {path!r}: folder {folder!r} does not exist.")
    if os.path.exists(target) and not os.access(target, os.W_OK):
        raise CLIError(f"cannot write {what} {option} {path!r}: the file is read-only.")
    if is_special_file(target):  # /dev/null, a named pipe: written in place
        return
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=f".{os.path.basename(target)}.", suffix=".tmp"):
            pass
    except OSError as err:
        raise CLIError(f"cannot write {what} {option} {path!r}: cannot create a file in folder {folder!r} "
                       f"({err.strerror or err}).") from err


def write_atomically(path, write, *, what):
    """Write ``path`` all or nothing (:func:`sklearn_ltr._atomic.write_atomically`).

    Raises
    ------
    CLIError
        When the file cannot be written (its ``OSError``); other errors propagate
        after the temporary file is removed.
    """
    special = is_special_file(os.path.realpath(path))
    try:
        _atomic.write_atomically(path, write)
    except OSError as err:
        if special:
            raise CLIError(f"cannot write {what} {path!r}: {err.strerror or err}.") from err
        raise CLIError(f"cannot write {what} {path!r}: {err.strerror or err}; nothing was written (a previous file "
                       f"is left as it was).") from err


def write_scores(path, scores):
    """One score per line (shortest exact decimal form), to ``path`` or standard output for ``-``.

    NaN or infinite scores are refused (a :class:`CLIError`, nothing written): no ranking
    can be read from them.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if not np.isfinite(scores).all():
        bad = np.flatnonzero(~np.isfinite(scores))
        raise CLIError(f"{len(bad):,} of {len(scores):,} scores are NaN or infinite (the first on row {bad[0] + 1}); "
                       f"refusing to write them to {path!r}.")
    text = "".join(f"{score!r}\n" for score in scores.tolist())
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    write_atomically(path, lambda f: f.write(text.encode("utf-8")), what="scores file")
