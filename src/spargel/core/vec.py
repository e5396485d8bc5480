"""Vector reductions compiled with numba, for the hot paths.

numpy's ``dot`` and ``linalg.norm`` call a multi-threaded BLAS whose idle threads spin
for a while after each call, stealing the cores that spargel's own gradient threads
need; these single-threaded versions are as fast for one-pass reductions.
"""

import math

from .jit import kernel

FAST = {"reassoc", "contract", "nsz", "arcp"}


@kernel(fastmath=FAST)
def dot(a, b):
    s = 0.0
    for i in range(len(a)):
        s += a[i] * b[i]
    return s


@kernel(fastmath=FAST)
def norm(a):
    s = 0.0
    for i in range(len(a)):
        s += a[i] * a[i]
    return math.sqrt(s)


@kernel(fastmath=FAST)
def asum(a):
    """sum |a_i| (no temporary the size of a)."""
    s = 0.0
    for i in range(len(a)):
        s += abs(a[i])
    return s


@kernel(fastmath=FAST)
def axpy(alpha, x, y):
    """y += alpha * x in place; returns x . x (the l2 penalty's value needs it)."""
    s = 0.0
    for i in range(len(x)):
        y[i] += alpha * x[i]
        s += x[i] * x[i]
    return s


@kernel()
def add_and_clear(x, y):
    """y += x, then x = 0, in one pass (the additions are numpy's ``y += x``: each one
    IEEE sum, no flags)."""
    for i in range(len(x)):
        y[i] += x[i]
        x[i] = 0.0


@kernel()
def all_finite(a):
    """Whether every entry of a is finite (no boolean temporary the size of a)."""
    for i in range(len(a)):
        if not (abs(a[i]) < math.inf):
            return False
    return True
