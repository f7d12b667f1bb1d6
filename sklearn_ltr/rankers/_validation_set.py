"""A separate validation set given to ``fit`` (``X_val``, ``y_val``, ``groups_val``): its request and its checks.

Every ranker's ``fit`` takes a validation set as routed fit parameters, so that inside a
``Pipeline(..., transform_input=["X_val"])`` the validation features go through the same
steps as the training features (scikit-learn 1.6+), and a search hands the same set to every
candidate. This module holds what the rankers share: the metadata request, the container of
the four arrays, and the checks whose messages name the argument and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sklearn_ltr._groups import check_groups
from sklearn_ltr._validation import check_finite_labels, check_relevance, check_same_length
from sklearn_ltr.clicks import check_affine

__all__ = ["VALIDATION_PARAMS", "VALIDATION_REQUEST", "ValidationData", "check_validation_features_of"]

#: The fit parameters of a separate validation set, in signature order.
VALIDATION_PARAMS = ("X_val", "y_val", "groups_val")

#: Metadata request of the validation set: asked for by default, like ``groups``.
VALIDATION_REQUEST = dict.fromkeys(VALIDATION_PARAMS, True)

#: The fix named when validation features do not match the training features.
PIPELINE_HINT = (
    "Inside a Pipeline, pass the validation set as fit parameters X_val=, y_val=, groups_val= and construct "
    "Pipeline(..., transform_input=['X_val']) (with sklearn.set_config(enable_metadata_routing=True)), so that "
    "X_val goes through the same steps as X."
)


def check_validation_features_of(ranker, X_val, *, name="X_val"):
    """``X_val`` validated against the features ``ranker`` was fitted on (width, names, finite values).

    The ranker's own validation (:meth:`~sklearn_ltr.base.BaseRanker._validate_X`) gives the
    message of a bad value; a wrong width gets the hint that a Pipeline's steps were skipped.
    """
    if hasattr(X_val, "shape") and len(X_val.shape) == 2 and X_val.shape[1] != ranker.n_features_in_:
        raise ValueError(
            f"{name} has {X_val.shape[1]} features but {type(ranker).__name__} is fitted on {ranker.n_features_in_}: "
            f"validation features must be transformed like the training features. {PIPELINE_HINT}"
        )
    try:
        return ranker._validate_X(X_val, name=name)
    except ValueError as error:
        raise ValueError(f"{error} {PIPELINE_HINT}") from None


@dataclass(frozen=True)
class ValidationData:
    """The validation set of a ``fit`` call, as given (any of them may be None).

    Parameters
    ----------
    X, y, groups : array-like or None
        ``X_val``, ``y_val`` and ``groups_val`` of ``fit``.
    propensity : array-like or None, default=None
        ``propensity_val``: the examination propensity of each row of a validation click log.
    extras : dict of str to array-like, default=None
        Further per-row inputs of the validation rows, by the name of ``fit``'s training
        input (e.g. ``{"initial_rank": initial_rank_val}``).
    """

    X: object
    y: object
    groups: object
    propensity: object = None
    extras: dict | None = None

    def check_absent(self):
        """Refuse ``y_val``, ``groups_val`` or ``propensity_val`` given without ``X_val``."""
        given = [name for name, value in (("y_val", self.y), ("groups_val", self.groups),
                                          ("propensity_val", self.propensity)) if value is not None]
        given += [f"{name}_val" for name, value in (self.extras or {}).items() if value is not None]
        if given:
            raise ValueError(f"fit got {', '.join(given)} without X_val: pass the validation features X_val too, "
                             f"or none of them.")

    def checked(self, ranker, *, clicks=False):
        """``(X_val, y_val, groups_val, propensity_val)`` checked against the fitted ``ranker``.

        Labels must be graded relevance (clicks 0/1 for a click model, ``clicks=True``), one
        per row of ``X_val``; the query ids one per row; the propensities in (0, 1].
        """
        X_val = check_validation_features_of(ranker, self.X)
        n_rows = X_val.shape[0]
        if self.y is None or self.groups is None:
            missing = " and ".join(name for name, value in (("y_val", self.y), ("groups_val", self.groups))
                                   if value is None)
            raise ValueError(f"fit got X_val without {missing}: a validation set needs its labels (y_val) and "
                             f"the query id of each row (groups_val).")
        check_same_length(X_val, self.y, "y_val", what="one label per row of X_val")
        check_finite_labels(self.y, name="y_val")
        y_val = check_relevance(self.y, name="y_val", integer=getattr(ranker, "_integer_labels", False))
        if clicks and not np.isin(y_val, (0.0, 1.0)).all():
            raise ValueError(f"y_val of {type(ranker).__name__} holds clicks: 1 (clicked) and 0 (shown, not "
                             f"clicked); got values such as {np.unique(y_val[~np.isin(y_val, (0.0, 1.0))])[:5]}.")
        groups_val = check_groups(self.groups, n_rows, name="groups_val", against="X_val")
        propensity = None
        if self.propensity is not None and np.ndim(self.propensity) == 2:
            # Per-row (alpha, beta) of the trust-bias model: the affine estimate, like fit's propensity.
            propensity = check_affine(self.propensity, n_rows, name="propensity_val")
        elif self.propensity is not None:
            propensity = np.asarray(self.propensity, dtype=np.float64).ravel()
            if propensity.shape[0] != n_rows:
                raise ValueError(f"propensity_val has {propensity.shape[0]} entries but X_val has {n_rows} rows; "
                                 f"pass one examination propensity per validation row.")
            if not (np.isfinite(propensity).all() and (propensity > 0).all() and (propensity <= 1).all()):
                raise ValueError("propensity_val must hold examination probabilities in (0, 1], one per row of "
                                 "X_val.")
        return X_val, y_val, groups_val, propensity
