"""A software prefetch for numba kernels (llvm.prefetch): memory here costs ~200 ns a
miss beyond L2, so the book kernel touches the rows of upcoming events ahead of time."""

from .jit import INTERPRETED

if INTERPRETED:
    def prefetch(arr, flat_index):
        """Python kernels: nothing to prefetch."""
else:
    from llvmlite import ir
    from numba import njit, types
    from numba.extending import intrinsic

    @intrinsic
    def _prefetch_address(typingctx, address):
        if not isinstance(address, types.Integer):
            return None

        def codegen(context, builder, sig, args):
            i32 = ir.IntType(32)
            i8p = ir.IntType(8).as_pointer()
            fn = builder.module.declare_intrinsic(
                "llvm.prefetch.p0", fnty=ir.FunctionType(ir.VoidType(), (i8p, i32, i32, i32)))
            ptr = builder.inttoptr(args[0], i8p)
            # read, high temporal locality (keep in all cache levels), data cache
            builder.call(fn, (ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)))
            return context.get_dummy_value()

        return types.void(types.uintp), codegen

    @njit(cache=True, _nrt=False, inline="always")
    def prefetch(arr, flat_index):
        """Prefetch element flat_index of a C-contiguous array (no bounds check needed)."""
        _prefetch_address(arr.ctypes.data + arr.itemsize * flat_index)
