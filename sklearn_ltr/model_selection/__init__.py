"""Evaluation over the five LETOR folds, for comparing rankers query by query.

LETOR data sets (MQ2008, MQ2007, OHSUMED, MSLR-WEB10K/30K) split their queries into five
partitions ``S1`` .. ``S5`` and rotate them into five folds: **fold k** trains on
S(k), S(k+1), S(k+2), validates on S(k+3) and tests on S(k+4), counting modulo 5, so that
every query is a test query in exactly one fold. :func:`letor_fold_parts` gives the
rotation, :func:`load_letor_fold` reads one fold from a folder of partition files and
:func:`evaluate_letor_folds` fits a ranker on every fold (choosing among candidate
parameters on the validation partition) and returns one metric value per test query,
the input of :func:`sklearn_ltr.metrics.paired_significance`.

Importing this module loads neither torch nor skorch.

Examples
--------
>>> from sklearn_ltr.model_selection import letor_fold_parts
>>> letor_fold_parts(2)
{'train': ('S2', 'S3', 'S4'), 'vali': 'S5', 'test': 'S1'}
"""

from sklearn_ltr.model_selection._letor_folds import evaluate_letor_folds, letor_fold_parts, load_letor_fold

__all__ = ["evaluate_letor_folds", "letor_fold_parts", "load_letor_fold"]
