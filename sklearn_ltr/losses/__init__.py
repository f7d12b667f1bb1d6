r"""Ranking losses: pure torch functions over padded batches of lists.

Every loss has the signature ``loss(scores, labels, mask=None, **options) -> tensor`` with
``scores``, ``labels`` and ``mask`` of shape ``[batch, list]``: one row per query, ``mask``
True for real documents. Conventions shared by all of them:

- Padded slots may hold any value, NaN and inf included; they never affect the value or the
  gradient (they are replaced with :func:`torch.where`, never multiplied by 0).
- Reduction: each loss computes one value :math:`\ell_q` per query and reduces them as its
  two keyword options say, the same for every loss:

  - ``reduction="mean"`` (the default): the mean over the queries of the batch that have at
    least one real document, a scalar. A query with nothing to learn from (no pair of
    different labels, no relevant document) contributes 0 and still counts, so a batch's
    value is exactly the mean of its queries' values taken one at a time.
  - ``reduction="sum"``: their sum, a scalar.
  - ``reduction="none"``: the ``[batch]`` tensor of the values, 0 for a row with no real
    document.
  - ``weights``: None, or a ``[batch]`` tensor of finite, non-negative per-query weights
    :math:`w_q`. ``"mean"`` is then :math:`\sum_q w_q \ell_q / \sum_q w_q` over the queries
    with a real document (0 when that sum is 0), ``"sum"`` :math:`\sum_q w_q \ell_q`, and
    ``"none"`` :math:`w_q \ell_q`. A query of weight 0 is left out; an integer weight counts
    a query as many times over.

  A bad ``reduction`` or ``weights`` raises a ValueError that names it.
- Gains are exponential, ``2**y - 1``, and discounts ``1 / log2(1 + rank)``, as in
  :func:`sklearn_ltr.metrics.ndcg_score`. The losses compute each query's gains scaled by
  ``2**-m``, with ``m`` its largest label (or 0), as ``2**(y - m) - 2**-m``: the NDCG ratios
  do not change, and no label, however large, overflows.
- Half-precision scores are upcast to float32 inside the loss.

Losses that take no relevant document into account (ListMLE, RankNet with ties, softmax with
``target="softmax"``) give such lists a nonzero value; see each docstring.

Use :func:`get_loss` to resolve a name (``"ranknet"``, ``"softmax"``, ...; see
:data:`LOSSES` and :data:`ALIASES`) or a callable, with options bound. :func:`gumbel_loss`
averages any loss over Gumbel-perturbed scores (the two Gumbel losses are defined with it).
:func:`register_loss` adds a loss under a name, with its declared memory cost
(:data:`LOSS_MEMORY`, ``[list, list]`` tensors per list), which the neural rankers' memory
check reads before training; a loss registered without a cost is refused.

Examples
--------
:data:`LOSSES` maps the canonical names to the functions, :data:`ALIASES` other
spellings to canonical names; :func:`get_loss` reads both:

>>> import torch
>>> from sklearn_ltr.losses import ALIASES, LOSSES, get_loss
>>> sorted(LOSSES)
['approx_ndcg', 'attention_rank', 'gumbel_approx_ndcg', 'gumbel_neuralsort_ndcg', 'hinge',
 'lambdaloss', 'lambdarank', 'listmle', 'mse', 'neuralsort_ndcg', 'ranknet', 'sigmoid_ce',
 'softmax']
>>> ALIASES["listnet"], ALIASES["lambda"], ALIASES["dlcm"], ALIASES["ranksvm"]
('softmax', 'lambdarank', 'attention_rank', 'hinge')
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
lambdaloss      2.2684
hinge           0.2500
mse             0.0625

``lambdaloss`` weighs each pair by one of the LambdaLoss paper's schemes (:data:`WEIGHING_SCHEMES`):

>>> from sklearn_ltr.losses import WEIGHING_SCHEMES, lambdaloss
>>> WEIGHING_SCHEMES
('ndcg_loss1', 'ndcg_loss2', 'ndcg_loss2pp', 'arp_loss1', 'arp_loss2', 'lambdarank', 'ranknet')
>>> round(lambdaloss(scores, labels, mask, weighing_scheme="ranknet").item(), 4)
0.8855

Each loss declares its memory cost, the ``[list, list]`` tensors one list holds in a training
step, which the neural rankers' memory check reads (:func:`register_loss` adds a loss):

>>> from sklearn_ltr.losses import LOSS_MEMORY
>>> LOSS_MEMORY["ranknet"], LOSS_MEMORY["softmax"]
(8, 0)

and the same options to reduce the queries' values; here the first query counts twice:

>>> ranknet = LOSSES["ranknet"]
>>> ranknet(scores, labels, mask, reduction="none")
tensor([0.2512, 0.4741])
>>> weights = torch.tensor([2.0, 1.0])
>>> round(ranknet(scores, labels, mask, weights=weights).item(), 4)  # (2 * 0.2512 + 0.4741) / 3
0.3255
>>> round(ranknet(scores, labels, mask, reduction="sum", weights=weights).item(), 4)
0.9764
"""

