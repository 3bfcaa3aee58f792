#!/usr/bin/env python3
"""Primary-key compaction of a real table, natively and in the component, in one run.

Usage (from the repository root):
    python3 benches/merge/table.py [--rows 11000000] [--runs 10] [--work target/merge-table-bench]
                                   [--cli target/release/paimon-compact] [--component W.wasm]

pypaimon (PyPI, installed into <work>/venv on first use; the script re-runs itself there) writes
one primary-key table with `--runs` commits: the first inserts its share of keys, each later
commit is 65% new keys, 30% updates and 5% deletes of earlier keys (`rowkind.field`), zstd,
one bucket, so every commit is one level-0 sorted run. The table is written once and copied
for each engine; then `paimon-compact --engine native|wasm compact --full --json` runs as its
own process on its copy: wall time, CPU time (user+sys of that child) and peak RSS (its
maximum resident set, measured by /usr/bin/time; for wasm the wasmtime process including
guest memory). pypaimon reads both results
back and the row counts and a checksum must match the expected rows.

The component is the one embedded in the CLI, or `--component` (passed through). Compile it
into the cache first (`paimon-compact info`) so compilation is not measured.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def in_venv(work: Path, extra=()):
    """Re-runs this script with a venv that has pypaimon (and the modules `extra` names, each
    installed from PyPI under the same name), unless it already has them."""
    try:
        import importlib
        for module in ("pypaimon", *extra):
            importlib.import_module(module)
        return
    except ImportError:
        pass
    env_dir = work / "venv"
    py = env_dir / "bin" / "python"
    if not py.exists():
        log(f"creating venv {env_dir}")
        venv.EnvBuilder(with_pip=True).create(env_dir)
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    "pypaimon==2.1.0", *extra], check=True)
    os.execv(str(py), [str(py), *sys.argv])


def commit_batch(table, batch):
    """Writes `batch` (a pyarrow table) to the pypaimon `table` as one commit."""
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(batch)
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def generate(warehouse: Path, rows: int, runs: int):
    import numpy as np
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema

    schema = pa.schema([
        pa.field("k", pa.int64(), nullable=False), ("ts", pa.int64()), ("qty", pa.int32()),
        ("price", pa.float64()), ("category", pa.string()), ("comment", pa.string()),
        ("op", pa.string())])
    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(
        schema, primary_keys=["k"],
        options={"bucket": "1", "rowkind.field": "op", "file.compression": "zstd",
                 }), False)
    table = catalog.get_table("db.t")
    rng = np.random.default_rng(7)
    per = rows // runs
    next_key = 0
    live = {}  # key -> (ts, op) of the newest record, for the expected result
    categories = np.array([f"category-{i:02d}" for i in range(40)], dtype=object)
    for run in range(runs):
        if run == 0:
            keys = np.arange(next_key, next_key + per)
            ops = np.full(per, "+I", dtype=object)
            next_key += per
        else:
            n_new, n_upd = int(per * 0.65), int(per * 0.30)
            n_del = per - n_new - n_upd
            new = np.arange(next_key, next_key + n_new)
            next_key += n_new
            old = rng.choice(next_key - n_new, size=n_upd + n_del, replace=False)
            keys = np.concatenate([new, old])
            ops = np.array(["+I"] * n_new + ["+U"] * n_upd + ["-D"] * n_del, dtype=object)
        n = len(keys)
        ts = np.full(n, run, dtype=np.int64) * 1_000_000_000 + np.arange(n)
        comment = np.array([None if i % 9 == 0 else f"comment {run}-{i}" for i in range(n)],
                           dtype=object)
        batch = pa.table({
            "k": pa.array(keys, pa.int64()), "ts": pa.array(ts),
            "qty": pa.array(rng.integers(0, 100, n, dtype=np.int32)),
            "price": pa.array(np.round(rng.random(n) * 1000, 2)),
            "category": pa.array(categories[rng.integers(0, 40, n)], pa.string()),
            "comment": pa.array(comment, pa.string()),
            "op": pa.array(ops, pa.string())}, schema=schema)
        commit_batch(table, batch)
        for k, o in zip(keys.tolist(), ops.tolist()):
            if o == "-D":
                live.pop(k, None)
            else:
                live[k] = run
        log(f"  commit {run + 1}/{runs}: {n} rows")
    return len(live)


def read_back(warehouse: Path):
    from pypaimon import CatalogFactory

    t = CatalogFactory.create({"warehouse": str(warehouse)}).get_table("db.t")
    rb = t.new_read_builder()
    data = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    data = data.sort_by("k")
    h = hashlib.sha256()
    for col in ("k", "ts"):
        h.update(data.column(col).combine_chunks().buffers()[1].to_pybytes()[: data.num_rows * 8])
    return data.num_rows, h.hexdigest()[:16]


def table_bytes(table_dir: Path):
    files = [p for p in table_dir.rglob("*.parquet")]
    return len(files), sum(p.stat().st_size for p in files)


def run_engine(cli: str, engine: str, table_dir: Path, component, work: Path):
    if engine == "wasm":
        # Compile the component into the cache first: compilation is not what is measured.
        subprocess.run([cli, "--engine", engine,
                        *(["--component", component] if component else []), "info"],
                       check=True, capture_output=True)
    # Through /usr/bin/time: a child forked from this (large) Python process would report the
    # parent's pages as its peak RSS until it execs.
    stats = work / f"time-{engine}.txt"
    cmd = ["/usr/bin/time", "-o", str(stats), "-f", "%e %U %S %M",
           cli, "--engine", engine, *(["--component", component] if component else []),
           "compact", str(table_dir), "--full", "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{engine} failed: {p.stdout} {p.stderr}")
    wall, user, sys_, rss_kb = stats.read_text().split()[-4:]
    return {"wall": float(wall), "cpu": float(user) + float(sys_),
            "rss_mb": int(rss_kb) / 1024, "report": json.loads(p.stdout)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=11_000_000)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--work", default="target/merge-table-bench")
    ap.add_argument("--cli", default=str(Path(os.environ.get("CARGO_TARGET_DIR", "target"))
                                         / "release" / "paimon-compact"))
    ap.add_argument("--component", default=None)
    ap.add_argument("--engines", default="native,wasm")
    args = ap.parse_args()
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    in_venv(work)

    source = work / f"wh-{args.rows}-{args.runs}"
    if not (source / "db.db" / "t" / "snapshot").exists():
        shutil.rmtree(source, ignore_errors=True)
        log(f"generating {args.rows} rows in {args.runs} commits with pypaimon")
        expected = generate(source, args.rows, args.runs)
        (source / "expected.txt").write_text(str(expected))
    expected = int((source / "expected.txt").read_text())
    n_in, bytes_in = table_bytes(source / "db.db" / "t")
    rows_before, sum_before = read_back(source)
    assert rows_before == expected, (rows_before, expected)
    log(f"input: {n_in} files, {bytes_in / 1e6:.0f} MB, {expected} visible rows")

    results = {}
    for engine in args.engines.split(","):
        copy = work / f"run-{engine}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(source, copy)
        log(f"compacting with --engine {engine}")
        r = run_engine(args.cli, engine, copy / "db.db" / "t", args.component, work)
        rows_after, sum_after = read_back(copy)
        assert (rows_after, sum_after) == (rows_before, sum_before), engine
        r["files_out"], r["bytes_out"] = table_bytes(copy / "db.db" / "t")
        r["bytes_out"] -= bytes_in  # the old files stay until snapshot expiry
        r["files_out"] -= n_in
        results[engine] = r

    total_rows = args.rows
    print(f"\ninput: {total_rows} rows in {args.runs} commits, {n_in} files, "
          f"{bytes_in / 1e6:.0f} MB; {expected} rows visible before and after\n")
    print("| engine | wall s | CPU s | rows/s per core | MB/s of input per core | peak RSS MB "
          "| files out | MB out |")
    print("|---|---|---|---|---|---|---|---|")
    for engine, r in results.items():
        print(f"| {engine} | {r['wall']:.1f} | {r['cpu']:.1f} | "
              f"{total_rows / r['cpu'] / 1e6:.2f} M | {bytes_in / 1e6 / r['cpu']:.0f} | "
              f"{r['rss_mb']:.0f} | {r['files_out']} | {r['bytes_out'] / 1e6:.0f} |")
    if "native" in results and "wasm" in results:
        print(f"\ncomponent / native CPU: {results['wasm']['cpu'] / results['native']['cpu']:.2f}x")


if __name__ == "__main__":
    main()
