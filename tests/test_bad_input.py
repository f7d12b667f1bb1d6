"""Bad input gets the library's own message, and the "Bad input" page quotes those messages word for word.

Two halves:

- Every registered ranker (:data:`sklearn_ltr.rankers.RANKERS`, the five and the ensemble) refuses NaN
  (where it cannot take it), infinity and float64 values beyond float32 (neural models) in ``X`` with
  the library's message, and per-row inputs of another length than ``X`` with a message naming the
  argument and both lengths.
- ``docs/bad_input.rst`` is read: each double-quoted message of its tables is made to happen by the
  case of its row below, and must match what the library says (``...`` stands for text left out).
  A quoted row without a case, or a case whose row is gone, fails.
"""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.utils import get_tags

from sklearn_ltr import LambdaMARTRanker, NDCGScorer, RankingEnsemble, RankNetRanker, SetRankRanker, ndcg_scorer
from sklearn_ltr import TwoTowerDebiasedRanker as TwoTower
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.rankers import RANKERS
from sklearn_ltr.utils import get_ranker_tags

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PAGE = Path(__file__).resolve().parents[1] / "docs" / "bad_input.rst"


@pytest.fixture(scope="module")
def data():
    """300 rows of 3 features in 7 queries, as on the page."""
    X, y, qid = make_ranking(n_queries=10, n_features=3, random_state=0)
    return X[:300].astype(np.float64), y[:300], qid[:300]


def _inputs(entry, y, n=None):
    """``(y, fit extras)`` of a registry entry: clicks and display positions for the click model."""
    if not entry.clicks:
        return y, {}
    return (y > 0).astype(np.float64), {"positions": np.arange(len(y) if n is None else n) % 10 + 1}


def _with(X, value, row=4, column=2):
    X = X.copy()
    X[row, column] = value
    return X


def _quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="positions=None|groups=None")
        return call(*args, **kwargs)


# --------------------------------------------------------------------------- every ranker, through the registry


@pytest.fixture(scope="module", params=list(RANKERS))
def fitted(request, data):
    """A fast instance of each registered ranker, fitted on the clean data."""
    X, y, qid = data
    entry = RANKERS[request.param]
    labels, extras = _inputs(entry, y)
    return entry, _quiet(entry.make_fast().fit, X, labels, groups=qid, **extras)


def test_nan_features_get_the_library_message_or_are_missing_values(data, fitted):
    X, y, qid = data
    entry, ranker = fitted
    labels, extras = _inputs(entry, y)
    owner = type(getattr(ranker, "estimators_", [ranker])[0]).__name__  # an ensemble's members check X
    message = (rf"^X contains NaN \(1 value; the first in row 4, column 2\): {owner} cannot take missing values\. "
               rf"Impute them \(e\.g\. sklearn\.impute\.SimpleImputer .*\), or use LambdaMARTRanker, which treats "
               rf"NaN as a missing value\.$")
    if get_tags(ranker).input_tags.allow_nan:
        scores = _quiet(entry.make_fast().fit(_with(X, np.nan), labels, groups=qid, **extras).predict, X, groups=qid)
        assert np.isfinite(scores).all()
        assert np.isfinite(ranker.predict(_with(X, np.nan), groups=qid)).all()
        return
    with pytest.raises(ValueError, match=message):
        _quiet(entry.make_fast().fit, _with(X, np.nan), labels, groups=qid, **extras)
    with pytest.raises(ValueError, match=message):
        ranker.predict(_with(X, np.nan), groups=qid)


def test_an_ensemble_of_neural_rankers_refuses_nan_naming_its_members():
    X, y, qid = make_ranking(n_queries=6, n_features=3, random_state=0)
    ensemble = RankingEnsemble(RankNetRanker(hidden_sizes=(4,), max_epochs=1), n_estimators=2, random_state=0)
    assert not get_tags(ensemble).input_tags.allow_nan
    with pytest.raises(ValueError, match=r"^X contains NaN \(1 value; the first in row 0, column 1\): RankNetRanker"):
        ensemble.fit(_with(X, np.nan, 0, 1), y, groups=qid)


