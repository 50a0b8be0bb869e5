"""The ``obook`` logger's own handler: what the kernels' compiling and cache say reaches the
user even when the application configures no logging.

A kernel missing from the cache compiles on its first call, a wait of up to a minute or two
(``obook._kernels.cached_load`` warns once per kind of kernel). A library's warnings go to
its logger and stay there until the application configures logging, so a script or a
notebook would wait in silence. This handler writes the warnings of ``obook/_kernels``
(compiling, a cache folder it may not use) to stderr as ``obook: ...`` while no other
handler would show them; every other record of the ``obook`` logger stays on the logger
(``logging.basicConfig()`` shows them). A logger level the application sets is obeyed.
"""

from __future__ import annotations

import logging
import os
import sys

#: the directory whose modules' warnings this handler says
KERNELS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_kernels")


class CompileNotes(logging.Handler):
    """Writes the warnings logged by ``obook/_kernels`` modules to stderr when no other
    handler of the logger's hierarchy would."""

    def __init__(self):
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        if os.path.dirname(os.path.abspath(record.pathname)) != KERNELS_DIR or self._shown_elsewhere(record.name):
            return
        try:
            sys.stderr.write(f"obook: {record.getMessage()}\n")
            sys.stderr.flush()
        except (OSError, ValueError):   # stderr closed: nothing more to say
            pass

    def _shown_elsewhere(self, name: str) -> bool:
        """Whether a handler other than this one and the null handlers takes the record (as
        ``logging.Logger.callHandlers`` walks the hierarchy)."""
        logger: logging.Logger | None = logging.getLogger(name)
        while logger is not None:
            if any(h is not self and not isinstance(h, logging.NullHandler) for h in logger.handlers):
                return True
            if not logger.propagate:
                return False
            logger = logger.parent
        return False


def install() -> None:
    """Give the ``obook`` logger its handler (once)."""
    logger = logging.getLogger("obook")
    if not any(isinstance(h, CompileNotes) for h in logger.handlers):
        logger.addHandler(CompileNotes())
