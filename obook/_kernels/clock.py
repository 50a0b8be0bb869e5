"""A cycle counter for numba kernels (``llvm.readcyclecounter``: RDTSC on x86-64), so a
benchmark can time single instructions inside a kernel without leaving nopython mode
(``time.perf_counter_ns`` is not available there). Ticks, not ns: calibrate against
``time.perf_counter_ns`` (see benchmarks/bench_match.py)."""

from .jit import INTERPRETED

if INTERPRETED:
    from time import perf_counter_ns as cycles   # Python kernels: ns stand in for ticks
else:
    from llvmlite import ir
    from numba import njit, types
    from numba.extending import intrinsic

    @intrinsic
    def _readcyclecounter(typingctx):
        def codegen(context, builder, sig, args):
            i64 = ir.IntType(64)
            fn = builder.module.declare_intrinsic("llvm.readcyclecounter", fnty=ir.FunctionType(i64, ()))
            return builder.call(fn, ())

        return types.int64(), codegen

    @njit(cache=True, _nrt=False, inline="always")
    def cycles():
        """The CPU's cycle counter (not serializing: an instruction's cost is blurred by a few ns)."""
        return _readcyclecounter()
