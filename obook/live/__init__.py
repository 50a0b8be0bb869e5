"""The live path: a simulated exchange sending a day as MoldUDP64 on two lines
(``send``), a listener that arbitrates them, asks for what both lost and replays the result
through obook's engine into tables (``listen``), the tick-to-trade chain behind it (a
strategy hook, a risk gate, an OUCH 5.0 gateway over SoupBinTCP and a simulated venue) and
latency histograms of every stage.

Everything here is loaded on use: ``import obook`` imports none of it.
"""

from __future__ import annotations

__all__ = ["listen"]


def listen(*args, **kwargs):
    """See :func:`obook.live.listener.listen`."""
    from .listener import listen as _listen

    return _listen(*args, **kwargs)
