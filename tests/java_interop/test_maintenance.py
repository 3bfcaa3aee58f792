"""Table maintenance against Paimon Java 1.0: snapshot, changelog, partition and tag expiry,
consumers, orphan files.

One warehouse W of small tables is written by Java (write-only commits; Java's own compaction,
committed without maintenance, makes COMPACT snapshots whose replaced files become deletable).
Python then sets the state a case needs (snapshot times, an old tag TTL, consumer files, stray
files), W is copied to A and B, Java maintains copy A and our CLI copy B, and the two copies must
agree: the same snapshot ids, changelog ids, tags, partitions and consumers; Java reads every
retained snapshot and tag of both the same (and as it read them in W); Java's OrphanFilesClean
finds nothing on B that it does not find on A.

The reference is newer Paimon's behaviour (what our CLI implements, docs/maintenance.md),
run with Java 1.0's parts. Where 1.0 differs the harness bridges it:
  * snapshot.time-retained: 1.0 judges a snapshot by its own timeMillis, newer Paimon by its
    successor's (apache/paimon#7706). On the copy Java 1.0 maintains, every snapshot of a
    time-based case carries its successor's intended time; ours carries its own.
  * post-commit maintenance order: 1.0 commits run consumers, snapshots, partitions, tags; newer
    Paimon tags, partitions, consumers, snapshots, changelogs. Java's side of `compact` is its
    compaction committed without maintenance, then the driver's `maintain` in the newer order.

Three driver runs (one JVM each): build W; read W, maintain and read A (while our CLI
maintains B); read B. PAIMON_MAINTENANCE_PEER=java lets Java maintain B as well: a self-check of
the harness (every comparison must then pass trivially).
"""

import collections
import datetime
import json
import os
import random
import shutil
import subprocess
import time

import pytest

from conftest import JavaRun, age_tag, cli, rewrite_json

DB = "db"
PEER = os.environ.get("PAIMON_MAINTENANCE_PEER", "cli")
NOW = datetime.datetime.now()
TODAY = NOW.date()
NOW_MS = int(time.time() * 1000)
HOUR_MS = 3600 * 1000

PK_COLUMNS = [["k", "INT NOT NULL"], ["v", "STRING"], ["n", "BIGINT"]]


class Case:
    """One table: its partition columns and values, options, build program, what Java does to
    copy A and our CLI to copy B, and what Java's result must be (a check of the reference)."""

    def __init__(self, name, build, java_steps, ours, expect, options=None, partitions=None,
                 partition_columns=(), times=None, time_shift=False, consumers=None,
                 stale_consumers=None, old_ttl_tags=(), changelog_read=None):
        self.name = name
        self.build = build
        self.java_steps = java_steps
        self.ours = ours
        self.expect = expect
        self.options = {"bucket": "1", "write-only": "true", **(options or {})}
        self.partitions = partitions or [{}]
        self.partition_columns = [[c, "STRING NOT NULL"] for c in partition_columns]
        # Snapshot id -> intended timeMillis (the newer rule); `time_shift`: Java 1.0's copy
        # gets every snapshot's successor's time instead.
        self.times = times or {}
        self.time_shift = time_shift
        self.consumers = consumers or {}
        self.stale_consumers = stale_consumers or {}
        self.old_ttl_tags = old_ttl_tags
        self.changelog_read = changelog_read

    @property
    def columns(self):
        return self.partition_columns + PK_COLUMNS

    @property
    def primary_keys(self):
        return [c[0] for c in self.partition_columns] + ["k"]


def W(n=1, **kw):
    """n write commits (kw: partitions, timezone)."""
    return [{"op": "w", **kw} for _ in range(n)]


C = [{"op": "c"}]


def T(name, snapshot_id, ttl=None):
    return [{"op": "tag", "name": name, "id": snapshot_id, "ttl": ttl}]


def R(first, last):
    return list(range(first, last + 1))


def expire_snapshots(**options):
    return [{"op": "expire_snapshots", "options": options}]


