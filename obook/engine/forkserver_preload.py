"""Imported by the forkserver (``set_forkserver_preload``): the kernels of the formats named in
``WARM_ENV`` (set by ``obook.engine.workers.mp_context`` as the forkserver starts) load once
there, and each worker forked from it inherits them. A compile's notice goes to stderr as
the CLI's does."""

import logging
import os

from .worker_main import warm
from .workers import WARM_ENV

logging.basicConfig(level=logging.WARNING, format="obook: %(message)s")
warm([name for name in os.environ.get(WARM_ENV, "").split(",") if name])
