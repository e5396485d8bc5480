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

Every kernel states its ``fastmath`` flags (none unless it asks): numba otherwise lets a
kernel inherit them from the first caller that compiles it, and its disk cache would keep
that code for every later process (:data:`INHERITED_DEFAULTS`).

Every kernel divides with numpy's error model (``error_model="numpy"``: a division by
zero gives inf or nan instead of raising ZeroDivisionError, so no raising path is
compiled after each division), and every compiled function of the package goes through
these two decorators. Fewer distinct sets of compile options matter for first use:
numba keys its typing of library functions (``len``, ``min``, array methods, ...) by
argument types *and* compile options, and in numba 0.68 every set of options hashes
alike, so each further set lengthens every such lookup and compiles those functions
again. With one error model and no stray ``njit`` options the first fits of OWL-QN,
SGD-L1 and BCD in one process compile about 7% faster. Each such lookup (every typed
call site, array indexing included, consults several of them) also hashes the options,
which numba does by building a dictionary of all forty-odd of them: a kernel compiles
with :class:`KernelFlags`, the same options hashed by the names of those set (about 7%
of the first fits of all solvers).

An inner kernel's code is never optimised as a module of its own nor turned into
machine code (:class:`LinkOnlyLibrary`). numba links the LLVM IR of every callee into
each compiled function that calls it and optimises and generates machine code for the
whole again there; by default it *also* does both for the callee alone, machine code that
nothing ever calls when the callee has no wrapper (numba pull request 9566 proposed the
same and was abandoned). Skipping that work took a tenth off the first fits of all
solvers (38.5 -> 34.3 s); the entry kernels are still optimised as a whole with their
callees (as fast as before on CoNLL-2000; the 53-label dense gradient about 5% slower,
``docs/benchmarks.md``). An inner kernel is
cached on disk as LLVM bitcode instead of machine code, and a cache load makes it link-only
IR again, never handed to the JIT engine (:func:`_load_link_only`): a caller compiled in a
process that loaded its callees from the cache gets the code of one compiled with them,
so results do not depend on which kernels the cache held when the process started.

All of this uses numba internals (:data:`_INTERNALS`; ``pyproject.toml`` states the numba
versions it is tested with). When a numba lacks any of them, or ``SPARGEL_PLAIN_NJIT=1`` is
set, spargel warns once and compiles every kernel with plain ``njit`` instead (same
results; slower to compile and not cached on disk).

