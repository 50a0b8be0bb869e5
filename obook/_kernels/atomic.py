"""Atomic operations on an int64 at an address (``array.ctypes.data + 8 * i``), for kernels
that share a few words between threads: ``obook send``'s sending threads share the count of
schedule entries claimed and the count handed to the kernel.

``atomic_load`` is read anew on every call (a plain array read in a wait loop may be read
once, before the loop), ``atomic_store`` is seen by the other threads' next loads, and
``atomic_cas(addr, expected, new)`` stores ``new`` only when the word holds ``expected``,
returning what it held: the caller won when that is ``expected``. All are sequentially
consistent.
"""

from .jit import INTERPRETED

if INTERPRETED:      # one thread's Python kernels: plain reads and writes of the word
    import ctypes

    def atomic_load(addr):
        return ctypes.c_int64.from_address(addr).value

    def atomic_store(addr, value):
        ctypes.c_int64.from_address(addr).value = value

    def atomic_cas(addr, expected, new):
        word = ctypes.c_int64.from_address(addr)
        old = word.value
        if old == expected:
            word.value = new
        return old
else:
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    _I64 = ir.IntType(64)

    def _word(builder, addr):
        return builder.inttoptr(addr, _I64.as_pointer())

    @intrinsic
    def atomic_load(typingctx, addr):
        def codegen(context, builder, signature, args):
            value = builder.load_atomic(_word(builder, args[0]), "seq_cst", 8)
            return value

        return types.int64(types.int64), codegen

    @intrinsic
    def atomic_store(typingctx, addr, value):
        def codegen(context, builder, signature, args):
            builder.store_atomic(args[1], _word(builder, args[0]), "seq_cst", 8)
            return context.get_dummy_value()

        return types.none(types.int64, types.int64), codegen

    @intrinsic
    def atomic_cas(typingctx, addr, expected, new):
        def codegen(context, builder, signature, args):
            pair = builder.cmpxchg(_word(builder, args[0]), args[1], args[2], "seq_cst", "seq_cst")
            return builder.extract_value(pair, 0)

        return types.int64(types.int64, types.int64, types.int64), codegen
