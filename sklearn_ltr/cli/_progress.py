"""Progress bars of the command line: tqdm, on standard error, so that standard output stays clean.

Bars are shown when standard error is a terminal, unless ``--no-progress`` (``--progress``
forces them, e.g. in a log file). A neural ranker gets one tick per epoch through a skorch
callback, LambdaMART one tick per boosting round through a LightGBM callback; both show the
latest training loss or validation NDCG@10 beside the bar.
"""

from __future__ import annotations

import sys

from skorch.callbacks import Callback
from tqdm import tqdm

__all__ = ["BoostingBar", "EpochBar", "bar", "progress_wanted"]

#: History columns shown beside an epoch bar, in this order, when present.
_EPOCH_COLUMNS = {"train_loss": "loss", "vali_ndcg@10": "vali NDCG@10", "valid_ndcg@10": "valid NDCG@10"}


def progress_wanted(flag):
    """``--progress`` / ``--no-progress`` (True / False), or None: bars when standard error is a terminal."""
    if flag is None:
        return bool(getattr(sys.stderr, "isatty", lambda: False)())
    return bool(flag)


def bar(*, total=None, desc=None, enabled=True, leave=True, unit="it"):
    """A tqdm bar on standard error; a no-op object when ``enabled`` is false."""
    return tqdm(total=total, desc=desc, disable=not enabled, leave=leave, unit=unit, file=sys.stderr,
                dynamic_ncols=True)


class EpochBar(Callback):
    """skorch callback: a bar over ``max_epochs`` with one tick per epoch (closed when training ends).

    Parameters
    ----------
    desc : str, default=None
        Text before the bar.
    leave : bool, default=False
        Keep the finished bar on screen.
    """

    def __init__(self, desc=None, leave=False):
        self.desc = desc
        self.leave = leave

    def on_train_begin(self, net, **kwargs):
        self.bar_ = bar(total=net.max_epochs, desc=self.desc, leave=self.leave, unit="epoch")

    def on_epoch_end(self, net, **kwargs):
        row = net.history[-1]
        self.bar_.set_postfix({label: f"{row[key]:.4f}" for key, label in _EPOCH_COLUMNS.items() if key in row},
                              refresh=False)
        self.bar_.update()

    def on_train_end(self, net, **kwargs):
        self.bar_.close()
        self.bar_ = None  # a saved model keeps no open bar


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
