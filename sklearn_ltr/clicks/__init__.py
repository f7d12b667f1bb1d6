"""Learning from click logs: inverse-propensity weights and the estimation of propensities.

- :func:`inverse_propensity_weights`: the clipped weights :math:`1 / \\max(p, \\tau)` that
  training (``fit(..., propensity=...)``) and counterfactual metrics apply to clicks.
"""

from sklearn_ltr.clicks._weights import PROPENSITY_CLIP, check_propensity, inverse_propensity_weights

__all__ = ["PROPENSITY_CLIP", "check_propensity", "inverse_propensity_weights"]
