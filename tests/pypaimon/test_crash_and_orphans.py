"""Real-process crash and orphan tests on pypaimon-written tables (docs/maintenance.md, "Orphan
file removal" and "Snapshot expiration"): a `compact --full` killed with SIGKILL at any point
leaves the table readable and at worst orphans, which `remove-orphan-files` removes without
touching anything a snapshot names; the age threshold protects a concurrent writer's files; and
maintenance after a job leaves a table both pypaimon readers agree on."""

import json
import os
import random
import shutil
import signal
import subprocess
import threading
import time

import fastavro
import pyarrow as pa

from conftest import CLI, ENGINE, Warehouse, cli, paimon_rust

PK = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64())])

HINTS = {"EARLIEST", "LATEST"}


# ---------------------------------------------------------------------------------------------
# The table's own metadata, read directly (fastavro), independently of pypaimon and of our CLI.

def table_dir(wh, name):
    return os.path.join(wh.root, wh.path(name))


_AVRO = {}


def _avro(path):
    """The records of an Avro file. Paimon's manifests and manifest lists are immutable (unique
    names), so their contents are cached; their existence is checked on every call."""
    assert os.path.exists(path), f"{path} is gone"
    if path not in _AVRO:
        with open(path, "rb") as fh:
            _AVRO[path] = list(fastavro.reader(fh))
    return _AVRO[path]


def snapshot_ids(tdir):
    return sorted(int(f[len("snapshot-"):]) for f in os.listdir(os.path.join(tdir, "snapshot"))
                  if f.startswith("snapshot-"))


def load_snapshot(tdir, sid):
    with open(os.path.join(tdir, "snapshot", f"snapshot-{sid}")) as fh:
        return json.load(fh)


def references(tdir):
    """What the retained snapshots name: (metadata file names, data file names of any entry,
    {snapshot id: {(bucket, data file name) live in it}}). Every file named must exist."""
    meta, data, live = set(), set(), {}
    mdir = os.path.join(tdir, "manifest")
    for sid in snapshot_ids(tdir):
        snap = load_snapshot(tdir, sid)
        state = {}
        for key in ("baseManifestList", "deltaManifestList"):
            lst = snap[key]
            meta.add(lst)
            for m in _avro(os.path.join(mdir, lst)):
                meta.add(m["_FILE_NAME"])
                for e in _avro(os.path.join(mdir, m["_FILE_NAME"])):
                    f = e["_FILE"]
                    data.add(f["_FILE_NAME"])
                    data.update(f.get("_EXTRA_FILES") or [])
                    ident = (bytes(e["_PARTITION"]), e["_BUCKET"], f["_FILE_NAME"])
                    if e["_KIND"] == 0:
                        state[ident] = True
                    else:
                        state.pop(ident, None)
        for key in ("changelogManifestList", "indexManifest", "statistics"):
            if snap.get(key):
                meta.add(snap[key])
        live[sid] = {(b, n) for (_, b, n) in state}
    return meta, data, live


def assert_snapshots_intact(tdir):
    """Every retained snapshot's manifest lists and manifests, and every data file live in it,
    exist (`references` opens the metadata; the data files are checked here)."""
    _, _, live = references(tdir)
    for sid, files in live.items():
        for bucket, n in files:
            assert os.path.exists(os.path.join(tdir, f"bucket-{bucket}", n)), \
                f"snapshot {sid} names bucket-{bucket}/{n}, which is gone"
    return live


def bucket_files(tdir):
    """Every file directly in a bucket directory (hidden temporary files included)."""
    out = set()
    for d in os.listdir(tdir):
        if d.startswith("bucket-"):
            for n in os.listdir(os.path.join(tdir, d)):
                if os.path.isfile(os.path.join(tdir, d, n)):
                    out.add(f"{d}/{n}")
    return out


def unreferenced(tdir):
    """Files in the orphan-removal directories (buckets, manifest/, strays in snapshot/) that no
    retained snapshot names."""
    meta, data, _ = references(tdir)
    out = {f for f in bucket_files(tdir) if f.split("/", 1)[1] not in data}
    out |= {f"manifest/{n}" for n in os.listdir(os.path.join(tdir, "manifest")) if n not in meta}
    out |= {f"snapshot/{n}" for n in os.listdir(os.path.join(tdir, "snapshot"))
            if not n.startswith("snapshot-") and n not in HINTS}
    return out


def read_snapshot(wh, name, sid):
    t = wh.table(name).copy({"scan.snapshot-id": str(sid)})
    rb = t.new_read_builder()
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def split_files(wh, name):
    """(bucket, file name) of every file pypaimon's scan plans for the latest snapshot."""
    rb = wh.table(name).new_read_builder()
    return {(s.bucket, f.file_name) for s in rb.new_scan().plan().splits() for f in s.files}


