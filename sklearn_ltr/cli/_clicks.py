"""Training data of the two-tower model: a click log, read from a file or simulated from graded labels.

:class:`~sklearn_ltr.TwoTowerDebiasedRanker` learns relevance from clicks (labels 0/1) and the
display position of every row. ``train --model two-tower`` takes them in one of three ways:

1. A click log in the data file (labels 0/1), each query's rows in the order they were shown:
   the position of a row is its 1-based rank within its query in file order.
2. The same with ``--positions FILE``: one 1-based display rank per data row.
3. ``--simulate-clicks N`` on graded labels: every query is shown ``N`` times (sessions) by a
   logging ranker of quality ``--logging-quality`` and clicked under a click model
   (:func:`sklearn_ltr.clicks.simulate_click_log`; ``--click-model pbm``, the default, is the
   position-based model with examination ``(1 / position) ** eta``, ``--eta`` 1, click noise 0.1;
   ``cascade``, ``dcm``, ``dbn`` and ``ubm`` are the cascade model, the dependent click model, the
   dynamic Bayesian network and the user browsing model with their default parameters);
   each session becomes its own list. For experiments: the model then trains on clicks only.
"""

from __future__ import annotations

import numpy as np

from sklearn_ltr.cli._data_files import read_rows_of_numbers
from sklearn_ltr.cli._errors import CLIError
from sklearn_ltr.utils._system import physical_memory

__all__ = ["CLICK_MODELS", "ClickLog", "click_log", "make_click_model"]

#: ``--click-model`` choices: name -> (class name in :mod:`sklearn_ltr.clicks`, whether it takes ``--eta``).
CLICK_MODELS = {
    "pbm": ("PositionBasedModel", True),
    "cascade": ("CascadeModel", False),
    "dcm": ("DependentClickModel", False),
    "dbn": ("DynamicBayesianNetwork", False),
    "ubm": ("UserBrowsingModel", True),
}


class ClickLog:
    """Rows, clicks, display positions and list (session) ids the two-tower model trains on."""

    def __init__(self, X, clicks, groups, positions, description):
        self.X, self.y, self.groups, self.positions = X, clicks, groups, positions
        self.description = description


def make_click_model(name="pbm", eta=None):
    """The click model of ``--click-model NAME`` (and ``--eta``), with the library's default parameters."""
    import sklearn_ltr.clicks

    if name not in CLICK_MODELS:
        raise CLIError(f"--click-model must be one of {', '.join(CLICK_MODELS)}; got {name!r}.")
    cls_name, takes_eta = CLICK_MODELS[name]
    if eta is None:
        return getattr(sklearn_ltr.clicks, cls_name)()
    if not takes_eta:
        raise CLIError(f"--eta sets the position bias of --click-model pbm or ubm, not {name}.")
    if not np.isfinite(eta) or eta < 0:
        raise CLIError(f"--eta must be a finite number >= 0 (1: examination 1/position); got {eta}.")
    return getattr(sklearn_ltr.clicks, cls_name)(eta=eta)


def simulate_sessions(X, y, groups, *, sessions, w=1.0, click_model=None, random_state=None):
    """``sessions`` simulated result pages of every query: a :class:`ClickLog` with one list per session."""
    from sklearn_ltr.clicks import PositionBasedModel, simulate_click_log

    click_model = PositionBasedModel() if click_model is None else click_model
    log = simulate_click_log(y, groups, click_model=click_model, w=w, sessions=sessions, random_state=random_state)
    return ClickLog(X[log.rows], log.clicks, log.sessions, log.positions,
                    f"{sessions} simulated sessions per query (logging quality w={w:g}, click model "
                    f"{click_model!r}): {len(log.clicks):,} impressions, {int(log.clicks.sum()):,} clicks")


def _check_simulation_size(data, sessions):
    """A :class:`CLIError` when ``sessions`` copies of the rows cannot fit in this machine's memory."""
    n_bytes = sessions * data.X.shape[0] * (data.X.shape[1] + 4) * 8  # features, clicks, positions, session ids
    memory = physical_memory()
    if memory is not None and n_bytes > memory:
        raise CLIError(f"--simulate-clicks {sessions} repeats the {data.X.shape[0]:,} rows of {data.path!r} "
                       f"{sessions:,} times: {n_bytes / 2**30:,.1f} GiB, more than this machine's "
                       f"{memory / 2**30:,.1f} GiB of memory. Simulate fewer sessions per query.")


def click_log(data, *, positions_path=None, simulate=None, w=1.0, click_model=None, random_state=None):
    """The :class:`ClickLog` of ``train --model two-tower`` from a :class:`~sklearn_ltr.cli._data_files.RankingFile`.

    ``click_model`` (for ``simulate``) is a click model of :mod:`sklearn_ltr.clicks`, None for the default
    position-based model.
    """
    from sklearn_ltr._groups import QueryGroups

    if simulate is not None:
        if positions_path is not None:
            raise CLIError("--positions and --simulate-clicks exclude each other: simulated sessions come with "
                           "their own positions.")
        if not np.array_equal(data.y, np.round(data.y)) or data.y.min() < 0:
            raise CLIError(f"--simulate-clicks needs whole-number relevance grades 0, 1, 2, ... in {data.path!r}.")
        _check_simulation_size(data, simulate)
        return simulate_sessions(data.X, data.y.astype(np.int64), data.groups, sessions=simulate, w=w,
                                 click_model=click_model, random_state=random_state)
    labels = np.unique(data.y)
    if not np.isin(labels, (0, 1)).all():
        shown = ", ".join(f"{v:g}" for v in labels[:6]) + (", ..." if len(labels) > 6 else "")
        raise CLIError(
            f"two-tower trains on clicks (labels 0 and 1), but {data.path!r} has labels {shown}. To simulate "
            f"clicks from these relevance grades, add --simulate-clicks N (N sessions per query, e.g. 10); for a "
            f"real click log, write 1 for a clicked row and 0 for a shown, unclicked one."
        )
    if positions_path is not None:
        positions = read_rows_of_numbers(positions_path, len(data.y), what="positions file", integer=True)
        source = f"positions from {positions_path!r}"
    else:
        positions = QueryGroups(data.groups).positions + 1
        source = "positions = rank of each row within its query in file order"
    return ClickLog(data.X, data.y, data.groups, positions,
                    f"click log: {len(data.y):,} impressions, {int(data.y.sum()):,} clicks; {source}")
