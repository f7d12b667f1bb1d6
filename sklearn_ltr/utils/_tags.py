"""Ranker tags: what scikit-learn's estimator tags cannot say about a ranker.

scikit-learn describes an estimator with :class:`sklearn.utils.Tags` (``__sklearn_tags__``).
A ranker adds :class:`RankerTags` as the field ``ranker_tags`` of :class:`Tags`, a subclass
of scikit-learn's, as imbalanced-learn adds its sampler tags. The library's own code (the
command line, the contract suite :mod:`sklearn_ltr.utils.estimator_checks`) reads these
tags, never private class attributes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import sklearn.utils
from sklearn.utils import get_tags

__all__ = ["RankerTags", "Tags", "get_ranker_tags"]

#: Kinds of training target a ranker takes.
TARGET_KINDS = ("graded", "clicks")


@dataclass(slots=True)
class RankerTags:
    """Tags of a ranker.

    Parameters
    ----------
    list_context : bool, default=False
        Whether a document's score depends on the other documents of its query
        (DASALC, SetRank). Such a ranker needs ``groups`` in ``predict``; a pointwise
        scorer gives every row the same score whatever the other rows.
    target_kind : {"graded", "clicks"}, default="graded"
        What ``y`` holds in ``fit``: graded relevance labels (non-negative numbers) or
        binary clicks (0/1).
    extra_fit_inputs : tuple of str, default=()
        Per-row inputs of ``fit`` besides ``groups``, routed like it under metadata
        routing, e.g. ``("positions",)``. Each is a 1-based rank within its query.
    extra_predict_inputs : tuple of str, default=()
        Per-row inputs of ``predict`` (and ``score``) besides ``groups``, e.g.
        ``("initial_rank",)``.

    Examples
    --------
    >>> from sklearn_ltr import SetRankRanker, TwoTowerDebiasedRanker
    >>> from sklearn_ltr.utils import get_ranker_tags
    >>> tags = get_ranker_tags(SetRankRanker())
    >>> tags.list_context, tags.target_kind, tags.extra_fit_inputs, tags.extra_predict_inputs
    (True, 'graded', ('initial_rank',), ('initial_rank',))
    >>> get_ranker_tags(TwoTowerDebiasedRanker()).target_kind
    'clicks'
    """

    list_context: bool = False
    target_kind: str = "graded"
    extra_fit_inputs: tuple = field(default_factory=tuple)
    extra_predict_inputs: tuple = field(default_factory=tuple)


@dataclass(slots=True)
class Tags(sklearn.utils.Tags):
    """scikit-learn's :class:`sklearn.utils.Tags` with a ``ranker_tags`` field.

    Parameters
    ----------
    estimator_type, target_tags, transformer_tags, classifier_tags, regressor_tags : object
        As in :class:`sklearn.utils.Tags`.
    array_api_support, no_validation, non_deterministic, requires_fit, _skip_test : bool
        As in :class:`sklearn.utils.Tags`.
    input_tags : sklearn.utils.InputTags
        As in :class:`sklearn.utils.Tags`.
    ranker_tags : RankerTags or None, default=None
        The ranker's tags; ``None`` for an estimator that is not a ranker.

    Examples
    --------
    >>> from sklearn.utils import get_tags
    >>> from sklearn_ltr import LambdaMARTRanker
    >>> tags = get_tags(LambdaMARTRanker())
    >>> tags.estimator_type, tags.ranker_tags.list_context
    ('ranker', False)
    """

    ranker_tags: RankerTags | None = None

    @classmethod
    def from_sklearn(cls, tags, ranker_tags=None):
        """The :class:`Tags` holding every field of scikit-learn's ``tags``.

        Parameters
        ----------
        tags : sklearn.utils.Tags
            Tags to copy.
        ranker_tags : RankerTags, default=None
            The ranker tags to add; ``None`` keeps those of ``tags`` if it has them,
            else makes the default :class:`RankerTags`.

        Returns
        -------
        tags : Tags
            A new object; ``tags`` is not modified.
        """
        values = {f.name: getattr(tags, f.name) for f in dataclasses.fields(sklearn.utils.Tags)}
        if ranker_tags is None:
            ranker_tags = getattr(tags, "ranker_tags", None) or RankerTags()
        return cls(**values, ranker_tags=ranker_tags)


def get_ranker_tags(estimator):
    """The :class:`RankerTags` of ``estimator``, or ``None`` if it is not a ranker.

    Parameters
    ----------
    estimator : estimator instance
        Any scikit-learn estimator.

    Returns
    -------
    ranker_tags : RankerTags or None
        ``get_tags(estimator).ranker_tags`` when the estimator declares ranker tags.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn_ltr import DASALCRanker
    >>> from sklearn_ltr.utils import get_ranker_tags
    >>> get_ranker_tags(DASALCRanker()).list_context
    True
    >>> get_ranker_tags(Ridge()) is None
    True
    """
    return getattr(get_tags(estimator), "ranker_tags", None)
