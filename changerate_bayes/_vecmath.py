"""Arithmetic-only pieces of exp for compiled loops that LLVM can vectorise.

libm's exp and expm1 are calls, so a loop that uses them runs one element at a time.
The kernels that need e^y over long runs (the MLE path's local sums and crawl series,
the grid posterior's likelihood terms at the nodes) instead reduce y = n ln 2 + r with
n = round(y/ln 2) (``y·INV_LN2 + ROUND``, whose low bits hold n), build 2^n from its
bits (``(bits − ROUND_BITS + 1023) << 52`` through an int64 view) and take e^r − 1 from
:func:`expm1_reduced`. Each kernel writes those steps as separate loops over its own
scratch arrays so that each loop vectorises.
"""

from __future__ import annotations

import math

import numba as nb
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

__all__ = [
    "INV_LN2",
    "LN2_HI",
    "LN2_LO",
    "ROUND",
    "ROUND_BITS",
    "bits_f64",
    "f64_bits",
    "exp_split",
    "expm1_reduced",
    "max_of",
]

INV_LN2 = 1.4426950408889634
LN2_HI = 0.6931471803691238  # ln 2 split (fdlibm): n·LN2_HI is exact for |n| < 2^20
LN2_LO = 1.9082149292705877e-10
ROUND = 6755399441055744.0  # 1.5·2^52: y + ROUND rounds y to an integer held in the low bits
ROUND_BITS = 0x4338000000000000  # the bits of ROUND


@intrinsic
def bits_f64(typingctx, bits):
    """The float64 whose bits are the int64 ``bits`` (a bitcast, no conversion)."""
    if bits != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@intrinsic
def f64_bits(typingctx, x):
    """The bits of the float64 ``x`` as an int64 (a bitcast, no conversion)."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@nb.njit(inline="always", cache=True, nogil=True, error_model="numpy")
def exp_split(y):
    """(2^n, r) with y = n ln 2 + r, n = round(y/ln 2) and |r| <= ln(2)/2, for |y| below
    about 708: n from ``y·INV_LN2 + ROUND``, 2^n from its bits, r with ln 2 split (exact
    n·LN2_HI), in the caller's floating-point flags (inlined). e^y = 2^n (1 + (e^r − 1))."""
    tb = y * INV_LN2 + ROUND
    n = tb - ROUND
    sc = bits_f64((f64_bits(tb) - ROUND_BITS + 1023) << 52)
    r = (y - n * LN2_HI) - n * LN2_LO
    return sc, r


@nb.njit(inline="always", cache=True, nogil=True, error_model="numpy")
def expm1_reduced(r):
    """e^r − 1 for |r| <= ln(2)/2 by its Taylor polynomial of degree 13 (truncation below
    2e-17 relative), in the caller's floating-point flags (inlined)."""
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    return r + r * (r * p)


@nb.njit(inline="always", cache=True, nogil=True)
def max_of(x):
    """The largest entry of the 1-D array ``x`` (−inf when it is empty or all −inf; NaN entries
    are skipped), by one comparison per entry."""
    m = -math.inf
    for k in range(x.shape[0]):
        if x[k] > m:
            m = x[k]
    return m