@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_infinite_features_are_refused_by_every_ranker(data, fitted, value):
    X, y, qid = data
    entry, ranker = fitted
    labels, extras = _inputs(entry, y)
    message = r"^X contains infinity \(1 value; the first in row 4, column 2\): \w+ needs finite features\."
    with pytest.raises(ValueError, match=message):
        _quiet(entry.make_fast().fit, _with(X, value), labels, groups=qid, **extras)
    with pytest.raises(ValueError, match=message):
        ranker.predict(_with(X, value), groups=qid)


def test_float64_features_beyond_float32_are_refused_by_neural_rankers_without_a_numpy_warning(data, fitted):
    X, y, qid = data
    entry, ranker = fitted
    labels, extras = _inputs(entry, y)
    huge = _with(X, -1e39)
    if not entry.neural:  # LightGBM reads float64: such a value is a large value, not an error
        assert np.isfinite(ranker.predict(huge, groups=qid)).all()
        return
    message = (r"^X holds values beyond float32's range \(1 value of magnitude above 3\.4e\+38; the first in row 4, "
               r"column 2: -1e\+39\): \w+ computes in float32, where they would be infinite\. Scale the features")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # NumPy's "overflow encountered in cast"
        with pytest.raises(ValueError, match=message):
            _quiet(entry.make_fast().fit, huge, labels, groups=qid, **extras)
        with pytest.raises(ValueError, match=message):
            ranker.predict(huge, groups=qid)


def test_labels_written_as_text_name_y_and_the_fix_in_every_ranker(data, fitted):
    X, y, qid = data
    entry, ranker = fitted
    labels, extras = _inputs(entry, y)
    message = (r"^y holds strings \(dtype [<|][US]\d+\), not numbers: relevance grades must be numeric\. If they are "
               r"numbers written as text \('0', '1', '2'\), convert them first: y\.astype\(int\) \(or "
               r"y\.astype\(float\) for fractional grades\)\.$")
    for text in (labels.astype(int).astype(str), labels.astype(int).astype(bytes)):
        with pytest.raises(ValueError, match=message):
            _quiet(entry.make_fast().fit, X, text, groups=qid, **extras)
        with pytest.raises(ValueError, match=r"^y_true holds strings .* y_true\.astype\(int\)"):  # score's metric
            ranker.score(X, text, groups=qid)
        refit = _quiet(entry.make_fast().fit, X, text.astype(int), groups=qid, **extras)  # the fix it names works
        assert np.isfinite(refit.predict(X, groups=qid)).all()


def _length_message(name, n_given, n_rows=300):
    """The argument's name, then both lengths, whatever the wording between them."""
    return rf"^{re.escape(name)}\b.*\b{n_given}\b.*\b{n_rows}\b|^{re.escape(name)}\b.*\b{n_rows}\b.*\b{n_given}\b"


def test_per_row_inputs_of_another_length_name_the_argument_and_both_lengths(data, fitted):
    X, y, qid = data
    entry, ranker = fitted
    labels, extras = _inputs(entry, y)
    fit = entry.make_fast().fit
    with pytest.raises(ValueError, match=r"^y has 299 entries but X has 300 rows; pass one relevance label per row"):
        _quiet(fit, X, labels[:-1], groups=qid, **extras)
    with pytest.raises(ValueError, match=_length_message("groups", 299)):
        _quiet(fit, X, labels, groups=qid[:-1], **extras)
    with pytest.raises(ValueError, match=_length_message("sample_weight", 299)):
        _quiet(fit, X, labels, groups=qid, sample_weight=np.ones(299), **extras)
    for name in get_ranker_tags(ranker).extra_fit_inputs:  # positions, initial_rank: 1-based ranks
        with pytest.raises(ValueError, match=_length_message(name, 299)):
            _quiet(fit, X, labels, groups=qid, **{**extras, name: np.arange(299) % 10 + 1})
    with pytest.raises(ValueError, match=_length_message("groups", 299)):
        ranker.predict(X, groups=qid[:-1])
    with pytest.raises(ValueError, match=r"^y has 299 entries but X has 300 rows"):
        ranker.score(X, labels[:-1], groups=qid)


# --------------------------------------------------------------------------- the page's quoted messages


