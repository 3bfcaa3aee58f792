#!/usr/bin/env python3
"""Primary-key merge, side by side: paimon-compact (native, and the component when its hook is
set) and DuckDB (single-threaded) deduplicating the same generated sorted runs, in one run.

Usage (from the repository root):
    python3 benches/merge/run.py [--rows 10000000] [--runs 10] [--work target/merge-bench]
                                 [--rss-rows 2500000,5000000,10000000] [--repeat 5]

It creates a venv under <work>/venv with duckdb from PyPI, builds the bench binary
(`cargo bench --bench merge_rewrite --no-run`, honouring CARGO_TARGET_DIR), generates the runs
once per size (`merge_rewrite generate`: zstd, 65% inserts, 30% updates, 5% deletes, the first
run the oldest), then measures each engine as its own process: wall time, CPU time
(user+sys of that child) and peak RSS (its ru_maxrss). paimon-compact takes each input's
metadata from its footer, as a table's manifest would give it; DuckDB's process start
(interpreter, `import duckdb`, a connection), measured in each round, is taken off its times.
The inputs are read once before the first round, so every engine finds them in the page cache.

paimon-compact: a full compaction of every run into the max level, deletes dropped, Paimon's
defaults (zstd level 1, target-file-size 128 MB, parquet.block.size 128 MB), output sorted by
key and rolled. DuckDB: `SET threads=1; COPY (SELECT * FROM (SELECT * FROM read_parquet([...])
QUALIFY row_number() OVER (PARTITION BY _KEY_k ORDER BY _SEQUENCE_NUMBER DESC) = 1) WHERE
_VALUE_KIND IN (0, 2)) TO ... (FORMAT parquet, COMPRESSION zstd)`.

Component hook: set PAIMON_COMPACT_COMPONENT_CMD to a command template that runs the same
merge with the WASI component under wasmtime; `{out}` is replaced by an empty output directory
and `{inputs}` by the input paths (oldest first). Until then the row says "not run".
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def ensure_venv(target: Path) -> Path:
    py = target / "bin" / "python"
    if not py.exists():
        log(f"creating venv {target}")
        venv.EnvBuilder(with_pip=True).create(target)
    if subprocess.run([str(py), "-c", "import duckdb"], capture_output=True).returncode:
        subprocess.run([str(py), "-m", "pip", "install", "-q", "duckdb"], check=True)
    return py


def build_native() -> Path:
    log("building the bench binary (release)")
    out = subprocess.run(
        ["cargo", "bench", "--bench", "merge_rewrite", "--no-run", "--message-format=json"],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        if (msg.get("reason") == "compiler-artifact" and msg.get("executable")
                and msg["target"]["name"] == "merge_rewrite"):
            return Path(msg["executable"])
    raise SystemExit("bench binary not found in cargo output")


def measure(cmd, env=None):
    """Runs cmd; returns (stdout, wall s, cpu s, peak RSS MB) of that child alone."""
    t = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out_chunks = []
    # Read before waiting so a chatty child cannot block on a full pipe.
    out_chunks.append(p.stdout.read())
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({p.returncode}):\n{err.decode()[-3000:]}")
    return (b"".join(out_chunks).decode(), wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024)


def warm(paths):
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass


def dir_mb(d: Path) -> float:
    return sum(f.stat().st_size for f in d.glob("*.parquet")) / 1e6


def generate(binary: Path, data: Path, rows: int, runs: int) -> dict:
    meta = data / "generated.json"
    if meta.exists():
        return json.loads(meta.read_text())
    log(f"generating {rows} rows in {runs} runs under {data}")
    out = subprocess.run([str(binary), "generate", "--dir", str(data), "--rows", str(rows),
                          "--runs", str(runs)], check=True, capture_output=True, text=True).stdout
    info = json.loads(out)
    meta.write_text(json.dumps(info))
    return info


def run_native(binary, inputs, out: Path):
    shutil.rmtree(out, ignore_errors=True)
    stdout, wall, cpu, rss = measure([str(binary), "files", "--out", str(out), *map(str, inputs)])
    res = json.loads(stdout.strip().splitlines()[-1])
    mb = sum((out / p).stat().st_size for p in res["outputs"]) / 1e6
    return {"wall": wall, "cpu": cpu, "rss": rss, "out_mb": mb,
            "rows_out": res["metrics"]["output_rows"], "merge_s": res["wall_s"]}


DUCKDB = """
import duckdb, sys, json
inputs = json.loads(sys.argv[1])
con = duckdb.connect()
con.execute("SET threads=1")
con.execute("SET preserve_insertion_order=false")
files = ", ".join("'" + p + "'" for p in inputs)
con.execute(f\"\"\"COPY (SELECT * FROM (SELECT * FROM read_parquet([{files}])
  QUALIFY row_number() OVER (PARTITION BY _KEY_k ORDER BY _SEQUENCE_NUMBER DESC) = 1)
  WHERE _VALUE_KIND IN (0, 2)) TO '{sys.argv[2]}' (FORMAT parquet, COMPRESSION zstd)\"\"\")
