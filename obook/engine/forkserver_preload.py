"""Imported by the forkserver (``set_forkserver_preload``): the kernels of the formats named in
``WARM_ENV`` (set by ``obook.engine.workers.mp_context`` as the forkserver starts) load once
there, and each worker forked from it inherits them. A compile's notice goes to stderr as
the CLI's does.

The forkserver ignores Ctrl-C once it runs (its parent handles it). It is started with
Ctrl-C, SIGTERM and SIGHUP blocked (``obook.engine.workers._starting``): Ctrl-C and a closed
terminal, which the parent answers by stopping it, are ignored here, before the kernels load,
then the three unblocked; otherwise a Ctrl-C to the terminal's process group while it imports
ends the forkserver with a KeyboardInterrupt traceback on stderr."""

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM, signal.SIGHUP))

import logging  # noqa: E402
import os  # noqa: E402

from .worker_main import warm  # noqa: E402
from .workers import WARM_ENV

logging.basicConfig(level=logging.WARNING, format="obook: %(message)s")
warm([name for name in os.environ.get(WARM_ENV, "").split(",") if name])
