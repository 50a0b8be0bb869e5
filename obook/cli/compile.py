"""``obook compile``: compile every numba kernel now, so no later command waits for it."""

from __future__ import annotations

from typing import List, Optional

import typer


def compile_(
    parts: Optional[List[str]] = typer.Argument(
        None, metavar="[PART]...",
        help="What to compile: itch, pitch, csv, databento, szse, sse, captures, match, simulate, latency, live, backtest "
             "(default: all of them)."),
    all_: bool = typer.Option(False, "--all", help="Compile every part (the default without PART)."),
) -> None:
    """Compile the numba kernels ahead of use (once after installing or upgrading obook; a few
    minutes on two cores). Without it each command compiles the kernels it needs the first
    time it runs, and says so. Ends by naming the folder numba caches the kernels in."""
    import time

    from ..compiling import PARTS, cache_folder, compile_kernels
    from ..errors import ObookError

    if all_ and parts:
        raise ObookError(f"obook compile: --all compiles every part; give it or the parts ({' '.join(parts)}), "
                         "not both")
    chosen = list(PARTS) if all_ or not parts else list(dict.fromkeys(parts))     # a part named twice: once
    start = time.perf_counter()

    def said(name: str, seconds: float) -> None:
        typer.echo(f"{name}: ready ({seconds:.1f} s)", err=True)

    compile_kernels(chosen, progress=said)
    folder = cache_folder()
    typer.echo(f"compiled {len(chosen)} part{'s' if len(chosen) != 1 else ''} in "
               f"{time.perf_counter() - start:.0f} s" + (f"; the kernels are cached in {folder}" if folder else ""),
               err=True)
