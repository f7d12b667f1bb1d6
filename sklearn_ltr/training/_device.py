"""Where training runs: the one place that turns ``device`` into a torch device and asks "is it CUDA?"."""

from __future__ import annotations

import torch

__all__ = ["is_cuda", "load_device", "resolve_device"]


def resolve_device(device):
    """``"auto"`` -> CUDA when available, else CPU; ``"cpu"``/``"cuda"``/``"cuda:N"``/a torch.device as given.

    Raises
    ------
    ValueError
        For another value, or CUDA asked for where none is available.
    """
    if device == "auto":
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
