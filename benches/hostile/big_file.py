#!/usr/bin/env python3
"""A 4 GB data file through a full compaction: time and peak memory of both engines.

Usage (from the repository root, in a venv with pypaimon 2.1; `bash benches/hostile/run.sh`
makes one and runs this):
    python benches/hostile/big_file.py [--gib 4] [--work target/hostile-bench]
                                       [--cli target/release/paimon-compact] [--generate-only]

pypaimon writes an append table (1 bucket, `target-file-size` far above the data, zstd) in three
commits: one file of `--gib` GiB of incompressible rows (an id and 120 random bytes) and two
small files (a full compaction of an append bucket needs three). Each run compacts its own
copy with `compact --full`: the component (under its default 2 GB limit) and the native
engine. Recorded per run: wall time, CPU time and peak RSS of the whole process (`wait4`), and
the rows of the files the compaction wrote (read from their Parquet footers), which must equal
the rows written.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROW_BYTES = 120


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def generate(warehouse: Path, gib: float):
    import numpy as np
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema

    cat = CatalogFactory.create({"warehouse": str(warehouse)})
    cat.create_database("db", True)
    schema = pa.schema([("id", pa.int64()), ("payload", pa.binary())])
    cat.create_table("db.t", Schema.from_pyarrow_schema(schema, options={
        "bucket": "1", "bucket-key": "id", "file.compression": "zstd",
        "target-file-size": "64 gb", "write-only": "true"}), False)
    t = cat.get_table("db.t")
    rng = np.random.default_rng(11)
    total = int(gib * (1 << 30) / (ROW_BYTES + 8))
    per_batch = 1 << 20
    written = 0
    # Three files: a full compaction of an append bucket needs at least three.
    for commit_rows in (total, 1000, 1000):
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        done = 0
        while done < commit_rows:
            n = min(per_batch, commit_rows - done)
            raw = pa.py_buffer(rng.bytes(n * ROW_BYTES))
            fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(ROW_BYTES), n, [None, raw])
            w.write_arrow(pa.table({
                "id": pa.array(np.arange(written, written + n), pa.int64()),
                "payload": fixed.cast(pa.binary()),
            }, schema=schema))
            done += n
            written += n
        c.commit(w.prepare_commit())
        w.close()
        c.close()
        log(f"committed {commit_rows} rows")
    return written


def data_files(table: Path):
    return {p for p in table.rglob("data-*") if p.is_file()}


def rows_of(files):
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def run(cmd, work: Path):
    """Runs `cmd`; returns (exit status, wall s, CPU s, peak RSS MiB, stdout, stderr)."""
    out_path, err_path = work / "run.out", work / "run.err"
    t0 = time.monotonic()
    with open(out_path, "w") as out, open(err_path, "w") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        # wait4 gives this child's own rusage (RUSAGE_CHILDREN would mix runs).
        _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    return (os.waitstatus_to_exitcode(status), wall, ru.ru_utime + ru.ru_stime,
            ru.ru_maxrss / 1024, out_path.read_text(), err_path.read_text())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=4.0)
    ap.add_argument("--work", default=str(ROOT / "target" / "hostile-bench"))
    ap.add_argument("--cli", default=str(ROOT / "target" / "release" / "paimon-compact"))
    ap.add_argument("--generate-only", action="store_true",
                    help="write the source table (kept for later runs) and stop")
    a = ap.parse_args()
    work = Path(a.work)
    src = work / "source"
    if not (src / "db.db" / "t").exists():
        shutil.rmtree(work, ignore_errors=True)
        t = time.monotonic()
        rows = generate(src, a.gib)
        log(f"generated {rows} rows in {time.monotonic() - t:.0f} s")
    if a.generate_only:
        return
    table = src / "db.db" / "t"
    before = data_files(table)
    rows = rows_of(before)
    biggest = max(f.stat().st_size for f in before)
    log(f"input: {len(before)} files, biggest {biggest / (1 << 30):.2f} GiB, {rows} rows")
    subprocess.run([a.cli, "info"], check=True, capture_output=True)  # compile the component once
    results = []
    for engine, flags in (("wasm", []), ("native", [])):
        copy = work / f"copy-{engine}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(src, copy)
        ct = copy / "db.db" / "t"
        code, wall, cpu, rss, out, err = run(
            [a.cli, "--engine", engine, *flags, "compact", str(ct), "--full", "--json"], work)
        if code != 0:
            raise SystemExit(f"{engine}: exit {code}: {err[-2000:]}")
        written = data_files(ct) - {copy / f.relative_to(src) for f in before}
        out_rows = rows_of(written)
        if out_rows != rows:
            raise SystemExit(f"{engine}: wrote {out_rows} rows, want {rows}")
        results.append({"engine": engine, "flags": flags, "wall_s": round(wall, 1),
                        "cpu_s": round(cpu, 1), "peak_rss_mib": round(rss),
                        "files_written": len(written)})
        log(json.dumps(results[-1]))
        shutil.rmtree(copy)
    print(json.dumps({"input_gib": round(sum(f.stat().st_size for f in before) / (1 << 30), 2),
                      "rows": rows, "runs": results}, indent=1))


if __name__ == "__main__":
    main()
