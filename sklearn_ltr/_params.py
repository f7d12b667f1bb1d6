"""Checks of scalar parameters shared by every layer: nothing but the standard library.

The losses (torch, no scikit-learn) and the click-log estimators (NumPy and scikit-learn, no torch)
both check their integer settings here, with one argument order and one message.
"""

from __future__ import annotations

import numbers

__all__ = ["check_int"]


def check_int(value, name, minimum=1, *, fix=""):
    """``value`` as an ``int`` at least ``minimum``, else a ``ValueError`` naming ``name``.

    Booleans are refused (``True`` is an ``Integral``, never a count). ``fix`` is inserted after the
    bound, e.g. ``" (result pages per query)"``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}{fix}; got {value!r}.")
    return int(value)
