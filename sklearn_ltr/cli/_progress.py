"""Progress bars of the command line: tqdm, on standard error, so that standard output stays clean.

Bars are shown when standard error is a terminal, unless ``--no-progress`` (``--progress``
forces them, e.g. in a log file). LambdaMART gets one tick per boosting round through a
LightGBM callback (:class:`BoostingBar`), a neural ranker one tick per epoch through a skorch
callback (``sklearn_ltr.cli._epoch_bar``, which loads skorch and so is imported only where a
neural ranker trains); both show the latest validation NDCG@10 or training loss beside the bar.
"""

from __future__ import annotations

import sys

from tqdm import tqdm

__all__ = ["BoostingBar", "bar", "progress_wanted"]


def progress_wanted(flag):
    """``--progress`` / ``--no-progress`` (True / False), or None: bars when standard error is a terminal."""
    if flag is None:
        return bool(getattr(sys.stderr, "isatty", lambda: False)())
    return bool(flag)


def bar(*, total=None, desc=None, enabled=True, leave=True, unit="it"):
    """A tqdm bar on standard error; a no-op object when ``enabled`` is false."""
    return tqdm(total=total, desc=desc, disable=not enabled, leave=leave, unit=unit, file=sys.stderr,
                dynamic_ncols=True)


class BoostingBar:
    """LightGBM callback: a bar with one tick per boosting round; call :meth:`close` after ``fit``.

    Parameters
    ----------
    total : int
        Rounds at most (``n_estimators``).
    desc : str, default=None
        Text before the bar.
    leave : bool, default=False
        Keep the finished bar on screen.
    """

    order = 5  # before LightGBM's early stopping (order 30), which ends training by raising

    def __init__(self, total, desc=None, leave=False):
        self.bar = bar(total=total, desc=desc, leave=leave, unit="tree")

    def __call__(self, env):
        postfix = {f"{data} {metric.upper()}": f"{value:.4f}"
                   for data, metric, value, *_ in env.evaluation_result_list or ()}
        if postfix:
            self.bar.set_postfix(postfix, refresh=False)
        self.bar.update()

    def close(self):
        self.bar.close()