EIGHT = W(5) + C + W(2)  # snapshots 1-5 APPEND, 6 COMPACT, 7-8 APPEND
OLD_DAY = ["2020-01-01", "2020-01-02"]


def time_based():
    """Snapshots 1-5 five hours old (a minute apart), 6-8 as written (now)."""
    return {i: NOW_MS - 5 * HOUR_MS + i * 60_000 for i in range(1, 6)}


def auto_tag_times():
    """Snapshot i of 1-5 at noon (JVM zone: the machine's) of day TODAY - (6 - i)."""
    out = {}
    for i in range(1, 6):
        d = TODAY - datetime.timedelta(days=6 - i)
        out[i] = int(datetime.datetime(d.year, d.month, d.day, 12).timestamp() * 1000)
    return out


def cases():
    today = TODAY.isoformat()
    today_compact = TODAY.strftime("%Y%m%d")
    day = lambda n: (TODAY - datetime.timedelta(days=n)).isoformat()
    return [
        Case("count", EIGHT, expire_snapshots(), [["expire-snapshots"]],
             {"snapshots": R(5, 8)},
             options={"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "4"}),
        Case("count_flags", EIGHT,
             expire_snapshots(**{"snapshot.num-retained.max": "3",
                                 "snapshot.num-retained.min": "1"}),
             [["expire-snapshots", "--retain-max", "3", "--retain-min", "1"]],
             {"snapshots": R(6, 8)}),
        # --dry-run changes nothing.
        Case("count_dry", EIGHT, [], [["expire-snapshots", "--dry-run"]],
             {"snapshots": R(1, 8)},
             options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"}),
        Case("limit", EIGHT, expire_snapshots(), [["expire-snapshots"]],
             {"snapshots": R(3, 8)},
             options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3",
                      "snapshot.expire.limit": "2"}),
        Case("limit_flag", EIGHT,
             expire_snapshots(**{"snapshot.expire.limit": "2"}),
             [["expire-snapshots", "--max-deletes", "2"]],
             {"snapshots": R(3, 8)},
             options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3"}),
        Case("time", EIGHT, expire_snapshots(), [["expire-snapshots"]],
             {"snapshots": R(5, 8)},
             options={"snapshot.time-retained": "1 h", "snapshot.num-retained.min": "1"},
             times=time_based(), time_shift=True),
        Case("time_flags", EIGHT,
             expire_snapshots(**{"snapshot.time-retained": "1 h",
                                 "snapshot.num-retained.min": "1"}),
             [["expire-snapshots", "--older-than", "1h", "--retain-min", "1"]],
             {"snapshots": R(5, 8)},
             times=time_based(), time_shift=True),
        # Tags on snapshots 3 and 5 (files replaced by the compactions 4 and 7) in the expired
        # range: their files must stay readable.
        Case("tagged", W(3) + T("t3", 3) + C + W(2) + T("t5", 5) + C + W(1),
             expire_snapshots(), [["expire-snapshots"]],
             {"snapshots": R(7, 8), "tags": {"t3": 3, "t5": 5}},
             options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"}),
        # A consumer at 4 keeps 4-8, more than snapshot.num-retained.max.
        Case("consumer", EIGHT, expire_snapshots(), [["expire-snapshots"]],
             {"snapshots": R(4, 8), "consumers": {"reader": 4}},
             options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3"},
             consumers={"reader": 4}),
        # Decoupled changelog (changelog.num-retained.max > snapshot.num-retained.max): expired
        # snapshots move to changelog/ (1-7), then changelog expiry keeps 10 - 6 + 1 = 5 on.
        Case("changelog_moved", W(5) + C + W(2) + C + W(1),
             expire_snapshots(), [["expire-snapshots"]],
             {"snapshots": R(8, 10), "changelogs": R(1, 7)},
             options={"changelog-producer": "lookup", "snapshot.num-retained.min": "1",
                      "snapshot.num-retained.max": "3", "changelog.num-retained.max": "6"},
             changelog_read="8,9"),
        Case("changelog", W(5) + C + W(2) + C + W(1),
             expire_snapshots() + [{"op": "expire_changelogs"}],
             [["expire-snapshots"], ["expire-changelogs"]],
             {"snapshots": R(8, 10), "changelogs": R(5, 7)},
             options={"changelog-producer": "lookup", "snapshot.num-retained.min": "1",
                      "snapshot.num-retained.max": "3", "changelog.num-retained.max": "6"},
             changelog_read="8,9"),
        # values-time: two partitions of 2020 expire (one OVERWRITE snapshot), today's stays.
        Case("part_values", W(3), [{"op": "expire_partitions"}], [["expire-partitions"]],
             {"snapshots": R(1, 4), "partitions": [{"dt": today}]},
             options={"partition.expiration-time": "7 d",
                      "partition.timestamp-formatter": "yyyy-MM-dd"},
             partition_columns=["dt"], partitions=[{"dt": d} for d in OLD_DAY + [today]]),
        Case("part_flags", W(3),
             [{"op": "expire_partitions",
               "options": {"partition.expiration-time": "7 d",
                           "partition.timestamp-formatter": "yyyyMMdd HH:mm:ss",
                           "partition.timestamp-pattern": "$dt $hr:00:00",
                           "partition.expiration-strategy": "values-time"}}],
             [["expire-partitions", "--expiration-time", "7d",
               "--timestamp-formatter", "yyyyMMdd HH:mm:ss",
               "--timestamp-pattern", "$dt $hr:00:00", "--strategy", "values-time"]],
             {"snapshots": R(1, 4), "partitions": [{"dt": today_compact, "hr": "00"}]},
             partition_columns=["dt", "hr"],
             partitions=[{"dt": "20200101", "hr": "01"}, {"dt": "20200101", "hr": "02"},
                         {"dt": today_compact, "hr": "00"}]),
        Case("part_dry", W(2), [], [["expire-partitions", "--dry-run"]],
             {"snapshots": R(1, 2), "partitions": [{"dt": d} for d in OLD_DAY + [today]]},
             options={"partition.expiration-time": "7 d",
                      "partition.timestamp-formatter": "yyyy-MM-dd"},
             partition_columns=["dt"], partitions=[{"dt": d} for d in OLD_DAY + [today]]),
        # update-time: partitions a and b last written in GMT-12 (their files' creationTime,
        # a zone-less local time, reads twelve hours old in UTC), c now.
        Case("part_update",
             W(2, partitions=[{"dt": "a"}, {"dt": "b"}], timezone="GMT-12")
             + W(1, partitions=[{"dt": "c"}]),
             [{"op": "expire_partitions"}], [["expire-partitions"]],
             {"snapshots": R(1, 4), "partitions": [{"dt": "c"}]},
             options={"partition.expiration-strategy": "update-time",
                      "partition.expiration-time": "1 h"},
             partition_columns=["dt"], partitions=[{"dt": "c"}]),
        # compact + maintenance, in newer Paimon's order: the compaction (6), partition expiry
        # (7 OVERWRITE), the stale consumer removed, then snapshots down to 3 (5-7). Java 1.0's
        # own order would keep 4-7 (snapshots expire before the partition drop).
        Case("maint_order", W(5), [{"op": "c"}, {"op": "maintain"}], [["compact", "--full"]],
             {"snapshots": R(5, 7), "partitions": [{"dt": today}], "consumers": {}},
             options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3",
                      "partition.expiration-time": "7 d",
                      "partition.timestamp-formatter": "yyyy-MM-dd",
                      "partition.expiration-check-interval": "0 s",
                      "consumer.expiration-time": "1 d"},
             partition_columns=["dt"], partitions=[{"dt": d} for d in OLD_DAY[:1] + [today]],
             stale_consumers={"stale": 1}),
        # The same table compacted with --skip-maintenance: only the COMPACT snapshot is new.
        Case("maint_skipped", W(5), [{"op": "c"}], [["compact", "--full", "--skip-maintenance"]],
             {"snapshots": R(1, 6), "partitions": [{"dt": d} for d in OLD_DAY[:1] + [today]],
              "consumers": {"stale": 1}},
             options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3",
                      "partition.expiration-time": "7 d",
                      "partition.timestamp-formatter": "yyyy-MM-dd",
                      "partition.expiration-check-interval": "0 s",
                      "consumer.expiration-time": "1 d"},
             partition_columns=["dt"], partitions=[{"dt": d} for d in OLD_DAY[:1] + [today]],
             stale_consumers={"stale": 1}),
        # compact + maintenance with daily auto tags (snapshots 1-5 at noon of the five days
        # before today, 6 = the compaction now), at most two auto tags, a manual tag whose TTL
        # ran out (expired), manual tags without or with a live TTL (kept); tags are made
        # before snapshots expire, so snapshot 5 and 6 get the two auto tags left.
        Case("maint_tags", W(5) + T("plain", 1) + T("keep", 2, "1 d") + T("old_ttl", 3, "1 h"),
             [{"op": "c"}, {"op": "maintain"}], [["compact", "--full"]],
             {"snapshots": R(5, 6), "tags": {"plain": 1, "keep": 2, day(2): 5, day(1): 6}},
             options={"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "2",
                      "tag.automatic-creation": "process-time", "tag.creation-period": "daily",
                      "tag.num-retained-max": "2"},
             times=auto_tag_times(), old_ttl_tags=["old_ttl"]),
    ]


CASES = cases()
NAMES = [c.name for c in CASES]
BY_NAME = {c.name: c for c in CASES}

# The orphan-file case: stray files planted in W (so in A and B), two older than a day.
ORPHAN_TABLE = "orphans"
ORPHAN_OLD = ["bucket-0/data-0b0e6a4c-5d1f-4f55-9bd6-stray000001-0.parquet",
              "manifest/manifest-0b0e6a4c-5d1f-4f55-9bd6-stray000002-0"]
ORPHAN_YOUNG = ["bucket-0/data-0b0e6a4c-5d1f-4f55-9bd6-stray000003-0.parquet"]

# ------------------------------------------------------------------ building W


def build_steps(case):
    rng = random.Random(case.name)
    steps = [{"op": "create", "table": case.name, "columns": case.columns,
              "primary_keys": case.primary_keys,
              "partition_keys": [c[0] for c in case.partition_columns],
              "options": case.options}]
    batch = []
    snapshot = 0

    def flush():
        nonlocal batch
        if batch:
            steps.append({"op": "write", "table": case.name, "commits": batch})
            batch = []

    for i, op in enumerate(case.build):
        if op["op"] == "w":
            rows = []
            for part in op.get("partitions", case.partitions):
                for j in range(4):
                    rows.append({**part, "k": rng.randrange(12), "v": f"{case.name}-{i}-{j}",
                                 "n": i * 100 + j})
            if op.get("timezone"):
                flush()
                steps.append({"op": "write", "table": case.name, "commits": [rows],
                              "timezone": op["timezone"]})
            else:
                batch.append(rows)
            snapshot += 1
        elif op["op"] == "c":
            flush()
            steps.append({"op": "compact", "table": case.name, "maintenance": False,
                          "label": f"build-{i}"})
            snapshot += 1
        elif op["op"] == "tag":
            flush()
            step = {"op": "tag", "table": case.name, "name": op["name"],
                    "snapshot_id": op["id"], "label": op["name"]}
            if op.get("ttl"):
                step["time_retained"] = op["ttl"]
            steps.append(step)
    flush()
    return steps


def orphan_build_steps():
    rng = random.Random(ORPHAN_TABLE)
    rows = lambda c: [{"k": rng.randrange(12), "v": f"o{c}-{j}", "n": j} for j in range(4)]
    return [{"op": "create", "table": ORPHAN_TABLE, "columns": PK_COLUMNS, "primary_keys": ["k"],
             "partition_keys": [], "options": {"bucket": "1", "write-only": "true"}},
            {"op": "write", "table": ORPHAN_TABLE, "commits": [rows(c) for c in range(3)]},
            {"op": "compact", "table": ORPHAN_TABLE, "maintenance": False}]


def table_dir(warehouse, name):
    return os.path.join(str(warehouse), f"{DB}.db", name)


def set_snapshot_times(tdir, times, shift):
    """timeMillis of each snapshot in `times` (or, with `shift`, its successor's)."""
    for sid, ms in times.items():
        value = times.get(sid + 1, NOW_MS) if shift else ms
        path = os.path.join(tdir, "snapshot", f"snapshot-{sid}")
        rewrite_json(path, lambda d: d.__setitem__("timeMillis", value))


def write_consumer(tdir, name, next_snapshot, age_days=0):
    os.makedirs(os.path.join(tdir, "consumer"), exist_ok=True)
    path = os.path.join(tdir, "consumer", f"consumer-{name}")
    with open(path, "w") as fh:
        fh.write(json.dumps({"nextSnapshot": next_snapshot}, indent=2))
    if age_days:
        old = time.time() - age_days * 86400
        os.utime(path, (old, old))


def plant_orphans(tdir):
    for rel in ORPHAN_OLD + ORPHAN_YOUNG:
        path = os.path.join(tdir, rel)
        with open(path, "wb") as fh:
            fh.write(b"not referenced by any snapshot")
        if rel in ORPHAN_OLD:
            old = time.time() - 3 * 86400
            os.utime(path, (old, old))


def files_of(tdir):
    out = set()
    for dirpath, _, names in os.walk(tdir):
        for n in names:
            out.add(os.path.relpath(os.path.join(dirpath, n), tdir))
    return out


# ------------------------------------------------------------------ our side


class Ours:
    """Our CLI's runs on one table of B: each command's process, or why it did not run."""

    def __init__(self):
        self.runs = []
        self.failure = None

    def run(self, tdir, args):
        if self.failure:
            return None
        command, flags = args[0], args[1:]
        missing = missing_command(command)
        if missing:
            self.failure = missing
            return None
        p = cli(command, tdir, *flags, "--json")
        self.runs.append((args, p))
        if p.returncode != 0:
            self.failure = (f"`paimon-compact {' '.join(args)} --json` exited {p.returncode}: "
                            f"{(p.stdout + p.stderr).strip()[-2000:]}")
        return p

    def check(self):
        if self.failure:
            pytest.fail(self.failure)


_missing = {}


def missing_command(command):
    """Why the CLI cannot run `command` (None when it has it)."""
    if command not in _missing:
        p = cli(command, "--help", timeout=60)
        _missing[command] = None if p.returncode == 0 else (
            f"paimon-compact ({os.environ.get('PAIMON_COMPACT_CLI')}) has no `{command}` "
            f"command yet: {(p.stderr or p.stdout).strip().splitlines()[:1]}")
    return _missing[command]


# ------------------------------------------------------------------ the pipeline


def state_steps(name, label, warehouse=None, changelog_read=None):
    extra = {"warehouse": str(warehouse)} if warehouse else {}
    steps = [{"op": "list", "table": name, "label": label, **extra},
             {"op": "versions", "table": name, "label": label, **extra},
             {"op": "orphans", "table": name, "label": label, **extra}]
    if changelog_read:
        steps.append({"op": "read", "table": name, "label": f"{label}-changelog",
                      "with_kind": True, **extra,
                      "options": {"incremental-between": changelog_read,
                                  "incremental-between-scan-mode": "changelog"}})
    return steps


def java_maintenance_steps(case, warehouse=None):
    extra = {"warehouse": str(warehouse)} if warehouse else {}
    out = []
    for s in case.java_steps:
        if s["op"] == "c":
            out.append({"op": "compact", "table": case.name, "maintenance": False,
                        "label": "maintenance", **extra})
        else:
            out.append({"table": case.name, "label": "maintenance", **extra, **s})
    return out


class Pipeline:
    pass


def finish(job, timeout=400):
    """The results of a driver run; a run that hangs is killed, not left behind."""
    try:
        return job.results(timeout)
    except subprocess.TimeoutExpired:
        job.proc.kill()
        job.proc.wait()
        raise AssertionError(f"the Java driver did not finish {job.script} in {timeout} s")


def read_the_clock():
    """NOW, TODAY and NOW_MS as the fixture starts, and the cases built from them again: tests
    of another module run between collection and this fixture, and a run that crossed midnight
    or an hour since would expect tags of the wrong day or expire a snapshot set 'now'."""
    global NOW, TODAY, NOW_MS, CASES, BY_NAME
    NOW = datetime.datetime.now()
    TODAY = NOW.date()
    NOW_MS = int(time.time() * 1000)
    CASES = cases()
    assert [c.name for c in CASES] == NAMES
    BY_NAME = {c.name: c for c in CASES}


@pytest.fixture(scope="module")
def run(tmp_path_factory, java_classpath):
    read_the_clock()
    base = tmp_path_factory.mktemp("maintenance")
    work = str(base / "scripts")
    w, a, b = base / "W", base / "A", base / "B"
    p = Pipeline()
    p.dirs = {"W": w, "A": a, "B": b}
    p.timings = {}
    started = time.time()

    # 1. Java builds every table in W.
    steps = []
    for case in CASES:
        steps += build_steps(case)
    steps += orphan_build_steps()
    p.built = finish(JavaRun(work, "1-build", w, steps))
    p.timings["build"] = time.time() - started

    # 2. The state each case needs, then the copies.
    for case in CASES:
        tdir = table_dir(w, case.name)
        for name, nxt in case.consumers.items():
            write_consumer(tdir, name, nxt)
        for name, nxt in case.stale_consumers.items():
            write_consumer(tdir, name, nxt, age_days=3)
        for tag in case.old_ttl_tags:
            age_tag(tdir, tag, now=NOW)
        if case.times:
            set_snapshot_times(tdir, case.times, shift=False)
    plant_orphans(table_dir(w, ORPHAN_TABLE))
    p.files_w = {c.name: files_of(table_dir(w, c.name)) for c in CASES}
    shutil.copytree(w, a)
    shutil.copytree(w, b)
    for case in CASES:
        if case.time_shift:
            set_snapshot_times(table_dir(a, case.name), case.times, shift=True)
            if PEER == "java":
                set_snapshot_times(table_dir(b, case.name), case.times, shift=True)

    # 3. Java maintains A (and reads W's versions); our CLI maintains B meanwhile.
    steps = []
    for case in CASES:
        steps.append({"op": "versions", "table": case.name, "label": "W", "warehouse": str(w)})
        steps += java_maintenance_steps(case)
        steps += state_steps(case.name, "A", changelog_read=case.changelog_read)
        if PEER == "java":
            steps += java_maintenance_steps(case, warehouse=b)
    day_ago = (NOW - datetime.timedelta(days=1)).strftime("%Y-%m-%d %H:%M:%S")
    steps += [{"op": "orphans", "table": ORPHAN_TABLE, "label": "A-day", "older_than": day_ago},
              {"op": "orphans", "table": ORPHAN_TABLE, "label": "A"},
              {"op": "read", "table": ORPHAN_TABLE, "label": "A"}]
    job = JavaRun(work, "2-maintain-A", a, steps)
    t0 = time.time()
    p.ours = {}
    if PEER != "java":
        for case in CASES:
            ours = Ours()
            for args in case.ours:
                ours.run(table_dir(b, case.name), args)
            p.ours[case.name] = ours
    else:
        p.ours = {c.name: Ours() for c in CASES}
    p.ours_orphans = Ours()
    odir = table_dir(b, ORPHAN_TABLE)
    planted = ORPHAN_OLD + ORPHAN_YOUNG
    if PEER != "java":
        p.ours_orphans.run(odir, ["remove-orphan-files", "--older-than", "1d", "--dry-run"])
        p.orphans_after_dry_run = {f: os.path.exists(os.path.join(odir, f)) for f in planted}
        p.ours_orphans.run(odir, ["remove-orphan-files", "--older-than", "1d"])
        p.orphans_after = {f: os.path.exists(os.path.join(odir, f)) for f in planted}
    p.timings["ours"] = time.time() - t0
    p.java_a = finish(job)
    p.timings["java-A"] = time.time() - started - p.timings["build"]

    # 4. Java reads B.
    steps = []
    for case in CASES:
        steps += state_steps(case.name, "B", changelog_read=case.changelog_read)
    if PEER == "java":
        # The harness' self-check of the orphan case: Java's own removal, as ours would do.
        p.orphans_after_dry_run = {f: True for f in planted}
        steps.append({"op": "orphans", "table": ORPHAN_TABLE, "label": "B-java-remove",
                      "older_than": day_ago, "delete": True})
    steps += [{"op": "orphans", "table": ORPHAN_TABLE, "label": "B"},
              {"op": "read", "table": ORPHAN_TABLE, "label": "B"}]
    p.java_b = finish(JavaRun(work, "3-read-B", b, steps))
    if PEER == "java":
        p.orphans_after = {f: os.path.exists(os.path.join(odir, f)) for f in planted}
    p.timings["total"] = time.time() - started
    print("maintenance pipeline timings (s):",
          {k: round(v, 1) for k, v in p.timings.items()})
    return p


# ------------------------------------------------------------------ helpers of the tests


def state(results, name, label):
    return results.ok("list", name, label)


def kind_of(filename):
    for prefix in ("index-manifest-", "manifest-list-", "manifest-", "changelog-", "data-",
                   "index-", "stat-"):
        if filename.startswith(prefix):
            return prefix.rstrip("-")
    return filename


def normalized(orphans, known):
    """An orphan path as itself if the file existed in W, else (its directory, its kind): our
    compaction's files and Java's have different names."""
    out = []
    for rel in orphans:
        if rel in known:
            out.append(rel)
        else:
            out.append((os.path.dirname(rel), kind_of(os.path.basename(rel))))
    return collections.Counter(out)


def built_ok(run, name):
    for step in run.built.items:
        if step["table"] == name:
            assert "error" not in step, f"Java could not build {name}: {step['error']}"


# ------------------------------------------------------------------ the tests


@pytest.mark.parametrize("name", NAMES)
def test_java_reference_does_what_the_case_expects(run, name):
    """The reference itself: Java's maintenance of copy A leaves what the case is about."""
    case = BY_NAME[name]
    built_ok(run, name)
    for r in run.java_a.items:
        if r["table"] == name and r.get("label") == "maintenance":
            assert "error" not in r, f"Java's {r['op']} of {name} failed: {r['error']}"
    got = state(run.java_a, name, "A")
    assert got["snapshots"] == case.expect["snapshots"], got
    assert got["earliest"] == case.expect["snapshots"][0]
    assert got["latest"] == case.expect["snapshots"][-1]
    if "changelogs" in case.expect:
        assert got["changelogs"] == case.expect["changelogs"], got
    if "tags" in case.expect:
        assert got["tags"] == case.expect["tags"], got
    if "partitions" in case.expect:
        assert [p["partition"] for p in got["partitions"]] == case.expect["partitions"], got
    if "consumers" in case.expect:
        assert got["consumers"] == case.expect["consumers"], got
    # Nothing Java kept lost its files.
    versions = run.java_a.ok("versions", name, "A")
    for kind in ("snapshots", "tags"):
        for key, rows in versions[kind].items():
            assert isinstance(rows, list), f"Java cannot read its own {kind[:-1]} {key}: {rows}"


@pytest.mark.parametrize("name", NAMES)
def test_ours_keeps_the_snapshots_tags_changelogs_and_partitions_java_keeps(run, name):
    run.ours[name].check()
    java_state = state(run.java_a, name, "A")
    ours = state(run.java_b, name, "B")
    assert ours["snapshots"] == java_state["snapshots"], "snapshot ids"
    assert ours["earliest"] == java_state["earliest"], "EARLIEST"
    assert ours["latest"] == java_state["latest"], "LATEST"
    assert ours["changelogs"] == java_state["changelogs"], "changelog ids"
    assert ours["tags"] == java_state["tags"], "tags"
    assert [p["partition"] for p in ours["partitions"]] == [
        p["partition"] for p in java_state["partitions"]], "partitions"
    assert ours["consumers"] == java_state["consumers"], "consumers"


@pytest.mark.parametrize("name", NAMES)
def test_java_reads_every_retained_snapshot_and_tag_of_ours_as_of_its_own(run, name):
    run.ours[name].check()
    java_v = run.java_a.ok("versions", name, "A")
    ours_v = run.java_b.ok("versions", name, "B")
    original = run.java_a.ok("versions", name, "W")
    for kind in ("snapshots", "tags"):
        assert sorted(ours_v[kind]) == sorted(java_v[kind]), kind
        for key, rows in ours_v[kind].items():
            assert isinstance(rows, list), f"Java cannot read our {kind[:-1]} {key}: {rows}"
            assert rows == java_v[kind][key], f"{kind[:-1]} {key} reads differently"
            if key in original[kind]:
                assert rows == original[kind][key], f"{kind[:-1]} {key} changed since W"
    case = BY_NAME[name]
    if case.changelog_read:
        # The changelog a streaming reader gets from the retained (decoupled) changelogs.
        java_cl = run.java_a.ok("read", name, "A-changelog")["rows"]
        assert java_cl, "Java read no changelog"
        assert run.java_b.ok("read", name, "B-changelog")["rows"] == java_cl


@pytest.mark.parametrize("name", NAMES)
def test_java_finds_no_orphan_on_ours_that_it_does_not_find_on_its_own(run, name):
    """Files ours left unreferenced: Java's OrphanFilesClean (no-op cleaner, any age) on B
    finds no more (by name, or by directory and kind for files written after W)."""
    run.ours[name].check()
    known = run.files_w[name]
    java_o = normalized(run.java_a.ok("orphans", name, "A")["orphans"], known)
    ours_o = normalized(run.java_b.ok("orphans", name, "B")["orphans"], known)
    extra = ours_o - java_o
    assert not extra, f"left behind by ours, not by Java: {sorted(map(str, extra.elements()))}"


def test_java_reference_orphan_scan(run):
    built_ok(run, ORPHAN_TABLE)
    assert run.java_a.ok("orphans", ORPHAN_TABLE, "A-day")["orphans"] == sorted(ORPHAN_OLD)
    assert run.java_a.ok("orphans", ORPHAN_TABLE, "A")["orphans"] == sorted(
        ORPHAN_OLD + ORPHAN_YOUNG)


def test_remove_orphan_files_removes_exactly_the_old_strays(run):
    run.ours_orphans.check()
    assert all(run.orphans_after_dry_run.values()), (
        f"--dry-run deleted files: {run.orphans_after_dry_run}")
    assert run.orphans_after == {**{f: False for f in ORPHAN_OLD},
                                 **{f: True for f in ORPHAN_YOUNG}}
    # Java's scan finds only the young stray; the table reads as before.
    assert run.java_b.ok("orphans", ORPHAN_TABLE, "B")["orphans"] == sorted(ORPHAN_YOUNG)
    assert run.java_b.ok("read", ORPHAN_TABLE, "B")["rows"] == run.java_a.ok(
        "read", ORPHAN_TABLE, "A")["rows"]