def orphans(wh, name, *flags):
    code, out = wh.tool("remove-orphan-files", name, *flags)
    return out["orphans"]


def deleted_names(report):
    return {p.split("/", 1)[1] for p in report["deleted"]}  # paths are `<table>/<relative>`


def sorted_rows(rows):
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


# ---------------------------------------------------------------------------------------------
# 1. SIGKILL during compaction, then orphan removal.

COMMITS, ROWS, WIDTH = 20, 2000, 500
ROUNDS = 20


def build_big_table(wh):
    """2 buckets, 20 commits of 2000 rows of ~0.5 kB values (keys overlapping across commits):
    an idle machine runs a --full job in ~0.2 s on either engine, its second half writing the
    two new files. (20 commits of 20k narrow rows compact hardly slower, but pypaimon's
    merge-on-read of them takes ~4 s, against ~0.5 s here, and each round reads the table up to
    four times.)"""
    wh.create("t", PK, primary_keys=["k"], options={"bucket": "2", "write-only": "true"})
    rnd = random.Random(7)
    expected = {}
    for c in range(COMMITS):
        rows = [{"k": k, "v": f"c{c}-{k}-%0{WIDTH}x" % rnd.getrandbits(WIDTH * 4), "n": c}
                for k in rnd.sample(range(ROWS * 4), ROWS)]
        wh.write("t", rows, PK)
        expected.update((r["k"], r) for r in rows)
    return sorted_rows(expected.values())


def compact_argv(tdir):
    return [CLI, "--engine", ENGINE, "compact", tdir, "--full", "--json", "--no-lease",
            "--skip-maintenance"]


