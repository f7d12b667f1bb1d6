"""Ranking losses: pure torch functions over padded batches of lists.

Every loss has the signature ``loss(scores, labels, mask=None, **options) -> scalar tensor``
with ``scores``, ``labels`` and ``mask`` of shape ``[batch, list]``: one row per query,
``mask`` True for real documents. Conventions shared by all of them:

- Padded slots may hold any value, NaN and inf included; they never affect the value or the
  gradient (they are replaced with :func:`torch.where`, never multiplied by 0).
- Reduction: each loss computes one value per query and returns the mean over the queries
  of the batch (rows with at least one real document). A query with nothing to learn from
  (no pair of different labels, no relevant document) contributes 0 and still counts, so a
  batch's value is exactly the mean of its queries' values taken one at a time.
- Gains are exponential, ``2**y - 1``, and discounts ``1 / log2(1 + rank)``, as in
  :func:`sklearn_ltr.metrics.ndcg_score`.
- Half-precision scores are upcast to float32 inside the loss.

Losses that take no relevant document into account (ListMLE, RankNet with ties, softmax with
``target="softmax"``) give such lists a nonzero value; see each docstring.

Use :func:`get_loss` to resolve a name (``"ranknet"``, ``"softmax"``, ...; see
:data:`LOSSES` and :data:`ALIASES`) or a callable, with options bound.
"""

from sklearn_ltr.losses._approx import approx_ndcg, gumbel_approx_ndcg
from sklearn_ltr.losses._listwise import attention_rank, listmle, softmax_cross_entropy
from sklearn_ltr.losses._neuralsort import gumbel_neuralsort_ndcg, neuralsort_ndcg
from sklearn_ltr.losses._pairwise import lambdarank, ranknet
from sklearn_ltr.losses._pointwise import sigmoid_cross_entropy
from sklearn_ltr.losses._registry import ALIASES, LOSSES, get_loss

__all__ = [
    "ALIASES",
    "LOSSES",
    "approx_ndcg",
    "attention_rank",
    "get_loss",
    "gumbel_approx_ndcg",
    "gumbel_neuralsort_ndcg",
    "lambdarank",
    "listmle",
    "neuralsort_ndcg",
    "ranknet",
    "sigmoid_cross_entropy",
    "softmax_cross_entropy",
]
