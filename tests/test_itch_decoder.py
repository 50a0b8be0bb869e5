"""The ITCH decoder's event rows (obook.feeds.itch.decoder)."""

from __future__ import annotations

import numpy as np

from obook._kernels.layout import EV_ACTION, EV_AUX, EV_WIDTH, TYPE_SHIFT
from obook.feeds.itch.decoder import ItchDecoder

from itch_builder import ItchBuilder


def test_itch_decoder_any_events_array_execution_price_set_on_every_event():
    """EV_AUX is written on every event, whatever the events array held: a C's execution
    price, else 0 (an E executes at the resting order's price); the simulation reads it as
    a call auction's price."""
    b = ItchBuilder()
    b.directory(1, "AAA")
    b.add(1, 10, "B", 100, 5000)
    b.execute(1, 10, 20)
    b.execute_price(1, 10, 30, 4900)
    b.cancel(1, 10, 5)
    b.replace(1, 10, 11, 40, 5100)
    b.delete(1, 11)
    buf = np.frombuffer(b.bytes(), np.uint8)
    ev = np.full((16, EV_WIDTH), 777, np.int64)
    res = ItchDecoder("x.itch", 0, 1).decode(buf, 1, ev)
    letters = [chr((int(a) >> TYPE_SHIFT) & 0xFF) for a in ev[:res.n_events, EV_ACTION]]
    assert letters == ["A", "E", "C", "X", "U", "D"]
    assert ev[:res.n_events, EV_AUX].tolist() == [0, 0, 4900, 0, 0, 0]