def _page_rows():
    """``[(input cell, what-happens cell)]`` of every list-table row of the page (header rows left out)."""
    rows, current, cell = [], None, 0
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("   * - "):
            current, cell = [line[7:], ""], 0
            rows.append(current)
        elif current is not None and line.startswith("     - "):
            current[1], cell = line[7:], 1
        elif current is not None and line.startswith("       ") and line.strip():
            current[cell] += " " + line.strip()
        else:
            current = None
    return [(given, happens) for given, happens in rows if given != "input"]


def _quotes(cell):
    """The double-quoted messages of a cell, outside its ``literal`` spans."""
    return re.findall(r'"([^"]+)"', re.sub(r"``.*?``", "", cell))


def _matches(quote, message):
    """Whether ``message`` says ``quote``, word for word, ``...`` (and the spaces around it) standing for any text."""
    pattern = ".*?".join(re.escape(part.strip()) for part in quote.split("..."))
    return re.search(pattern, message, flags=re.DOTALL) is not None


def _said(call, *args, **kwargs):
    """The messages of what ``call`` raises and warns."""
    messages = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call(*args, **kwargs)
        except Exception as error:  # any error: its message is compared with the page
            messages.append(str(error))
    return messages + [str(warning.message) for warning in caught]


def _plain_sum(scores, labels, mask):
    return scores.sum()


_plain_sum.__name__ = "plain_sum"


def _ranknet(**params):
    return RankNetRanker(hidden_sizes=(4,), max_epochs=1, random_state=0, **params)


def _lambdamart(**params):
    return LambdaMARTRanker(n_estimators=2, n_jobs=1, random_state=0, **params)


def _setrank():
    return SetRankRanker(d_model=8, n_blocks=1, n_heads=2, max_epochs=1, random_state=0)


def _cli_nan(tmp_path, monkeypatch):
    from sklearn_ltr.cli import main

    monkeypatch.chdir(tmp_path)
    Path("train.txt").write_text("# a comment\n0 qid:1 1:0.5 2:1\n1 qid:1 1:0.2 2:nan\n2 qid:2 1:0.1 2:0.3\n")
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        status = main(["train", "--model", "ranknet", "--train", "train.txt", "--out", "model.pkl",
                       "--preprocessing", "log1p-standardize"])  # auto would impute the NaN
    assert status == 2 and not Path("model.pkl").exists()
    return [stderr.getvalue()]


