"""Races with real writers, run many times with their outcomes counted.

A Paimon Java 1.0 writer commits a small batch every ~200 ms to a primary-key table while our
`compact` runs ROUNDS times back to back on it:
  * `write-only = true` (production: the writer never compacts): every one of our full
    compactions commits, rebased over the writer's commits made meanwhile, or finds nothing
    to do; nothing can conflict;
  * `write-only = false` with a low compaction trigger: the writer compacts itself too, and our
    jobs compact fully (`--full`), so both sides race for the same files; a side that loses gets a clean conflict (Java's commit is
    retried from scratch by the driver, ours is counted), and nothing else fails.
Two of our full compactions started together on a table that pypaimon keeps writing to, ROUNDS
times: each one commits, finds the partition leased or nothing to do, or gets a conflict.

Each race ends with the table read by Java (and pypaimon where it can read the table), which
must hold exactly the model's rows: the last write of every key, in commit order. A lost row,
a resurrected older value or a row counted twice fails it. The counts are printed (pytest -s);
the last ones are in the README's "Failure model".

Knob: PAIMON_RACE_ROUNDS (default 20).
"""

import collections
import json
import os
import random
import subprocess
import threading
import time

import pytest

from conftest import CLI, ENGINE, JavaRun, java, pypaimon_read, pypaimon_write, sort_rows

DB = "db"
ROUNDS = int(os.environ.get("PAIMON_RACE_ROUNDS", "20"))
KEYS = 200
ROWS_PER_COMMIT = 8
PAUSE_MS = 200


def table_dir(warehouse, table):
    return os.path.join(str(warehouse), f"{DB}.db", table)


def commits_of(seed, count, first):
    """`count` commits of random keys, numbered from `first` (values say which commit)."""
    rng = random.Random(seed)
    return [[{"k": rng.randrange(KEYS), "v": f"c{i}-{j}", "n": i * 100 + j}
             for j in range(ROWS_PER_COMMIT)] for i in range(first, first + count)]


def model(commits):
    """The table's rows after `commits` in order: the last write of every key."""
    rows = {}
    for c in commits:
        for r in c:
            rows[r["k"]] = r
    return sort_rows(list(rows.values()))


def snapshot_count(tdir):
    return sum(1 for f in os.listdir(os.path.join(tdir, "snapshot")) if f.startswith("snapshot-"))


def compact_once(tdir, *flags):
    """One `compact` of the table; returns its outcome, failing on anything but a clean one."""
    p = subprocess.run([CLI, "--engine", ENGINE, "compact", tdir, "--json", *flags],
                       capture_output=True, text=True, timeout=300)
    return classify(p)


def classify(p):
    try:
        report = json.loads(p.stdout) if p.stdout.strip() else {}
    except json.JSONDecodeError:
        report = {}
    if p.returncode == 0:
        status = report.get("status")
        assert status in ("complete", "nothing-to-do"), report
        if status != "complete":
            return "nothing to do"
        # Planned on snapshot_before: a later snapshot_after than the next one means other
        # commits landed meanwhile and ours was rebased over them.
        before, after = report["snapshot_before"], report["snapshot_after"]
        assert after > before, report
        return "committed, rebased" if after > before + 1 else "committed"
    if p.returncode == 3:
        return "partition leased by the other job"
    kind = (report.get("error") or {}).get("kind")
    assert kind == "conflict", f"exit {p.returncode}: {p.stdout[-2000:]} {p.stderr[-2000:]}"
    return "conflict"


def committed(outcomes):
    """Rounds that committed, rebased or not."""
    return outcomes["committed"] + outcomes["committed, rebased"]


def create_step(table, write_only, extra=None):
    return {"op": "create", "table": table,
            "columns": [["k", "INT NOT NULL"], ["v", "STRING"], ["n", "BIGINT"]],
            "primary_keys": ["k"], "partition_keys": [],
            "options": {"bucket": "2", "write-only": write_only, **(extra or {})}}


