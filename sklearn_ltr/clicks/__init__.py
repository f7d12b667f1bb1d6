"""Learning from click logs: inverse-propensity weights and the estimation of propensities.

- :func:`inverse_propensity_weights`: the clipped weights :math:`1 / \\max(p, \\tau)` that
  training (``fit(..., propensity=...)``) and counterfactual metrics apply to clicks.
- :func:`estimate_propensity_em`: examination propensity per position by regression EM of the
  position-based model, from the clicks, positions and features of a log.
- :func:`estimate_propensity_harvesting`: the same from documents shown at several positions
  (intervention harvesting), without features.
- :func:`estimate_propensity_document_em`: EM of the position-based model with one relevance per
  (query, document), for logs that show documents at several positions; the one to prefer there.
- :func:`estimate_propensity_swap`: the same from randomised swap interventions (RandPair, swap-k).
- :func:`affine_click_weights`: the affine correction :math:`(c - \\beta) / \\alpha` of trust bias
  that training and counterfactual metrics apply when ``propensity`` is an ``(n_samples, 2)``
  array of per-row ``(alpha, beta)``.
- :func:`estimate_trust_bias_em`: those per-position ``(alpha, beta)`` of trust bias by EM
  (examination and the click rates of relevant and non-relevant documents); its
  :class:`TrustBiasEstimate`'s ``affine_of(positions)`` gives each row's pair.

- :func:`simulate_click_log` and :func:`simulate_clicks`: simulated click logs under the click
  models (:class:`PositionBasedModel`, the cascade family); :func:`check_clicks` and
  :func:`check_positions`: the checks of a log's clicks and display positions that every
  estimator, metric and click-trained ranker applies.

Every estimator returns a :class:`PropensityEstimate` (per-position propensities relative to
position 1 with a bootstrap band); its ``propensity_of(positions)`` gives each row's propensity.

Examples
--------
From the log to the weights of the clicks: a document shown four times at position 1 (two
clicks) and four times at position 2 (one click), then three rows to weigh:

>>> from sklearn_ltr.clicks import PROPENSITY_CLIP, estimate_propensity_harvesting, inverse_propensity_weights
>>> estimate = estimate_propensity_harvesting([1, 1, 0, 0, 1, 0, 0, 0], [1, 1, 1, 1, 2, 2, 2, 2], [7] * 8,
...                                           [3] * 8, max_position=2, n_bootstrap=0)
>>> propensity = estimate.propensity_of([1, 2, 2])
>>> propensity
array([1. , 0.5, 0.5])
>>> inverse_propensity_weights(propensity)  # at most 1 / PROPENSITY_CLIP
array([1., 2., 2.])
>>> 1 / PROPENSITY_CLIP
20.0
"""

from sklearn_ltr.clicks._cascade_models import (
    CascadeModel,
    DependentClickModel,
    DynamicBayesianNetwork,
    UserBrowsingModel,
)
from sklearn_ltr.clicks._checks import check_clicks, check_positions
from sklearn_ltr.clicks._click_models import ClickModel, PositionBasedModel
from sklearn_ltr.clicks._document_em import estimate_propensity_document_em
from sklearn_ltr.clicks._em import estimate_propensity_em
from sklearn_ltr.clicks._estimate import PropensityEstimate
from sklearn_ltr.clicks._harvesting import estimate_propensity_harvesting
from sklearn_ltr.clicks._interventions import estimate_propensity_swap
from sklearn_ltr.clicks._simulation import (
    SimulatedClickLog,
    click_probability,
    observation_propensity,
    simulate_click_log,
    simulate_clicks,
)
from sklearn_ltr.clicks._trust_em import TrustBiasEstimate, estimate_trust_bias_em
from sklearn_ltr.clicks._weights import (
    PROPENSITY_CLIP,
    affine_click_weights,
    check_affine,
    check_propensity,
    click_weights,
    inverse_propensity_weights,
)

__all__ = [
    "PROPENSITY_CLIP",
    "CascadeModel",
    "ClickModel",
    "DependentClickModel",
    "DynamicBayesianNetwork",
    "PositionBasedModel",
    "PropensityEstimate",
    "SimulatedClickLog",
    "TrustBiasEstimate",
    "UserBrowsingModel",
    "affine_click_weights",
    "check_affine",
    "check_clicks",
    "check_positions",
    "check_propensity",
    "click_probability",
    "click_weights",
    "estimate_propensity_document_em",
    "estimate_propensity_em",
    "estimate_propensity_harvesting",
    "estimate_propensity_swap",
    "estimate_trust_bias_em",
    "inverse_propensity_weights",
    "observation_propensity",
    "simulate_click_log",
    "simulate_clicks",
]
