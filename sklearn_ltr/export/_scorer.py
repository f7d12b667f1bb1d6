"""``OnnxScorer``: score rows with an exported model in onnxruntime, as ``predict`` does."""

from __future__ import annotations

import json
import os
from numbers import Integral
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_array

from sklearn_ltr._blocks import check_finite_scores, padded_batches
from sklearn_ltr._groups import QueryGroups, check_groups
from sklearn_ltr._validation import NumberInterval, check_features
from sklearn_ltr.export._onnx import METADATA_PREFIX, OUTPUT
from sklearn_ltr.utils._optional import import_optional
from sklearn_ltr.utils._sklearn_compat import check_parameters

__all__ = ["OnnxScorer"]


def _model_bytes(model):
    if isinstance(model, (bytes, bytearray)):
        return bytes(model)
    if isinstance(model, (str, os.PathLike)):
        with open(model, "rb") as file:
            return file.read()
    if hasattr(model, "SerializeToString"):  # onnx.ModelProto
        return model.SerializeToString()
    raise TypeError(f"model must be an onnx.ModelProto, bytes or a path to a .onnx file; got {type(model).__name__}.")


class OnnxScorer:
    """Score rows with an exported model in onnxruntime, one score per row, as ``predict`` does.

    The model is one written by :func:`~sklearn_ltr.export.to_onnx`. :meth:`predict` takes
    what the ranker's ``predict`` takes: rows in any order with their query ids. It groups
    the rows by query, pads each batch of queries to its longest list (batches of similar
    lengths), runs the model and returns the scores in input row order.
    A search service that already holds each query's documents together calls
    :meth:`score_padded` (or the onnxruntime session) on its padded batch directly.

    Parameters
    ----------
    model : onnx.ModelProto, bytes, str or path-like
        A model written by :func:`~sklearn_ltr.export.to_onnx`, or its path.
    n_threads : int, default=None
        Threads onnxruntime uses within an operator (``intra_op_num_threads``); ``None``
        lets onnxruntime choose (all cores).
    providers : list, default=None
        onnxruntime execution providers; ``None`` is ``["CPUExecutionProvider"]``.
    max_batch_documents : int, default=65536
        Slots (queries x longest list) per batch that :meth:`predict` runs at once: the
        memory of a batch is about ``4 * max_batch_documents * n_features`` bytes of input
        plus the model's activations. A longer query runs as a batch of its own.
    max_batch_queries : int, default=8
        Queries per batch of a list-context model (:meth:`predict` sorts the queries by
        length, so a batch pads its lists to similar lengths). A pointwise model scores up
        to ``max_batch_documents`` rows as one list.

    Attributes
    ----------
    session_ : onnxruntime.InferenceSession
        The session that runs the model.
    n_features_in_ : int
        Features per document the model takes.
    feature_names_in_ : ndarray of str or None
        The ranker's feature names, when it was fitted on a DataFrame.
    list_context_ : bool
        Whether a document's score depends on the other documents of its list (DASALC,
        SetRank): :meth:`predict` then needs ``groups``.
    query_column_ : str, int or None
        The ranker's ``query_column``: :meth:`predict` reads the query ids from that column
        of ``X`` and drops it, as the ranker does. The ONNX model itself takes features only.
    input_names_ : list of str
        The model's inputs: ``["X", "mask"]``, plus ``"initial_rank"`` for SetRank-init.

    Raises
    ------
    InvalidParameterError
        When ``max_batch_documents`` or ``max_batch_queries`` is not an int >= 1, or
        ``n_threads`` neither None nor an int >= 1 (checked before the model is read).
        :meth:`predict` raises ``ValueError`` for features the model cannot take, naming
        ``X``, how many values and the first: NaN (unless the ranker took missing values),
        infinity, and float64 values beyond float32's range (the model's input is float32,
        where they would be infinite).

    See Also
    --------
    sklearn_ltr.export.to_onnx : Export a ranker.

    Examples
    --------
    ..
        >>> import pytest
        >>> _ = pytest.importorskip("onnxruntime")

    >>> import numpy as np
    >>> from sklearn_ltr import RankNetRanker
    >>> from sklearn_ltr.datasets import make_ranking
    >>> from sklearn_ltr.export import OnnxScorer, to_onnx
    >>> X, y, qid = make_ranking(n_queries=20, n_features=5, random_state=0)
    >>> X = np.log1p(np.abs(X))  # features of a moderate scale
    >>> ranker = RankNetRanker(hidden_sizes=(8,), max_epochs=2, random_state=0).fit(X, y, groups=qid)
    >>> scorer = OnnxScorer(to_onnx(ranker), n_threads=1)
    >>> scores = scorer.predict(X, groups=qid)
    >>> scores.shape == y.shape
    True
    >>> float(np.max(np.abs(scores - ranker.predict(X, groups=qid)))) < 1e-5
    True

    A padded batch, as a search service would send it:

    >>> padded = np.zeros((2, 4, 5), dtype=np.float32)
    >>> padded[0, :3], padded[1] = X[:3], X[3:7]
    >>> mask = np.array([[True, True, True, False], [True, True, True, True]])
    >>> scorer.score_padded(padded, mask)[0, 3]  # padding scores 0
    np.float32(0.0)
    """

    _parameter_constraints: ClassVar[dict] = {
        "max_batch_documents": [NumberInterval(Integral, 1, None, closed="left")],
        "max_batch_queries": [NumberInterval(Integral, 1, None, closed="left")],
        # onnxruntime reads 0 as "choose" and int() would truncate 2.5 or turn True into 1: a count of
        # threads is a whole number >= 1, or None to let onnxruntime choose.
        "n_threads": [NumberInterval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, model, *, n_threads=None, providers=None, max_batch_documents=65536, max_batch_queries=8):
        # A batch of no documents would never end: refuse such sizes before reading the model.
        check_parameters("OnnxScorer", self._parameter_constraints,
                         {"max_batch_documents": max_batch_documents, "max_batch_queries": max_batch_queries,
                          "n_threads": n_threads})
        ort = import_optional("onnxruntime", "OnnxScorer")
        options = ort.SessionOptions()
        if n_threads is not None:
            options.intra_op_num_threads = int(n_threads)
            options.inter_op_num_threads = 1
        self.session_ = ort.InferenceSession(
            _model_bytes(model), options, providers=list(providers or ["CPUExecutionProvider"])
        )
        self.max_batch_documents = int(max_batch_documents)
        self.max_batch_queries = int(max_batch_queries)
        meta = {key[len(METADATA_PREFIX):]: value
                for key, value in self.session_.get_modelmeta().custom_metadata_map.items()
                if key.startswith(METADATA_PREFIX)}
        self.input_names_ = [value.name for value in self.session_.get_inputs()]
        if not {"X", "mask"} <= set(self.input_names_) or "n_features" not in meta:
            raise ValueError(
                f"this ONNX model was not written by sklearn_ltr.export.to_onnx (inputs {self.input_names_}, "
                f"no {METADATA_PREFIX}n_features metadata)."
            )
        self.n_features_in_ = int(meta["n_features"])
        names = json.loads(meta.get("feature_names", "null"))
        self.feature_names_in_ = None if names is None else np.asarray(names, dtype=object)
        self.list_context_ = bool(json.loads(meta.get("list_context", "true")))
        self.query_column_ = json.loads(meta.get("query_column", "null"))
        self._allow_nan = bool(json.loads(meta.get("allow_nan", "false")))

    def score_padded(self, X, mask, initial_rank=None):
        """Run the model on a padded batch: the raw call a search service makes.

        Parameters
        ----------
        X : array-like of shape (batch, list, n_features)
            Each list's documents, padded (with zeros) to the longest list.
        mask : array-like of bool, shape (batch, list)
            True on real documents.
        initial_rank : array-like of shape (batch, list), default=None
            1-based initial ranks, for a SetRank model fitted with them.

        Returns
        -------
        scores : ndarray of float32, shape (batch, list)
            One score per slot, 0 on padding.
        """
        feeds = {"X": np.ascontiguousarray(X, dtype=np.float32), "mask": np.ascontiguousarray(mask, dtype=bool)}
        if "initial_rank" in self.input_names_:
            if initial_rank is None:
                raise ValueError("this model was fitted with initial_rank: pass initial_rank too.")
            feeds["initial_rank"] = np.ascontiguousarray(initial_rank, dtype=np.float32)
        elif initial_rank is not None:
            raise ValueError("this model takes no initial_rank (its ranker was fitted without one).")
        return self.session_.run([OUTPUT], feeds)[0]

    def _validate(self, X, groups):
        if self.query_column_ is not None:
            from sklearn_ltr._query_column import resolve_query_column

            X, groups = resolve_query_column(X, groups, self.query_column_, owner="OnnxScorer", method="predict")
        columns = getattr(X, "columns", None)
        if columns is not None and self.feature_names_in_ is not None:
            if [str(c) for c in columns] != list(self.feature_names_in_):
                raise ValueError(
                    f"X's columns {[str(c) for c in columns]} are not the features the model was fitted on "
                    f"{list(self.feature_names_in_)} (same names, same order)."
                )
        X = check_array(X, accept_sparse="csr", dtype=(np.float32, np.float64), ensure_all_finite=False)
        # The model's input is float32: a float64 feature beyond its range is refused here, before
        # the cast would make it infinite (with NumPy's overflow warning).
        check_features(X, owner="OnnxScorer", allow_nan=self._allow_nan, float32=True)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but the model takes {self.n_features_in_} (the features the ranker "
                f"was fitted on{', without its query column' if self.query_column_ is not None else ''})."
            )
        return X, groups

    def _padded_batches(self, X, groups, initial_rank=None):
        """Yield ``(rows, block, feeds)``: input rows of a batch, their ``QueryGroups``, padded inputs."""
        n_samples = X.shape[0]
        if self.list_context_:
            if groups is None:
                raise ValueError(
                    "this model scores each document within its list (a list-context ranker): pass groups, "
                    "the query id of each row."
                )
            query_groups, max_queries = QueryGroups(groups, n_samples), self.max_batch_queries
        else:
            if groups is not None:
                check_groups(groups, n_samples)
            # Pointwise: any partition of the rows scores the same; lists of max_batch_documents rows.
            query_groups, max_queries = QueryGroups(np.arange(n_samples) // self.max_batch_documents), 1
        if initial_rank is not None:
            initial_rank = np.asarray(initial_rank, dtype=np.float64)
            if initial_rank.shape != (n_samples,) or not np.isfinite(initial_rank).all():
                raise ValueError(f"initial_rank must hold one finite rank per row of X ({n_samples}).")
        for queries in padded_batches(query_groups.sizes, self.max_batch_documents, max_queries):
            rows = query_groups.take(queries)
            block = QueryGroups(query_groups.codes[rows])
            features = X[rows].toarray() if sp.issparse(X) else X[rows]
            padded, mask = block.pad(features.astype(np.float32, copy=False))
            ranks = None if initial_rank is None else block.pad(initial_rank[rows].astype(np.float32))[0]
            yield rows, block, {"X": padded, "mask": mask, "initial_rank": ranks}

    def predict(self, X, groups=None, *, initial_rank=None):
        """Score every row, in input order, as the exported ranker's ``predict`` does.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to score; with the query column if the ranker had a ``query_column``.
        groups : array-like of shape (n_samples,), default=None
            Query id of each row, rows of a query in any order. Needed by list-context
            models (DASALC, SetRank); pointwise ones ignore it.
        initial_rank : array-like of shape (n_samples,), default=None
            1-based initial rank of each row, for a SetRank model fitted with them.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            One score per row, in input order; higher ranks first.
        """
        X, groups = self._validate(X, groups)
        n_samples = X.shape[0]
        scores = np.empty(n_samples, dtype=np.float64)
        for rows, block, feeds in self._padded_batches(X, groups, initial_rank):
            scores[rows] = block.unpad(self.score_padded(**feeds))
        return check_finite_scores(scores, "OnnxScorer")