print(con.execute(f"SELECT count(*) FROM read_parquet('{sys.argv[2]}')").fetchone()[0])
"""


# What DuckDB's process spends before the query: the interpreter, `import duckdb`, a
# connection. paimon-compact's process starts in milliseconds, so this is taken off DuckDB's
# CPU (measured in every round, next to the query) to compare the work, not the launchers.
DUCKDB_STARTUP = """
import duckdb
con = duckdb.connect()
con.execute("SET threads=1")
"""


def run_duckdb(py, inputs, out: Path):
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    target = out / "out.parquet"
    stdout, wall, cpu, rss = measure([str(py), "-c", DUCKDB, json.dumps([str(p) for p in inputs]),
                                      str(target)])
    _, start_wall, start_cpu, _ = measure([str(py), "-c", DUCKDB_STARTUP])
    return {"wall": wall - start_wall, "cpu": cpu - start_cpu, "rss": rss,
            "out_mb": target.stat().st_size / 1e6,
            "rows_out": int(stdout.strip().splitlines()[-1]),
            "process_cpu": cpu, "startup_cpu": start_cpu}


def run_component(inputs, out: Path):
    tmpl = os.environ.get("PAIMON_COMPACT_COMPONENT_CMD")
    if not tmpl:
        return None
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    cmd = shlex.split(tmpl.replace("{out}", str(out)).replace(
        "{inputs}", " ".join(shlex.quote(str(p)) for p in inputs)))
    _, wall, cpu, rss = measure(cmd)
    return {"wall": wall, "cpu": cpu, "rss": rss, "out_mb": dir_mb(out), "rows_out": None}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--work", default="target/merge-bench")
    ap.add_argument("--rss-rows", default="", help="comma-separated row counts for the RSS sweep")
    ap.add_argument("--skip-duckdb", action="store_true")
    ap.add_argument("--repeat", type=int, default=1,
                    help="rounds of every engine, interleaved; the table shows each engine's "
                         "median-CPU run and the ratio line every round's ratio")
    args = ap.parse_args()
    work = (ROOT / args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    binary = build_native()
    py = None if args.skip_duckdb else ensure_venv(work / "venv")
    results = {}

    data = work / f"data-{args.rows}-{args.runs}"
    info = generate(binary, data, args.rows, args.runs)
    inputs = [data / f for f in info["files"]]
    in_mb = info["bytes"] / 1e6
    rows = info["rows"]
    log(f"input: {len(inputs)} runs, {rows} rows, {in_mb:.0f} MB")
    # Read once before any round, so that the first engine of the first round does not pay for
    # the disk (after `echo 3 > /proc/sys/vm/drop_caches`, about a second of system CPU).
    warm(inputs)
    engines = [("paimon-compact native", lambda: run_native(binary, inputs, work / "out-native"))]
    engines.append(("paimon-compact component (wasmtime)",
                    lambda: run_component(inputs, work / "out-component")))
    if py:
        engines.append(("DuckDB, threads=1", lambda: run_duckdb(py, inputs, work / "out-duckdb")))
    print(f"\nInput: {len(inputs)} sorted runs, {rows} rows, {in_mb:.0f} MB (zstd)\n")
    print("| engine | wall s | CPU s | rows/s per core | MB/s of input per core | peak RSS MB "
          "| output MB | rows out |")
    print("|---|---|---|---|---|---|---|---|")
    # Rounds interleave the engines, so a slow phase of a noisy machine hits them alike.
    rounds = {name: [] for name, _ in engines}
    for i in range(max(1, args.repeat)):
        for name, fn in engines:
            log(f"running {name} (round {i + 1})")
            rounds[name].append(fn())
    for name, _ in engines:
        runs = [r for r in rounds[name] if r is not None]
        r = sorted(runs, key=lambda x: x["cpu"])[(len(runs) - 1) // 2] if runs else None
        results[name] = r
        if r is None:
            print(f"| {name} | not run | | | | | | |")
            continue
        print(f"| {name} | {r['wall']:.1f} | {r['cpu']:.1f} | {rows / r['cpu'] / 1e6:.2f} M "
              f"| {in_mb / r['cpu']:.0f} | {r['rss']:.0f} | {r['out_mb']:.0f} | {r['rows_out']} |")
    nat, duck = results.get("paimon-compact native"), results.get("DuckDB, threads=1")
    if nat and duck:
        per_round = ", ".join(f"{d['cpu'] / n['cpu']:.2f}x" for n, d in
                              zip(rounds["paimon-compact native"], rounds["DuckDB, threads=1"]))
        print(f"\nDuckDB takes {duck['cpu'] / nat['cpu']:.2f}x the CPU of paimon-compact "
              f"(medians; rounds: {per_round}; same rows out: "
              f"{nat['rows_out'] == duck['rows_out']})")
        print(f"DuckDB's CPU and wall time exclude its process start (interpreter, import, "
              f"connection: {duck['startup_cpu']:.2f} CPU s in the median run, "
              f"{duck['process_cpu']:.1f} s with it)")
    results["rounds"] = rounds

    sweep = [int(x) for x in args.rss_rows.split(",") if x]
    if sweep:
        print("\n| input rows | input MB | peak RSS MB | CPU s |")
        print("|---|---|---|---|")
        for n in sweep:
            d = work / f"data-{n}-{args.runs}"
            inf = generate(binary, d, n, args.runs)
            r = run_native(binary, [d / f for f in inf["files"]], work / "out-rss")
            results[f"rss-{n}"] = r
            print(f"| {inf['rows']} | {inf['bytes'] / 1e6:.0f} | {r['rss']:.0f} | {r['cpu']:.1f} |")
    (work / "results.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
