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
