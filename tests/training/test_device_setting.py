"""``device="auto"`` and ``SKLEARN_LTR_DEVICE``: every value the variable may hold."""

import pytest
import torch

from sklearn_ltr.training._device import AUTO_DEVICE_VARIABLE, resolve_device

DEFAULT = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.mark.parametrize(("value", "expected"), [("cpu", "cpu"), (" cpu ", "cpu"), ("auto", DEFAULT), ("", DEFAULT),
                                                 ("  ", DEFAULT)])
def test_auto_follows_the_variable(monkeypatch, value, expected):
    monkeypatch.setenv(AUTO_DEVICE_VARIABLE, value)
    assert resolve_device("auto") == expected
    assert resolve_device("cpu") == "cpu"  # an explicit device ignores it


def test_a_bad_value_of_the_variable_is_refused_by_name(monkeypatch):
    monkeypatch.setenv(AUTO_DEVICE_VARIABLE, "tpu")
    with pytest.raises(ValueError, match=r"^device must be 'auto', 'cpu' or 'cuda' \(or 'cuda:N'\); got 'tpu'\.$"):
        resolve_device("auto")
