"""Imported by the forkserver (``set_forkserver_preload``): every format's kernels load once
there, and each worker forked from it inherits them."""

from .worker_main import warm

warm()
