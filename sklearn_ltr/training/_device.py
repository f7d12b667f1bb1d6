"""Where training runs: the one place that turns ``device`` into a torch device and asks "is it CUDA?".

``device="auto"`` means CUDA when torch sees a GPU, else CPU, unless the environment variable
``SKLEARN_LTR_DEVICE`` names a device (``cpu``, ``cuda``, ``cuda:N``): then ``"auto"`` means that
one, e.g. to keep a job on CPU on a GPU machine without editing its code. The test suite's
``--device`` option sets it.
"""

from __future__ import annotations

import os

import torch

__all__ = ["AUTO_DEVICE_VARIABLE", "is_cuda", "load_device", "resolve_device"]

#: Environment variable that decides what ``device="auto"`` means.
AUTO_DEVICE_VARIABLE = "SKLEARN_LTR_DEVICE"


def resolve_device(device):
    """``"auto"`` -> ``$SKLEARN_LTR_DEVICE`` if set, else CUDA when available, else CPU; others as given.

    ``"cpu"``, ``"cuda"``, ``"cuda:N"`` and a torch.device are returned as strings.

    Raises
    ------
    ValueError
        For another value, or CUDA asked for where none is available.
    """
    if device == "auto":
        chosen = os.environ.get(AUTO_DEVICE_VARIABLE, "").strip()
        if chosen and chosen != "auto":
            return resolve_device(chosen)
        return "cuda" if torch.cuda.is_available() else "cpu"
    if isinstance(device, torch.device):
        device = str(device)
    if not isinstance(device, str) or device.split(":")[0] not in {"cpu", "cuda"}:
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda' (or 'cuda:N'); got {device!r}.")
    if is_cuda(device) and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} but CUDA is not available here; use device='auto' or 'cpu'.")
    return device


def is_cuda(device):
    """Whether ``device`` (a string or torch.device) is a CUDA device."""
    return torch.device(device).type == "cuda"


def load_device(device):
    """The device a saved model was trained on, or CPU when it is CUDA and this machine has none."""
    if is_cuda(device) and not torch.cuda.is_available():
        return "cpu"
    return str(device)
