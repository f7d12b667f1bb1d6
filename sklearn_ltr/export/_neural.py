"""ONNX export of the neural rankers' torch modules, through torch's TorchScript-based exporter.

The module is traced on a small padded batch in evaluation mode (no dropout, no DASALC
noise, batch norm on its running statistics) and exported with dynamic batch and list
sizes. The example batch always has padding: a module that skips masking when a batch has
none (a data-dependent branch, which tracing fixes to the branch it sees) is then traced
through the masked branch, which is also right for a batch without padding.

torch's newer exporter (``dynamo=True``, which needs ``onnxscript``) cannot export these
modules: they score ``X[mask]``, the real documents only, whose number is data dependent,
and the attention checks ``bool(mask.all())``.
"""

from __future__ import annotations

import contextlib
import copy
import io
import warnings

import torch

__all__ = ["export_module"]

#: Example batch traced by the exporter: three lists of four slots, two of them padded.
_EXAMPLE_MASK = ((True, True, True, True), (True, True, True, False), (True, False, False, False))


class PaddedScorer(torch.nn.Module):
    """``(X, mask[, initial_rank]) -> scores``: a ranker's module as the ONNX model exposes it.

    Scores on padding are exactly 0; ``mask`` is True on real documents.
    """

    def __init__(self, module, initial_rank=False):
        super().__init__()
        self.module = module
        self.initial_rank = initial_rank

    def forward(self, X, mask, initial_rank=None):
        extras = {"initial_rank": initial_rank} if self.initial_rank else {}
        scores = self.module(X, mask, **extras).float()
        return torch.where(mask, scores, torch.zeros((), dtype=scores.dtype))


def _copysign(g, magnitude, sign):
    """ONNX for ``aten::copysign`` (DASALC's symmetric log1p), which the TorchScript exporter lacks.

    ``|a|`` where ``b`` is positive or +0, ``-|a|`` where ``b`` is negative or -0 (``1 / b`` is -inf).
    """
    zero = g.op("CastLike", g.op("Constant", value_t=torch.tensor(0.0)), sign)
    one = g.op("CastLike", g.op("Constant", value_t=torch.tensor(1.0)), sign)
    negative = g.op("Or", g.op("Less", sign, zero), g.op("Less", g.op("Div", one, sign), zero))
    absolute = g.op("Abs", magnitude)
    return g.op("Where", negative, g.op("Neg", absolute), absolute)


_REGISTERED = []


def _register_symbolics():
    """Teach the exporter ``aten::copysign`` once (opset 15 on: ``CastLike``)."""
    if not _REGISTERED:
        torch.onnx.register_custom_op_symbolic("aten::copysign", _copysign, 15)
        _REGISTERED.append(True)


@contextlib.contextmanager
def _quiet_export():
    """Silence what the TorchScript exporter always says: its deprecation notice and tracer warnings."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export.*")
        warnings.filterwarnings("ignore", message=".*[Ff]eature will be removed.*")
        warnings.filterwarnings("ignore", message=".*torch.jit.*deprecated.*")
        yield


def export_module(module, n_features, *, opset, initial_rank=False):
    """Serialized ONNX model of ``module`` wrapped in :class:`PaddedScorer`.

    Parameters
    ----------
    module : torch.nn.Module
        The trained module, ``forward(X, mask, **extras) -> [batch, list]``; a float32 CPU
        copy in evaluation mode is exported (the module itself is left as it is).
    n_features : int
        Features per document.
    opset : int
        ONNX opset of the default domain, from 15 to the exporter's highest (20 in torch 2.13).
    initial_rank : bool, default=False
        Whether the model takes a third input ``initial_rank`` ``[batch, list]`` (SetRank-init).

    Returns
    -------
    model : bytes
        The serialized ``onnx.ModelProto``.
    """
    highest = getattr(torch.onnx._constants, "ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET", 20)
    if opset > highest:
        raise ValueError(f"torch's TorchScript-based exporter writes opsets up to {highest}; got opset={opset}.")
    _register_symbolics()
    scorer = PaddedScorer(copy.deepcopy(module).to("cpu", torch.float32), initial_rank=initial_rank).eval()
    mask = torch.tensor(_EXAMPLE_MASK)
    generator = torch.Generator().manual_seed(0)
    args = [torch.randn(*mask.shape, n_features, generator=generator), mask]
    names = ["X", "mask"]
    if initial_rank:
        args.append(torch.arange(1, mask.shape[1] + 1, dtype=torch.float32).expand(mask.shape).contiguous())
        names.append("initial_rank")
    axes = {name: {0: "batch", 1: "list"} for name in [*names, "scores"]}
    buffer = io.BytesIO()
    with _quiet_export(), torch.no_grad():
        torch.onnx.export(
            scorer, tuple(args), buffer, dynamo=False, opset_version=opset, input_names=names,
            output_names=["scores"], dynamic_axes=axes, do_constant_folding=True,
        )
    return buffer.getvalue()