def _cases(X, y, qid, tmp_path, monkeypatch):
    """``{input cell of the page: list of messages}``, computed lazily: one entry per quoted row."""
    clicks = (y > 0).astype(np.float64)
    n = len(y)
    ones = np.ones(n)
    return {
        "``X``, ``y``, ``groups`` of different lengths: ``fit(X, y[:-1], groups=qid)``, ``fit(X, y, groups=qid[:-1])``":
            lambda: _said(_ranknet().fit, X, y[:-1], groups=qid) + _said(_lambdamart().fit, X, y, groups=qid[:-1]),
        "``groups`` with NaN, ``None``, booleans or mixed types":
            lambda: _said(_ranknet().fit, X, y, groups=np.where(np.arange(n) == 4, np.nan, qid))
            + _said(_ranknet().fit, X, y, groups=np.arange(n) % 2 == 0),
        "``groups=None`` in ``fit``/``predict``": lambda: _said(_lambdamart().fit, X, y),
        "``GridSearchCV(..., scoring=ndcg_scorer).fit(X, y, groups=qid)`` without metadata routing":
            lambda: _said(GridSearchCV(_lambdamart(), {"num_leaves": [3]}, cv=GroupKFold(2), scoring=ndcg_scorer,
                                       error_score="raise").fit, X, y, groups=qid),
        "NaN features (row 4, column 2) in ``fit`` or ``predict``":
            lambda: _said(_ranknet().fit, _with(X, np.nan), y, groups=qid),
        "infinite features (row 4, column 2)": lambda: _said(_lambdamart().fit, _with(X, np.inf), y, groups=qid),
        "features finite in float64 but beyond float32 (``1e39``)":
            lambda: _said(_ranknet().fit, _with(X, 1e39), y, groups=qid),
        "negative, NaN or non-numeric labels":
            lambda: _said(_ranknet().fit, X, y - 1, groups=qid)
            + _said(_ranknet().fit, X, np.where(np.arange(n) == 3, np.nan, y), groups=qid)
            + _said(_ranknet().fit, X, y.astype(str), groups=qid),
        "labels that are not whole numbers (LambdaMART)": lambda: _said(_lambdamart().fit, X, y + 0.5, groups=qid),
        "labels beyond ``label_gain`` (LambdaMART, default 0..30): 80":
            lambda: _said(_lambdamart().fit, X, y * 20, groups=qid),
        "clicks other than 0/1 (``TwoTowerDebiasedRanker``)":
            lambda: _said(TwoTower(max_epochs=1).fit, X, y, groups=qid, positions=ones),
        "``positions`` of the wrong length, < 1, fractional, NaN":
            lambda: _said(TwoTower(max_epochs=1).fit, X, clicks, groups=qid, positions=ones[:-1])
            + _said(TwoTower(max_epochs=1).fit, X, clicks, groups=qid, positions=0 * ones)
            + _said(TwoTower(max_epochs=1).fit, X, clicks, groups=qid),
        "``initial_rank`` missing at predict (SetRank fitted with it), or given when it was not":
            lambda: _said(_setrank().fit(X, y, groups=qid, initial_rank=ones).predict, X, groups=qid)
            + _said(_setrank().fit(X, y, groups=qid).predict, X, groups=qid, initial_rank=ones),
        "``sample_weight`` varying within a query, negative, NaN, all zero, wrong length":
            lambda: [message for weights in (np.arange(n, dtype=float), -ones, 0 * ones, ones[:-1])
                     for message in _said(_ranknet().fit, X, y, groups=qid, sample_weight=weights)],
        "``sample_weight`` with a custom loss that takes no ``weights``":
            lambda: _said(_ranknet(loss=_plain_sum).fit, X, y, groups=qid, sample_weight=ones),
        "a query longer than LightGBM's 10,000 rows":
            lambda: _said(_lambdamart().fit, np.zeros((10001, 2)), np.zeros(10001), groups=np.zeros(10001)),
        "``score(..., sample_weight=w)``":
            lambda: _said(_lambdamart().fit(X, y, groups=qid).score, X, y, groups=qid, sample_weight=ones),
        "``lr<=0``, ``max_epochs=0``, ``dropout=1``, ``num_leaves=1``, ``subsample=2``, ``n_estimators=0``, "
        "``lambdarank_truncation_level=0``, ...": lambda: _said(_ranknet(lr=0).fit, X, y, groups=qid),
        "``early_stopping=\"no\"``, ``batch_norm=\"yes\"``, ``log1p=\"yes\"``, ``Log1pTransformer(copy=\"yes\")``":
            lambda: _said(_ranknet(early_stopping="no").fit, X, y, groups=qid),
        "``verbose=\"loud\"``, ``random_state=-1`` or ``\"a\"``":
            lambda: _said(RankNetRanker(random_state=-1).fit, X, y, groups=qid),
        "``loss=\"focal\"``, a loss callable with fewer than three arguments":
            lambda: _said(_ranknet(loss="focal").fit, X, y, groups=qid),
        "``loss_params=\"sigma=2\"``, an option the loss does not take, ``weights`` or ``reduction`` in it":
            lambda: _said(_ranknet(loss_params="sigma=2").fit, X, y, groups=qid),
        "``callbacks=[\"x\"]``, ``optimizer=\"lbfgs\"``, ``device=\"tpu\"``, "
        "``RankingEnsemble(estimator=\"dasalc\")``": lambda: _said(_ranknet(device="tpu").fit, X, y, groups=qid),
        "``device=\"cuda\"`` without a GPU": lambda: _without_cuda(lambda: _said(_ranknet(device="cuda").fit, X, y,
                                                                                 groups=qid)),
        "``importance_type=\"x\"``": lambda: _said(_lambdamart(importance_type="x").fit, X, y, groups=qid),
        "a typo in ``lgbm_params`` (``{\"min_data_in_leef\": 5}``)":
            lambda: _said(_lambdamart(lgbm_params={"min_data_in_leef": 5}).fit, X, y, groups=qid),
        "``lgbm_params`` setting what the estimator sets itself":
            lambda: _said(_lambdamart(lgbm_params={"num_leaves": 5}).fit, X, y, groups=qid),
        "``lgbm_params={\"objective\": ...}`` naming another objective than the constructor's ``objective``":
            lambda: _said(_lambdamart(lgbm_params={"objective": "rank_xendcg"}).fit, X, y, groups=qid),
        "a lambdarank-only setting with ``objective=\"rank_xendcg\"`` (``lambdarank_truncation_level``, "
        "``position_bias``, ``lambdarank_position_bias_regularization``; ``positions`` or ``propensity`` in "
        "``fit``)": lambda: _said(_lambdamart(objective="rank_xendcg", lambdarank_truncation_level=10).fit, X, y,
                                  groups=qid),
        "``init_score`` (LambdaMART's first-stage scores) with NaN, of the wrong length or 2-D":
            lambda: _said(_lambdamart().fit, X, y, groups=qid, init_score=np.full(len(y), np.nan)),
        "``NDCGScorer(k=0)``, ``NDCGScorer(gain=\"log\")``, ``make_ranking_scorer(\"map\", k=-1)``":
            lambda: _said(NDCGScorer, k=0),
        "metric options (``k``, ``gain``, ``ties``, ``empty_value``, ``max_grade``, ``normalize``)":
            lambda: _said(_metric("ndcg_score"), [1, 0], [1, 0], [1, 1], gain="log"),
        "``OnnxScorer(model, max_batch_documents=0)``, ``max_batch_queries=2.5``":
            lambda: _said(_onnx_scorer(), b"", max_batch_documents=0),
        "``dcg_score`` whose value overflows float64 (exponential gain of a label of 1024 or more)":
            lambda: _said(_metric("dcg_score"), [1100.5, 0], [1, 0], [1, 1]),
        "NaN or infinite scores": lambda: _said(_metric("ndcg_score"), [1, 0], [np.nan, 0], [1, 1]),
        "a data file with NaN features for a neural model that does not impute them (``train --preprocessing "
        "log1p-standardize``, or ``predict`` and ``evaluate`` with a model without an imputer), or infinite ones "
        "for any": lambda: _cli_nan(tmp_path, monkeypatch),
    }


