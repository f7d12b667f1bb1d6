"""``--param name=value`` of ``train``: Python literals checked against the ranker's parameters.

Values go through :func:`ast.literal_eval` (``0.05``, ``(64, 32)``, ``{"sigma": 2}``, ``None``);
``true``/``false``/``none``/``null`` in any case become ``True``/``False``/``None``; anything else
stays a string (``loss=softmax``).
"""

from __future__ import annotations

import ast
import difflib

from sklearn_ltr.cli._errors import CLIError

__all__ = ["parse_params"]

#: ``--param`` words read as Python constants whatever their case (shells and config files spell them so).
_CONSTANTS = {"true": True, "false": False, "none": None, "null": None}


def _literal(text):
    text = text.strip()
    if text.lower() in _CONSTANTS:
        return _CONSTANTS[text.lower()]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _check_type(key, value, default, model):
    """A clear error when ``value`` cannot be meant for a parameter whose default is ``default``."""
    def fail(expected):
        raise CLIError(f"--param {key}={value!r}: {model}'s {key} takes {expected} (default {default!r}).")

    if value is None or default is None:
        return
    if isinstance(default, bool):
        if not isinstance(value, bool):
            fail("true or false")
    elif isinstance(default, (int, float)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            fail("a number")
    elif isinstance(default, (tuple, list)) and not isinstance(value, (tuple, list)):
        fail(f"a tuple, e.g. ({value!r},) or {tuple(default)!r}" if isinstance(value, int) else "a tuple")


def parse_params(items, defaults, *, model):
    """``["key=value", ...]`` into a dict; values are Python literals, else strings.

    Values go through :func:`ast.literal_eval` (``0.05``, ``(64, 32)``, ``{"sigma": 2}``,
    ``None``), ``true``/``false``/``none``/``null`` in any case become ``True``/``False``/
    ``None``, and anything else stays a string (``loss=softmax``). A key not in
    ``defaults`` (the ranker's parameters and their default values), a value of the wrong
    kind (a string for a numeric parameter, a number for a tuple, ...), a key given twice or
    an item without ``=`` is a :class:`CLIError`; the ranker checks the values themselves.
    """
    valid = sorted(defaults)
    params = {}
    for item in items or ():
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise CLIError(f"--param expects key=value (e.g. --param learning_rate=0.05); got {item!r}.")
        if key not in valid:
            close = difflib.get_close_matches(key, valid, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise CLIError(f"unknown parameter {key!r} for --model {model}.{hint} "
                           f"Valid parameters: {', '.join(sorted(valid))}.")
        if key in params:
            raise CLIError(f"--param {key} is given twice.")
        params[key] = _literal(text)
        _check_type(key, params[key], defaults[key], model)
    return params