def test_sigkill_during_full_compaction_then_orphan_removal(wh, tmp_path):
    expected = build_big_table(wh)
    assert wh.read("t") == expected
    src = table_dir(wh, "t")
    before = snapshot_ids(src)[-1]
    assert before == COMMITS

    # Measure the job (on throw-away copies; the slowest of three, so that the last delays
    # reach past the commit).
    durations = []
    for i in range(3):
        probe = str(tmp_path / f"probe{i}")
        shutil.copytree(wh.root, probe)
        t0 = time.monotonic()
        p = subprocess.run(compact_argv(os.path.join(probe, wh.path("t"))), capture_output=True,
                           text=True, timeout=300)
        durations.append(time.monotonic() - t0)
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["snapshot_after"] == before + 1
        shutil.rmtree(probe)
    duration = max(durations)

    counts = {"killed before commit": 0, "committed": 0}
    orphaned_rounds = 0     # kills before the commit that left files behind
    leftovers = []          # (round, unreferenced files remove-orphan-files left)
    killed_after_commit = 0
    delays = [1.2 * duration * i / (ROUNDS - 1) for i in range(ROUNDS)]

    def round_(i, delay):
        nonlocal orphaned_rounds, killed_after_commit
        root = tmp_path / f"round{i}"
        shutil.copytree(wh.root, root)
        rw = Warehouse(root)
        tdir = table_dir(rw, "t")
        p = subprocess.Popen(compact_argv(tdir), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        time.sleep(delay)
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
        out, err = p.communicate(timeout=300)
        killed = p.returncode == -signal.SIGKILL
        committed = os.path.exists(os.path.join(tdir, "snapshot", f"snapshot-{before + 1}"))
        if not killed:
            assert p.returncode == 0 and committed, (p.returncode, out, err)
        counts["committed" if committed else "killed before commit"] += 1
        killed_after_commit += killed and committed
        assert snapshot_ids(tdir)[-1] == (before + 1 if committed else before)
        assert not os.path.exists(os.path.join(tdir, "compaction-lease")), "--no-lease took one"

        # The table as the kill left it: every retained snapshot intact, pypaimon reads the same
        # rows from the latest and from the snapshot the job started from.
        assert_snapshots_intact(tdir)
        assert rw.read("t") == expected, f"round {i}: rows changed after the kill"
        if committed:
            assert read_snapshot(rw, "t", before) == expected
        stray = unreferenced(tdir)
        orphaned_rounds += bool(stray) and not committed

        # Orphan removal deletes exactly the unreferenced files, nothing a snapshot names. (A
        # file it leaves is recorded and failed at the end, so that every round still runs.)
        report = orphans(rw, "t", "--older-than", "1ms")
        assert report["failed"] == [] and report["kept_unknown_age"] == 0, report
        left = unreferenced(tdir)
        assert deleted_names(report) == stray - left, (i, report, stray)
        if left:
            leftovers.append((i, sorted(left)))
        live = assert_snapshots_intact(tdir)
        latest = live[snapshot_ids(tdir)[-1]]
        _, data, _ = references(tdir)
        assert {f.split("/", 1)[1] for f in bucket_files(tdir) - left} == data
        assert split_files(rw, "t") == latest
        plan = rw.plan("t")
        assert {b["bucket"]: b["files"] for b in plan["buckets"]} == \
            {b: sum(1 for (bb, _) in latest if bb == b) for b in (0, 1)}, plan
        assert rw.read("t") == expected, f"round {i}: rows changed after orphan removal"

        # A rerun finishes the job.
        report = rw.compact("t", "--full")
        assert report["status"] == ("nothing-to-do" if committed else "complete"), report
        assert_snapshots_intact(tdir)
        assert rw.read("t") == expected
        plan = rw.plan("t")
        assert all(b["files"] == 1 for b in plan["buckets"]), plan
        shutil.rmtree(root)

    for i, delay in enumerate(delays):
        round_(i, delay)
    # Timing on a loaded machine can push every kill to one side: a few extra rounds then.
    extra = 0
    while counts["committed"] == 0 and extra < 3:
        round_(ROUNDS + extra, 3 * duration + 0.5)
        extra += 1
    while counts["killed before commit"] == 0 and extra < 6:
        round_(ROUNDS + extra, 0)
        extra += 1

    print(f"\n[{ENGINE}] job {duration:.3f}s; killed before commit: "
          f"{counts['killed before commit']} (leaving orphans: {orphaned_rounds}), "
          f"committed: {counts['committed']} (killed after the commit: {killed_after_commit}); "
          f"rounds whose orphans outlived remove-orphan-files: {len(leftovers)}")
    assert counts["killed before commit"] >= 1 and counts["committed"] >= 1, counts
    # A job killed in the middle of writing a file leaves the local storage's temporary file
    # (`.<name>.<pid>-<n>.tmp`, next to the target); it is as much an orphan as a finished file
    # no snapshot names, and docs/maintenance.md promises their removal.
    assert not leftovers, f"remove-orphan-files --older-than 1ms left orphans: {leftovers}"


# ---------------------------------------------------------------------------------------------
# 2. Concurrent writers and the age threshold.

def small_rows(c, n=200):
    return [{"k": c * 1000 + i, "v": f"w{c}-{i}", "n": c} for i in range(n)]


def plant_old_orphans(tdir):
    """Unreferenced files two days old, in a bucket directory and in manifest/."""
    old = time.time() - 2 * 86400
    planted = {"bucket-0/data-planted-0.parquet", "bucket-1/data-planted-1.parquet",
               "manifest/manifest-planted-0"}
    for rel in planted:
        p = os.path.join(tdir, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as fh:
            fh.write(b"not referenced")
        os.utime(p, (old, old))
    return planted


def test_concurrent_writer_keeps_its_files_during_orphan_removal(wh):
    wh.create("t", PK, primary_keys=["k"], options={"bucket": "2"})
    wh.write("t", small_rows(0), PK)
    tdir = table_dir(wh, "t")
    planted = plant_old_orphans(tdir)

    reports, errors = [], []
    done = threading.Event()

    def remover():
        # Back-to-back runs with the default threshold (1 day) for as long as the writer writes.
        while not done.is_set() or not reports:
            p = cli("remove-orphan-files", tdir, "--json")
            if p.returncode != 0:
                errors.append((p.stdout, p.stderr))
                return
            reports.append(json.loads(p.stdout)["orphans"])

    th = threading.Thread(target=remover)
    th.start()
    rows = small_rows(0)
    commits = 0
    try:
        # Six commits, and more (keys of their own, up to 24) until two removals ran beside
        # them: a loaded machine may slow the removals more than the writer.
        for c in [*range(1, 7), *range(20, 44)]:
            if c >= 20 and (len(reports) >= 2 or not th.is_alive()):
                break
            wh.write("t", small_rows(c), PK)
            rows += small_rows(c)
            commits += 1
    finally:
        done.set()
        th.join(timeout=120)
    assert not errors, errors
    assert len(reports) >= 2, reports
    deleted = set().union(*(deleted_names(r) for r in reports))
    assert deleted == planted, deleted
    assert all(r["failed"] == [] for r in reports)
    # Every file of every commit is there, and pypaimon reads every row.
    live = assert_snapshots_intact(tdir)
    assert len(live) == 1 + commits
    assert unreferenced(tdir) == set()
    assert wh.read("t") == sorted_rows(rows)

    # A write whose files are written but not committed yet.
    def pending(c):
        t = wh.table("t")
        wb = t.new_batch_write_builder()
        w = wb.new_write()
        w.write_arrow(pa.Table.from_pylist(small_rows(c), schema=PK))
        msgs = w.prepare_commit()
        return wb, w, msgs

    old_files = bucket_files(tdir)
    wb, w, msgs = pending(7)
    uncommitted = bucket_files(tdir) - old_files
    assert uncommitted, "prepare_commit wrote no data file"
    time.sleep(0.01)
    # The default threshold keeps the writer's files: they are younger than a day.
    report = orphans(wh, "t")
    assert report["deleted"] == [], report
    assert report["kept_too_young"] >= len(uncommitted), report
    assert all(os.path.exists(os.path.join(tdir, f)) for f in uncommitted)
    c = wb.new_commit()
    c.commit(msgs)
    c.close()
    w.close()
    rows += small_rows(7)
    assert_snapshots_intact(tdir)
    assert wh.read("t") == sorted_rows(rows)

    # With a 1 ms threshold the same pending files look like orphans. A threshold shorter than
    # a writer's commit latency is unsafe, as in Paimon (whose procedure has no lock either: the
    # age margin is the only one); this only records what happens, it asserts nothing.
    old_files = bucket_files(tdir)
    wb, w, msgs = pending(8)
    uncommitted = bucket_files(tdir) - old_files
    time.sleep(0.01)
    report = orphans(wh, "t", "--older-than", "1ms")
    taken = deleted_names(report) & uncommitted
    outcome = "reads fine"
    try:
        c = wb.new_commit()
        c.commit(msgs)
        c.close()
        w.close()
        if wh.read("t") != sorted_rows(rows + small_rows(8)):
            outcome = "reads wrong rows"
    except Exception as e:  # noqa: BLE001 - recorded, not asserted
        outcome = f"fails: {type(e).__name__}"
    print(f"\n[{ENGINE}] --older-than 1ms with a pending write: deleted {len(taken)} of its "
          f"{len(uncommitted)} uncommitted files; after its commit the table {outcome}")


# ---------------------------------------------------------------------------------------------
# 3. Maintenance after the job; pypaimon and pypaimon-rust agree.

def tree(tdir):
    out = {}
    for dirpath, _, names in os.walk(tdir):
        for n in names:
            p = os.path.join(dirpath, n)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, tdir)] = fh.read()
    return out


