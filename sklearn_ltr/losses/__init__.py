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

Examples
--------
:data:`LOSSES` maps the canonical names to the functions, :data:`ALIASES` other
spellings to canonical names; :func:`get_loss` reads both:

>>> import torch
>>> from sklearn_ltr.losses import ALIASES, LOSSES, get_loss
>>> sorted(LOSSES)
['approx_ndcg', 'attention_rank', 'gumbel_approx_ndcg', 'gumbel_neuralsort_ndcg',
 'lambdarank', 'listmle', 'neuralsort_ndcg', 'ranknet', 'sigmoid_ce', 'softmax']
>>> ALIASES["listnet"], ALIASES["lambda"], ALIASES["dlcm"]
('softmax', 'lambdarank', 'attention_rank')
>>> get_loss("ListNet") is LOSSES[ALIASES["listnet"]]
True

Every loss takes the same padded batch, here two queries, the second with two real
documents and one padded slot:

>>> scores = torch.tensor([[2.0, 0.0, 1.0], [0.5, 0.0, 0.0]])
>>> labels = torch.tensor([[2.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
>>> mask = torch.tensor([[True, True, True], [True, True, False]])
>>> for name, loss in LOSSES.items():
...     if not name.startswith("gumbel"):  # the Gumbel losses are random
...         print(f"{name:<16}{loss(scores, labels, mask).item():.4f}")
sigmoid_ce      0.4807
ranknet         0.3626
lambdarank      0.1512
softmax         0.6075
approx_ndcg     0.0024
neuralsort_ndcg 0.1004
attention_rank  1.1093
listmle         0.5975
"""

from sklearn_ltr.losses import _registry
from sklearn_ltr.losses._approx import approx_ndcg, gumbel_approx_ndcg
from sklearn_ltr.losses._listwise import attention_rank, listmle, softmax_cross_entropy
from sklearn_ltr.losses._neuralsort import gumbel_neuralsort_ndcg, neuralsort_ndcg
from sklearn_ltr.losses._pairwise import lambdarank, ranknet
from sklearn_ltr.losses._pointwise import sigmoid_cross_entropy
from sklearn_ltr.losses._registry import get_loss

# Bound here, with ``#:`` comments, so that autodoc documents them as
# ``sklearn_ltr.losses.LOSSES`` and ``sklearn_ltr.losses.ALIASES`` (the same dict objects).

#: dict of str to callable: the canonical name of each of the ten losses, mapped to its
#: function (the DASALC paper's loss comparison, plus ListMLE). :func:`get_loss` reads it.
LOSSES = _registry.LOSSES

#: dict of str to str: other accepted spellings of the loss names (``"listnet"``,
#: ``"lambda"``, ``"dlcm"``, ...), each mapped to its canonical name in :data:`LOSSES`.
ALIASES = _registry.ALIASES

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
