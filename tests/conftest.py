"""Shared fixtures: the benchmark data directory and small synthetic data."""

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ltr import Log1pTransformer
from sklearn_ltr.datasets import make_ranking, simulate_clicks

_DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _data_dir():
    return Path(os.environ.get("SKLEARN_LTR_DATA", _DEFAULT_DATA))


@pytest.fixture(scope="session")
def data_dir():
    """``../shared/data`` or ``$SKLEARN_LTR_DATA``; missing data fails under CI, skips elsewhere."""
    path = _data_dir()
    if not (path / "mq2008").is_dir():
        message = f"benchmark data not found at {path}; set SKLEARN_LTR_DATA to ../shared/data"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny models: one torch thread avoids OpenMP spin-waits on a shared machine (use with usefixtures)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _three_page_click_log(w):
    """Clicks of a logging ranker of quality ``w`` (examination 1/position) on 250 training queries shown
    3 times each; returns the click log (X, clicks, sessions, positions) and the 150 held-out queries
    (X, y, qid) with true labels. Features: log1p then standardised on the training queries, float32."""
    X, y, qid = make_ranking(n_queries=400, n_features=20, random_state=2)
    train = qid < 250
    X = make_pipeline(Log1pTransformer(), StandardScaler()).fit(X[train]).transform(X).astype(np.float32)
    pages = [simulate_clicks(y[train], qid[train], w=w, y_max=4, random_state=20 + s) for s in range(3)]
    positions = np.concatenate([p for p, _ in pages])
    clicks = np.concatenate([c for _, c in pages])
    sessions = np.concatenate([qid[train] + 1000 * s for s in range(3)])
    return (np.tile(X[train], (3, 1)), clicks, sessions, positions), (X[~train], y[~train], qid[~train])


@pytest.fixture(scope="session")
def three_page_click_log():
    """The two-tower tests' click logs: call it with the logging quality ``w``."""
    return _three_page_click_log
