"""Memory cost that a torch module declares, and the attention kernel that PyTorch will run for it.

Each scorer of :mod:`sklearn_ltr.nn` defines a classmethod ``memory_cost(**module_kwargs)``
beside its constructor, so that the cost is written where the architecture is: a change of
the architecture and of its cost are one diff.

Whether self-attention holds ``[L, L]`` weights depends on the kernel that
:func:`torch.nn.functional.scaled_dot_product_attention` picks, not on the module: its
reference ("math") path materialises the weights, its fused kernels (flash, memory-efficient,
cuDNN) never do and hold values per document only. :func:`attention_kernel` states PyTorch's
rules for the call the modules make (``nn._attention.MultiHeadAttention``: ``q, k, v`` of
``head_size`` per head, the boolean key-padding mask of ``key_padding_mask`` or none when no
list of the batch is padded, attention-weight dropout in training), so that the memory check
can ask "which kernel?" without a GPU.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import torch

__all__ = ["ATTENTION_MASKS", "FUSED_KERNELS", "ModuleCost", "attention_kernel", "bound_arguments",
           "enabled_sdp_backends"]

#: The attention masks the modules pass to ``scaled_dot_product_attention``: a boolean key-padding
#: mask when a list of the batch is padded, none when every list of the batch is full.
ATTENTION_MASKS = ("boolean", None)

#: Kernels of ``scaled_dot_product_attention`` that never hold the ``[L, L]`` attention weights.
FUSED_KERNELS = ("flash", "efficient", "cudnn")

_LOW_PRECISION = (torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class ModuleCost:
    """Float32 values a module holds per list of ``L`` documents in its forward pass.

    Attributes
    ----------
    attention_layers : int
        Layers of self-attention over the list; on the math attention path each head of
        each holds ``[L, L]`` scores.
    attention_heads : int
        Heads per attention layer.
    activation_width : int
        Activations per document (the sum of the layer widths), the linear part.
    attention_head_size : int
        Width of one attention head (``q``, ``k`` and ``v`` per head): with the dtype, it
        decides which attention kernel can run (:func:`attention_kernel`).
    attention_dropout : float
        Dropout on the attention weights in training: PyTorch's fused CPU kernel refuses it.

    Examples
    --------
    >>> from sklearn_ltr.nn import DASALCNet, MLPScorer
    >>> MLPScorer.memory_cost(n_features=10, hidden_sizes=(64, 32))
    ModuleCost(attention_layers=0, attention_heads=0, activation_width=97, attention_head_size=0, attention_dropout=0.0)
    >>> cost = DASALCNet.memory_cost(n_features=10)
    >>> cost.attention_layers, cost.attention_heads, cost.attention_head_size, cost.attention_dropout
    (4, 2, 100, 0.4)
    """

    attention_layers: int = 0
    attention_heads: int = 0
    activation_width: int = 0
    attention_head_size: int = 0
    attention_dropout: float = 0.0


def bound_arguments(module_class, kwargs):
    """The constructor arguments of ``module_class`` for ``kwargs``, defaults filled in."""
    bound = inspect.signature(module_class).bind(**kwargs)
    bound.apply_defaults()
    return bound.arguments


def enabled_sdp_backends():
    """The attention backends enabled now (``torch.backends.cuda.*_sdp_enabled()``), by kernel name.

    The flags are process-wide and apply on CPU too (flash and math are the CPU backends).
    """
    cuda = torch.backends.cuda
    return {"flash": cuda.flash_sdp_enabled(), "efficient": cuda.mem_efficient_sdp_enabled(),
            "cudnn": cuda.cudnn_sdp_enabled(), "math": cuda.math_sdp_enabled()}


def _gemm_alignment(dtype, capability):
    # PyTorch's minimum_gemm_alignment (cuda/sdp_utils.cpp): the memory-efficient kernel needs
    # the head width to be a multiple of it (4 in float32 and 8 in 16-bit floats from sm80 on).
    half = dtype in _LOW_PRECISION
    tensor_cores = capability[0] >= 8 or (capability[0] >= 7 and half)
    alignment = 4 if capability[0] >= 8 else 1
    return max(alignment, 128 // (16 if half else 32)) if tensor_cores else alignment


def _cuda_usable(kernel, dtype, mask, dropout, head_size, capability, training):
    """PyTorch's rules (``can_use_*_attention`` in ``cuda/sdp_utils.cpp``) for one fused CUDA kernel."""
    sm = tuple(capability)
    if kernel == "flash":
        # No attention mask of any kind; 16-bit floats only; heads up to 256 wide; sm80 to sm121.
        # Training with heads over 192 wide fails on sm86-sm89 and sm120-sm121.
        wide_on_consumer = training and head_size > 192 and ((8, 6) <= sm <= (8, 9) or sm >= (12, 0))
        return (mask is None and dtype in _LOW_PRECISION and 0 < head_size <= 256
                and (8, 0) <= sm <= (12, 1) and not wide_on_consumer)
    if kernel == "efficient":
        # Any mask; float32 and float16 (bfloat16 from sm80); sm50 on; aligned head width.
        dtypes = (torch.float32, torch.float16) + ((torch.bfloat16,) if sm >= (8, 0) else ())
        return (dtype in dtypes and (5, 0) <= sm <= (12, 1) and head_size > 0
                and head_size % _gemm_alignment(dtype, sm) == 0)
    # cuDNN: 16-bit floats, heads a multiple of 8 up to 128, dropout in steps of 1/16, sm80 on.
    return (dtype in _LOW_PRECISION and (8, 0) <= sm <= (12, 1) and 0 < head_size <= 128 and head_size % 8 == 0
            and float(dropout * 16).is_integer())