def test_readers_agree_after_compaction_with_maintenance(wh):
    wh.create("t", PK, primary_keys=["k"], options={
        "bucket": "2", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3",
        "snapshot.time-retained": "1ms"})
    for c in range(8):
        wh.write("t", [{"k": (i * 5 + c) % 120, "v": f"c{c}-{i}", "n": c} for i in range(60)], PK)
    before = wh.read("t")
    tdir = table_dir(wh, "t")
    assert len(snapshot_ids(tdir)) == 8
    time.sleep(0.01)
    report = wh.compact("t")  # maintenance on; also compares pypaimon-rust when installed
    assert report["status"] == "complete", report
    assert wh.read("t") == before
    if paimon_rust is not None:
        assert wh.read_rust("t") == before
    ids = snapshot_ids(tdir)
    assert len(ids) <= 3 and ids[-1] == 9, ids
    assert load_snapshot(tdir, ids[-1])["commitKind"] == "COMPACT"
    assert report["maintenance"]["snapshots"]["expired_snapshots"] == list(range(1, ids[0]))
    assert_snapshots_intact(tdir)
    assert unreferenced(tdir) == set(), "expiration left files no snapshot names"

    if len(ids) == 1:
        # The job's own expiration left nothing for a dry run to report: one more commit.
        wh.write("t", [{"k": 500, "v": "late", "n": 9}], PK)
        before = wh.read("t")
        ids = snapshot_ids(tdir)
    time.sleep(0.01)
    state = tree(tdir)
    code, out = wh.tool("expire-snapshots", "t", "--retain-max", "1", "--retain-min", "1",
                        "--older-than", "1ms", "--dry-run")
    snaps = out["snapshots"]
    assert out["dry_run"] and snaps["dry_run"], out
    assert len(ids) > 1
    assert snaps["expired_snapshots"] == ids[:-1], out
    assert snaps["deleted"], out
    if load_snapshot(tdir, ids[-1])["commitKind"] == "COMPACT":
        # The new earliest is the compaction: the files it replaced would go.
        _, _, live = references(tdir)
        replaced = {n for (_, n) in live[ids[0]] - live[ids[-1]]}
        assert replaced <= {os.path.basename(f) for f in snaps["deleted"]} and replaced, out
    assert tree(tdir) == state, "a dry run changed files"
    assert wh.read("t") == before
