"""Optional dependencies: import one, or fail with the extra that installs it.

The bottom layer of the package: it imports nothing of ``sklearn_ltr``, so any room
(datasets, rankers, export, the CLI) may use it. Each optional package belongs to one
extra of ``pyproject.toml``; the error names that extra, never a raw ``ImportError``.
"""

from __future__ import annotations

import importlib

__all__ = ["EXTRAS", "import_optional", "require_dask"]

#: Extra of ``pyproject.toml`` that installs each optional top-level package.
EXTRAS = {
    "dask": "dask", "distributed": "dask",
    "onnx": "serving", "onnxruntime": "serving", "onnxmltools": "serving", "skops": "serving", "mlflow": "serving",
    "optuna": "tuning", "optuna_integration": "tuning",
    "matplotlib": "benchmark",
}  # fmt: skip


def install_hint(package):
    """``pip install`` line of the extra that brings ``package``."""
    extra = EXTRAS.get(package.split(".")[0])
    return f"pip install 'sklearn-ltr[{extra}]'" if extra else f"pip install {package.split('.')[0]}"


def import_optional(package, what):
    """Import ``package`` (a module path) or raise an ``ImportError`` naming ``what`` needs it and the fix.

    Parameters
    ----------
    package : str
        Module to import, e.g. ``"onnxruntime"`` or ``"dask.dataframe"``.
    what : str
        The feature that needs it, for the message (e.g. ``"to_onnx"``).

    Returns
    -------
    module
        The imported module.
    """
    try:
        return importlib.import_module(package)
    except ImportError as error:
        raise ImportError(f"{what} needs the {package!r} package ({error}); install it with "
                          f"`{install_hint(package)}`.") from error


def require_dask(what="LambdaMARTRanker on Dask collections"):
    """Import dask, dask.dataframe, distributed and ``lightgbm.dask``, or fail naming the ``dask`` extra.

    Parameters
    ----------
    what : str, default="LambdaMARTRanker on Dask collections"
        The feature that needs them, for the message (e.g. ``"read_svmlight_ranking_dask"``).

    Raises
    ------
    ImportError
        If one of them is missing: the message names it and ``pip install 'sklearn-ltr[dask]'``.
    """
    for package in ("dask", "dask.array", "dask.dataframe", "distributed", "lightgbm.dask"):
        try:
            importlib.import_module(package)
        except ImportError as error:
            raise ImportError(f"{what} needs dask[distributed] ({error}); install it with "
                              f"`{install_hint('dask')}`.") from error
