"""A byte copy for numba kernels (llvm.memcpy): numba compiles ``out[a:b] = buf[q:e]`` to a
loop of single bytes (~1.3 GB/s here); the capture stream copies its messages with this
instead (~3 GB/s, benchmarks/bench_pcap.py)."""

from .jit import INTERPRETED

if INTERPRETED:
    def copy_bytes(dst, dst_at, src, src_at, n):
        """dst[dst_at:dst_at+n] = src[src_at:src_at+n]."""
        dst[dst_at:dst_at + n] = src[src_at:src_at + n]
else:
    from numba import njit, types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def _memcpy(typingctx, dst, dst_at, src, src_at, n):
        if not (isinstance(dst, types.Array) and isinstance(src, types.Array)):
            return None

        def codegen(context, builder, sig, args):
            d, d_at, s, s_at, count = args
            d_arr = context.make_array(sig.args[0])(context, builder, d)
            s_arr = context.make_array(sig.args[2])(context, builder, s)
            cgutils.raw_memcpy(builder, builder.gep(d_arr.data, [d_at]), builder.gep(s_arr.data, [s_at]), count, 1)
            return context.get_dummy_value()

        return types.void(dst, types.intp, src, types.intp, types.intp), codegen

    @njit(cache=True, nogil=True, inline="always")
    def copy_bytes(dst, dst_at, src, src_at, n):
        """dst[dst_at:dst_at+n] = src[src_at:src_at+n] for C-contiguous uint8 arrays; the caller
        keeps both ranges inside their arrays (no bounds check)."""
        _memcpy(dst, dst_at, src, src_at, n)
