"""obook.connect() keeps its helper views out of the user's catalog: SHOW TABLES, the
default schema's information_schema.tables and duckdb_tables()/duckdb_views() list only
the user's objects, in memory and in a database file."""

from __future__ import annotations

import obook
from frontend_feeds import SMALL_BBO, write_small_feed

_DEFAULT = "database_name = current_database() AND schema_name = current_schema()"


def _listed(con) -> dict:
    def names(query):
        return sorted(r[0] for r in con.sql(query).fetchall())

    return {"show": names("SHOW TABLES"),
            "information_schema": names("SELECT table_name FROM information_schema.tables WHERE "
                                        "table_catalog = current_database() AND table_schema = current_schema()"),
            "tables+views": names(f"SELECT table_name FROM duckdb_tables() WHERE {_DEFAULT} UNION ALL "
                                  f"SELECT view_name FROM duckdb_views() WHERE NOT internal AND {_DEFAULT}"),
            "temp": [r[0] for r in con.sql("SELECT view_name FROM duckdb_views() "
                                          "WHERE NOT internal AND database_name = 'temp'").fetchall()]}


def test_duckdb_catalog_connect_lists_no_helper_tables(tmp_path):
    feed = tmp_path / "day.itch"
    write_small_feed(feed)
    con = obook.connect()
    try:
        assert _listed(con) == {"show": [], "information_schema": [], "tables+views": [], "temp": []}
        con.execute(f"CREATE TABLE q AS SELECT * FROM obook_bbo('{feed}')")
        con.execute("CREATE VIEW v AS SELECT * FROM q")
        assert _listed(con) == dict.fromkeys(("show", "information_schema", "tables+views"), ["q", "v"]) | {"temp": []}
        assert con.sql("SELECT count(*) FROM v").fetchall() == [(len(SMALL_BBO),)]
        assert con.sql("SELECT current_database(), current_schema()").fetchall() == [("memory", "main")]
    finally:
        con.close()


def test_duckdb_catalog_file_database_keeps_only_user_tables(tmp_path):
    feed, db = tmp_path / "day.itch", str(tmp_path / "x.duckdb")
    write_small_feed(feed)
    con = obook.connect(db)
    try:
        assert con.sql("SELECT current_database()").fetchall() == [("x",)]
        con.execute(f"CREATE TABLE bbo AS SELECT * FROM obook_bbo('{feed}')")
        cur = con.cursor()
        obook.duckdb.install(cur)         # a second install on the same database
        assert _listed(cur)["show"] == ["bbo"]
        assert cur.sql(f"SELECT count(*) FROM obook_spread('{feed}')").fetchall() == [(len(SMALL_BBO),)]
        cur.close()
        assert _listed(con) == dict.fromkeys(("show", "information_schema", "tables+views"), ["bbo"]) | {"temp": []}
    finally:
        con.close()
    import duckdb

    plain = duckdb.connect(db)      # the file holds the user's table alone
    try:
        assert [r[0] for r in plain.sql("SHOW TABLES").fetchall()] == ["bbo"]
    finally:
        plain.close()


def test_duckdb_catalog_read_only_database_still_gets_the_macros(tmp_path):
    import duckdb

    feed, db = write_small_feed(tmp_path / "day.itch"), str(tmp_path / "ro.duckdb")
    plain = duckdb.connect(db)
    plain.execute("CREATE TABLE t AS SELECT 1 AS a")
    plain.close()
    con = obook.connect(db, read_only=True)
    try:
        assert _listed(con)["show"] == ["t"]
        assert con.sql(f"SELECT count(*) FROM obook_bbo('{feed}')").fetchall() == [(len(SMALL_BBO),)]
    finally:
        con.close()