def attention_kernel(device_type, dtype, *, mask, dropout, head_size, training=True, enabled=None,
                     capability=None, prefer_cudnn=False):
    """The kernel :func:`torch.nn.functional.scaled_dot_product_attention` runs for one call.

    PyTorch picks the first usable backend in its priority order: on CPU flash, then math; on
    CUDA flash, memory-efficient, math, then cuDNN (cuDNN first where PyTorch prefers it: some
    sm90/sm100 builds). The rules are those of its ``sdp_utils`` for dense inputs laid out as
    :class:`~sklearn_ltr.nn.MultiHeadAttention` lays them out (equal ``q``, ``k``, ``v`` widths,
    unit last stride; storage offsets aligned whenever the head width is). All inputs are plain
    values, so that the decision can be checked without a GPU.

    Parameters
    ----------
    device_type : {"cpu", "cuda"} or torch.device
        Where the attention runs (a device such as ``"cuda:1"`` is read for its type, and for
        its capability when ``capability`` is None).
    dtype : torch.dtype
        Dtype of ``q``, ``k`` and ``v`` (``torch.bfloat16`` under bf16 autocast).
    mask : {"boolean", "float", None}
        Kind of ``attn_mask`` passed.
    dropout : float
        ``dropout_p`` passed (0 outside training).
    head_size : int
        Last dimension of ``q``, ``k`` and ``v``.
    training : bool, default=True
        Whether gradients flow through the call.
    enabled : dict, default=None
        ``{"flash", "efficient", "cudnn", "math"} -> bool``: the backends enabled
        (``None``: ``enabled_sdp_backends()``, the backends torch has enabled now).
    capability : tuple of int, default=None
        ``(major, minor)`` compute capability of the CUDA device (``None``: the current
        device's); ignored on CPU.
    prefer_cudnn : bool, default=False
        Whether PyTorch tries cuDNN first. By default cuDNN counts only after math, which can
        only over-estimate memory where PyTorch does prefer it.

    Returns
    -------
    kernel : {"flash", "efficient", "cudnn", "math"}
        The kernel that runs; the ones of ``FUSED_KERNELS`` hold no ``[L, L]`` tensor.
        ``"math"`` also where no backend is usable (PyTorch then raises).

    Examples
    --------
    DASALC's default attention (heads 100 wide, a padding mask) on an H100 (sm90):

    >>> import torch
    >>> from sklearn_ltr.nn import attention_kernel
    >>> call = dict(mask="boolean", dropout=0.4, head_size=100, capability=(9, 0))
    >>> attention_kernel("cuda", torch.float32, **call)
    'efficient'
    >>> attention_kernel("cuda", torch.bfloat16, **call)  # 100 is no multiple of 8 in bf16
    'math'
    >>> attention_kernel("cpu", torch.float32, **call)  # the fused CPU kernel takes no dropout
    'math'
    >>> attention_kernel("cpu", torch.float32, **{**call, "dropout": 0.0})
    'flash'
    """
    enabled = enabled_sdp_backends() if enabled is None else enabled
    device = torch.device(device_type)
    if device.type != "cuda":
        flash = (enabled.get("flash", False) and dropout == 0
                 and dtype in (torch.float32, torch.float64, *_LOW_PRECISION) and head_size > 0)
        return "flash" if flash else "math"
    if capability is None:
        capability = torch.cuda.get_device_capability(device if device.index is not None else None)
    order = ["flash", "efficient", "math", "cudnn"]
    if prefer_cudnn:
        order = ["cudnn", *order[:-1]]
    for kernel in order:
        if not enabled.get(kernel, False):
            continue
        if kernel == "math" or _cuda_usable(kernel, dtype, mask, dropout, head_size, capability, training):
            return kernel
    return "math"
