"""Calls from numba kernels to C functions by address: the C library's socket calls
(``recvmmsg``, ``send``, ``poll``), its clock, and compiled strategies' entries (the live
loop's, and the backtest's ``call_strategy``); ``peek_i32`` reads a C ``int`` by address
(the errno ``__errno_location()`` points to).

The addresses are kernel arguments (int64), not globals, so the kernels that use them stay
in numba's cache (a ctypes function baked into the code would be an address of one process).
Every argument is passed as a 64-bit integer (pointers included: ``array.ctypes.data``); a C
``int`` parameter reads the low half of its register, so this is exact for the x86-64 and
AArch64 calling conventions the live path runs on.
"""

from .jit import INTERPRETED

if INTERPRETED:      # no machine code to call from Python kernels: the live loop needs numba
    _NEEDS_NUMBA = "the compiled live loop needs numba's kernels (OBOOK_KERNELS=python or NUMBA_DISABLE_JIT is set)"

    def ccall(addr, a0, a1, a2, a3, a4):
        raise RuntimeError(_NEEDS_NUMBA)

    ccall_int = ccall

    def peek_i32(addr):
        raise RuntimeError(_NEEDS_NUMBA)

    def ccall9(addr, a0, a1, a2, a3, a4, a5, a6, a7, a8):
        raise RuntimeError(_NEEDS_NUMBA)

    #: Python kernels: a backtest strategy's "address" is its key here (obook.backtest.entry)
    ENTRIES: dict = {}

    #: the exception the last strategy call raised (its call row's C_RAISED then set)
    RAISED: list = [None]

    def call_strategy(addr, c, lo, refkey, state, out):
        """A backtest's compiled strategy, as the Python function it is written as (one that
        raises sets its call row's C_RAISED, as the compiled entry does; RAISED keeps what
        it raised)."""
        from .backtest_layout import C_RAISED, C_WIDTH

        try:
            return ENTRIES[addr](c[:C_WIDTH], lo, refkey, state, out)
        except Exception as e:
            RAISED[0] = e
            c[C_RAISED] = 1
            return 0
else:
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    def _caller(n_args: int, int_result: bool):
        def typer(typingctx, addr, *args):
            sig = types.int64(*([types.int64] * (n_args + 1)))

            def codegen(context, builder, signature, llargs):
                i64, i32 = ir.IntType(64), ir.IntType(32)
                fnty = ir.FunctionType(i32 if int_result else i64, [i64] * n_args)
                fn = builder.inttoptr(llargs[0], fnty.as_pointer())
                out = builder.call(fn, llargs[1:])
                return builder.sext(out, i64) if int_result else out

            return sig, codegen
        return typer

    def _intrinsic(n_args: int, int_result: bool, name: str):
        names = ", ".join(f"a{i}" for i in range(n_args))
        ns = {"inner": _caller(n_args, int_result)}
        exec(f"def {name}(typingctx, addr, {names}):\n    return inner(typingctx, addr, {names})", ns)
        return intrinsic(ns[name])

    #: ``ccall(addr, a0..a4)``: a C function returning a 64-bit value (ssize_t, a pointer)
    ccall = _intrinsic(5, False, "ccall")
    #: the same for a C function returning ``int`` (sign-extended)
    ccall_int = _intrinsic(5, True, "ccall_int")
    #: nine arguments, 64-bit result (a compiled strategy's entry)
    ccall9 = _intrinsic(9, False, "ccall9")

    @intrinsic
    def peek_i32(typingctx, addr):
        """The C ``int`` at address ``addr`` (sign-extended): what ``__errno_location()``
        points to, the calling thread's errno."""
        sig = types.int64(types.int64)

        def codegen(context, builder, signature, llargs):
            p = builder.inttoptr(llargs[0], ir.IntType(32).as_pointer())
            return builder.sext(builder.load(p), ir.IntType(64))

        return sig, codegen

    from .jit import njit

    @njit(cache=True, _nrt=False, inline="always")
    def call_strategy(addr, c, lo, refkey, state, out):
        """A backtest's compiled strategy ``n = fn(c, lo, refkey, state, out)`` through its C
        entry at ``addr`` (obook.backtest.entry: the arrays as pointers and row counts)."""
        return ccall9(addr, c.ctypes.data, lo.ctypes.data, lo.shape[0], refkey.ctypes.data, refkey.shape[0],
                      state.ctypes.data, state.shape[0], out.ctypes.data, out.shape[0])
