"""Postpone-bucket compaction against DuckDB, for benches/README.md ("Postpone buckets").

pypaimon 2.1 writes a `bucket = -2` table in C commits of R/C rows each (overlapping keys, so
later commits update earlier rows), twice: with its default Avro postpone files and with
`file.format = parquet`. We compact each (the replay into `postpone.default-bucket-num = 4`
buckets, then their compaction) natively and in the component; DuckDB (`SET threads=1`, in the
same run) does the comparable work on the Parquet variant: the newest record of each key
(by commit, then sequence), sorted by key, written as zstd Parquet. Nothing else compacts a
postpone table here: Paimon Java 1.0 has no postpone buckets and pypaimon cannot compact them.
pypaimon reads every compacted table back and must see one row per key.

    python benches/merge/postpone.py --rows 2000000 --commits 10
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
import table as pk_table  # noqa: E402  (its venv and commit helper)

DUCKDB = r"""
import duckdb, json, resource, sys, time
files, out = json.loads(sys.argv[1]), sys.argv[2]
con = duckdb.connect()
con.execute("SET threads=1")
con.execute("SET enable_progress_bar=false")
src = " UNION ALL ".join(f"SELECT *, {i} AS _f FROM read_parquet('{f}')" for i, f in enumerate(files))
q = (f"SELECT * EXCLUDE (_f) FROM ({src}) QUALIFY row_number() OVER "
     "(PARTITION BY _KEY_k ORDER BY _f DESC, _SEQUENCE_NUMBER DESC) = 1 ORDER BY _KEY_k")
r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
con.execute(f"COPY ({q}) TO '{out}' (FORMAT parquet, COMPRESSION zstd)")
t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
rows = con.execute(f"SELECT count(*) FROM read_parquet('{out}')").fetchone()[0]
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print(json.dumps({"wall": t1 - t0, "cpu": cpu, "rss_mb": r1.ru_maxrss / 1024, "rows": rows}))
"""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def generate(warehouse: Path, rows: int, commits: int, options, seed: int = 7) -> int:
    """pypaimon writes the 6-column primary-key table `db.t` in `commits` commits of
    `rows / commits` rows (a quarter updating earlier keys); `options` are the table's, over a
    postpone bucket's defaults. Also used by `orc.py`."""
    import numpy as np
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema

    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("ts", pa.int64()),
                        ("qty", pa.int32()), ("price", pa.float64()),
                        ("category", pa.string()), ("note", pa.string())])
    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(
        schema, primary_keys=["k"],
        options={"bucket": "-2", "postpone.default-bucket-num": "4", **options}), False)
    table = catalog.get_table("db.t")
    rng = np.random.default_rng(seed)
    per = rows // commits
    keys = rows * 3 // 4  # a quarter of the rows update earlier keys
    categories = np.array([f"category-{i:02d}" for i in range(40)], dtype=object)
    for c in range(commits):
        k = rng.integers(0, keys, per, dtype=np.int64)
        k = np.unique(k)  # one record per key and commit, as a writer's buffer leaves it
        batch = pa.table({
            "k": pa.array(k), "ts": pa.array(k * 10 + c),
            "qty": pa.array(rng.integers(0, 100, len(k), dtype=np.int32)),
            "price": pa.array(np.round(rng.random(len(k)) * 1000, 2)),
            "category": pa.array(categories[rng.integers(0, 40, len(k))], pa.string()),
            "note": pa.array([f"note-{c}-{x:012d}" for x in k.tolist()], pa.string()),
        }, schema=schema)
        pk_table.commit_batch(table, batch)
        log(f"  commit {c + 1}/{commits}: {len(k)} rows")
    return keys


def read_back(warehouse: Path) -> tuple:
    from pypaimon import CatalogFactory

    t = CatalogFactory.create({"warehouse": str(warehouse)}).get_table("db.t")
    rb = t.new_read_builder()
    data = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return data.num_rows, len(set(data.column("k").to_pylist()))


def ours(cli, engine, table_dir: Path, work: Path):
    if engine == "wasm":
        subprocess.run([cli, "--engine", engine, "info"], check=True, capture_output=True)
    stats = work / f"time-{engine}.txt"
    cmd = ["/usr/bin/time", "-o", str(stats), "-f", "%e %U %S %M", cli, "--engine", engine,
           "compact", str(table_dir), "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{engine} failed: {p.stdout} {p.stderr}")
    wall, user, sys_, rss_kb = stats.read_text().split()[-4:]
    return {"wall": float(wall), "cpu": float(user) + float(sys_), "rss_mb": int(rss_kb) / 1024}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--commits", type=int, default=10)
    ap.add_argument("--work", default="target/postpone-bench")
    ap.add_argument("--cli", default=str(Path(os.environ.get("CARGO_TARGET_DIR", "target"))
                                         / "release" / "paimon-compact"))
    args = ap.parse_args()
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    pk_table.in_venv(work, extra=("duckdb",))
    results = {}
    for variant, options in (("avro", {}), ("parquet", {"file.format": "parquet"})):
        source = work / f"source-{variant}"
        if not source.exists():
            log(f"writing the {variant} table")
            generate(source, args.rows, args.commits, options)
        table = source / "db.db" / "t"
        files = sorted((table / "bucket-postpone").glob("*"), key=os.path.getmtime)
        size = sum(os.path.getsize(f) for f in files)
        log(f"{variant}: {len(files)} postpone files, {size / 1e6:.1f} MB")
        for engine in ("native", "wasm"):
            copy = work / f"run-{variant}-{engine}"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(source, copy)
            r = ours(args.cli, engine, copy / "db.db" / "t", work)
            rows, distinct = read_back(copy)
            assert rows == distinct, (variant, engine, rows, distinct)
            r["rows"] = rows
            results[f"ours {engine}, {variant}"] = r
            log(f"  ours {engine}: {r}")
        if variant == "parquet":
            out = work / "duckdb.parquet"
            p = subprocess.run([sys.executable, "-c", DUCKDB, json.dumps([str(f) for f in files]),
                                str(out)], capture_output=True, text=True, check=True)
            d = json.loads(p.stdout.strip().splitlines()[-1])
            assert d["rows"] == results["ours native, parquet"]["rows"], d
            results["duckdb, parquet"] = d
            log(f"  duckdb: {d}")
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
