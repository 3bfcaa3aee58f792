#!/usr/bin/env python3
"""Parallel buckets and Ray fan-out on one primary-key table with 8 buckets, in one run.

Usage (from the repository root, in a venv with pypaimon 2.1, ray 2.52.1 and the wheel from
`python/build_wheel.py` installed):
    python benches/parallel/run.py [--rows 4000000] [--runs 6] [--rounds 2]
                                   [--work target/parallel-bench] [--cli target/release/paimon-compact]

pypaimon writes the table once (`--runs` commits, each 65% new keys and 35% updates, zstd,
8 buckets); each measurement compacts its own copy with `--full`:
  * `paimon-compact --engine wasm|native compact --parallelism 1` and `--parallelism 2`;
  * `paimon_compact.ray.compact_table` on a local Ray cluster (`ray.init(num_cpus=2)`,
    loopback) with `num_workers=1` and `num_workers=2` (Ray started once, before timing).
Wall time per run, rounds interleaved; pypaimon reads every result back and the row count and a
checksum must match. The component is compiled into the cache first (`paimon-compact info`).
"""

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benches" / "merge"))
from table import commit_batch  # noqa: E402  (benches/merge/table.py)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def generate(warehouse: Path, rows: int, runs: int):
    import numpy as np
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema

    cat = CatalogFactory.create({"warehouse": str(warehouse)})
    cat.create_database("db", True)
    schema = pa.schema([("k", pa.int64()), ("a", pa.string()), ("b", pa.int64()), ("c", pa.float64())])
    cat.create_table("db.t", Schema.from_pyarrow_schema(
        schema, primary_keys=["k"],
        options={"bucket": "8", "file.compression": "zstd", "write-only": "true"}), False)
    t = cat.get_table("db.t")
    rng = np.random.default_rng(7)
    per = rows // runs
    next_key = 0
    for r in range(runs):
        new = int(per * (1.0 if r == 0 else 0.65))
        keys = np.arange(next_key, next_key + new)
        next_key += new
        if r > 0:
            keys = np.concatenate([keys, rng.integers(0, next_key, per - new)])
        batch = pa.table({
            "k": pa.array(keys, pa.int64()),
            "a": pa.array([f"value-{x % 100003}-{r}" for x in keys]),
            "b": pa.array(keys * 3 + r, pa.int64()),
            "c": pa.array(rng.random(len(keys))),
        })
        commit_batch(t, batch)
        log(f"commit {r + 1}/{runs}: {len(keys)} rows")


def checksum(warehouse: Path):
    from pypaimon import CatalogFactory

    t = CatalogFactory.create({"warehouse": str(warehouse)}).get_table("db.t")
    rb = t.new_read_builder()
    tbl = rb.new_read().to_arrow(rb.new_scan().plan().splits()).sort_by("k")
    h = hashlib.sha256()
    for col in tbl.columns:
        h.update(str(col.to_pylist()).encode())
    return tbl.num_rows, h.hexdigest()[:16]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--work", default=str(ROOT / "target" / "parallel-bench"))
    ap.add_argument("--cli", default=str(ROOT / "target" / "release" / "paimon-compact"))
    args = ap.parse_args()
    work = Path(args.work)
    base = work / "base"
    if not (base / "db.db" / "t" / "snapshot").exists():
        shutil.rmtree(base, ignore_errors=True)
        base.mkdir(parents=True)
        generate(base, args.rows, args.runs)
    expected = checksum(base)
    size = sum(p.stat().st_size for p in (base / "db.db" / "t").rglob("*.parquet"))
    log(f"table: {expected[0]} rows, {size / 1e6:.0f} MB of data files")
    subprocess.run([args.cli, "info"], check=True, capture_output=True)

    import os
    import ray
    import paimon_compact.ray as pc_ray

    os.environ["PAIMON_COMPACT_CLI"] = args.cli
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False, configure_logging=False)

    def copy():
        d = work / "run"
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(base, d)
        return d

    def cli(engine, par):
        d = copy()
        t0 = time.perf_counter()
        p = subprocess.run([args.cli, "--engine", engine, "compact", str(d / "db.db" / "t"), "--full",
                            "--parallelism", str(par), "--skip-maintenance", "--json"],
                           capture_output=True, text=True)
        wall = time.perf_counter() - t0
        assert p.returncode == 0, p.stderr
        return wall, d

    def on_ray(workers):
        d = copy()
        t0 = time.perf_counter()
        r = pc_ray.compact_table(str(d / "db.db" / "t"), num_workers=workers, full=True,
                                 skip_maintenance=True, engine="wasm")
        wall = time.perf_counter() - t0
        assert r["status"] == "complete", r
        return wall, d

    cases = [
        ("wasm --parallelism 1", lambda: cli("wasm", 1)),
        ("wasm --parallelism 2", lambda: cli("wasm", 2)),
        ("native --parallelism 1", lambda: cli("native", 1)),
        ("native --parallelism 2", lambda: cli("native", 2)),
        ("ray num_workers=1 (wasm)", lambda: on_ray(1)),
        ("ray num_workers=2 (wasm)", lambda: on_ray(2)),
    ]
    walls = {name: [] for name, _ in cases}
    for rnd in range(args.rounds):
        for name, f in cases:
            wall, d = f()
            got = checksum(d)
            assert got == expected, (name, got, expected)
            walls[name].append(wall)
            log(f"round {rnd + 1} {name}: {wall:.2f} s")
    ray.shutdown()
    out = {name: {"walls_s": [round(w, 2) for w in ws], "best_s": round(min(ws), 2)} for name, ws in walls.items()}
    for a, b in [("wasm --parallelism 1", "wasm --parallelism 2"),
                 ("native --parallelism 1", "native --parallelism 2"),
                 ("ray num_workers=1 (wasm)", "ray num_workers=2 (wasm)")]:
        out[f"speed-up {b}"] = round(out[a]["best_s"] / out[b]["best_s"], 2)
    out["table"] = {"rows": expected[0], "data_mb": round(size / 1e6)}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