def _metric(name):
    import sklearn_ltr.metrics

    return getattr(sklearn_ltr.metrics, name)


def _onnx_scorer():
    from sklearn_ltr.export import OnnxScorer

    return OnnxScorer


def _without_cuda(call):
    import torch

    if torch.cuda.is_available():
        pytest.skip("the error is for a machine without a GPU")
    return call()


_QUOTED_ROWS = [(given, quotes) for given, happens in _page_rows() if (quotes := _quotes(happens))]


def test_the_page_quotes_messages():
    assert len(_QUOTED_ROWS) >= 30, "the page's tables or their quotes are no longer read"


@pytest.mark.parametrize(("given", "quotes"), _QUOTED_ROWS, ids=[given[:60] for given, _ in _QUOTED_ROWS])
def test_every_quoted_message_is_what_the_library_says(data, tmp_path, monkeypatch, given, quotes):
    cases = _cases(*data, tmp_path, monkeypatch)
    assert given in cases, f"the page quotes messages for {given!r}: add a case that makes them happen"
    messages = cases[given]()
    for quote in quotes:
        assert any(_matches(quote, message) for message in messages), (
            f"the page says {quote!r} for {given!r}, but the library says {messages}")


def test_every_case_has_its_row_on_the_page(data, tmp_path, monkeypatch):
    rows = {given for given, _ in _QUOTED_ROWS}
    assert sorted(set(_cases(*data, tmp_path, monkeypatch)) - rows) == []


def test_matching_reads_dots_as_any_text_and_nothing_else():
    assert _matches("y has ... rows; pass one", "y has 299 entries but X has 300 rows; pass one label")
    assert not _matches("y has 300 rows", "y has 299 rows")
    assert not _matches("a.b", "axb")  # the quote is literal text, not a pattern


# --------------------------------------------------------------------------- the grid-search page's quoted messages


def _prose_quotes(page):
    """Double-quoted text of a page's prose: outside doctests, indented blocks and ``literal`` spans."""
    lines = [line for line in page.read_text(encoding="utf-8").splitlines()
             if not re.match(r"\s*(>>>|\.\.\.)|\s{3,}", line)]
    return re.findall(r'"([^"]+)"', re.sub(r"``.*?``", "", " ".join(lines)))


