"""The neural training layer: how a torch scorer of :mod:`sklearn_ltr.nn` is trained on queries.

It sits above :mod:`sklearn_ltr.nn`, :mod:`sklearn_ltr.losses` and the query-group logic, and
below :mod:`sklearn_ltr.rankers`, whose neural estimators build its net in ``fit``. One module,
one job:

==========================  ===============================================================
``_batches``                query datasets as flat tensors; padded, length-bucketed batches
``_net``                    the skorch net (``RankingNet``): loss, steps, seeding, scoring
``_predict``                predict's and validation's scoring: blocks staged on the host
``_callbacks``              :class:`ValidationNDCG`, the validation NDCG (or IPS-DCG) of each epoch
``_precision``              the precision policy (``"32-true"``, ``"bf16-mixed"``)
``_device``                 ``device="auto"`` and the one "is it CUDA?" test
``_memory``                 ``MemoryEstimate``: memory a batch needs, from declared costs
``_state``                  what a fitted ranker keeps: weights and configuration only
``_distributed``            data parallelism, a net class chosen when the net is built
``_checkpoint``             resumable training: an atomic checkpoint per epoch (``checkpoint_dir``)
``_mapped``                 a float32 X grouped by query (a memory map) trained on in place
==========================  ===============================================================

Public here: :class:`ValidationNDCG` (a skorch callback for the rankers' ``callbacks``
parameter) and :data:`PRECISIONS`, the accepted values of the rankers' ``precision``.

Examples
--------
Log the NDCG@5 of a separate validation set after each epoch:

>>> from sklearn_ltr import RankNetRanker
>>> from sklearn_ltr.datasets import make_ranking
>>> from sklearn_ltr.training import ValidationNDCG
>>> X, y, qid = make_ranking(n_queries=30, n_features=5, random_state=0)
>>> vali = ValidationNDCG(5, X=X[:200], y=y[:200], groups=qid[:200], name="vali_ndcg@5")
>>> ranker = RankNetRanker(max_epochs=2, callbacks=[vali], random_state=0).fit(X, y, groups=qid)
>>> len(ranker.history_[:, "vali_ndcg@5"])
2

Train the forward pass under bf16 autocast; the scores stay float32:

>>> from sklearn_ltr.training import PRECISIONS
>>> sorted(PRECISIONS)
['32-true', 'bf16-mixed']
>>> bf16 = RankNetRanker(max_epochs=1, precision="bf16-mixed", random_state=0).fit(X, y, groups=qid)
>>> bf16.predict(X).dtype
dtype('float64')
"""

from sklearn_ltr.training import _precision
from sklearn_ltr.training._callbacks import ValidationNDCG

#: dict of str to str: the accepted values of the neural rankers' ``precision``, each with what
#: it means (``"32-true"``, the default, and ``"bf16-mixed"``).
PRECISIONS = _precision.PRECISIONS

__all__ = ["PRECISIONS", "ValidationNDCG"]
