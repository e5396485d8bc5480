"""Weight-sized buffers (``core/sizes.py``): ``spare_buffer`` hands out again only an
array that nothing but its list holds, zeroed; ``plain_pages`` gives a zeroed, writable
array of the shape asked for, counted by ``tracemalloc`` and ``reachable_nbytes``;
``add_and_clear`` adds as numpy does (the chain CRF's gradients through ``spare_buffer``:
``tests/chain/test_gradient_buffers.py``)."""

import gc
import tracemalloc

import numpy as np

from spargel.core.sizes import SPARE_BUFFERS, plain_pages, reachable_nbytes, spare_buffer
from spargel.core.vec import add_and_clear


def test_spare_buffer_reuses_only_unreferenced_arrays():
    handed = []
    a = spare_buffer(handed, 5)
    a += 1.0
    b = spare_buffer(handed, 5)
    assert b is not a and len(handed) == 2          # a is still held
    ident = id(a)
    del a
    c = spare_buffer(handed, 5)
    assert id(c) == ident and np.array_equal(c, np.zeros(5))
    view = b[1:]                                    # a view holds its base
    del b
    d = spare_buffer(handed, 5)
    assert d is not c and len(handed) == 3 and np.array_equal(view, np.zeros(4))
    kept = [d]                                      # so does a container
    del d
    e = spare_buffer(handed, 5)
    assert e is not kept[0]
    assert spare_buffer(handed, 6).shape == (6,)    # another size: a new array


def test_spare_buffer_keeps_a_bounded_list():
    handed = []
    held = [spare_buffer(handed, 3) for _ in range(SPARE_BUFFERS + 3)]
    assert len(handed) == SPARE_BUFFERS
    assert all(h is x for h, x in zip(handed, held[-SPARE_BUFFERS:]))


def test_plain_pages_are_zeroed_float64_arrays():
    a = plain_pages((3, 1000))
    assert a.shape == (3, 1000) and a.dtype == np.float64 and a.flags.writeable and a.flags.c_contiguous
    assert not a.any()
    a[2, 999] = 4.0
    assert a.sum() == 4.0
    assert plain_pages((0, 7)).shape == (0, 7)
    b = plain_pages(4)
    assert b.shape == (4,) and b[1:][::2].base is b and b.reshape(2, 2).base is b   # (spare_buffer counts views)


def test_plain_pages_count_in_tracemalloc_while_alive():
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        a = plain_pages((4, 250_000))                   # 8 MB
        view = a[1:]
        del a
        gc.collect()
        assert tracemalloc.get_traced_memory()[0] - before >= 8_000_000
        del view
        gc.collect()
        assert tracemalloc.get_traced_memory()[0] - before < 1_000_000
    finally:
        tracemalloc.stop()


def test_sizes_count_plain_pages_once():
    a = plain_pages((3, 1000))
    holder = {"a": a, "row": a[1], "again": a}
    assert reachable_nbytes(holder) == 24_000


def test_add_and_clear_adds_as_numpy_and_zeroes_the_source():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=1001), rng.normal(size=1001) * 1e8
    expected = y + x
    add_and_clear(x, y)
    assert np.array_equal(y, expected) and not x.any()
