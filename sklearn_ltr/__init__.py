"""sklearn_ltr: learning to rank with scikit-learn's interface.

Every estimator takes ``groups``, one query id per row, in ``fit``, ``predict``
and ``score``; see the user guide for metadata routing with ``GridSearchCV``.

Examples
--------
>>> import sklearn_ltr
>>> from sklearn_ltr import LambdaMARTRanker, ndcg_scorer
>>> from sklearn_ltr.datasets import make_ranking
>>> X, y, qid = make_ranking(n_queries=40, n_features=8, random_state=0)
>>> ranker = LambdaMARTRanker(n_estimators=20, random_state=0, n_jobs=1).fit(X, y, groups=qid)
>>> ranker.predict(X, groups=qid).shape == y.shape  # one score per row, in row order
True
>>> ranker.score(X, y, groups=qid) == ndcg_scorer(ranker, X, y, groups=qid)  # mean NDCG@10
True

``__version__`` is the package's version string:

>>> major, minor = (int(part) for part in sklearn_ltr.__version__.split(".")[:2])
>>> (major, minor) >= (0, 1)
True
"""

# First, before anything can import torch or LightGBM (their OpenMP runtime reads it once, when it
# loads): idle OpenMP threads sleep instead of spinning, unless the user chose (sklearn_ltr/_threads.py).
from sklearn_ltr import _threads

_threads.apply_openmp_default()

#: str: the version of the package, read by the build (``pyproject.toml``).
__version__ = "0.1.0"

import importlib  # noqa: E402

from sklearn_ltr.base import MissingGroupsWarning  # noqa: E402
from sklearn_ltr.metrics import NDCGScorer, RankingScorer, make_ranking_scorer, ndcg_score, ndcg_scorer  # noqa: E402
from sklearn_ltr.preprocessing import Log1pTransformer, QueryNormalizer  # noqa: E402
from sklearn_ltr.rankers import _registry as _rankers  # noqa: E402

# The rankers load on first use (PEP 562): the neural ones import torch and skorch, which
# LambdaMART, the metrics and the scorers do not need. Their names come from the one
# registry of rankers.


def __getattr__(name):
    if name not in _rankers.exported_names():
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("sklearn_ltr.rankers"), name)
    if name in __all__:
        globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__) | set(_rankers.exported_names()))


__all__ = [
    "Log1pTransformer",
    "MissingGroupsWarning",
    "NDCGScorer",
    "QueryNormalizer",
    "RankingScorer",
    "__version__",
    "make_ranking_scorer",
    "ndcg_score",
    "ndcg_scorer",
]
__all__ += _rankers.exported_names()  # the registered rankers (and their warnings)
__all__.sort()
