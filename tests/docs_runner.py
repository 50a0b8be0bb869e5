"""Runs a page's consecutive Python and SQL blocks in one process (tests/test_docs_examples.py).

    python tests/docs_runner.py BLOCKS.json

BLOCKS.json: a list of {"where", "lang", "code"}. The
Python blocks share one ``__main__`` namespace, as in one interpreter session (a later
block sees what an earlier one defined); each SQL block runs on a fresh ``obook.connect()``. The
first failure prints ``FAILED <where>`` and its traceback and exits 1.
"""

from __future__ import annotations

import json
import sys
import traceback


def run_sql(code: str) -> None:
    import obook

    con = obook.connect()
    result = con.sql(code)
    if result is not None:
        print(result.limit(20))


def main(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        todo = json.load(f)
    namespace = {"__name__": "__main__"}
    for block in todo:
        print(f"--- {block['where']} ({block['lang']})", flush=True)
        try:
            if block["lang"] == "python":
                exec(compile(block["code"], block["where"], "exec"), namespace)
            else:
                run_sql(block["code"])
        except BaseException:      # noqa: BLE001 - a SystemExit of a block is a failure too
            sys.stdout.flush()
            print(f"FAILED {block['where']}", file=sys.stderr)
            traceback.print_exc()
            return 1
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
