#!/usr/bin/env python3
"""The Node handler on S3 through its two bridges, in one run.

Usage (from the repository root, js/ built with `npm ci && node build.mjs`, Node 24 unpacked
in target/ by CI stage 30, in a venv with pypaimon 2.1, moto[server] 5.2.5 and boto3):
    python benches/node-bridge/run.py [--rows 2000000] [--runs 6] [--rounds 3]
                                      [--node24 target/node-24.22.3/package/bin/node]

pypaimon writes one primary-key table (benches/parallel/run.py's generator: 8 buckets,
`--runs` commits), which is uploaded to a moto server on loopback once per measurement, each
under its own name. Then `node js/examples/handler.mjs s3://... --full` compacts it:
  * the machine's Node (no JSPI): the worker bridge (the SDK in a worker thread, the
    component blocked on Atomics.wait);
  * Node 24 with `PAIMON_COMPACT_NODE_BRIDGE=worker`: the same bridge on the newer engine;
  * Node 24 (JSPI): the component suspended while the SDK runs in the main thread;
  * Node 24 on the table in a local directory (FsStorage): no S3, the floor; once through the
    JSPI build (every storage call still suspends and resumes the component) and once through
    the synchronous build (forced with `PAIMON_COMPACT_NODE_BRIDGE=worker`; no bridge at all,
    FsStorage is synchronous): the difference is what JSPI itself costs per storage call.
Wall time and CPU time of the whole process (import, plan, compaction, commit),
rounds interleaved, medians; the handler's request counts; pypaimon reads every result back
and its row count and checksum must equal the original's. Also the import time of the async
module alone (component instantiation) per configuration.
"""

import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benches" / "parallel"))
from run import checksum, generate, log  # noqa: E402

KEY, SECRET, REGION, BUCKET = "bench", "bench", "us-east-1", "bench"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto():
    port = free_port()
    server = shutil.which("moto_server") or str(Path(sys.executable).parent / "moto_server")
    proc = subprocess.Popen([server, "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("moto_server did not start")


def env_for(endpoint, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION=REGION,
               AWS_ENDPOINT_URL=endpoint, AWS_ALLOW_HTTP="true", **extra)
    return env


def upload(s3, table_dir: Path, key_prefix: str):
    for p in sorted(table_dir.rglob("*")):
        if p.is_file():
            s3.upload_file(str(p), BUCKET, f"{key_prefix}/{p.relative_to(table_dir)}")


def timed(cmd, env, cwd):
    """Runs `cmd`; returns (wall s, CPU s of the process and its threads, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {p.stdout}{p.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default=str(ROOT / "target" / "node-bridge-bench"))
    ap.add_argument("--node", default=shutil.which("node") or "node")
    ap.add_argument("--node24", default=str(ROOT / "target" / "node-24.22.3" / "package" / "bin" / "node"))
    args = ap.parse_args()

    import boto3

    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    original = work / "original"
    generate(original, args.rows, args.runs)
    rows, digest = checksum(original)
    table_dir = original / "db.db" / "t"
    size_mb = sum(p.stat().st_size for p in table_dir.rglob("*.parquet")) / 1e6
    log(f"table: {rows} rows, {size_mb:.0f} MB of data files")

    moto, endpoint = start_moto()
    try:
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEY,
                          aws_secret_access_key=SECRET, region_name=REGION)
        s3.create_bucket(Bucket=BUCKET)
        js = ROOT / "js"
        configs = [
            ("worker", f"Node {subprocess.check_output([args.node, '--version'], text=True).strip()}", args.node, {}),
            ("worker", "Node 24, forced", args.node24, {"PAIMON_COMPACT_NODE_BRIDGE": "worker"}),
            ("jspi", "Node 24", args.node24, {}),
            ("local", "Node 24, local directory, JSPI build", args.node24, {}),
            ("local", "Node 24, local directory, synchronous build", args.node24, {"PAIMON_COMPACT_NODE_BRIDGE": "worker"}),
        ]
        results = {i: [] for i in range(len(configs))}
        imports = {i: [] for i in range(len(configs))}
        n = 0
        for rnd in range(args.rounds):
            for i, (bridge, label, node, extra) in enumerate(configs):
                n += 1
                env = env_for(endpoint, **extra)
                if bridge == "local":
                    copy = work / f"local-{n}"
                    shutil.copytree(original, copy)
                    target = str(copy / "db.db" / "t")
                else:
                    upload(s3, table_dir, f"w{n}/db.db/t")
                    target = f"s3://{BUCKET}/w{n}/db.db/t"
                wall, cpu, out = timed([node, "examples/handler.mjs", target, "--full"], env, js)
                report = json.loads(out)
                assert report["status"] == "complete", report
                if bridge != "local":
                    assert report["bridge"] == bridge, report
                # Read back: the compacted table has the original rows.
                check = work / f"check-{n}"
                if bridge == "local":
                    check = copy
                else:
                    (check / "db.db" / "t").mkdir(parents=True)
                    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=f"w{n}/db.db/t/"):
                        for o in page.get("Contents", []):
                            dest = check / "db.db" / "t" / o["Key"][len(f"w{n}/db.db/t/"):]
                            dest.parent.mkdir(parents=True, exist_ok=True)
                            s3.download_file(BUCKET, o["Key"], str(dest))
                    shutil.copytree(original / "db.db" / "t" / "schema", check / "db.db" / "t" / "schema", dirs_exist_ok=True)
                assert checksum(check) == (rows, digest), f"round {rnd}, {label}: rows differ"
                shutil.rmtree(check, ignore_errors=True)
                results[i].append((wall, cpu, report.get("requests")))
                t0 = time.perf_counter()
                subprocess.run([node, "-e", "await import('./src/async.js')", "--input-type=module"],
                               env=env, cwd=js, check=True)
                imports[i].append(time.perf_counter() - t0)
                log(f"round {rnd + 1} {label} ({bridge}): {wall:.2f} s wall, {cpu:.2f} s CPU")
        print(f"\n{rows} rows, {size_mb:.0f} MB, {args.rounds} rounds, medians\n")
        print("| bridge | Node | wall s | CPU s | import s | GET | PUT |")
        print("|---|---|---|---|---|---|---|")
        for i, (bridge, label, _, _) in enumerate(configs):
            walls = [r[0] for r in results[i]]
            cpus = [r[1] for r in results[i]]
            req = results[i][-1][2] or {}
            print(f"| {bridge} | {label} | {statistics.median(walls):.2f} | {statistics.median(cpus):.2f} | "
                  f"{statistics.median(imports[i]):.2f} | {req.get('get', '–')} | {req.get('put', '–')} |")
    finally:
        moto.terminate()


if __name__ == "__main__":
    main()