@pytest.mark.parametrize("write_only", ["true", "false"])
def test_a_java_writer_commits_while_we_compact(tmp_path, java_classpath, write_only):
    table = f"race_java_{'wo' if write_only == 'true' else 'compacting'}"
    warehouse = tmp_path / "wh"
    tdir = table_dir(warehouse, table)
    # The writer's own compaction triggers at 3 sorted runs when it may compact: often, but
    # not after every commit, so our full compactions find files it is about to compact.
    extra = {} if write_only == "true" else {"num-sorted-run.compaction-trigger": "3"}
    first = commits_of(1, 5, 0)
    java(tmp_path, "create", warehouse,
         [create_step(table, write_only, extra), {"op": "write", "table": table, "commits": first}])
    # More commits than ROUNDS compactions take however loaded the machine (each well under a
    # second, the pause 200 ms); the writer stops at the stop file, written after our last round.
    racing = commits_of(2, max(300, ROUNDS * 15), len(first))
    stop_file = tmp_path / "stop-writing"
    writer = JavaRun(tmp_path, "writer", warehouse,
                     [{"op": "write", "table": table, "commits": racing, "pause_ms": PAUSE_MS,
                       "attempts": 50, "stop_file": str(stop_file)}])
    outcomes = collections.Counter()
    # Full compactions: whatever the writer committed since the last round is taken, so most
    # rounds commit over the writer's newer commits (below our triggers, most would find
    # nothing to do).
    # The rounds start once the writer commits (a JVM takes seconds to start) and are spread
    # over its commits.
    before = snapshot_count(tdir)
    while snapshot_count(tdir) == before and writer.proc.poll() is None:
        time.sleep(0.05)
    for _ in range(ROUNDS):
        outcomes[compact_once(tdir, "--full")] += 1
        time.sleep(PAUSE_MS / 1000)
    assert writer.proc.poll() is None, "the writer finished before our last round"
    stop_file.touch()
    written = writer.results().ok("write", table)
    assert 0 < written["commits"] < len(racing), written
    racing = racing[:written["commits"]]
    outcomes_text = ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items()))
    print(f"\nrace, Java writer with write-only={write_only}, {ROUNDS} of our jobs: "
          f"{outcomes_text}; Java's failed commit attempts: {written['failed_attempts']} "
          f"{[f.splitlines()[0] for f in written['failures'][:2]]}")
    assert committed(outcomes) >= ROUNDS // 4, outcomes
    # How many were rebased over a commit the writer made while they ran is counted, not
    # asserted: a job plans and commits within a fraction of the writer's pause, so few are
    # (the rebase itself is proved deterministically in tests/it/table_job.rs).
    if write_only == "true":
        # The writer never touches files we compact: nothing can conflict on either side.
        assert written["failed_attempts"] == 0, written
    # One last compaction with the writer gone, then Java reads what the model says.
    assert compact_once(tdir) in ("committed", "committed, rebased", "nothing to do")
    read = java(tmp_path, "read", warehouse, [{"op": "read", "table": table}])
    assert sort_rows(read.ok("read", table)["rows"]) == model(first + racing)


def test_two_of_our_jobs_and_a_pypaimon_writer(tmp_path, java_classpath):
    import pyarrow as pa
    from pypaimon import CatalogFactory, Schema

    table = "race_two_jobs"
    warehouse = tmp_path / "wh"
    arrow_schema = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.string()),
                              ("n", pa.int64())])
    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database(DB, True)
    catalog.create_table(f"{DB}.{table}",
                         Schema.from_pyarrow_schema(arrow_schema, primary_keys=["k"],
                                                    options={"bucket": "2", "write-only": "true"}),
                         False)
    tdir = table_dir(warehouse, table)
    commits = commits_of(3, 10_000, 0)
    done = []
    stop = threading.Event()
    failures = collections.Counter()

    def writer():
        # pypaimon commits in a loop; a commit that fails is retried with the same rows.
        i = 0
        while not stop.is_set() and i < len(commits):
            try:
                pypaimon_write(warehouse, table, commits[i], arrow_schema)
            except Exception as e:  # noqa: BLE001 (counted, and the commit retried)
                failures[type(e).__name__] += 1
                continue
            done.append(commits[i])
            i += 1
            time.sleep(PAUSE_MS / 1000)

    t = threading.Thread(target=writer)
    t.start()
    outcomes = collections.Counter()
    try:
        while not done:
            time.sleep(0.05)
        for _ in range(ROUNDS):
            procs = [subprocess.Popen([CLI, "--engine", ENGINE, "compact", tdir, "--json",
                                       "--full"],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for _ in range(2)]
            for p in procs:
                out, err = p.communicate(timeout=300)
                outcomes[classify(subprocess.CompletedProcess(p.args, p.returncode, out, err))] += 1
            time.sleep(PAUSE_MS / 1000)
    finally:
        stop.set()
        t.join(timeout=120)
    outcomes_text = ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items()))
    print(f"\nrace, two of our jobs at once with a pypaimon writer, {ROUNDS} rounds: "
          f"{outcomes_text}; pypaimon commits {len(done)}, failed attempts {dict(failures)}")
    assert committed(outcomes) >= 1, outcomes
    assert compact_once(tdir) in ("committed", "committed, rebased", "nothing to do")
    want = model(done)
    assert pypaimon_read(warehouse, table) == want
    read = java(tmp_path, "read", warehouse, [{"op": "read", "table": table}])
    assert sort_rows(read.ok("read", table)["rows"]) == want
