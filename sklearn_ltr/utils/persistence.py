"""Saving and loading fitted models: the types that a skops file of an ``sklearn_ltr`` model references.

`skops <https://skops.readthedocs.io>`_ saves a model without pickle and, on load,
constructs only the types it is told to trust: its defaults (Python and NumPy values,
scikit-learn's estimators) and the ``trusted`` list. :data:`TRUSTED_TYPES` is that list
for every model of this library: the rankers, a ``Pipeline`` with
:class:`~sklearn_ltr.preprocessing.Log1pTransformer`, a
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
['sklearn_ltr.nn._mlp.MLPScorer', 'sklearn_ltr.rankers._ranknet.RankNetRanker', 'sklearn_ltr.training._net.RankingNet']
>>> loaded = sio.loads(data, trusted=TRUSTED_TYPES)
>>> bool((loaded.predict(X) == ranker.predict(X)).all())
True
"""

from sklearn_ltr.rankers import _registry

__all__ = ["TRUSTED_TYPES", "trusted_types"]

#: Types outside any one ranker's entry: the preprocessing every pipeline of the docs uses.
_SHARED_TYPES = ("sklearn_ltr.preprocessing._log1p.Log1pTransformer",)


def trusted_types():
    """Fully qualified names of the types skops files of the registered rankers reference.

    Read from the registry of rankers (:data:`sklearn_ltr.rankers.RANKERS`): each ranker's
    class and the types its entry declares (its net, its torch module, LightGBM's model).
    Includes rankers registered after import, which :data:`TRUSTED_TYPES` does not.

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
    types = []
    for entry in _registry.RANKERS.values():
        types.append(f"{entry.module}.{entry.name}")
    types.extend(_SHARED_TYPES)
    for entry in _registry.RANKERS.values():
        types.extend(entry.trusted_types)
    return list(dict.fromkeys(types))


#: list of str: fully qualified names of the types that skops files of ``sklearn_ltr``
#: models reference beyond skops's own trusted defaults; ``trusted=`` of ``skops.io.load``
#: and ``skops_trusted_types=`` of ``mlflow.sklearn.log_model``. Built from the registry of
#: rankers at import (:func:`trusted_types`).
TRUSTED_TYPES = trusted_types()
