#!/usr/bin/env python3
"""Whole-table compaction against DuckDB, on tables pypaimon writes, in one run.

Usage (from the repository root):
    python3 benches/table/run.py [--work target/table-bench] [--repeat 3]
                                 [--append-rows 2500000] [--append-commits 10]
                                 [--pk-rows 6600000] [--pk-commits 12]
                                 [--cli target/release/paimon-compact] [--engine wasm]
                                 [--only append|pk] [--generate-only]

pypaimon 2.1 (PyPI, installed with duckdb into <work>/venv on first use; the script re-runs
itself there) writes two tables once:
- an append table (unaware bucket): `--append-commits` commits of an id, a timestamp, a
  quantity, a price, a category of 40 values and a high-cardinality string (a 32-character hex
  id, the column that made the table path slower than the file benches), zstd, one file per
  commit;
- a primary-key table: `benches/merge/table.py`'s generator (one bucket, `--pk-commits`
  commits, the first inserting, each later one 65% new keys, 30% updates, 5% deletes).

Each round copies a table afresh (not measured), then runs, alternating:
- `paimon-compact [--engine E] compact <copy> --full --json` as its own process (wall, CPU
  and peak RSS by /usr/bin/time: the whole process, its start included; the component is
  compiled into the cache before the first round, as an installed CLI's is);
- DuckDB (`SET threads=1`) over the same live data files, in its own process: for the append
  table `COPY (SELECT * FROM read_parquet([...])) TO ... (FORMAT parquet, COMPRESSION zstd)`,
  for the primary-key table the newest record of each key (`QUALIFY row_number() OVER
  (PARTITION BY _KEY_k ORDER BY _SEQUENCE_NUMBER DESC) = 1`) without deletes and retractions
  (`_VALUE_KIND IN (0, 2)`). DuckDB's time is the query's, measured inside its process (its
  interpreter, import and connection are left out, which favours DuckDB).

Both results are checked: pypaimon reads our table back, and DuckDB's output holds the same
number of rows. Medians over `--repeat` rounds are printed with our job's phase times
(scan and plan, lease, rewrite, commit; from the `--json` report), the rest of our wall time
being the process (start, component instantiation, maintenance, exit). Figures and commands:
benches/README.md, "Whole tables against DuckDB".
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benches" / "merge"))
import table as pk_table  # noqa: E402  (benches/merge/table.py: its venv, writes, generator)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def generate_append(warehouse: Path, rows: int, commits: int) -> int:
    import numpy as np
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema

    schema = pa.schema([("id", pa.int64()), ("ts", pa.int64()), ("qty", pa.int32()),
                        ("price", pa.float64()), ("category", pa.string()),
                        ("trace", pa.string())])
    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(
        schema, options={"bucket": "-1", "file.compression": "zstd"}), False)
    table = catalog.get_table("db.t")
    rng = np.random.default_rng(11)
    categories = np.array([f"category-{i:02d}" for i in range(40)], dtype=object)
    per = rows // commits
    for c in range(commits):
        ids = np.arange(c * per, (c + 1) * per, dtype=np.int64)
        trace = rng.integers(0, 2**63 - 1, size=(per, 2), dtype=np.int64)
        batch = pa.table({
            "id": pa.array(ids), "ts": pa.array(ids * 1000 + c),
            "qty": pa.array(rng.integers(0, 100, per, dtype=np.int32)),
            "price": pa.array(np.round(rng.random(per) * 1000, 2)),
            "category": pa.array(categories[rng.integers(0, 40, per)], pa.string()),
            "trace": pa.array([f"{a:016x}{b:016x}" for a, b in trace.tolist()], pa.string()),
        }, schema=schema)
        pk_table.commit_batch(table, batch)
        log(f"  append commit {c + 1}/{commits}: {per} rows")
    return per * commits


def read_back_count(warehouse: Path) -> int:
    from pypaimon import CatalogFactory

    t = CatalogFactory.create({"warehouse": str(warehouse)}).get_table("db.t")
    rb = t.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits()).num_rows


def data_files(table_dir: Path):
    """The data files of a table no job has compacted yet: every one is live."""
    return sorted(str(p) for p in table_dir.glob("bucket-*/*.parquet"))


def find(obj, key):
    """The first value of `key` anywhere in a JSON document (the report nests the job's)."""
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        obj = list(obj.values())
    if isinstance(obj, list):
        for v in obj:
            found = find(v, key)
            if found is not None:
                return found
    return None


def ours(cli, engine, table_dir: Path, work: Path):
    stats = work / "time-ours.txt"
    cmd = ["/usr/bin/time", "-o", str(stats), "-f", "%e %U %S %M", cli,
           "--engine", engine,
           "compact", str(table_dir), "--full", "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"paimon-compact failed: {p.stdout} {p.stderr}")
    wall, user, sys_, rss_kb = stats.read_text().split()[-4:]
    report = json.loads(p.stdout)
    return {"wall": float(wall), "cpu": float(user) + float(sys_),
            "rss_mb": int(rss_kb) / 1024, "report": report}


DUCKDB = r"""
import duckdb, json, resource, sys, time
kind, files, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
con = duckdb.connect()
con.execute("SET threads=1")
con.execute("SET enable_progress_bar=false")
src = "read_parquet([" + ", ".join("'" + f + "'" for f in files) + "])"
if kind == "append":
    q = f"SELECT * FROM {src}"
else:
    q = (f"SELECT * FROM (SELECT * FROM {src} QUALIFY row_number() OVER "
         "(PARTITION BY _KEY_k ORDER BY _SEQUENCE_NUMBER DESC) = 1) WHERE _VALUE_KIND IN (0, 2)")
r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
con.execute(f"COPY ({q}) TO '{out}' (FORMAT parquet, COMPRESSION zstd)")
t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
rows = con.execute(f"SELECT count(*) FROM read_parquet('{out}')").fetchone()[0]
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print(json.dumps({"wall": t1 - t0, "cpu": cpu, "rss_mb": r1.ru_maxrss / 1024, "rows": rows}))
"""


def duckdb_run(kind, files, out: Path):
    if out.exists():
        out.unlink()
    p = subprocess.run([sys.executable, "-c", DUCKDB, kind, json.dumps(files), str(out)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"duckdb failed: {p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def bench(name, kind, source: Path, expected: int, args, work: Path):
    table = source / "db.db" / "t"
    files = data_files(table)
    size = sum(os.path.getsize(f) for f in files)
    log(f"{name}: {len(files)} files, {size / 1e6:.0f} MB, {expected} rows")
    for f in files:  # both engines find the inputs in the page cache
        Path(f).read_bytes()
    copy = work / f"run-{kind}"
    rounds = {"ours": [], "duckdb": []}
    for i in range(args.repeat):
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(source, copy)
        r = ours(args.cli, args.engine, copy / "db.db" / "t", work)
        got = read_back_count(copy)
        assert got == expected, (name, got, expected)
        rounds["ours"].append(r)
        d = duckdb_run(kind, files, work / f"duckdb-{kind}.parquet")
        assert d["rows"] == expected, (name, d["rows"], expected)
        rounds["duckdb"].append(d)
        log(f"  round {i + 1}: ours {r['wall']:.2f} s wall, {r['cpu']:.2f} CPU s; "
            f"DuckDB {d['wall']:.2f} s, {d['cpu']:.2f} CPU s")
    med = lambda side, key: statistics.median(x[key] for x in rounds[side])  # noqa: E731
    found = [find(x["report"], "phases") for x in rounds["ours"]]
    phases = {k: statistics.median(f[k] / 1000 for f in found)
              for k in ("scan_plan_ms", "lease_ms", "rewrite_ms", "commit_ms", "total_ms")} \
        if all(found) else None
    return {"name": name, "files": len(files), "mb": size / 1e6, "rows": expected,
            "ours": {k: med("ours", k) for k in ("wall", "cpu", "rss_mb")},
            "duckdb": {k: med("duckdb", k) for k in ("wall", "cpu", "rss_mb")},
            "rounds": [(o["wall"], d["wall"]) for o, d in zip(rounds["ours"], rounds["duckdb"])],
            "phases": phases}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="target/table-bench")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--append-rows", type=int, default=2_500_000)
    ap.add_argument("--append-commits", type=int, default=10)
    ap.add_argument("--pk-rows", type=int, default=6_600_000)
    ap.add_argument("--pk-commits", type=int, default=12)
    ap.add_argument("--cli", default=str(Path(os.environ.get("CARGO_TARGET_DIR", "target"))
                                         / "release" / "paimon-compact"))
    ap.add_argument("--engine", default="wasm", help="wasm (the component, the product) or native")
    ap.add_argument("--only", choices=["append", "pk"], default=None)
    ap.add_argument("--generate-only", action="store_true", help="write the tables and stop")
    args = ap.parse_args()
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    pk_table.in_venv(work, extra=("duckdb",))

    # The CLI compiles the component into its cache once, as an installed CLI has.
    if not args.generate_only and args.engine == "wasm":
        subprocess.run([args.cli, "--engine", args.engine, "info"], check=True,
                       capture_output=True)
    results = []
    if args.only in (None, "append"):
        source = work / f"append-{args.append_rows}-{args.append_commits}"
        if not (source / "db.db" / "t" / "snapshot").exists():
            shutil.rmtree(source, ignore_errors=True)
            log("generating the append table with pypaimon")
            n = generate_append(source, args.append_rows, args.append_commits)
            (source / "expected.txt").write_text(str(n))
        expected = int((source / "expected.txt").read_text())
        if not args.generate_only:
            results.append(bench("append", "append", source, expected, args, work))
    if args.only in (None, "pk"):
        source = work / f"pk-{args.pk_rows}-{args.pk_commits}"
        if not (source / "db.db" / "t" / "snapshot").exists():
            shutil.rmtree(source, ignore_errors=True)
            log("generating the primary-key table with pypaimon")
            n = pk_table.generate(source, args.pk_rows, args.pk_commits)
            (source / "expected.txt").write_text(str(n))
        expected = int((source / "expected.txt").read_text())
        if not args.generate_only:
            results.append(bench("primary key", "pk", source, expected, args, work))
    if args.generate_only:
        return

    print(f"\nengine: {args.engine}; medians of {args.repeat} rounds\n")
    print("| table | input | ours wall s | ours CPU s | ours peak RSS MB | DuckDB wall s "
          "| DuckDB CPU s | DuckDB peak RSS MB | DuckDB / ours wall | DuckDB / ours CPU |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        o, d = r["ours"], r["duckdb"]
        print(f"| {r['name']} | {r['files']} files, {r['mb']:.0f} MB, {r['rows']} rows out "
              f"| {o['wall']:.2f} | {o['cpu']:.2f} | {o['rss_mb']:.0f} | {d['wall']:.2f} "
              f"| {d['cpu']:.2f} | {d['rss_mb']:.0f} | **{d['wall'] / o['wall']:.2f}x** "
              f"| {d['cpu'] / o['cpu']:.2f}x |")
    for r in results:
        print(f"\n{r['name']}: rounds (ours, DuckDB wall s): "
              + ", ".join(f"({a:.2f}, {b:.2f})" for a, b in r["rounds"]))
        if r["phases"]:
            p = r["phases"]
            print(f"{r['name']}: our phases (s, medians): scan+plan {p['scan_plan_ms']:.2f}, "
                  f"lease {p['lease_ms']:.2f}, rewrite {p['rewrite_ms']:.2f}, commit "
                  f"{p['commit_ms']:.2f}, job total {p['total_ms']:.2f}; the process beyond "
                  f"the job {r['ours']['wall'] - p['total_ms']:.2f}")


if __name__ == "__main__":
    main()
