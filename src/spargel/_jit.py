"""The two kinds of compiled functions: entry kernels and inner kernels.

Every compiled function is numba's ``njit(cache=True, nogil=True, ...)``. What differs is
who calls it:

* an **entry kernel** (:func:`kernel`) is called from Python, so numba builds a CPython
  wrapper that unboxes its arguments;
* an **inner kernel** (:func:`inner`) is called only from other compiled code. It is
  compiled without that wrapper. The chain kernels take tuples of a dozen or more arrays
  (the transition structure, the data, the scratch buffers) and the wrapper unboxes each
  array: about 10 ms of compilation per array, 0.25 s for :func:`chain.forward`, which
  adds up to seconds of a first ``fit``.

Kernels allocate nothing (their buffers come from Python), so both kinds are compiled
without numba's reference counting of arrays (NRT): with NRT every array view, tuple of
arrays and call of another kernel carries increments and decrements of reference
counts that LLVM must then optimise away again, about a quarter of the compilation of
a first ``fit``. A kernel that does allocate says so (``allocates=True``; numba refuses
to compile an allocation without NRT, so a missing flag fails loudly at first use, and
the test suite compiles every kernel).

Kernels that allocate nothing also compile through a shorter pipeline
(:class:`LeanCompiler`): numba's default one minus three passes that only ever change
code these kernels do not contain -- ``with`` blocks, closures and comprehensions, and
the rewrites after type inference (array expressions, arrays of constants, fields named
by string literals, all of which allocate). They took about 6% of a first ``fit``'s
compilation. A kernel with a closure fails to compile (numba cannot capture its
variables without the closure-inlining pass), loudly. An entry kernel is also compiled
without the C-callable wrapper (``no_cfunc_wrapper``; nothing takes its address), a
tenth to a fifth of an entry kernel's own code.

Every kernel divides with numpy's error model (``error_model="numpy"``: a division by
zero gives inf or nan instead of raising ZeroDivisionError, so no raising path is
compiled after each division), and every compiled function of the package goes through
these two decorators. Fewer distinct sets of compile options matter for first use:
numba keys its typing of library functions (``len``, ``min``, array methods, ...) by
argument types *and* compile options, and in numba 0.68 every set of options hashes
alike, so each further set lengthens every such lookup and compiles those functions
again. With one error model and no stray ``njit`` options the first fits of OWL-QN,
SGD-L1 and BCD in one process compile about 7% faster.

A Python call of an inner kernel still works (tests and debugging do it): the first one
compiles a small entry kernel that calls it (not cached on disk, so a library path that
did this would pay it in every process; :data:`PYTHON_CALLS` lists the inner kernels
called so, and a test checks that fitting calls none).
"""

from numba import njit
from numba.core.compiler import Compiler, DefaultPassBuilder
from numba.core.registry import CPUDispatcher

#: names of the inner kernels that were called from Python in this process
PYTHON_CALLS = []


#: passes of numba's pipeline that change nothing in a kernel that allocates nothing
LEAN_SKIPS = ("with_lifting", "inline_closure_likes", "nopython_rewrites")


class LeanCompiler(Compiler):
    """numba's nopython pipeline without the passes in :data:`LEAN_SKIPS` (see the module
    documentation); the default pipeline when a numba version lacks any of them."""

    def define_pipelines(self):
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        if set(LEAN_SKIPS) <= {p[0].name() for p in pm.passes}:
            pm.passes = [p for p in pm.passes if p[0].name() not in LEAN_SKIPS]
            pm.finalize()
        return [pm]


def _options(allocates, options):
    options["error_model"] = "numpy"
    if not allocates:
        options["_nrt"] = False
        options["pipeline_class"] = LeanCompiler
    return options


def kernel(allocates=False, **options):
    """Decorator of an entry kernel: ``njit(cache=True, nogil=True, **options)``, without
    reference counting unless it ``allocates``."""
    return njit(cache=True, nogil=True, no_cfunc_wrapper=True, **_options(allocates, options))


class InnerKernel(CPUDispatcher):
    """A dispatcher compiled without the CPython wrapper (see the module documentation)."""

    def __call__(self, *args):
        entry = self.__dict__.get("_entry")
        if entry is None:
            inner_kernel = self

            def call(*a):
                return inner_kernel(*a)

            entry = self._entry = njit(nogil=True)(call)
            PYTHON_CALLS.append(self.py_func.__module__ + "." + self.py_func.__qualname__)
        return entry(*args)


def inner(allocates=False, **options):
    """Decorator of an inner kernel (called only from compiled code), without reference
    counting unless it ``allocates``."""
    options = _options(allocates, options)

    def wrap(fn):
        dispatcher = njit(cache=True, nogil=True, no_cpython_wrapper=True, no_cfunc_wrapper=True, **options)(fn)
        dispatcher.__class__ = InnerKernel
        return dispatcher
    return wrap
