"""The data :class:`~sklearn_ltr.LambdaMARTRanker`'s in-memory ``fit`` hands LightGBM, checked.

Labels within ``label_gain`` and queries within LightGBM's size limit, for the training rows
and for each validation set of ``eval_set`` (its own query ids, sorted by query like the
training rows), and ``LGBMRanker.fit``'s evaluation arguments built from them.
"""

from __future__ import annotations

import numpy as np

from sklearn_ltr._groups import QueryGroups
from sklearn_ltr._validation import check_relevance
from sklearn_ltr.rankers._lambdarank_inputs import (
    check_init_score,
    check_label_range,
    check_query_size,
    eval_entries,
    lgbm_eval_kwargs,
    sort_rows,
)

__all__ = ["check_lambdarank", "eval_fit_kwargs"]


def check_lambdarank(y, query_groups, name, *, label_gain, groups_none=False):
    """Raise unless the labels ``y`` are within ``label_gain`` and every query within LightGBM's size limit."""
    check_label_range(y.max(), label_gain, name)
    largest = int(np.argmax(query_groups.sizes))
    hint = " (groups=None makes all rows one query: pass groups)" if groups_none else ""
    check_query_size(int(query_groups.sizes[largest]), query_groups.ids[largest].item(), name, hint=hint)


def eval_fit_kwargs(ranker, eval_set, eval_names, training, init_scores=None):
    """``LGBMRanker.fit``'s evaluation arguments for ``ranker``'s ``eval_set`` (none without it).

    ``training`` pairs the caller's ``(X, y, groups)`` with the sorted
    ``(X, y, query sizes)`` handed to LightGBM: an ``eval_set`` entry made of the
    very training objects is passed as those, so that LightGBM recognises the
    training data by identity and reuses it (with the training ``init_score``).
    ``init_scores`` holds, per entry, its rows' first-stage scores (checked, sorted with
    the rows and passed as ``eval_init_score``) or ``None``.
    """
    if eval_set is None:
        if ranker.early_stopping_rounds is not None:
            raise ValueError(
                "early_stopping_rounds needs validation queries: pass eval_set=[(X_val, y_val, groups_val)]."
            )
        return {}
    (X_in, y_in, groups_in), (X_sorted, y_sorted, sizes) = training
    entries = eval_entries(eval_set)
    init_scores = [None] * len(entries) if init_scores is None else init_scores
    valid_sets, valid_groups, valid_init = [], [], []
    for i, (X_val, y_val, groups_val) in enumerate(entries):
        if X_val is X_in and y_val is y_in and groups_val is groups_in:
            valid_sets.append((X_sorted, y_sorted))
            valid_groups.append(sizes)
            valid_init.append(None)
            continue
        X_val, y_val, *init = _eval_entry(ranker, i, X_val, y_val, groups_val, valid_groups, init_scores[i])
        valid_sets.append((X_val, y_val))
        valid_init.append(init[0] if init else None)
    if eval_names is not None and len(eval_names) != len(valid_sets):
        raise ValueError(f"eval_names has {len(eval_names)} names for {len(valid_sets)} eval_set entries.")
    kwargs = lgbm_eval_kwargs(valid_sets, valid_groups, eval_names)
    if any(scores is not None for scores in valid_init):
        kwargs["eval_init_score"] = valid_init
    return kwargs


def _eval_entry(ranker, i, X_val, y_val, groups_val, valid_groups, init_score=None):
    """Entry ``i`` of ``eval_set`` checked and sorted by query (with its ``init_score``, when given).

    Appends its query sizes to ``valid_groups``; returns ``(X_val, y_val)`` or ``(X_val, y_val, init_score)``.
    """
    name = f"eval_set[{i}]"
    X_val, groups_val = ranker._split_query_column(X_val, groups_val, method=f"fit ({name})")
    if groups_val is None:
        raise ValueError(
            f"{name} has groups_val=None; validation rows need their own query ids: (X_val, y_val, groups_val)."
        )
    X_val = ranker._validate_X(X_val, name=f"{name} X_val")
    y_val = check_relevance(y_val, name=f"{name} y_val", integer=True)
    if y_val.shape[0] != X_val.shape[0]:
        raise ValueError(f"{name}: y_val has {y_val.shape[0]} labels but X_val has {X_val.shape[0]} rows.")
    query_groups = QueryGroups(groups_val, X_val.shape[0])
    check_lambdarank(y_val, query_groups, f"{name} y_val", label_gain=ranker.label_gain)
    valid_groups.append(query_groups.sizes)
    if init_score is None:
        return sort_rows(query_groups, X_val, y_val)
    init_score = check_init_score(init_score, X_val.shape[0], name="init_score_val", against="X_val")
    return sort_rows(query_groups, X_val, y_val, init_score)
