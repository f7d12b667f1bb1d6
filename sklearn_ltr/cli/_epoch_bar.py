"""The epoch progress bar of a neural ranker: a skorch callback over :func:`~sklearn_ltr.cli._progress.bar`.

It imports skorch (and torch), so the command line imports this module only where it trains a
neural ranker: commands that train none (``--help`` among them) load neither.
"""

from __future__ import annotations

from skorch.callbacks import Callback

from sklearn_ltr.cli._progress import bar

__all__ = ["EPOCH_COLUMNS", "EpochBar"]

#: History columns shown beside an epoch bar, in this order, when present.
EPOCH_COLUMNS = {"train_loss": "loss", "vali_ndcg@10": "vali NDCG@10", "valid_ndcg@10": "valid NDCG@10",
                 "valid_ips_dcg@10": "valid IPS-DCG@10"}


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

    def state_dict(self):
        """Nothing: a resumed fit opens a bar of its own."""
        return {}

    def load_state_dict(self, state):
        """Restore :meth:`state_dict`'s (empty) state."""

    def on_epoch_end(self, net, **kwargs):
        row = net.history[-1]
        self.bar_.set_postfix({label: f"{row[key]:.4f}" for key, label in EPOCH_COLUMNS.items() if key in row},
                              refresh=False)
        self.bar_.update()

    def on_train_end(self, net, **kwargs):
        self.bar_.close()
        self.bar_ = None  # a saved model keeps no open bar
