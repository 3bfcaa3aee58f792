#!/usr/bin/env python3
"""Append rewrite, side by side: paimon-compact (native, and the component when its hook is set),
DuckDB and pyarrow on the same generated table, in one run.

Usage (from the repository root):
    python3 benches/append/run.py [--gb 1.0] [--work target/append-bench] [--skip-rss]

It creates a venv under target/ and installs pyarrow, duckdb and numpy from PyPI into it, builds
the native bench binary (`cargo bench --bench append_rewrite --features bench-comparisons --no-run`, honouring
CARGO_TARGET_DIR), generates the tables once (kept under --work), then measures for each engine:
wall time, CPU time (user+sys of the child process) and peak RSS (ru_maxrss of the child).
Machines are noisy: compare the ratios of one run, not absolute times.

Results are printed as markdown and written to <work>/results.json.

Component hook: set PAIMON_COMPACT_COMPONENT_CMD to a command template that rewrites the input
files with the WASI component under wasmtime. `{out}` is replaced by an empty output directory
and `{inputs}` by the input paths; the command must use Paimon's default options (zstd). The
harness in benches/append/component-bench does exactly that through the host's engine API:
    (cd benches/append/component-bench && cargo build --release)
    cargo build --lib --profile component --target wasm32-wasip2 --features component
    PAIMON_COMPACT_COMPONENT_CMD="$T/release/append-component-bench --engine wasm \
        --component $T/wasm32-wasip2/component/paimon_compact.wasm --out {out} {inputs}"
($T = the cargo target directory). A first call with one input warms the compilation cache, so
the measured run loads the cached code. Without the variable the row says "not run".
"""

