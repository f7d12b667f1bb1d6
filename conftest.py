"""Fixtures for every test item, doctests in the package and the docs included."""

import importlib.util
import os

import pytest
import sklearn

# Before any test module imports torch or LightGBM: the library's OpenMP default (idle threads sleep)
# must be in place when their runtime loads (sklearn_ltr/_threads.py).
import sklearn_ltr  # noqa: F401

# The docs' pages are collected for their ``>>>`` examples (--doctest-glob=*.rst); Sphinx's conf.py and the
# build outputs are not test modules.
collect_ignore = ["docs/conf.py"]
collect_ignore_glob = ["docs/_build/*", "docs/generated/*"]

# The examples of the Dask modules need the optional ``dask`` extra (CI installs it); without it
# they are skipped with the reason, like tests/rankers/test_lambdamart_dask.py, instead of failing.
_DASK_MODULES = ("sklearn_ltr.datasets._dask_formats", "sklearn_ltr.rankers._lambdamart_dask")
_HAS_DASK = all(importlib.util.find_spec(name) is not None for name in ("dask", "distributed"))


def pytest_addoption(parser):
    parser.addoption(
        "--device", default="cpu",
        help="device of every neural test: 'cpu' (default) or 'cuda'/'cuda:N'. Tests build rankers with "
             "device='auto', which then means this device (it sets SKLEARN_LTR_DEVICE, subprocesses included).",
    )


def pytest_configure(config):
    device = config.getoption("--device")
    if device.split(":")[0] not in {"cpu", "cuda"}:
        raise pytest.UsageError(f"--device must be 'cpu' or 'cuda' (or 'cuda:N'); got {device!r}.")
    os.environ["SKLEARN_LTR_DEVICE"] = device


@pytest.fixture
def test_device():
    """The device the neural tests run on (``--device``): what ``device="auto"`` resolves to."""
    return os.environ["SKLEARN_LTR_DEVICE"]


def pytest_collection_modifyitems(config, items):
    if _HAS_DASK:
        return
    skip = pytest.mark.skip(reason='needs the dask extra: pip install -e ".[dask]"')
    for item in items:
        if isinstance(item, pytest.DoctestItem) and item.name.startswith(tuple(m + "." for m in _DASK_MODULES)):
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _restore_sklearn_config():
    """An example that enables metadata routing must not leak it into the next test."""
    with sklearn.config_context():
        yield


@pytest.fixture(autouse=True)
def _doctest_one_torch_thread(request):
    """Doctests train tiny models, where extra torch threads only spin-wait on a 2-core machine."""
    if not isinstance(request.node, pytest.DoctestItem):
        yield
        return
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
