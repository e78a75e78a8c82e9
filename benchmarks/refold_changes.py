"""How much of what a refold rewrote had changed: two commits of one warehouse compared row for
row (DuckDB over the committed files, no Spark), table by table, for the partitions from FIRST on.

    python benchmarks/refold_changes.py WAREHOUSE BEFORE_SEQ AFTER_SEQ FIRST [--buckets 1,16,64,256]

For each fold output it prints the rows AFTER_SEQ holds from FIRST on, how many of them are not
in BEFORE_SEQ (new or changed), how many partitions hold a changed row, and, for each bucket
count N, how many rows a writer that kept every unchanged file would still rewrite if each
partition were cut into N files by a hash of the row's key (a file is rewritten when it holds a
row that changed, was added or was removed). Not a test.

`benchmarks/pipeline.py --cases b,c --work DIR` leaves DIR/wh_b with case b's fold and case c's
refold: the two commits of `_commits/` whose `info.operation` is `lineage_fold` (3 and 7 there);
case c refolds from 2025-10-27.
"""

from __future__ import annotations

import argparse
import datetime as dt

import duckdb

from checkout import use_this_checkout

use_this_checkout()  # before lineage_assets is imported

from lineage_assets.warehouse import commits  # noqa: E402
from lineage_assets.warehouse import tables as t  # noqa: E402


def _quoted(columns) -> str:
    return ", ".join(f'"{c}"' for c in columns)


def compare_table(con: duckdb.DuckDBPyConnection, before: commits.Commit, after: commits.Commit, name: str,
                  first: dt.date, buckets: list[int]) -> dict | None:
    """The figures of one table, or None when AFTER holds no rows of it from `first` on."""
    table = t.get(name)
    day = table.day_column
    columns = _quoted(table.column_names)
    key = f"hash({_quoted(list(table.keys) or [c for c in table.column_names if c != day])})"
    since = f"WHERE \"{day}\" >= DATE '{first}'"
    con.execute(f"CREATE OR REPLACE TEMP TABLE new AS SELECT {columns} FROM ({commits.duckdb_relation_sql(after, name)}) {since}")
    con.execute(f"CREATE OR REPLACE TEMP TABLE old AS SELECT {columns} FROM ({commits.duckdb_relation_sql(before, name)}) {since}")
    rows = con.execute("SELECT count(*) FROM new").fetchone()[0]
    if rows == 0:
        return None
    con.execute("CREATE OR REPLACE TEMP TABLE added AS SELECT * FROM new EXCEPT ALL SELECT * FROM old")  # new or changed
    con.execute("CREATE OR REPLACE TEMP TABLE moved AS SELECT * FROM added UNION ALL (SELECT * FROM old EXCEPT ALL SELECT * FROM new)")
    changed = con.execute("SELECT count(*) FROM added").fetchone()[0]
    partitions = con.execute(f'SELECT count(DISTINCT "{day}") FROM new').fetchone()[0]
    touched = con.execute(f'SELECT count(DISTINCT "{day}") FROM moved').fetchone()[0]
    rewritten = {}
    for n in buckets:
        rewritten[n] = con.execute(
            f'WITH hit AS (SELECT DISTINCT "{day}" AS p, {key} % {n} AS b FROM moved) '
            f'SELECT count(*) FROM new JOIN hit ON new."{day}" = hit.p AND {key} % {n} = hit.b'
        ).fetchone()[0]
    return {"rows": rows, "changed": changed, "partitions": partitions, "touched": touched, "rewritten": rewritten}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("warehouse")
    parser.add_argument("before", type=int, help="the commit before the refold (its sequence number)")
    parser.add_argument("after", type=int, help="the refold's commit")
    parser.add_argument("first", type=dt.date.fromisoformat, help="the refold's first day")
    parser.add_argument("--buckets", default="1,16,64,256", help="files per partition to try, comma-separated")
    args = parser.parse_args()
    buckets = [int(b) for b in args.buckets.split(",")]
    before, after = commits.read_commit(args.warehouse, args.before), commits.read_commit(args.warehouse, args.after)
    con = duckdb.connect()
    totals = {"rows": 0, "changed": 0, "rewritten": dict.fromkeys(buckets, 0)}
    print(f"{'table':24s} {'rows':>9s} {'changed':>8s} {'partitions':>10s}  " + "  ".join(f"rewritten@{n}" for n in buckets))
    for name in t.FOLD_OUTPUTS:
        found = compare_table(con, before, after, name, args.first, buckets)
        if found is None:
            continue
        totals["rows"] += found["rows"]
        totals["changed"] += found["changed"]
        for n in buckets:
            totals["rewritten"][n] += found["rewritten"][n]
        print(f"{name:24s} {found['rows']:9d} {found['changed']:8d} {found['touched']:4d} of {found['partitions']:3d}  "
              + "  ".join(f"{found['rewritten'][n]:12d}" for n in buckets), flush=True)
    rows = max(totals["rows"], 1)
    print(f"\nrows from {args.first} on: {totals['rows']:,}; new or changed: {totals['changed']:,} "
          f"({100 * totals['changed'] / rows:.1f}%); identical to a row they replace: {totals['rows'] - totals['changed']:,}")
    for n in buckets:
        print(f"kept files, {n:3d} per partition: {totals['rewritten'][n]:,} rows rewritten ({100 * totals['rewritten'][n] / rows:.1f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
