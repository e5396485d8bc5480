"""A cache prefetch hint for compiled kernels (LLVM's ``llvm.prefetch``): fetching the
rows a kernel will read next hides memory latency on large models."""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.extending import intrinsic


@intrinsic
def prefetch(typingctx, arr, idx):
    """Hint the cache to fetch the element at flat index ``idx`` of a contiguous array
    (a hint only: an index past the end is harmless)."""
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        i = context.cast(builder, args[1], signature.args[1], types.intp)
        i8p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i8p, ir.IntType(32), ir.IntType(32), ir.IntType(32)])
        name = "llvm.prefetch.p0" if str(i8p) == "ptr" else "llvm.prefetch.p0i8"    # opaque / typed pointers
        fn = cgutils.get_or_insert_function(builder.module, fnty, name)
        i32 = ir.IntType(32)
        # read access, high locality, data cache
        builder.call(fn, [builder.bitcast(builder.gep(ary.data, [i]), i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return sig, codegen
