"""ORC tables: our full compaction against Paimon Java's, for benches/README.md ("ORC tables").

pypaimon 2.1 writes a primary-key table (`bucket = 2`, `write-only`) in C commits of R/C rows
each (overlapping keys, so later commits update earlier rows), once as ORC (`file.format =
orc`) and once as Parquet. On copies of each, in the same run: our full compaction, natively
and in the component, and Paimon Java 1.0's own full compaction of the ORC table (the test
driver's `compact` step, whose own timer excludes the JVM's start; the whole process is timed
too). pypaimon reads each of our compacted tables back and must see one row per key (it cannot
read this Java build's manifests; Java's live files must hold one row per key); the data
bytes of the live files are summed from the files Java lists.

    python benches/merge/orc.py --rows 2000000 --commits 10
    # The same comparison on a Parquet table of about 1 GB (Java's run included):
    python benches/merge/orc.py --rows 45000000 --commits 10 --formats parquet \
        --java parquet --work target/java-1gb-bench
    # A table written by Paimon Java's own writer instead of pypaimon (the same columns and
    # key distribution, rows made in the JVM; Java's write buffer decides the files):
    python benches/merge/orc.py --rows 75000000 --commits 10 --formats parquet \
        --java parquet --writer java --work target/java-writer-bench

    # ORC with LZO (Java's writer: pyarrow has no LZO), compacted by us (our LZO encoder)
    # and by Java (aircompressor's):
    python benches/merge/orc.py --rows 2000000 --commits 10 --formats orc-lzo \
        --java orc-lzo --writer java --work target/orc-lzo-bench

A format is `orc`, `parquet` or `<format>-<codec>` (`file.compression`).

Needs the Java peer's classpath (`target/java-peer/classpath`, built by
`tests/java/setup.sh`, or $PAIMON_JAVA_CLASSPATH).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
REPO = ROOT.parent.parent
sys.path.insert(0, str(ROOT))
import postpone  # noqa: E402  (its table generator)
import table as pk_table  # noqa: E402  (its venv helper)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def generate(warehouse: Path, rows: int, commits: int, options) -> None:
    # The postpone bench's table, in fixed buckets and write-only.
    postpone.generate(warehouse, rows, commits,
                      {"bucket": "2", "write-only": "true", **options}, seed=11)


def generate_with_java(classpath: str, warehouse: Path, rows: int, commits: int, options,
                       work: Path) -> None:
    """Paimon Java's writer writes the same shape of table (the driver's `generate` step)."""
    columns = [["k", "BIGINT NOT NULL"], ["ts", "BIGINT"], ["qty", "INT"],
               ["price", "DOUBLE"], ["category", "STRING"], ["note", "STRING"]]
    steps = [{"op": "create", "table": "t", "columns": columns, "primary_keys": ["k"],
              "partition_keys": [],
              "options": {"bucket": "2", "write-only": "true", **options}},
             {"op": "generate", "table": "t", "rows": rows, "commits": commits, "seed": 11}]
    _, r = java(classpath, warehouse, steps, work, "generate")
    log(f"  Java wrote {rows} rows in {commits} commits: {r['wall']:.1f} s, "
        f"{r['cpu']:.1f} CPU s")


def read_back(warehouse: Path) -> tuple:
    from pypaimon import CatalogFactory

    t = CatalogFactory.create({"warehouse": str(warehouse)}).get_table("db.t")
    rb = t.new_read_builder()
    data = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return data.num_rows, len(set(data.column("k").to_pylist()))


def timed(cmd, stats: Path):
    p = subprocess.run(["/usr/bin/time", "-o", str(stats), "-f", "%e %U %S %M", *cmd],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed: {p.stdout[-2000:]} {p.stderr[-2000:]}")
    wall, user, sys_, rss_kb = stats.read_text().split()[-4:]
    return p, {"wall": float(wall), "cpu": float(user) + float(sys_),
               "rss_mb": int(rss_kb) / 1024}


def java(classpath: str, warehouse: Path, steps, work: Path, name: str):
    script, out = work / f"{name}.json", work / f"{name}.out.json"
    script.write_text(json.dumps({"warehouse": str(warehouse), "steps": steps}))
    _, r = timed(["java", "-Xmx2g", "-cp", classpath, "PaimonDriver", str(script), str(out)],
                 work / f"time-{name}.txt")
    results = json.loads(out.read_text())["results"]
    for s in results:
        if "error" in s:
            raise SystemExit(f"Java's {s['op']} failed: {s['error']}")
    return results, r


def live_files(classpath: str, warehouse: Path, work: Path, name: str) -> tuple:
    """(files, bytes, rows) of the live data files, as Java lists them."""
    results, _ = java(classpath, warehouse, [{"op": "files", "table": "t"}], work, name)
    table = warehouse / "db.db" / "t"
    files = results[0]["files"]
    size = sum(os.path.getsize(table / f"bucket-{f['bucket']}" / f["file"]) for f in files)
    return len(files), size, sum(f["rowCount"] for f in files)


def distinct_keys(classpath: str, warehouse: Path, work: Path, name: str) -> tuple:
    """(rows, distinct keys) of the live data files, read with pyarrow."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    results, _ = java(classpath, warehouse, [{"op": "files", "table": "t"}], work, name)
    table = warehouse / "db.db" / "t"
    paths = [str(table / f"bucket-{f['bucket']}" / f["file"]) for f in results[0]["files"]]
    fmt = "orc" if paths and paths[0].endswith(".orc") else "parquet"
    keys = ds.dataset(paths, format=fmt).to_table(columns=["k"]).column("k")
    return len(keys), pc.count_distinct(keys).as_py()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--commits", type=int, default=10)
    ap.add_argument("--work", default="target/orc-bench")
    ap.add_argument("--formats", default="orc,parquet",
                    help="the table formats to write and compact, comma-separated")
    ap.add_argument("--java", default="orc",
                    help="the formats Paimon Java also compacts, comma-separated")
    ap.add_argument("--writer", choices=("pypaimon", "java"), default="pypaimon",
                    help="who writes the source table")
    ap.add_argument("--cli", default=str(Path(os.environ.get("CARGO_TARGET_DIR", "target"))
                                         / "release" / "paimon-compact"))
    args = ap.parse_args()
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    cp_file = REPO / "target" / "java-peer" / "classpath"
    classpath = os.environ.get("PAIMON_JAVA_CLASSPATH") or cp_file.read_text().strip()
    cli = str(Path(args.cli).resolve())
    pk_table.in_venv(work)
    results = {}
    formats = args.formats.split(",")
    def options_of(variant):
        fmt, _, codec = variant.partition("-")
        return {"file.format": fmt, **({"file.compression": codec} if codec else {})}

    for variant, options in ((f, options_of(f)) for f in formats):
        source = work / f"source-{variant}"
        if not source.exists():
            log(f"writing the {variant} table")
            if args.writer == "java":
                generate_with_java(classpath, source, args.rows, args.commits, options, work)
            else:
                generate(source, args.rows, args.commits, options)
        n, size, _ = live_files(classpath, source, work, f"files-source-{variant}")
        log(f"{variant}: {n} files, {size / 1e6:.1f} MB before")
        runs = [("ours native", "native"), ("ours component", "wasm")]
        if variant in args.java.split(","):
            runs.append(("Java 1.0", None))
        for label, engine in runs:
            copy = work / f"run-{variant}-{engine or 'java'}"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(source, copy)
            if engine is None:
                steps, r = java(classpath, copy, [{"op": "compact", "table": "t"}], work,
                                f"compact-{variant}")
                r["compact_step_s"] = steps[0]["millis"] / 1000
            else:
                if engine == "wasm":
                    subprocess.run([cli, "--engine", engine, "info"], check=True,
                                   capture_output=True)
                _, r = timed([cli, "--engine", engine, "compact", str(copy / "db.db" / "t"),
                              "--full", "--json"], work / f"time-{variant}-{engine}.txt")
            r["files"], r["bytes"], live_rows = live_files(classpath, copy, work,
                                                           f"files-{variant}-{label}")
            if engine is None or args.writer == "java":
                # pypaimon 2.1 cannot read this Java build's manifests (no
                # `_VALUE_STATS_COLS`): the live files are read directly instead, and after
                # a full compaction of a table without deletes they hold each key once.
                rows, distinct = distinct_keys(classpath, copy, work, f"keys-{variant}-{label}")
            else:
                rows, distinct = read_back(copy)
            assert rows == distinct == live_rows, (variant, label, rows, distinct, live_rows)
            r["rows"] = rows
            results[f"{label}, {variant}"] = r
            log(f"  {label}: {r}")
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