from sklearn_ltr.losses import _lambdaloss, _registry
from sklearn_ltr.losses._approx import approx_ndcg, gumbel_approx_ndcg
from sklearn_ltr.losses._gumbel import gumbel_loss
from sklearn_ltr.losses._hinge import hinge
from sklearn_ltr.losses._lambdaloss import lambdaloss
from sklearn_ltr.losses._listwise import attention_rank, listmle, softmax_cross_entropy
from sklearn_ltr.losses._mse import mean_squared_error
from sklearn_ltr.losses._neuralsort import gumbel_neuralsort_ndcg, neuralsort_ndcg
from sklearn_ltr.losses._pairwise import lambdarank, ranknet
from sklearn_ltr.losses._pointwise import sigmoid_cross_entropy
from sklearn_ltr.losses._registry import get_loss, pairwise_tensors, register_loss, unregister_loss
from sklearn_ltr.losses._t12n import approx_t12n

# Bound here, with ``#:`` comments, so that autodoc documents them as
# ``sklearn_ltr.losses.LOSSES`` and ``sklearn_ltr.losses.ALIASES`` (the same dict objects).

#: dict of str to callable: the canonical name of each of the thirteen losses, mapped to its
#: function (the DASALC paper's loss comparison, ListMLE, the LambdaLoss framework, the
#: pairwise hinge and the squared error). :func:`get_loss` reads it.
LOSSES = _registry.LOSSES

#: dict of str to str: other accepted spellings of the loss names (``"listnet"``,
#: ``"lambda"``, ``"dlcm"``, ...), each mapped to its canonical name in :data:`LOSSES`.
ALIASES = _registry.ALIASES

#: tuple of str: the weighing schemes of :func:`lambdaloss` (Wang et al., 2018): ``"ndcg_loss1"``,
#: ``"ndcg_loss2"``, ``"ndcg_loss2pp"``, ``"arp_loss1"``, ``"arp_loss2"``, ``"lambdarank"``,
#: ``"ranknet"``.
WEIGHING_SCHEMES = _lambdaloss.WEIGHING_SCHEMES

#: dict of str to int: the declared memory cost of each loss of :data:`LOSSES`, in
#: ``[list, list]`` float32 tensors per list during a training step (0: linear in the list
#: length). Set by :func:`register_loss`; the neural rankers' memory check reads it.
LOSS_MEMORY = _registry.LOSS_MEMORY

__all__ = [
    "ALIASES",
    "LOSSES",
    "LOSS_MEMORY",
    "WEIGHING_SCHEMES",
    "approx_ndcg",
    "approx_t12n",
    "attention_rank",
    "get_loss",
    "gumbel_approx_ndcg",
    "gumbel_loss",
    "gumbel_neuralsort_ndcg",
    "hinge",
    "lambdaloss",
    "lambdarank",
    "listmle",
    "mean_squared_error",
    "neuralsort_ndcg",
    "pairwise_tensors",
    "ranknet",
    "register_loss",
    "sigmoid_cross_entropy",
    "softmax_cross_entropy",
    "unregister_loss",
]
