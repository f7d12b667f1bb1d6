"""Gains and stopping probabilities of exponentiated labels, without overflow.

``2**y`` is ``inf`` in float64 from ``y = 1024`` on, and ``inf / inf`` is NaN. The
metrics only ever need ratios of such numbers (NDCG's ``G(y) / G(m)``, ERR's
``(2**y - 1) / 2**g``), which lie in [0, 1]; they are computed here from exponent
differences, exact to a few ulp for any finite labels.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "EXPONENTIAL_LABEL_LIMIT",
    "GAIN_RATIOS",
    "cascade_probabilities",
    "exponential_gain_ratio",
    "gain_of",
    "linear_gain_ratio",
    "pow2_diff",
]

_LN2 = np.log(2.0)
#: The largest label whose exponential gain ``2**y - 1`` is finite in float64 (just below 1024).
EXPONENTIAL_LABEL_LIMIT = float(np.nextafter(1024.0, 0.0))


def pow2_diff(y, m):
    """``2**(y - m)`` for ``y <= m``, split into integer and fractional exponents.

    ``y - m`` is not always exact in float64 (``0.3 - 1100.5``); ``floor(y) - floor(m)``
    and ``frac(y) - frac(m)`` are, up to one rounding of a number below 1, and
    ``np.ldexp`` scales by the integer part exactly (rounding to 0 below 2**-1074).
    """
    whole_y, whole_m = np.floor(y), np.floor(m)
    exponent = np.clip(whole_y - whole_m, -4000.0, 0.0).astype(np.int64)
    return np.ldexp(np.exp2((y - whole_y) - (m - whole_m)), exponent)


def _one_minus_pow2_neg_ratio(x):
    """``(1 - 2**-x) / (x ln 2)`` in (0, 1], with its limit 1 at ``x = 0``."""
    x = np.asarray(x, dtype=np.float64)
    t = x * _LN2
    small = x < 1e-8
    safe_t = np.where(small, 1.0, t)
    return np.where(small, 1.0 - 0.5 * t, -np.expm1(-safe_t) / safe_t)


def exponential_gain_ratio(y, m):
    r"""``(2**y - 1) / (2**m - 1)`` for ``0 <= y <= m``, to a few ulp, for any finite labels.

    .. math::
        \frac{2^y - 1}{2^m - 1} = 2^{y - m} \cdot \frac{y}{m} \cdot \frac{\varphi(y)}{\varphi(m)},
        \qquad \varphi(x) = \frac{1 - 2^{-x}}{x \ln 2}

    Neither gain is formed, so nothing overflows; the ratio is 1 at ``y = m`` and 0 at
    ``y = 0``. Where ``m = 0`` the result is 0 (the query has no relevant document).
    """
    y = np.asarray(y, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    positive = m > 0
    safe_m = np.where(positive, m, 1.0)
    ratio = pow2_diff(y, safe_m) * (y / safe_m) * (_one_minus_pow2_neg_ratio(y) / _one_minus_pow2_neg_ratio(safe_m))
    return np.where(positive, ratio, 0.0)


def linear_gain_ratio(y, m):
    """``y / m``, and 0 where ``m = 0``."""
    m = np.asarray(m, dtype=np.float64)
    positive = m > 0
    return np.where(positive, y / np.where(positive, m, 1.0), 0.0)


GAIN_RATIOS = {"exponential": exponential_gain_ratio, "linear": linear_gain_ratio}


def gain_of(level, gain):
    """The gain ``G(level)`` itself, as ``(mantissa, exponent)`` with ``G = mantissa * 2**exponent``.

    Exponential: ``2**m - 1 = 2**floor(m) * (2**frac(m) * (1 - 2**-m))``, so that the
    caller can scale by ``2**floor(m)`` with ``np.ldexp`` (exact, and ``inf`` only when the
    true value is beyond float64).
    """
    if gain == "linear":
        return level, np.zeros(level.shape, dtype=np.int64)
    whole = np.floor(level)
    mantissa = np.exp2(level - whole) * -np.expm1(-level * _LN2)
    return mantissa, np.minimum(whole, 4000.0).astype(np.int64)


def cascade_probabilities(y, grade):
    """ERR's stopping probability ``R = (2**y - 1) / 2**grade`` and ``1 - R``, for ``0 <= y <= grade``.

    ``R = 2**(y - grade) * (1 - 2**-y)`` and ``1 - R = 1 - 2**(y - grade) + 2**-grade``:
    neither forms ``2**y``, and ``1 - R`` keeps its last term ``2**-grade`` when ``y = grade``
    instead of rounding ``1 - R`` to 0 (it is 0 only below 2**-1074).
    """
    y = np.asarray(y, dtype=np.float64)
    stop = pow2_diff(y, grade) * -np.expm1(-y * _LN2)
    keep_going = -np.expm1((y - grade) * _LN2) + np.exp2(-grade)
    return stop, keep_going