A Python call of an inner kernel still works (tests and debugging do it): the first one
compiles a small entry kernel that calls it (not cached on disk, so a library path that
did this would pay it in every process; :data:`PYTHON_CALLS` lists the inner kernels
called so, and a test checks that fitting calls none).
"""

import os
import warnings

from numba import njit

from . import first_use as _first_use
from . import kernel_cache as _kernel_cache

# before the first kernel of the process is defined (and so before any is loaded from the
# disk cache): drop the cached kernels when a kernel source changed; a process that
# compiles nothing (``spargel label``'s numpy path, the CLI's help) does not pay for it
_kernel_cache.check()

#: names of the inner kernels that were called from Python in this process
PYTHON_CALLS = []

#: environment variable that turns the speed-ups off (the kernels then compile with plain
#: ``njit``); also what a test sets to simulate a numba without the internals they use
PLAIN_VARIABLE = "SPARGEL_PLAIN_NJIT"

#: the numba internals the speed-ups below use: (module, name, attributes of it)
_INTERNALS = (
    ("numba.core.codegen", "JITCodeLibrary",
     ("finalize", "_raise_if_finalized", "_get_module_for_linking", "serialize_using_bitcode",
      "enable_object_caching", "get_pointer_to_function", "serialize_using_object_code", "_unserialize")),
    ("numba.core.compiler", "Compiler", ("define_pipelines",)),
    ("numba.core.compiler", "DefaultPassBuilder", ("define_nopython_pipeline",)),
    ("numba.core.compiler", "Flags", ("__hash__", "__eq__")),
    ("numba.core.registry", "CPUDispatcher", ("__call__",)),
    ("llvmlite.binding", "parse_assembly", ()),
    ("llvmlite.binding", "parse_bitcode", ()),
)


def _missing_internals():
    """What of :data:`_INTERNALS` this numba lacks (empty when the speed-ups can run)."""
    import importlib

    missing = []
    for module, name, attributes in _INTERNALS:
        try:
            obj = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            missing.append(f"{module}.{name}")
            continue
        missing += [f"{module}.{name}.{a}" for a in attributes if not hasattr(obj, a)]
    return missing


def _speedups():
    """Whether kernels compile with the speed-ups of this module; when numba's internals
    are not what they expect (or ``SPARGEL_PLAIN_NJIT=1``), a one-line warning, and the
    kernels compile with plain ``njit`` (slower to compile, never cached on disk: the
    cache of the other mode must not be mixed with theirs)."""
    if os.environ.get(PLAIN_VARIABLE, "") not in ("", "0"):
        return False
    missing = _missing_internals()
    if missing:
        import numba
        warnings.warn(f"spargel: numba {numba.__version__} lacks {missing[0]}"
                      f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}, used to compile "
                      f"spargel's kernels faster; compiling them with plain njit instead (slower first use, "
                      f"no disk cache)", RuntimeWarning, stacklevel=3)
        return False
    return True


#: True when the kernels compile with this module's speed-ups (see :func:`_speedups`)
SPEEDUPS = _speedups()


if SPEEDUPS:
    import llvmlite.binding as llvm
    from numba.core.codegen import JITCodeLibrary
    from numba.core.compiler import Compiler, DefaultPassBuilder, Flags
    from numba.core.registry import CPUDispatcher

    #: passes of numba's pipeline that change nothing in a kernel that allocates nothing
    LEAN_SKIPS = ("with_lifting", "inline_closure_likes", "nopython_rewrites")


    #: prefix of the global variable that holds a compiled function's environment
    ENV_PREFIX = "_ZN08NumbaEnv"


    #: what the name of a cached inner kernel's library starts with (:class:`LinkOnlyLibrary`)
    LINK_ONLY_MARK = "spargel-link-only:"


    class LinkOnlyLibrary(JITCodeLibrary):
        """The code library of an inner kernel: its LLVM IR (after numba's per-function
        optimisation) only ever gets linked into the libraries of its callers, which
        optimise and compile it with their own code (see the module documentation).

        Finalising it links its own callees' IR in and gives its environment variable a
        home in the JIT engine (numba writes the environment's address there); no module
        optimisation, no machine code. It has no function to point to, and is cached as
        bitcode, marked (:data:`LINK_ONLY_MARK`) so that a cache load makes it a link-only
        library again (:func:`_load_link_only`), the same as the one compiled afresh."""

        def finalize(self):
            self._raise_if_finalized()
            seen = set()
            # what numba's own finalize does; numba 0.58 has no ``_reload_init`` (later
            # versions pass their callees' to the caller)
            reload_init = getattr(self, "_reload_init", None)
            for library in self._linking_libraries:
                if library not in seen:
                    seen.add(library)
                    if reload_init is not None:
                        reload_init.update(library._reload_init)
                    self._final_module.link_in(library._get_module_for_linking(), preserve=True)
            self._home_environments()
            self._finalized = True

        def _home_environments(self):
            envs = [gv.name for gv in self._final_module.global_variables if gv.name.startswith(ENV_PREFIX)]
            if envs:
                mod = llvm.parse_assembly("\n".join(f'@"{name}" = common global i8* null' for name in envs))
                mod.triple = self._final_module.triple
                mod.data_layout = self._final_module.data_layout
                self._codegen._engine.add_module(mod)
                self._codegen._engine.finalize_object()

        def load_bitcode(self, bitcode):
            """Become the library that the cached ``bitcode`` holds (finalised)."""
            self._final_module = llvm.parse_bitcode(bitcode)
            self._home_environments()
            self._finalized = True

        def get_pointer_to_function(self, name):
            self._ensure_finalized()
            return 0

        def serialize_using_object_code(self):
            name, kind, data = self.serialize_using_bitcode()
            return LINK_ONLY_MARK + name, kind, data


    def _load_link_only(codegen, name, bitcode):
        """An inner kernel's library from the disk cache, as :class:`LinkOnlyLibrary`
        compiled it: its IR, never handed to the JIT engine. numba's own loader would add
        the IR to the engine as a module of its own, and the engine compiles it there
        (without the optimisation pipeline) and transforms it in place. A caller compiled
        later in the same process then linked that transformed IR, and its calls could
        reach the engine's unoptimised copy: results changed in the last bits with the
        kernels the cache happened to hold when the process started."""
        library = LinkOnlyLibrary(codegen, name)
        library.load_bitcode(bitcode)
        return library


    _numba_unserialize = JITCodeLibrary._unserialize.__func__

    def _unserialize(cls, codegen, state):
        name, kind, data = state
        if kind == "bitcode" and name.startswith(LINK_ONLY_MARK):
            return _load_link_only(codegen, name[len(LINK_ONLY_MARK):], data)
        return _numba_unserialize(cls, codegen, state)

    JITCodeLibrary._unserialize = classmethod(_unserialize)


    class KernelFlags(Flags):
        """The compile options of a kernel, hashed by the names of the options set (see the
        module documentation). Two sets are equal when they set the same options to the
        same values; against numba's own ``Flags`` the comparison is numba's."""

        def __hash__(self):
            return hash(frozenset(self._values))

        def __eq__(self, other):
            if self is other:
                return True
            if type(other) is KernelFlags:
                return self._values == other._values
            return super().__eq__(other)


    class KernelCompiler(Compiler):
        """numba's compiler with the options as :class:`KernelFlags`."""

        def __init__(self, typingctx, targetctx, library, args, return_type, flags, locals):
            super().__init__(typingctx, targetctx, library, args, return_type, KernelFlags(flags), locals)


    class LeanCompiler(KernelCompiler):
        """numba's nopython pipeline without the passes in :data:`LEAN_SKIPS` (see the module
        documentation); the default pipeline when a numba version lacks any of them. An
        inner kernel (no CPython wrapper) gets a :class:`LinkOnlyLibrary`."""

        def define_pipelines(self):
            st = self.state
            if st.library is None and st.flags.no_cpython_wrapper:
                st.library = LinkOnlyLibrary(st.targetctx.codegen(), st.func_id.func_qualname)
                st.library.enable_object_caching()
            pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
            if set(LEAN_SKIPS) <= {p[0].name() for p in pm.passes}:
                pm.passes = [p for p in pm.passes if p[0].name() not in LEAN_SKIPS]
                pm.finalize()
            return [pm]
else:                                   # plain njit: nothing of the above is used
    CPUDispatcher = object


#: the compile options numba takes from the *caller* when a kernel leaves them unset
#: (``inherit_if_not_set``; ``nrt`` and ``error_model`` are always set here, and no
#: kernel asks for ``forceinline``): a kernel first compiled from a ``fastmath`` caller
#: would get that caller's flags, and the disk cache (keyed by signature, not by options)
#: would then serve that code to every later process, so results depended on which
#: kernels a process happened to compile first. Every kernel states them.
INHERITED_DEFAULTS = {"fastmath": False}


def _own_options(options):
    """``options`` with every option numba would otherwise inherit set explicitly."""
    for name, value in INHERITED_DEFAULTS.items():
        options.setdefault(name, value)
    return options


def _options(allocates, options):
    _own_options(options)
    options["error_model"] = "numpy"
    options["pipeline_class"] = KernelCompiler
    options["_nrt"] = bool(allocates)
    if not allocates:
        options["pipeline_class"] = LeanCompiler
    return options


def kernel(allocates=False, **options):
    """Decorator of an entry kernel: ``njit(cache=True, nogil=True, **options)``, without
    reference counting unless it ``allocates``."""
    if not SPEEDUPS:
        return njit(nogil=True, error_model="numpy", **_own_options(options))
    options = _options(allocates, options)

    def wrap(fn):
        dispatcher = njit(cache=True, nogil=True, no_cfunc_wrapper=True, **options)(fn)
        dispatcher.__class__ = EntryKernel
        return dispatcher
    return wrap


class EntryKernel(CPUDispatcher):
    """The dispatcher of a kernel: numba's, and a compilation that runs long writes the
    first-use line when a fit asks for it (:mod:`spargel.core.first_use`)."""

    def compile(self, sig):
        started = _first_use.compile_started(self)
        try:
            return super().compile(sig)
        finally:
            _first_use.compile_ended(started)


class InnerKernel(EntryKernel):
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
    if not SPEEDUPS:
        return njit(nogil=True, error_model="numpy", **_own_options(options))
    options = _options(allocates, options)

    def wrap(fn):
        dispatcher = njit(cache=True, nogil=True, no_cpython_wrapper=True, no_cfunc_wrapper=True, **options)(fn)
        dispatcher.__class__ = InnerKernel
        return dispatcher
    return wrap
