"""Saving and loading fitted models: the types that a skops file of an ``sklearn_ltr`` model references.

`skops <https://skops.readthedocs.io>`_ saves a model without pickle and, on load,
constructs only the types it is told to trust: its defaults (Python and NumPy values,
scikit-learn's estimators) and the ``trusted`` list. :data:`TRUSTED_TYPES` is that list
for every model of this library: the rankers, a ``Pipeline`` with
:class:`~sklearn_ltr.preprocessing.Log1pTransformer` or
:class:`~sklearn_ltr.preprocessing.QueryNormalizer`, a
:class:`~sklearn_ltr.RankingEnsemble` of them. Pass it as ``trusted`` instead of the
output of ``skops.io.get_untrusted_types`` (which lists every type outside skops's
defaults, for you to review one by one)::

    skops.io.load("ranker.skops", trusted=TRUSTED_TYPES)

A type left out of the list (a custom loss function or callback given to a ranker, a
``torch.device`` as ``device``, a neural ranker fitted with ``keep_training_state=True``)
still makes the load fail with skops's ``UntrustedTypesFoundException``, naming it:
review it before adding it to ``trusted``.

The list names the library's own classes and three of LightGBM (its ``LGBMRanker``,
``Booster``, rebuilt by LightGBM's own model-text parser, and the ``OrderedDict`` of its
evaluation results). Loading one of them runs no code from the file: a neural ranker's
network is rebuilt from its class (one of the list's modules), its constructor's
arguments and its weights stored as NumPy arrays. See :ref:`persistence`.

Examples
--------
>>> import pytest
>>> sio = pytest.importorskip("skops.io")
>>> from sklearn_ltr import RankNetRanker
>>> from sklearn_ltr.datasets import make_ranking
>>> from sklearn_ltr.utils.persistence import TRUSTED_TYPES
>>> X, y, qid = make_ranking(n_queries=20, n_features=5, random_state=0)
>>> ranker = RankNetRanker(hidden_sizes=(8,), max_epochs=2, random_state=0).fit(X, y, groups=qid)
>>> data = sio.dumps(ranker)
>>> sorted(sio.get_untrusted_types(data=data))  # outside skops's defaults: all in TRUSTED_TYPES
['sklearn_ltr._feature_profile.FeatureProfile', 'sklearn_ltr.nn._mlp.MLPScorer',
 'sklearn_ltr.rankers._ranknet.RankNetRanker', 'sklearn_ltr.training._net.RankingNet']
>>> loaded = sio.loads(data, trusted=TRUSTED_TYPES)
>>> bool((loaded.predict(X) == ranker.predict(X)).all())
True
"""

from sklearn_ltr.utils._trusted_types import declared_trusted_types

__all__ = ["TRUSTED_TYPES", "trusted_types"]

#: Types outside any one ranker's entry: the library's preprocessing, which the pipelines of the docs use.
_SHARED_TYPES = ("sklearn_ltr.preprocessing._log1p.Log1pTransformer",
                 "sklearn_ltr.preprocessing._query_normalizer.QueryNormalizer",
                 # what every fitted ranker records of its training features (feature_profile_)
                 "sklearn_ltr._feature_profile.FeatureProfile",
                 # SimpleImputer's fitted dtype (the command line's impute preprocessing): a dtype, no code.
                 "numpy.dtype")


def trusted_types():
    """Fully qualified names of the types skops files of the registered rankers reference.

    Declared by the registry of rankers (:data:`sklearn_ltr.rankers.RANKERS`) as it registers
    each ranker: its class and the types its entry names (its net, its torch module,
    LightGBM's model); then the preprocessing the pipelines of the docs use. Includes rankers
    registered after import, which :data:`TRUSTED_TYPES` does not.

    Returns
    -------
    list of str

    Examples
    --------
    >>> from sklearn_ltr.utils.persistence import TRUSTED_TYPES, trusted_types
    >>> trusted_types() == TRUSTED_TYPES
    True
    >>> "sklearn_ltr.nn._dasalc.DASALCNet" in trusted_types()
    True
    """
    return list(dict.fromkeys([*declared_trusted_types(), *_SHARED_TYPES]))


#: list of str: fully qualified names of the types that skops files of ``sklearn_ltr``
#: models reference beyond skops's own trusted defaults; ``trusted=`` of ``skops.io.load``
#: and ``skops_trusted_types=`` of ``mlflow.sklearn.log_model``. The types of the rankers
#: registered when this module is first imported (:func:`trusted_types`): importing it imports
#: ``sklearn_ltr``, whose registry of rankers registers the library's own first.
TRUSTED_TYPES = trusted_types()
