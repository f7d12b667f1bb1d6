"""One-off check: ``sklearn_ltr.losses.lambdaloss`` against allRank 1.4.3's ``lambdaLoss``, scheme by scheme.

allRank is not a dependency: unzip its wheel and point ``--allrank-src`` at the folder, e.g.::

    mkdir -p /tmp/allrank_src && unzip -oq allRank-1.4.3-py3-none-any.whl -d /tmp/allrank_src
    python benchmarks/compare_lambdaloss_allrank.py --allrank-src /tmp/allrank_src

The loss module ``allrank/models/losses/lambdaLoss.py`` is loaded by itself with torch: its two
imports (``PADDED_Y_VALUE`` from ``allrank.data.dataset_loading``, ``DEFAULT_EPS`` from
``allrank.models.losses``, whose packages need torchvision and the rest of allRank) are served
by stub modules holding the constants read from allRank's own source files.

Conventions matched: allRank marks padding with the label -1 (here ``mask``), sums the pair costs
in bits over the batch (``reduction="sum"``, ``reduction_log="binary"``: here ``reduction="sum"``),
truncates at ``k`` to pairs of two documents in the current top k with IDCG@k (the same here).
Random batches: 64 lists padded to 30, real lengths 0 to 30 (an empty row, lists of one), labels
0-4 with ties, scores ``randn`` (no score ties).
Printed and written: the largest absolute difference of the batch value and of the gradient with
respect to the scores (real documents), and the largest value, over all batches, per scheme, k and
sigma, in float64 and float32; the number of pairs whose cost allRank clips at log2(1 / eps) bits, and
the same differences once that clip is applied to the library's formula.
"""

from __future__ import annotations

import argparse
import datetime
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from _common import allrank_loss_module, machine

from sklearn_ltr.losses import lambdaloss
from sklearn_ltr.losses._common import check_inputs, sort_ranks
from sklearn_ltr.losses._lambdaloss import _pair_weights

#: Our scheme name -> allRank's (None: allRank has no such scheme).
SCHEMES = {
    "ndcg_loss1": "ndcgLoss1_scheme",
    "ndcg_loss2": "ndcgLoss2_scheme",
    "ndcg_loss2pp": "ndcgLoss2PP_scheme",
    "lambdarank": "lambdaRank_scheme",
    "ranknet": "rankNet_scheme",
    "arp_loss2": "rankNetWeightedByGTDiff_scheme",
    "arp_loss1": None,
}


def random_batch(seed, dtype, batch=64, length=30):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(batch, length, generator=g, dtype=torch.float64)
    labels = torch.randint(0, 5, (batch, length), generator=g).to(torch.float64)
    lengths = torch.randint(0, length + 1, (batch,), generator=g)
    lengths[:3] = torch.tensor([0, 1, length])
    mask = torch.arange(length)[None, :] < lengths[:, None]
    return scores.to(dtype), labels.to(dtype), mask


def clipped_lambdaloss(scores, labels, mask, scheme, k, sigma, eps):
    """``lambdaloss(..., reduction="sum")`` with allRank's clip emulated, and the number of pairs it clips.

    allRank computes ``-log2(clamp(clamp(sigmoid(o), eps) ** w, eps))``: the pair's cost in bits
    ``c = softplus(-o) / ln 2`` becomes ``min(w * min(c, C), C)`` with ``C = log2(1 / eps)``
    (33.2 bits), and its gradient 0 where a bound is reached.
    """
    scores, labels, mask = check_inputs(scores, labels, mask)
    scaled = sigma * scores
    logits = scaled[:, :, None] - scaled[:, None, :]
    with torch.no_grad():
        weight = _pair_weights(scores, labels, mask, scheme, k, 10.0)
    bound = math.log2(1.0 / eps)
    cost = F.softplus(-logits) / math.log(2.0)
    clipped = torch.clamp(weight * torch.clamp(cost, max=bound), max=bound)
    counted = (weight != 0) | _pair_set(scores, labels, mask, scheme, k)
    n_clipped = int(((weight * cost > bound) | (cost > bound))[counted].sum())
    return torch.where(counted, clipped, 0.0).sum(), n_clipped


def _pair_set(scores, labels, mask, scheme, k):
    """The pairs the scheme sums over, weight 0 or not (``labels`` and ``mask`` from ``check_inputs``)."""
    if scheme not in ("ndcg_loss1", "arp_loss1"):
        return _pair_weights(scores, labels, mask, "ranknet", k, 1.0) != 0
    ranks = sort_ranks(scores, mask)
    inside = mask if k is None else mask & (ranks <= k)
    return inside[:, :, None] & inside[:, None, :]


