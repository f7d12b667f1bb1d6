"""The statistics behind :func:`~sklearn_ltr.metrics.paired_significance`: paired t-test, randomization
test, bootstrap interval and multiple-comparison corrections, vectorised over resamples."""

from __future__ import annotations

import numpy as np
from scipy import special

# Entries drawn per chunk of resamples (random bytes or query indices): bounds the
# memory of the resampling to a few tens of MB whatever n_queries * n_resamples.
_CHUNK_ENTRIES = 1 << 20
# Two resampled statistics closer than this fraction of sum(|d|) count as equal: float64
# sums of the same terms in another order differ by far less (pairwise summation).
_TIE_TOLERANCE = 1e-12
# Up to this many queries the randomization test sums blocks of 8 queries from a table of 256
# entries per block (2 KB per 8 queries, 32 MB here); above, blocks of 4 (16 entries each).
_BYTE_BLOCKS_MAX_QUERIES = 1 << 17


def _t_test(d):
    """``(t, p)`` of the paired t-test on the differences ``d``, as ``scipy.stats.ttest_1samp(d, 0)``."""
    n = d.shape[0]
    mean = d.mean()
    variance = d.var(ddof=1)
    if variance == 0.0 and mean == 0.0:
        # Every difference is 0: no evidence of a difference (scipy returns NaN here).
        return 0.0, 1.0
    with np.errstate(divide="ignore"):
        t = float(mean / np.sqrt(variance / n))
    return t, float(2.0 * special.stdtr(n - 1, -abs(t)))


def _block_signs(width):
    """``(2**width, width)`` matrix: row ``c`` holds the signs of the bits of ``c`` (bit set: +1)."""
    return ((np.arange(2**width)[:, None] >> np.arange(width)) & 1) * 2.0 - 1.0