def test_the_grid_search_page_quotes_what_the_library_and_scikit_learn_say(data):
    import sklearn

    X, y, qid = data
    search = GridSearchCV(_lambdamart(), {"num_leaves": [3]}, cv=GroupKFold(2), scoring=ndcg_scorer)
    with sklearn.config_context(enable_metadata_routing=True):
        routing_on = _said(GridSearchCV(_lambdamart(), {"num_leaves": [3]}, cv=3, scoring=ndcg_scorer,
                                        error_score="raise").fit, X, y)
    said = {
        "Scoring failed": _said(search.fit, X, y, groups=qid),  # scikit-learn's warning of each fold
        "Metadata routing is on, but no groups reached the scorer ...": routing_on,
    }
    quotes = set(_prose_quotes(PAGE.with_name("query_groups.rst"))) - {"all rows are one query"}  # not a message
    assert quotes == set(said)
    for quote, messages in said.items():
        assert any(_matches(quote, message) for message in messages), (quote, messages)


def test_the_cli_names_the_line_of_a_nan_in_a_file_scored_by_a_neural_model(tmp_path, monkeypatch):
    from sklearn_ltr.cli import main

    monkeypatch.chdir(tmp_path)
    Path("train.txt").write_text("0 qid:1 1:0.5 2:1\n1 qid:1 1:0.2 2:0\n2 qid:2 1:0.1 2:0.3\n0 qid:2 1:0.4 2:2\n")
    Path("test.txt").write_text("0 qid:1 1:0.5 2:1\n\n# the third row\n1 qid:1 1:0.2 2:1\n2 qid:2 1:nan 2:inf\n")
    quiet = contextlib.redirect_stdout(io.StringIO())
    with quiet:
        assert main(["train", "--model", "ranknet", "--train", "train.txt", "--out", "model.pkl",
                     "--param", "max_epochs=1"]) == 0
    for command in (["predict", "--out", "scores.txt"], ["evaluate"]):
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), quiet:
            assert main([command[0], "--model", "model.pkl", "--data", "test.txt", *command[1:]]) == 2
        assert stderr.getvalue() == (
            "sklearn-ltr: error: --data 'test.txt', line 5: feature 1 is nan, and model 'model.pkl' cannot take "
            "missing values (1 row of the file holds NaN). Train with --preprocessing impute-standardize, "
            "impute-log1p-standardize or impute (or auto), which impute them, or with --model lambdamart, which "
            "treats NaN as a missing value; or fill them in the file.\n")
    assert not Path("scores.txt").exists()
    # LambdaMART takes the NaN as a missing value; the infinity beside it is refused, on the same line.
    with quiet:
        assert main(["train", "--model", "lambdamart", "--train", "train.txt", "--out", "trees.pkl",
                     "--param", "min_child_samples=1"]) == 0
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), quiet:
        assert main(["predict", "--model", "trees.pkl", "--data", "test.txt", "--out", "scores.txt"]) == 2
    assert stderr.getvalue().startswith("sklearn-ltr: error: --data 'test.txt', line 5: feature 2 is inf, and model "
                                        "'trees.pkl' needs finite features (1 row of the file holds infinity).")


def test_lambdamart_names_the_eval_set_whose_features_are_infinite(data):
    X, y, qid = data
    with pytest.raises(ValueError, match=r"^eval_set\[0\] X_val contains infinity \(1 value; the first in row 4, "
                                         r"column 2\): LambdaMARTRanker needs finite features\."):
        _lambdamart().fit(X, y, groups=qid, eval_set=[(_with(X, np.inf), y, qid)])


@pytest.mark.parametrize("sparse_format", ["csr", "csc", "coo"])
def test_sparse_features_name_the_first_bad_entry_by_row(sparse_format):
    # In CSC order (5, 0) comes before (2, 3): the message still names the first by row, and the column of it.
    import scipy.sparse as sp

    from sklearn_ltr._validation import check_features

    X = np.zeros((6, 4))
    X[5, 0] = X[2, 3] = np.inf
    X[1, 1] = 1.0
    X = sp.random(6, 4, density=0, format=sparse_format) + sp.csr_matrix(X)
    X = X.asformat(sparse_format)
    with pytest.raises(ValueError, match=r"^X contains infinity \(2 values; the first in row 2, column 3\): "
                                         r"LambdaMARTRanker needs finite features"):
        check_features(X, owner="LambdaMARTRanker", allow_nan=True)
