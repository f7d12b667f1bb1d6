"""Where the registry of rankers declares the types that skops files of its rankers reference.

``utils`` is the bottom of the package, below the rankers: :mod:`sklearn_ltr.utils.persistence`
cannot import the registry of rankers to list their types. The registry declares them here
instead, as it registers each ranker (:func:`sklearn_ltr.rankers.register_ranker`; unregistering
withdraws them), and persistence reads what was declared. This module imports nothing.
"""

from __future__ import annotations

__all__ = ["declare_trusted_types", "declared_trusted_types", "withdraw_trusted_types"]

#: Owner (a ranker's class name) -> the fully qualified names of the types it declared.
_DECLARED = {}


def declare_trusted_types(owner, types):
    """Declare the types that skops files of ``owner``'s models reference, replacing its earlier ones.

    Parameters
    ----------
    owner : str
        Who declares them: a registered ranker's class name.
    types : iterable of str
        Fully qualified type names, e.g. ``"sklearn_ltr.nn._mlp.MLPScorer"``.
    """
    _DECLARED[owner] = tuple(types)


def withdraw_trusted_types(owner):
    """Forget the types ``owner`` declared (nothing happens when it declared none)."""
    _DECLARED.pop(owner, None)


def declared_trusted_types():
    """The declared type names, owners in declaration order, each name once.

    Returns
    -------
    list of str
    """
    return list(dict.fromkeys(name for types in _DECLARED.values() for name in types))
