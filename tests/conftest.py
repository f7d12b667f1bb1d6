"""Shared fixtures: the benchmark data directory and small synthetic data."""

import os
from pathlib import Path

import pytest
import torch

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
