"""Write a file all or nothing: the one write path of the library's writers and of the command line."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile

__all__ = ["is_special_file", "write_atomically", "write_directory_atomically"]


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def is_special_file(path):
    """Whether ``path`` exists and is not a regular file: a device such as ``/dev/null``, a named pipe, a socket."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def write_atomically(path, write):
    """Write the file ``path`` with ``write(binary_file)``, all or nothing.

    ``write`` fills a temporary file in the target's folder, which is flushed to disk
    and renamed over ``path`` (:func:`os.replace`, atomic on one file system): a write
    that fails half-way (a full disk, an error of the serializer, Ctrl-C) leaves the
    previous file byte for byte and removes the temporary file. A symbolic link at
    ``path`` is followed: its target is replaced. The new file gets the previous file's
    permissions, or those of a new file under the process's umask. A device or a named
    pipe (``/dev/null``, ``/dev/stdout``) is written in place, never replaced.

    Raises
    ------
    OSError
        When the file cannot be written; any error propagates after the temporary file
        is removed.
    """
    target = os.path.realpath(path)
    if is_special_file(target):
        with open(target, "wb") as f:
            write(f)
        return
    folder, name = os.path.split(target)
    try:
        mode = os.stat(target).st_mode & 0o777
    except OSError:
        mode = 0o666 & ~_umask()
    temporary = None
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=f".{name}.", suffix=".tmp", delete=False) as f:
            temporary = f.name
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
        temporary = None
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def write_directory_atomically(path, fill, *, overwrite=False):
    """Create the folder ``path`` with ``fill(folder)``, all or nothing.

    ``fill`` writes the folder's files into a temporary folder beside ``path`` (same file
    system), whose files are flushed to disk before it is renamed to ``path``. A ``fill``
    that fails half-way (a bad line, a full disk, Ctrl-C) removes the temporary folder and
    leaves ``path`` as it was. With ``overwrite``, an existing folder is first renamed aside
    and removed once the new one is in place.

    Raises
    ------
    FileExistsError
        When ``path`` exists and ``overwrite`` is false.
    """
    import shutil

    target = os.path.abspath(os.fspath(path))
    if os.path.lexists(target) and not overwrite:
        raise FileExistsError(f"{os.fspath(path)!r} exists; remove it or pass overwrite=True (--overwrite) to "
                              f"replace it.")
    parent, name = os.path.split(target)
    temporary = tempfile.mkdtemp(dir=parent, prefix=f".{name}.", suffix=".tmp")
    try:
        fill(temporary)
        for entry in os.scandir(temporary):
            if entry.is_file():
                with open(entry.path, "rb") as f:
                    os.fsync(f.fileno())
        os.chmod(temporary, 0o777 & ~_umask())
        aside = None
        if os.path.lexists(target):
            aside = tempfile.mkdtemp(dir=parent, prefix=f".{name}.", suffix=".old")
            os.replace(target, os.path.join(aside, name))
        os.replace(temporary, target)
        temporary = None
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
