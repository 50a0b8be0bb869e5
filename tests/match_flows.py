"""Random order-entry flows with every order type, modify kind and bad instruction."""

from __future__ import annotations

import random

import pyarrow as pa

COLUMNS = ("time", "instrument", "order_id", "action", "side", "type", "tif", "price", "quantity", "owner")


def random_flow(seed: int, n: int, instruments=("AAA", "BBB", "CCC"), tick: int = 1, bad: bool = True,
                owners: int = 3) -> list[dict]:
    rnd = random.Random(seed)
    ids = {i: [] for i in instruments}
    nxt = {i: 1 for i in instruments}
    rows = []
    for t in range(n):
        inst = rnd.choice(instruments)
        if bad and rnd.random() < 0.01:
            inst = "ZZZ"                      # unknown when instruments= is given
        u = rnd.random()
        mid = 1000
        row = {"time": 1000 + t * 3, "instrument": inst, "order_id": None, "action": "new", "side": None,
               "type": None, "tif": None, "price": None, "quantity": None,
               "owner": rnd.randrange(owners + 1) if owners else None}
        if u < 0.55 or not ids.get(inst):
            side = rnd.choice(("buy", "sell"))
            d = rnd.randrange(-3, 12)         # a few cross the mid
            row.update(side=side, quantity=rnd.randrange(1, 40),
                       price=(mid - d if side == "buy" else mid + d) * tick,
                       tif=rnd.choice(("GTC", "GTC", "DAY", "IOC", "FOK", None)))
            if rnd.random() < 0.08:
                row.update(type="market", price=None)
            elif rnd.random() < 0.5:
                row["type"] = "limit"
            if rnd.random() < 0.9 or not ids.get(inst):
                row["order_id"] = nxt.setdefault(inst, 1)
                nxt[inst] += 1
                if rnd.random() < 0.03 and ids.get(inst):
                    row["order_id"] = rnd.choice(ids[inst])      # duplicate
            if bad and rnd.random() < 0.03:
                row["quantity"] = rnd.choice((0, -5))
            if bad and tick > 1 and row["price"] is not None and rnd.random() < 0.03:
                row["price"] += 1                                 # off the tick
            if bad and rnd.random() < 0.01 and row["type"] != "market":
                row["price"] = None                               # limit without a price
            if row["order_id"] is not None:
                ids.setdefault(inst, []).append(row["order_id"])
        elif u < 0.8:
            row.update(action="cancel", order_id=rnd.choice(ids[inst]) if rnd.random() < 0.95 else 99_999)
        else:
            row.update(action="modify", order_id=rnd.choice(ids[inst]) if rnd.random() < 0.95 else 99_999)
            k = rnd.random()
            if k < 0.3:
                row["quantity"] = rnd.randrange(1, 20)            # maybe a reduction at the same price
            elif k < 0.7:
                row.update(price=(mid + rnd.randrange(-8, 9)) * tick, quantity=rnd.randrange(1, 50))
            elif k < 0.85:
                row["price"] = (mid + rnd.randrange(-8, 9)) * tick
            else:
                row["quantity"] = rnd.choice((0, 60))
        rows.append(row)
    return rows


def whole_instructions(orders, tick: int = 1, instruments=None) -> tuple:
    """(plan, instructions): obook.matching.prepare's plan of the instructions ``orders``
    (obook.feeds.orders' Orders) and every row's kernel instructions, made as one chunk."""
    from obook.matching.prepare import plan

    prep = plan(orders, tick, instruments)
    parts = list(prep.chunks(max(orders.n, 1)))
    assert len(parts) == (orders.n > 0)
    return prep, parts[0]


def to_table(rows: list[dict]) -> pa.Table:
    types = {"time": pa.int64(), "instrument": pa.string(), "order_id": pa.int64(), "action": pa.string(),
             "side": pa.string(), "type": pa.string(), "tif": pa.string(), "price": pa.int64(),
             "quantity": pa.int64(), "owner": pa.int64()}
    return pa.table({c: pa.array([r.get(c) for r in rows], types[c]) for c in COLUMNS})


def tuples(table: pa.Table) -> list[tuple]:
    cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return list(zip(*cols))


def csv_with_bad_row(path, seed: int, n: int, bad_row: int):
    """A CSV of ``random_flow(seed, n, bad=False)`` whose row ``bad_row`` (1-based) has the
    price "abc": match() raises naming that row, the rows before it in ``partial``."""
    import pyarrow.csv as pcsv

    pcsv.write_csv(to_table(random_flow(seed, n, tick=1, bad=False)), path)
    lines = path.read_text().splitlines()
    fields = lines[bad_row].split(",")
    fields[COLUMNS.index("price")] = "abc"
    lines[bad_row] = ",".join(fields)
    path.write_text("\n".join(lines) + "\n")
    return path