def compare(allrank_loss, padded, ours, theirs, k, sigma, dtype, seeds, eps):
    worst = {"value": 0.0, "grad": 0.0, "scale": 0.0, "grad_scale": 0.0, "clipped": 0, "pairs": 0,
             "value_emulated": 0.0, "grad_emulated": 0.0}
    for seed in seeds:
        scores, labels, mask = random_batch(seed, dtype)
        mine = scores.clone().requires_grad_(True)
        value = lambdaloss(mine, labels, mask, weighing_scheme=ours, k=k, sigma=sigma, reduction="sum")
        (grad,) = torch.autograd.grad(value, mine)
        emulated = scores.clone().requires_grad_(True)
        emulated_value, n_clipped = clipped_lambdaloss(emulated, labels, mask, ours, k, sigma, eps)
        (emulated_grad,) = torch.autograd.grad(emulated_value, emulated)
        worst["clipped"] += n_clipped
        worst["pairs"] += int(_pair_set(*check_inputs(scores, labels, mask), ours, k).sum())
        other = scores.clone().requires_grad_(True)
        y_true = torch.where(mask, labels, torch.as_tensor(float(padded), dtype=dtype))
        reference = allrank_loss(other, y_true, weighing_scheme=theirs, k=k, sigma=sigma, mu=10.0, reduction="sum")
        (reference_grad,) = torch.autograd.grad(reference, other)
        worst["value"] = max(worst["value"], abs(value.item() - reference.item()))
        worst["grad"] = max(worst["grad"], (grad - reference_grad)[mask].abs().max().item())
        worst["value_emulated"] = max(worst["value_emulated"], abs(emulated_value.item() - reference.item()))
        worst["grad_emulated"] = max(worst["grad_emulated"], (emulated_grad - reference_grad)[mask].abs().max().item())
        worst["scale"] = max(worst["scale"], abs(reference.item()))
        worst["grad_scale"] = max(worst["grad_scale"], reference_grad[mask].abs().max().item())
    return worst


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--allrank-src", default="/tmp/allrank_src", help="folder of the unzipped allRank wheel")
    parser.add_argument("--batches", type=int, default=20, help="random batches per setting")
    parser.add_argument("--output", default=str(Path(__file__).parent / "results" / "lambdaloss_allrank.md"))
    args = parser.parse_args(argv)
    module, padded, eps = allrank_loss_module(args.allrank_src, "lambdaLoss")
    allrank_loss = module.lambdaLoss
    version = next(Path(args.allrank_src).glob("allRank-*.dist-info"), None)
    version = version.name.removeprefix("allRank-").removesuffix(".dist-info") if version else "unknown"

    lines = [
        "| scheme | allRank scheme | k | sigma | dtype | pairs clipped by allRank | max abs diff, value "
        "| max abs diff, gradient | the same, allRank's clip emulated: value | gradient | largest value "
        "| largest gradient |",
        "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    seeds = range(args.batches)
    for ours, theirs in SCHEMES.items():
        if theirs is None:
            lines.append(f"| {ours} | none | | | | | n/a | n/a | | | | |")
            continue
        for dtype in (torch.float64, torch.float32):
            for k in (None, 5):
                for sigma in (1.0, 2.0):
                    w = compare(allrank_loss, padded, ours, theirs, k, sigma, dtype, seeds, eps)
                    lines.append(
                        f"| {ours} | {theirs} | {k if k else 'none'} | {sigma:g} | {str(dtype).removeprefix('torch.')} "
                        f"| {w['clipped']:,} of {w['pairs']:,} | {w['value']:.1e} | {w['grad']:.1e} "
                        f"| {w['value_emulated']:.1e} | {w['grad_emulated']:.1e} | {w['scale']:.4g} "
                        f"| {w['grad_scale']:.4g} |"
                    )
                    print(lines[-1], flush=True)
    command = "python benchmarks/compare_lambdaloss_allrank.py --allrank-src /tmp/allrank_src"
    text = (
        "# lambdaloss against allRank's lambdaLoss\n\n"
        f"`{command}` on {datetime.date.today().isoformat()}: allRank {version} "
        f"(`allrank/models/losses/lambdaLoss.py`, PADDED_Y_VALUE = {padded}, DEFAULT_EPS = {eps:g}), "
        f"{machine('torch', cpus=False)}, CPU. {args.batches} random batches per row: "
        "64 lists padded to 30 documents, real lengths 0 (an empty row), 1, 30 and uniform in 0-30, labels 0-4, "
        "scores N(0, 1); allRank with `reduction=\"sum\"` (log2, its default), `mu=10`, padding labels -1; "
        "`lambdaloss(..., reduction=\"sum\")` with the mask. Differences are of the batch's value and of the "
        "gradient with respect to each real document's score.\n\n"
        + "\n".join(lines)
        + "\n\n"
        "ARP-Loss1 has no allRank counterpart: `tests/losses/test_lambdaloss.py` checks it, like every scheme, against "
        "the paper's formula summed pair by pair in Python.\n\n"
        "allRank clips each pair: it computes `-log2(clamp(clamp(sigmoid(o), eps) ** w, eps))`, so a pair's "
        "weighted cost stops at log2(1 / eps) = 33.2 bits (and its unweighted cost too), with a zero gradient "
        "beyond: the most mis-ordered pairs stop pulling. Here ARP-Loss2's pairs of labels 4 and 0 reach it "
        "(weight 4, a cost over 8.3 bits); with scores twice as spread (2 N(0, 1)), NDCG-Loss1 and "
        "NDCG-Loss2++ (mu = 10) reach it at sigma = 2 too, and the differences grow to whole bits. "
        "The columns 'pairs clipped' and 'allRank's clip emulated' "
        "show that the whole difference is the clip (the library's formula with the clip applied agrees to "
        "rounding). The library keeps the exact loss, computed as softplus(-o) / ln 2, finite for any score. "
        "allRank computes the discounts "
        "`log2(1 + position)` in float32 whatever the scores' dtype, so float64 values agree to float32 "
        "precision (relative 1e-7), not to float64's. Where a convention differs, the library keeps its own "
        "and documents it in `lambdaloss`: ties in score ranked by list position (allRank's `sort` leaves "
        "their order unspecified), no clip (above), and `reduction=\"mean\"` is the mean "
        "over queries of their summed pairs (allRank's `\"mean\"` averages over all pairs of the batch).\n"
    )
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    print(f"written {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