def _sign_codes(rng, n_blocks, width, exact, total):
    """Chunks of sign codes, one per block of ``width`` queries: every one of ``2**n`` when ``exact``."""
    rows = max(1, _CHUNK_ENTRIES // n_blocks)
    shifts = (width * np.arange(n_blocks)).astype(np.uint64)
    mask = np.uint64(2**width - 1)
    for start in range(0, total, rows):
        stop = min(start + rows, total)
        if exact:
            # Sign vector number i: bit j of i is the sign of query j.
            yield ((np.arange(start, stop, dtype=np.uint64)[:, None] >> shifts) & mask).astype(np.uint8)
        else:
            yield rng.integers(0, 2**width, size=(stop - start, n_blocks), dtype=np.uint8)


def _randomization_pvalues(differences, n_resamples, seed):
    """Two-sided sign-flip p-value of each row of ``differences`` (shape (n_systems, n_queries)).

    For blocks of ``width`` queries, a table holds the ``2**width`` signed sums of each block;
    a resample's statistic is the sum of one table entry per block, picked by a random code.
    """
    n_systems, n = differences.shape
    exact = n < 63 and 2**n <= n_resamples
    total = 2**n if exact else n_resamples
    # Bytes (256 entries per 8 queries) while the table stays small; nibbles beyond.
    width = 8 if n <= _BYTE_BLOCKS_MAX_QUERIES else 4
    n_blocks = -(-n // width)
    offsets = np.arange(n_blocks, dtype=np.intp) * 2**width
    signs = _block_signs(width)
    pvalues = np.empty(n_systems)
    for j, d in enumerate(differences):
        padded = np.zeros(n_blocks * width)
        padded[:n] = d
        table = (padded.reshape(n_blocks, width) @ signs.T).ravel()  # [block * 2**width + code]
        # T(all signs +1) = sum(d), summed from the same table entries as the resampled statistics.
        observed = abs(table[offsets + 2**width - 1].sum())
        threshold = observed - _TIE_TOLERANCE * np.abs(d).sum()
        extreme = 0
        # The same draws for every system: one system's p-value does not depend on the others.
        for codes in _sign_codes(np.random.default_rng(seed), n_blocks, width, exact, total):
            extreme += np.count_nonzero(np.abs(np.take(table, codes + offsets).sum(axis=1)) >= threshold)
        # Exact: every sign vector, the observed one included. Monte-Carlo: (b + 1) / (B + 1).
        pvalues[j] = extreme / total if exact else (extreme + 1.0) / (n_resamples + 1.0)
    return pvalues


def _bootstrap_intervals(differences, n_resamples, confidence_level, rng):
    """Percentile bootstrap interval of the mean of each row of ``differences``, resampling queries."""
    n_systems, n = differences.shape
    means = np.empty((n_systems, n_resamples))
    rows = max(1, _CHUNK_ENTRIES // n)
    for start in range(0, n_resamples, rows):
        stop = min(start + rows, n_resamples)
        index = rng.integers(0, n, size=(stop - start, n), dtype=np.intp)
        for j in range(n_systems):
            means[j, start:stop] = np.take(differences[j], index).sum(axis=1) / n
    alpha = 1.0 - confidence_level
    return np.quantile(means, [alpha / 2.0, 1.0 - alpha / 2.0], axis=1).T


def _adjust_pvalues(pvalues, method):
    r"""Holm's step-down or Bonferroni's adjusted p-values (``method=None``: unchanged).

    Holm: with :math:`p_{(1)} \le \dots \le p_{(m)}`,
    :math:`\tilde p_{(i)} = \min\{1, \max_{j \le i} (m - j + 1)\, p_{(j)}\}`.
    """
    pvalues = np.asarray(pvalues, dtype=np.float64)
    m = pvalues.shape[0]
    if method is None:
        return pvalues
    if method == "bonferroni":
        return np.minimum(1.0, m * pvalues)
    order = np.argsort(pvalues, kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * pvalues[order])
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(1.0, stepped)
    return adjusted


def _seeds(random_state):
    """Independent seeds of the randomization test and of the bootstrap."""
    if isinstance(random_state, np.random.RandomState):
        random_state = random_state.randint(0, 2**32, size=4, dtype=np.uint64)
    return np.random.default_rng(random_state).integers(0, 2**63 - 1, size=2, dtype=np.int64).tolist()


def paired_statistics(baseline, others, *, tests, n_resamples, confidence_level, correction, random_state):
    """The fields of each system's :class:`~sklearn_ltr.metrics.SignificanceResult`, on validated values.

    ``baseline`` (n,) and ``others`` (n_systems, n) are finite per-query values, ``tests`` a
    tuple of test names; returns ``{field: [value per system]}`` with the fields of the tests run.
    """
    differences = others - baseline
    n_systems, n = differences.shape
    fields = {
        "n_queries": [n] * n_systems,
        "baseline_mean": [float(baseline.mean())] * n_systems,
        # Row by row: a 2-D reduction may sum in another order, and a system's result must not
        # depend on the other systems compared.
        "mean": [float(values.mean()) for values in others],
        "mean_difference": [float(d.mean()) for d in differences],
    }
    if "t-test" in tests:
        fields["t_statistic"], fields["t_pvalue"] = map(list, zip(*(_t_test(d) for d in differences), strict=True))
    # Resample each system's differences in sorted order: a result then depends on the
    # multiset of differences only, not on the order of queries or on the other systems.
    ordered = np.sort(differences, axis=1)
    sign_seed, bootstrap_seed = _seeds(random_state)
    if "randomization" in tests:
        fields["randomization_pvalue"] = _randomization_pvalues(ordered, n_resamples, sign_seed).tolist()
    if "bootstrap" in tests:
        intervals = _bootstrap_intervals(ordered, n_resamples, confidence_level, np.random.default_rng(bootstrap_seed))
        fields["ci_low"], fields["ci_high"] = intervals[:, 0].tolist(), intervals[:, 1].tolist()
    if correction is not None:
        for field in ("t_pvalue", "randomization_pvalue"):
            if field in fields:
                fields[field + "_adjusted"] = _adjust_pvalues(fields[field], correction).tolist()
    return fields