import argparse
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["pyarrow", "duckdb", "numpy"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def ensure_venv(target: Path) -> Path:
    """A venv with the comparison engines; returns its python."""
    py = target / "bin" / "python"
    if not py.exists():
        log(f"creating venv {target}")
        venv.EnvBuilder(with_pip=True).create(target)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    missing = subprocess.run(
        [str(py), "-c", "import pyarrow, duckdb, numpy"], capture_output=True
    ).returncode
    if missing:
        subprocess.run([str(py), "-m", "pip", "install", "-q", *PACKAGES], check=True)
    return py


def cargo_target_dir() -> Path:
    return Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


def build_native() -> Path:
    """Builds the bench binary in release mode and returns its path."""
    log("building the native bench binary (release)")
    out = subprocess.run(
        ["cargo", "bench", "--bench", "append_rewrite", "--features", "bench-comparisons", "--no-run", "--message-format=json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") and msg["target"]["name"] == "append_rewrite":
            return Path(msg["executable"])
    raise SystemExit("bench binary not found in cargo output")


def measure(cmd, env=None):
    """Runs cmd; returns (stdout, wall s, cpu s, peak RSS MB) of that child alone."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    out = proc.stdout.read()
    err = proc.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[0]} failed: {err[-2000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    return out, wall, cpu, usage.ru_maxrss / 1024.0


# ---- table generation (runs inside the venv) --------------------------------------------------

GEN = r'''
import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq
kind, out_dir, files, rows, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rng = np.random.default_rng(seed)
words = np.array(["alpha","bravo","charlie","delta","echo","foxtrot","golf","hotel","india","juliet","kilo","lima"])
for f in range(files):
    first = f * rows
    if kind == "mixed":
        ids = np.arange(first, first + rows, dtype=np.int64)
        t = pa.table({
            "id": ids,
            "ts": (1_700_000_000_000 + ids * 37).astype(np.int64),
            "qty": rng.integers(0, 1000, rows, dtype=np.int32),
            "price": np.round(rng.random(rows) * 1000, 2),
            "score": rng.random(rows).astype(np.float32),
            "category": pa.array(np.char.add("category-", rng.integers(0, 40, rows).astype(str))),
            "city": pa.array(np.char.add("city-", rng.integers(0, 2000, rows).astype(str))),
            "comment": pa.array(np.char.add(np.char.add(words[rng.integers(0, 12, rows)], " "), rng.integers(0, 1 << 40, rows).astype(str))),
        })
    else:  # low-cardinality strings; "differing" shifts each file's values
        shift = f * 37 if kind == "differing" else 0
        cols = {}
        for c in range(4):
            card = 50 << c
            cols[f"s{c}"] = pa.array(np.char.add(f"value-{c}-", (rng.integers(0, card, rows) + shift).astype(str)))
        cols["id"] = np.arange(first, first + rows, dtype=np.int64)
        t = pa.table(cols)
    pq.write_table(t, f"{out_dir}/part-{f:04d}.parquet", compression="zstd", row_group_size=1 << 20)
'''


def generate(py: Path, kind: str, out_dir: Path, files: int, rows: int) -> list:
    done = out_dir / ".done"
    stamp = f"{kind} {files} {rows}"
    if not done.exists() or done.read_text() != stamp:
        shutil.rmtree(out_dir, ignore_errors=True)
        out_dir.mkdir(parents=True)
        log(f"generating {kind}: {files} files x {rows} rows into {out_dir}")
        subprocess.run([str(py), "-c", GEN, kind, str(out_dir), str(files), str(rows), "42"], check=True)
        done.write_text(stamp)
    return sorted(str(p) for p in out_dir.glob("part-*.parquet"))


# ---- engines ----------------------------------------------------------------------------------

DUCKDB = r'''
import sys, json, duckdb
out, inputs = sys.argv[1], sys.argv[2:]
con = duckdb.connect()
con.execute("SET threads=1")
files = "[" + ",".join("'" + p + "'" for p in inputs) + "]"
con.execute(f"COPY (SELECT * FROM read_parquet({files})) TO '{out}/out.parquet' (FORMAT parquet, COMPRESSION zstd)")
print(json.dumps({"version": duckdb.__version__}))
'''

PYARROW = r'''
import sys, json, pyarrow as pa, pyarrow.parquet as pq
pa.set_cpu_count(1); pa.set_io_thread_count(1)
out, inputs = sys.argv[1], sys.argv[2:]
schema = pq.ParquetFile(inputs[0]).schema_arrow
with pq.ParquetWriter(f"{out}/out.parquet", schema, compression="zstd") as w:
    for p in inputs:
        for b in pq.ParquetFile(p).iter_batches(use_threads=False):
            w.write_batch(b)
print(json.dumps({"version": pa.__version__}))
'''


def fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*.parquet"))


def run_native(binary: Path, out: Path, inputs, opts=()):
    cmd = [str(binary), "files", "--out", str(fresh(out))]
    for o in opts:
        cmd += ["--opt", o]
    stdout, wall, cpu, rss = measure(cmd + list(inputs))
    res = json.loads(stdout.strip().splitlines()[-1])
    return {"wall": wall, "cpu": cpu, "rss_mb": rss, "out_bytes": dir_bytes(out), "metrics": res["metrics"]}


def run_script(py: Path, script: str, out: Path, inputs):
    stdout, wall, cpu, rss = measure([str(py), "-c", script, str(fresh(out)), *inputs])
    return {"wall": wall, "cpu": cpu, "rss_mb": rss, "out_bytes": dir_bytes(out), "info": json.loads(stdout.strip().splitlines()[-1])}


def run_component(out: Path, inputs):
    template = os.environ.get("PAIMON_COMPACT_COMPONENT_CMD")
    if not template:
        return None  # HOOK: the component (issue 3) is not wired in yet.
    def command(files):
        return template.replace("{out}", shlex.quote(str(fresh(out)))).replace(
            "{inputs}", " ".join(shlex.quote(i) for i in files)
        )

    measure(["/bin/sh", "-c", command(inputs[:1])])  # warms the compiled-code cache
    stdout, wall, cpu, rss = measure(["/bin/sh", "-c", command(inputs)])
    r = {"wall": wall, "cpu": cpu, "rss_mb": rss, "out_bytes": dir_bytes(out)}
    try:
        r["call_seconds"] = json.loads(stdout.strip().splitlines()[-1])["seconds"]
    except (ValueError, KeyError, IndexError):
        pass
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gb", type=float, default=1.0, help="size of the mixed table to generate")
    ap.add_argument("--work", default=str(ROOT / "target" / "append-bench"))
    ap.add_argument("--skip-rss", action="store_true")
    ap.add_argument("--only", choices=["throughput", "passthrough", "rss"], help="run one part")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    py = ensure_venv(ROOT / "target" / "append-bench-venv")
    binary = build_native()

    # ~20.7 bytes per row of zstd input for the mixed table (measured); 1 Mi-row files.
    rows = 1 << 20
    files = max(1, round(args.gb * (1 << 30) / (rows * 20)))
    mixed = generate(py, "mixed", work / "mixed", files, rows)
    in_bytes = sum(os.path.getsize(p) for p in mixed)
    log(f"mixed table: {len(mixed)} files, {in_bytes / 1e6:.0f} MB")
    results = {"input_bytes": in_bytes, "files": len(mixed)}

    want = lambda part: args.only in (None, part)
    engines = {
        "paimon-compact native": lambda: run_native(binary, work / "out-native", mixed),
        "paimon-compact component": lambda: run_component(work / "out-component", mixed),
        "duckdb (threads=1)": lambda: run_script(py, DUCKDB, work / "out-duckdb", mixed),
        "pyarrow": lambda: run_script(py, PYARROW, work / "out-pyarrow", mixed),
        "paimon-compact native, fast copy": lambda: run_native(
            binary, work / "out-fastcopy", mixed, ["paimon-compact.append.fast-copy=true"]
        ),
    }
    results["throughput"] = {}
    for name, run in engines.items() if want("throughput") else []:
        log(f"throughput: {name}")
        r = run()
        if r is not None:
            r["mb_per_cpu_s"] = in_bytes / 1e6 / r["cpu"]
        results["throughput"][name] = r

    results["passthrough"] = {}
    for kind in ["identical", "differing"] if want("passthrough") else []:
        low = generate(py, kind, work / f"low-{kind}", 8, 1 << 20)
        low_bytes = sum(os.path.getsize(p) for p in low)
        for on, writer in [("false", "mapping"), ("true", "mapping"), ("true", "arrow")]:
            r = run_native(
                binary,
                work / f"out-pt-{kind}-{on}-{writer}",
                low,
                [f"parquet.read.enable-dictionary-passthrough={on}", f"paimon-compact.append.passthrough-writer={writer}"],
            )
            r["input_bytes"] = low_bytes
            name = f"{kind} passthrough={on}" + (" (arrow-rs writer)" if writer == "arrow" else "")
            results["passthrough"][name] = r

    if not args.skip_rss and want("rss"):
        log("peak memory runs")
        results["rss"] = {}
        for factor in [0.25, 0.5, 1, 2]:
            n = max(1, round(len(mixed) * factor))
            inputs = [mixed[i % len(mixed)] for i in range(n)]
            size = sum(os.path.getsize(p) for p in inputs)
            r = run_native(binary, work / "out-rss", inputs)
            results["rss"][f"{size / 1e9:.2f} GB"] = {"rss_mb": r["rss_mb"], "cpu": r["cpu"]}
        shutil.rmtree(work / "out-rss", ignore_errors=True)

    (work / "results.json").write_text(json.dumps(results, indent=1))
    print(report(results))


def report(r):
    lines = [f"Input: {r['files']} files, {r['input_bytes'] / 1e6:.0f} MB (zstd, mixed int/float/string)", ""]
    if r["throughput"]:
        lines += throughput_report(r["throughput"])
    if r["passthrough"]:
        lines += passthrough_report(r["passthrough"])
    if "rss" in r:
        lines += ["", "| native input | peak RSS MB | CPU s |", "|---|---|---|"]
        for size, x in r["rss"].items():
            lines.append(f"| {size} | {x['rss_mb']:.0f} | {x['cpu']:.1f} |")
    return "\n".join(lines)


def throughput_report(t):
    lines = ["| engine | wall s | CPU s | MB/s per core | peak RSS MB | output MB |", "|---|---|---|---|---|---|"]
    base = t["paimon-compact native"]
    for name, x in t.items():
        if x is None:
            lines.append(f"| {name} | not run (hook: PAIMON_COMPACT_COMPONENT_CMD) | | | | |")
            continue
        lines.append(
            f"| {name} | {x['wall']:.1f} | {x['cpu']:.1f} | {x['mb_per_cpu_s']:.0f} | {x['rss_mb']:.0f} | {x['out_bytes'] / 1e6:.0f} |"
        )
    lines.append("")
    for name, x in t.items():
        if x is not None and x is not base:
            lines.append(f"- CPU time {name} / native: {x['cpu'] / base['cpu']:.2f}")
    return lines


def passthrough_report(p):
    lines = ["", "| passthrough case | CPU s | output MB |", "|---|---|---|"]
    for name, x in p.items():
        lines.append(f"| {name} | {x['cpu']:.2f} | {x['out_bytes'] / 1e6:.2f} |")
    for kind in ["identical", "differing"]:
        off = p[f"{kind} passthrough=false"]
        for variant in [f"{kind} passthrough=true", f"{kind} passthrough=true (arrow-rs writer)"]:
            on = p[variant]
            lines.append(
                f"- {variant}: CPU {100 * (1 - on['cpu'] / off['cpu']):.0f}% less than off, output {100 * (on['out_bytes'] / off['out_bytes'] - 1):+.2f}%"
            )
    return lines


if __name__ == "__main__":
    main()
