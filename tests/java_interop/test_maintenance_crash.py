"""Crash safety of compaction and of every maintenance command, proved with the real peers
(Paimon Java 1.0, pypaimon).

Java writes a table W; Java's reads of every snapshot and tag of W (`versions`) are the
reference. The fixture runs once per MODE, each a command of ours that is killed at every
moment of its run:

* `expire`: W is one primary-key table of many small commits, with one of Java's own full
  compactions (committed without maintenance) every COMPACT_EVERY commits, so that expiring
  the old snapshots also deletes data files and manifests; it ends with a few more commits and
  our `compact --full --skip-maintenance` (so that pypaimon 2.1 can read the latest snapshot's
  manifests). The command is `expire-snapshots --retain-min 1 --retain-max 1 --older-than 1ms`.
* `compact`: the same kind of table, ending with Java's level-0 commits; the command is the
  dedicated job, `compact --full` (with its maintenance, which keeps every snapshot of a table
  this young) and a short lease (`--lease-ttl 2s`), so that the rerun's `--wait` outlives a
  killed run's lease quickly.
* `partitions`, `tags`, `changelogs`, `orphans`: W is the "maintained" table
  (`build_maintained`): partitioned by day, three old days and today, Java's compactions and
  Java's own snapshot expiry, tags with a one-hour TTL made two days ago and one without (in
  `changelogs` mode, instead of tags, a changelog producer, `input`, with the expired
  snapshots living on as decoupled changelogs), our `compact --full --skip-maintenance`, and
  stray files three days old. The commands: `expire-partitions` (one OVERWRITE commit per old
  day: three commits), `expire-tags`, `expire-changelogs` (down to the newest changelog) and
  `remove-orphan-files --older-than 1d`.

The command's run on a copy M of W is timed, with the moment it first changes a file; then, in
ROUNDS rounds, each on a fresh copy K of W, it is started and SIGKILLed after a delay spread
from a little before that first change to 1.2x the run (earlier kills only stop a process
that is still starting). Outcomes: killed
before it changed anything, killed mid-run (a partial state), killed after the work was done,
or finished. Fewer than MIN_MID_RUN kills mid-run (the machine's load changed after the run
was timed) bring up to ROUNDS // 2 more rounds, whose delays bisect between the latest kill
that found the table untouched and the earliest run that got to the end until the kills land
mid-run. After each round:
  * pypaimon reads K's latest snapshot as Java read the same snapshot of W or M (where
    pypaimon can read that snapshot's manifests: this Java build writes manifests pypaimon 2.1
    refuses, so in `compact` mode only once our snapshot is the latest);
  * K is copied to R and the same command is rerun to completion (with `--wait` in `compact`
    mode): it succeeds and leaves what the uninterrupted run left in M;
  * R is copied to O and our `remove-orphan-files --older-than 1ms` runs on O.
Two JVMs at the end check every round (of the rounds whose kill came after the process had
exited, found the table untouched or, where the command only deletes, came after its last
deletion, which leave what an uninterrupted run leaves, only the first PLAIN_RUNS_CHECKED:
Java's reads of the others would repeat theirs), and M: on K, every
snapshot that still has a snapshot file (they must be a contiguous range up to the latest)
reads as it read in W, and a snapshot beyond W's latest (a commit of the killed run) as the
same snapshot of M; every tag left reads as in W. In `expire` mode a
snapshot in the range the killed run was expiring (every one but the latest here) may fail to
read instead: the design (docs/maintenance.md, "Failures and reruns", as in Paimon's
ExpireSnapshotsImpl) deletes data files first and snapshot files last, so a snapshot being
expired may be unreadable while its file remains, but must never read wrong rows; the latest
must read. In every other mode nothing may fail to read (a tag's file goes before its data
files; partitions go by commits; changelog and orphan removal touch no snapshot or tag). Where
the command only deletes, K and R hold every file M holds (a killed run deletes only what the
finished run deletes), and O holds exactly the files of MO, M after remove-orphan-files, the
EARLIEST and LATEST hints aside (`without_hints`): what a killed run orphaned (a tag file goes
before the files only it names) is reclaimed. On R: the latest reads identically; Java's
OrphanFilesClean (no-op cleaner, olderThan far in the future) finds only files our
remove-orphan-files removed from O; on O: the latest still reads identically and Java finds no
orphan. Java 1.0 cannot read a
decoupled changelog in a batch read (the range must lie within the snapshots), so the
changelogs kept are checked by that file comparison only.

In the modes that commit (`compact`, `partitions`), COMMIT_ROUNDS more rounds are aimed. Three
are killed the moment the run's first commit writes a file into `manifest/` (the first
temporary file, the first finished manifest, the first finished manifest list), which lands
the kill in the commit (outcome `killed-in-commit`: a manifest file exists, the snapshot does
not), a window of milliseconds that timed kills rarely hit; when none of them landed there (a
poller kept off the CPU by load), up to three more on the first. One is killed the moment the
run's first snapshot appears (after its commit: the `compact` job's maintenance and lease
release, or the `partitions` run's next commits), which also makes sure some killed copy has a
snapshot of ours as its latest for pypaimon to read, however the machine's load stretched the
run after it was timed (the timed kills may all land before the commit).

Knobs: PAIMON_CRASH_COMMITS (default 200; a quarter of it, at least 60, in `compact` mode),
PAIMON_CRASH_ROUNDS (default 20).
"""

import collections
import datetime
import os
import random
import shutil
import subprocess
import time

import pytest

from conftest import (CLI, ENGINE, JavaRun, age_tag, cli, java_split, pypaimon_read,
                      snapshot_files)

DB = "db"
TABLE = "crash"
COMMITS = int(os.environ.get("PAIMON_CRASH_COMMITS", "200"))
COMPACT_EVERY = 20
ROUNDS = int(os.environ.get("PAIMON_CRASH_ROUNDS", "20"))
MIN_MID_RUN = 3  # kills that land mid-run, else more rounds aim there (see the fixture)
# The modes that commit: rounds killed the moment the run writes a file of a table directory
# that W does not have (directory, test of the file name), so that the kill lands in the
# commit (before its snapshot), a window of a few milliseconds that timed kills rarely hit, or
# just after it. Each round waits for a later file: the first one being written into
# `manifest/` (a temporary file), the first finished manifest, the first finished manifest
# list (after which only the snapshot is left to write), and the run's first snapshot (a
# temporary file's name starts with a dot).
COMMIT_TRIGGERS = [("manifest", lambda n: True),
                   ("manifest", lambda n: n.startswith("manifest-")
                    and not n.startswith("manifest-list-")),
                   ("manifest", lambda n: n.startswith("manifest-list-")),
                   ("snapshot", lambda n: n.startswith("snapshot-"))]
COMMIT_ROUNDS = len(COMMIT_TRIGGERS)
# Rounds whose kill came after the process exited, or found the table untouched, leave K, R
# and O as an uninterrupted run does: Java checks this many of them (the first ones), and
# every other round (see the fixture).
PLAIN_RUNS_CHECKED = 2
KEYS = 64
TAIL = 3  # Java commits after its last compaction; then our `compact --full` ends the table
EXPIRE = ["expire-snapshots", "--retain-min", "1", "--retain-max", "1", "--older-than", "1ms",
          "--option", "snapshot.expire.limit=100000", "--json"]
COMPACT = ["compact", "--full", "--lease-ttl", "2s", "--json"]
# The maintained table (`build_maintained`): three old days that expire, and today.
TODAY = datetime.date.today().isoformat()
OLD_DAYS = ["2020-01-01", "2020-01-02", "2020-01-03"]
MAINTAINED_COMMITS = 120
# Stray files per directory of STRAY_DIRS, three days old; more in `orphans` mode, so that
# their removal lasts long enough for kills to land in it.
STRAYS = 60
ORPHAN_MODE_STRAYS = 500
STRAY_DIRS = [f"dt={OLD_DAYS[0]}/bucket-0", f"dt={TODAY}/bucket-0", "manifest"]


def without_hints(files):
    """`files` without the EARLIEST and LATEST hints. A run rewrites them only when it
    expired something, as Paimon's does: a rerun after a kill that came between the last
    deletion and the hint finds nothing to do and leaves the hint as it was. They only speed
    up readers, which check what a hint names and list the directory without one."""
    return {f for f in files if os.path.basename(f) not in ("EARLIEST", "LATEST")}


def table_dir(warehouse):
    return os.path.join(str(warehouse), f"{DB}.db", TABLE)


def java_builds(work, w, steps, ours_ends_w):
    """Java runs `steps` on warehouse `w`; with `ours_ends_w`, our full compaction (without
    maintenance) then ends the table."""
    built = JavaRun(work, "build", w, steps).results(timeout=900)
    errors = [r for r in built.items if "error" in r]
    assert not errors, errors
    if ours_ends_w:
        ours = cli("compact", table_dir(w), "--full", "--skip-maintenance", "--json")
        assert ours.returncode == 0, f"our compaction failed: {ours.stdout}\n{ours.stderr}"


def build_compacting(commits, ours_ends_w):
    """W of the `expire` and `compact` modes (see the module documentation)."""
    return lambda root, work, w: java_builds(work, w, compacting_steps(commits), ours_ends_w)


def compacting_steps(commits):
    rng = random.Random(20240611)
    steps = [{"op": "create", "table": TABLE,
              "columns": [["k", "INT NOT NULL"], ["v", "STRING"], ["n", "BIGINT"]],
              "primary_keys": ["k"], "partition_keys": [],
              # Every commit rewrites all manifests: after our final compaction the latest
              # snapshot names only our manifests, which pypaimon 2.1 can read (this Java
              # build's lack `_VALUE_STATS_COLS`; see test_java_peer.py).
              "options": {"bucket": "1", "write-only": "true",
                          "manifest.full-compaction-threshold-size": "1 b"}}]
    batch = []
    for i in range(1, commits + TAIL + 1):
        batch.append([{"k": rng.randrange(KEYS), "v": f"c{i}-{j}", "n": i * 10 + j}
                      for j in range(3)])
        if i % COMPACT_EVERY == 0:
            steps.append({"op": "write", "table": TABLE, "commits": batch})
            batch = []
            steps.append({"op": "compact", "table": TABLE, "maintenance": False,
                          "label": f"c{i}"})
    if batch:
        steps.append({"op": "write", "table": TABLE, "commits": batch})
    return steps


def maintained_steps(changelogs):
    """Java's part of the maintained table: writes to every day, a compaction every tenth
    commit, then Java's snapshot expiry down to 8 snapshots. With `changelogs` the table has a
    changelog producer (`input`) and keeps the expired snapshots as decoupled changelogs
    (changelog.num-retained.max is larger); otherwise it has a tag with a one-hour TTL every
    seventh commit (on the snapshot just written) and one without, on the latest snapshot.

    Tags and changelogs never meet in one table: Java 1.0's expiry deletes the changelog
    manifest list of every snapshot it expires, tagged or not, and Java 1.0's orphan scan then
    lists the files only such a tag holds as orphans (it seems to skip a tag with a list it
    cannot read). Newer Paimon reads the tag's other lists, and so does ours: with both, the
    reference scan would be wrong, not ours."""
    rng = random.Random(20261206)
    producer = ({"changelog-producer": "input", "changelog.num-retained.max": "100000"}
                if changelogs else {})
    steps = [{"op": "create", "table": TABLE,
              "columns": [["dt", "STRING NOT NULL"], ["k", "INT NOT NULL"], ["v", "STRING"],
                          ["n", "BIGINT"]],
              "primary_keys": ["dt", "k"], "partition_keys": ["dt"],
              "options": {"bucket": "1", "write-only": "true", **producer,
                          "manifest.full-compaction-threshold-size": "1 b",
                          "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "8",
                          "snapshot.expire.limit": "100000",
                          "partition.expiration-time": "7 d",
                          "partition.timestamp-formatter": "yyyy-MM-dd",
                          # One OVERWRITE commit per expired day: kills between them.
                          "partition.expiration-batch-size": "1"}}]
    batch = []
    snapshot = 0

    def flush():
        nonlocal batch
        if batch:
            steps.append({"op": "write", "table": TABLE, "commits": batch})
            batch = []

    for i in range(1, MAINTAINED_COMMITS + TAIL + 1):
        batch.append([{"dt": d, "k": rng.randrange(16), "v": f"c{i}-{j}", "n": i * 10 + j}
                      for d in OLD_DAYS + [TODAY] for j in range(2)])
        snapshot += 1
        if i % 10 == 0 and i <= MAINTAINED_COMMITS:
            flush()
            steps.append({"op": "compact", "table": TABLE, "maintenance": False})
            snapshot += 1
        if i % 7 == 3 and not changelogs:
            flush()
            steps.append({"op": "tag", "table": TABLE, "name": f"t{snapshot}",
                          "snapshot_id": snapshot, "time_retained": "1 h"})
    flush()
    if not changelogs:
        steps.append({"op": "tag", "table": TABLE, "name": "kept", "snapshot_id": snapshot})
    steps.append({"op": "expire_snapshots", "table": TABLE})
    return steps


def build_maintained(changelogs=False, strays=STRAYS):
    """W of the maintenance modes (see the module documentation and `maintained_steps`)."""
    return lambda root, work, w: build_maintained_table(work, w, changelogs, strays)


def build_maintained_table(work, w, changelogs, strays):
    java_builds(work, w, maintained_steps(changelogs), True)
    tdir = table_dir(w)
    # The TTL tags (every tag but `kept`) were made two days ago.
    tags = os.path.join(tdir, "tag")
    for name in os.listdir(tags) if os.path.isdir(tags) else []:
        if name != "tag-kept":
            age_tag(tdir, name[len("tag-"):])
    old = time.time() - 3 * 86400
    # Names unique across directories: Java's orphan scan keys its candidates by file name.
    for n, d in enumerate(STRAY_DIRS):
        for i in range(strays):
            name = (f"manifest-0b0e6a4c-5d1f-4f55-9bd6-{n:04d}{i:08d}-0" if d == "manifest"
                    else f"data-0b0e6a4c-5d1f-4f55-9bd6-{n:04d}{i:08d}-0.parquet")
            path = os.path.join(tdir, d, name)
            with open(path, "wb") as fh:
                fh.write(b"not referenced by any snapshot")
            os.utime(path, (old, old))


class Mode:
    """The command a fixture kills, how its table W is built, and what its finished run
    leaves: `commits` snapshots more (0: the command only deletes), or only the latest
    snapshot (`expires_snapshots`)."""

    def __init__(self, name, command, build, rerun_flags=(), ours_ends_w=True, commits=0,
                 expires_snapshots=False):
        self.name = name
        self.command = command
        self.build = build
        self.rerun_flags = list(rerun_flags)
        # W ends with our full compaction (pypaimon can read its latest snapshot).
        self.ours_ends_w = ours_ends_w
        self.commits = commits
        self.expires_snapshots = expires_snapshots

    @property
    def only_deletes(self):
        return self.commits == 0

    def finished_ids(self, ids):
        """The snapshot ids a finished run leaves on W's `ids`."""
        if self.expires_snapshots:
            return ids[-1:]
        return ids + list(range(ids[-1] + 1, ids[-1] + 1 + self.commits))

    def run(self, tdir, *extra):
        return subprocess.Popen([CLI, "--engine", ENGINE, self.command[0], tdir,
                                 *self.command[1:], *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


MODES = {
    "expire": Mode("expire", EXPIRE, build_compacting(COMMITS, True), expires_snapshots=True),
    "compact": Mode("compact", COMPACT,
                    build_compacting(max(3 * COMPACT_EVERY, COMMITS // 4), False),
                    rerun_flags=["--wait"], ours_ends_w=False, commits=1),
    "partitions": Mode("partitions", ["expire-partitions", "--json"], build_maintained(),
                       commits=len(OLD_DAYS)),
    "tags": Mode("tags", ["expire-tags", "--json"], build_maintained()),
    "changelogs": Mode("changelogs", ["expire-changelogs", "--option",
                                      "changelog.num-retained.max=1", "--json"],
                       build_maintained(changelogs=True)),
    "orphans": Mode("orphans", ["remove-orphan-files", "--older-than", "1d", "--json"],
                    build_maintained(strays=ORPHAN_MODE_STRAYS)),
}


def file_state(tdir):
    """relative path -> (size, mtime_ns) of every file of a table.

    Also called while a command runs (to see when it first changes a file): a file it deletes
    between the listing and the stat is simply absent from the state.
    """
    out = {}
    for dirpath, _, names in os.walk(tdir):
        for n in names:
            p = os.path.join(dirpath, n)
            try:
                st = os.stat(p)
            except FileNotFoundError:
                continue
            out[os.path.relpath(p, tdir)] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture(scope="module", params=list(MODES))
def crash(request, tmp_path_factory, java_classpath):
    assert CLI, "PAIMON_COMPACT_CLI must name the paimon-compact binary"
    mode = MODES[request.param]
    root = tmp_path_factory.mktemp(f"crash-{mode.name}")
    work = str(root / "java")
    w = str(root / "W")
    t0 = time.monotonic()
    mode.build(root, work, w)
    print(f"\n[{ENGINE}/{mode.name}] built in {time.monotonic() - t0:.1f}s")
    # Java's reads of every snapshot of W (W is never changed) come from the checking JVM at
    # the end, with everything else.
    ids = [s["id"] for s in snapshot_files(table_dir(w))]
    latest = ids[-1]
    assert ids == list(range(ids[0], latest + 1)), ids
    assert (snapshot_files(table_dir(w))[-1]["commitKind"] == "COMPACT") == mode.ours_ends_w
    w_state = file_state(table_dir(w))

    # Time the full run (twice: a first wasm start may compile the component), on M0 and M1.
    # Also when the first file changes: before that the process is only starting (loading
    # the component is most of a short run), and kills there teach nothing.
    durations, first_changes = [], []
    final_state = None
    for m in range(2):
        dst = str(root / f"M{m}")
        shutil.copytree(w, dst)
        start_state = file_state(table_dir(dst))
        t = time.monotonic()
        p = mode.run(table_dir(dst))
        while p.poll() is None and len(first_changes) == m:
            if file_state(table_dir(dst)) != start_state:
                first_changes.append(time.monotonic() - t)
            time.sleep(0.002)
        out, err = p.communicate(timeout=300)
        durations.append(time.monotonic() - t)
        assert p.returncode == 0, f"{mode.command[0]} failed: {out}\n{err}"
        assert [s["id"] for s in snapshot_files(table_dir(dst))] == mode.finished_ids(ids)
        state = set(file_state(table_dir(dst)))
        assert state != set(w_state), f"{mode.command[0]} changed nothing"
        if mode.only_deletes and final_state is not None:
            assert state == final_state, "two finished runs left different files"
        final_state = state
    finished_ids = mode.finished_ids(ids)
    # MO: M0 after remove-orphan-files, what every round's O must hold where the command only
    # deletes (a rerun may leave what a killed run orphaned; remove-orphan-files reclaims it).
    shutil.copytree(str(root / "M0"), str(root / "MO"))
    mo = cli("remove-orphan-files", table_dir(root / "MO"), "--older-than", "1ms", "--json")
    assert mo.returncode == 0, f"remove-orphan-files failed on MO: {mo.stdout}\n{mo.stderr}"
    clean_state = set(file_state(table_dir(root / "MO")))
    duration = min(durations)
    # Kills start a little before the earliest first change seen (0 if none was seen).
    start = 0.8 * min(first_changes) if len(first_changes) == 2 else 0.0
    print(f"[{ENGINE}/{mode.name}] {mode.command[0]} of {len(ids)} snapshots: "
          + ", ".join(f"{d:.2f}s" for d in durations)
          + f"; first change after {', '.join(f'{c:.2f}s' for c in first_changes)}")

    t_rounds = time.monotonic()
    rounds = []
    outcomes = collections.Counter()
    rng = random.Random(7)

    w_names = {d: set(os.listdir(os.path.join(table_dir(w), d)))
               for d in ("manifest", "snapshot")}

    def new_names(tdir, d):
        """The names in directory `d` of table `tdir` that W's does not have."""
        return set(os.listdir(os.path.join(tdir, d))) - w_names[d]

    def one_round(i, delay, at_commit=None):
        """Round i: a fresh copy K of W, the command killed after `delay` s (`at_commit`: a
        trigger of COMMIT_TRIGGERS, when a new file matches it), then R and O."""
        k = str(root / f"K{i}")
        shutil.copytree(w, k)
        t = time.monotonic()
        p = mode.run(table_dir(k))
        if at_commit is not None:
            d, matches = at_commit
            while p.poll() is None and not any(
                    matches(n) for n in new_names(table_dir(k), d)):
                time.sleep(0.0005)
            delay = time.monotonic() - t
        else:
            time.sleep(delay)
        killed = p.poll() is None
        if killed:
            p.kill()
        out, err = p.communicate(timeout=300)
        if not killed:
            assert p.returncode == 0, f"round {i}: {mode.command[0]} failed: {out}\n{err}"
        state = file_state(table_dir(k))
        remaining = [s["id"] for s in snapshot_files(table_dir(k))]
        if not killed:
            outcome = "finished"
        elif state == w_state:
            outcome = "killed-untouched"
        elif (set(state) == final_state if mode.only_deletes
              else remaining[-1:] == finished_ids[-1:]):
            # The work is done: every deletion happened, or every commit.
            outcome = "killed-after-work"
        elif (not mode.only_deletes and remaining[-1:] == [latest]
              and new_names(table_dir(k), "manifest")):
            # The first commit had begun: a manifest file exists, its snapshot does not.
            outcome = "killed-in-commit"
        else:
            outcome = "killed-mid-run"
        outcomes[outcome] += 1
        rd = {"i": i, "delay": delay, "outcome": outcome, "k": k, "remaining": remaining,
              "k_files": set(state), "untouched": state == w_state,
              "at_commit": at_commit is not None}
        # pypaimon reads the latest snapshot of K as Java read it in W (or M), where it can
        # read that snapshot's manifests (ours: see the module documentation).
        rd["py_k"] = None
        if mode.ours_ends_w or remaining[-1:] == [latest + 1]:
            try:
                rd["py_k"] = pypaimon_read(k, TABLE)
            except Exception as e:  # reported by the test, with the round
                rd["py_k"] = f"pypaimon failed: {type(e).__name__}: {e}"
        r = str(root / f"R{i}")
        shutil.copytree(k, r)
        rd["r"] = r
        rd["rerun"] = cli(mode.command[0], table_dir(r), *mode.command[1:], *mode.rerun_flags)
        rd["r_remaining"] = [s["id"] for s in snapshot_files(table_dir(r))]
        rd["r_files"] = set(file_state(table_dir(r)))
        o = str(root / f"O{i}")
        shutil.copytree(r, o)
        rd["o"] = o
        rd["remove"] = cli("remove-orphan-files", table_dir(o), "--older-than", "1ms", "--json")
        rd["o_files"] = set(file_state(table_dir(o)))
        rd["removed"] = sorted(rd["r_files"] - rd["o_files"])
        rd["added"] = sorted(set(file_state(table_dir(o))) - set(file_state(table_dir(r))))
        try:
            rd["py_o"] = pypaimon_read(o, TABLE)
        except Exception as e:
            rd["py_o"] = f"pypaimon failed: {type(e).__name__}: {e}"
        rounds.append(rd)

    for i in range(ROUNDS):
        # Spread over start..1.2x the run, jittered within each slot.
        one_round(i, start + (1.2 * duration - start) * (i + rng.random()) / ROUNDS)
    if not mode.only_deletes:
        for trigger in COMMIT_TRIGGERS:
            one_round(len(rounds), 0.0, at_commit=trigger)
        # A poller kept off the CPU by load may see the commit's files only after its
        # snapshot: then up to 3 more rounds on the earliest trigger (the widest window).
        for _ in range(3):
            if outcomes["killed-in-commit"]:
                break
            one_round(len(rounds), 0.0, at_commit=COMMIT_TRIGGERS[0])
    # The run's length was measured once, before the rounds; when the machine's load changed
    # since (other test stages run beside this one), the kills may have missed the middle of
    # the run, all before it or all after. Then up to ROUNDS // 2 more rounds bisect between
    # the latest delay that found the table untouched and the earliest that got to the end:
    # later after an untouched table, earlier after a run that finished or a kill after the
    # work, and at the same point again after a kill in the middle, so the kills close in on
    # where the run changes the table however far off the timing was.
    done = ("finished", "killed-after-work")
    hi = min([r["delay"] for r in rounds if r["outcome"] in done], default=1.2 * duration)
    lo = max([r["delay"] for r in rounds
              if r["outcome"] == "killed-untouched" and r["delay"] < hi], default=0.0)
    extra = 0
    while outcomes["killed-mid-run"] < MIN_MID_RUN and extra < ROUNDS // 2:
        delay = (lo + hi) / 2
        one_round(len(rounds), delay)
        if rounds[-1]["outcome"] == "killed-untouched":
            lo = delay
        elif rounds[-1]["outcome"] in done:
            hi = delay
        extra += 1
    print(f"[{ENGINE}/{mode.name}] outcomes over {len(rounds)} rounds "
          f"({time.monotonic() - t_rounds:.1f}s): {dict(outcomes)}")
    print(f"[{ENGINE}/{mode.name}] delays: " + ", ".join(f"{x['delay']:.2f}({x['outcome'][0:8]},"
                                             f"{len(x['remaining'])})" for x in rounds))

    # Two JVMs check M0 and every round but the plain runs past the first few
    # (PLAIN_RUNS_CHECKED: their K, R and O are what an uninterrupted run leaves, so Java's
    # reads of the others would repeat theirs; our own checks and pypaimon's reads still cover
    # every round). An untouched K is W byte for byte (same files, sizes and mtimes): Java's
    # reads of W stand for it.
    steps = [{"op": "versions", "table": TABLE, "label": "W"},
             {"op": "versions", "table": TABLE, "label": "M", "warehouse": str(root / "M0")}]
    plain = 0
    # Where the command only deletes, a kill after the work left exactly M's files: plain too.
    plain_outcomes = ("finished", "killed-untouched") + (
        ("killed-after-work",) if mode.only_deletes else ())
    for rd in rounds:
        rd["java"] = rd["outcome"] not in plain_outcomes
        if not rd["java"]:
            plain += 1
            rd["java"] = plain <= PLAIN_RUNS_CHECKED
        if not rd["java"]:
            continue
        if not rd["untouched"]:
            steps.append({"op": "versions", "table": TABLE, "label": f"K{rd['i']}",
                          "warehouse": rd["k"]})
        steps += [{"op": "versions", "table": TABLE, "label": f"R{rd['i']}",
                   "warehouse": rd["r"]},
                  {"op": "orphans", "table": TABLE, "label": f"R{rd['i']}",
                   "warehouse": rd["r"]},
                  {"op": "versions", "table": TABLE, "label": f"O{rd['i']}",
                   "warehouse": rd["o"]},
                  {"op": "orphans", "table": TABLE, "label": f"O{rd['i']}",
                   "warehouse": rd["o"]}]
    t = time.monotonic()
    checked = java_split(work, "check", w, steps, timeout=900)
    original = checked.ok("versions", TABLE, "W")
    assert sorted(int(s) for s in original["snapshots"]) == ids
    bad = {s: r for s, r in {**original["snapshots"], **original["tags"]}.items()
           if isinstance(r, dict)}
    assert not bad, f"Java cannot read every snapshot and tag of W: {str(bad)[:2000]}"
    finished = checked.ok("versions", TABLE, "M")
    print(f"[{ENGINE}/{mode.name}] Java check of {sum(rd['java'] for rd in rounds)} of "
          f"{len(rounds)} rounds: {time.monotonic() - t:.1f}s; "
          f"fixture total {time.monotonic() - t0:.1f}s")
    return {"mode": mode, "original": original, "finished": finished, "ids": ids,
            "latest": latest, "finished_ids": finished_ids, "final_state": final_state,
            "clean_state": clean_state,
            "rounds": rounds, "outcomes": outcomes, "java": checked}


def reference(crash, sid):
    """What snapshot `sid` must read: as in W; beyond W's latest (a commit of the command) as
    the same snapshot of M, or M's latest (a rerun's second compaction)."""
    if sid in crash["original"]["snapshots"]:
        return crash["original"]["snapshots"][sid]
    m = crash["finished"]["snapshots"]
    return m.get(sid, m[str(max(int(s) for s in m))])


def test_kill_happened_mid_run(crash):
    assert crash["outcomes"]["killed-mid-run"] >= 1, (
        f"no kill landed mid-run: {dict(crash['outcomes'])}")


def test_kills_landed_in_the_commit(crash):
    """The modes that commit: the rounds aimed at the commit killed it between its manifests
    and its snapshot (the other tests check what those rounds left, as for every round). The
    other modes have no commit."""
    if crash["mode"].only_deletes:
        return
    aimed = [rd for rd in crash["rounds"] if rd["at_commit"]]
    assert COMMIT_ROUNDS <= len(aimed) <= COMMIT_ROUNDS + 3
    assert crash["outcomes"]["killed-in-commit"] >= 1, (
        f"no kill landed in the commit: {[(rd['delay'], rd['outcome']) for rd in aimed]}")


def wrong_reads(crash, label, seen):
    """What is wrong with Java's reads `seen` (`versions`: snapshot id and tag name -> rows) of
    a copy: a snapshot must read as `reference` says, a tag as in W."""
    tags = crash["original"]["tags"]
    out = []
    for sid, rows in sorted(seen["snapshots"].items(), key=lambda kv: int(kv[0])):
        if rows != reference(crash, sid):
            out.append(f"{label}: snapshot {sid} reads "
                       f"{'an error' if isinstance(rows, dict) else 'other rows'} "
                       f"({str(rows)[:200]})")
    for name, rows in sorted(seen["tags"].items()):
        if name not in tags:
            out.append(f"{label}: a tag {name} W does not have")
        elif rows != tags[name]:
            out.append(f"{label}: tag {name} reads "
                       f"{'an error' if isinstance(rows, dict) else 'other rows'} "
                       f"({str(rows)[:200]})")
    return out


def test_finished_run_reads_as_expected(crash):
    """M, the uninterrupted run every other copy is compared with, is itself right: what it
    keeps of W reads as in W, a compaction's snapshot as W's latest, each partition drop as
    W's latest without the days dropped so far; the tags it keeps read as in W."""
    mode, latest = crash["mode"], crash["latest"]
    finished = crash["finished"]
    assert sorted(int(s) for s in finished["snapshots"]) == crash["finished_ids"]
    want_latest = crash["original"]["snapshots"][str(latest)]
    problems = wrong_reads(crash, "M", finished)
    for n, sid in enumerate(range(latest + 1, crash["finished_ids"][-1] + 1), start=1):
        rows = finished["snapshots"][str(sid)]
        if mode.name == "partitions":
            want = [r for r in want_latest if r["dt"] not in OLD_DAYS[:n]]
        else:
            want = want_latest
        if rows != want:
            problems.append(f"M: snapshot {sid} reads {str(rows)[:300]}")
    kept = sorted(finished["tags"])
    if mode.name == "tags":
        if kept != ["kept"]:
            problems.append(f"M: expire-tags kept tags {kept}, want only the one without TTL")
    elif kept != sorted(crash["original"]["tags"]):
        problems.append(f"M: {mode.command[0]} changed the tags: {kept}")
    assert not problems, "\n".join(problems)


def test_killed_state_reads(crash):
    """Every snapshot left with a snapshot file reads as before, or (only while it was being
    expired) fails to read; never different rows. The latest always reads. A commit of the
    killed run, if it happened, reads as the same snapshot of M; every tag left reads as in
    W. A killed run that only deletes deleted nothing the finished run keeps."""
    mode, ids, latest = crash["mode"], crash["ids"], crash["latest"]
    finished_ids, final_state = crash["finished_ids"], crash["final_state"]
    unreadable = collections.Counter()
    problems = []
    for rd in crash["rounds"]:
        i, remaining = rd["i"], rd["remaining"]
        first = remaining[0] if remaining else None
        if not remaining or remaining[-1] < latest or remaining != list(
                range(first, remaining[-1] + 1)):
            problems.append(f"K{i} ({rd['outcome']}): snapshots left {remaining[:3]}.."
                            f"{remaining[-3:]} are not a contiguous range up to {latest}")
            continue
        if not mode.expires_snapshots and (first != ids[0]
                                           or remaining[-1] > finished_ids[-1]):
            problems.append(f"K{i}: {mode.command[0]} left snapshots {remaining[:3]}.."
                            f"{remaining[-3:]}")
        # The hints are rewritten at the end of a run: a killed run may not have made one yet.
        gone = sorted(without_hints(final_state - rd["k_files"]))
        if mode.only_deletes and gone:
            problems.append(f"K{i} ({rd['outcome']}): deleted {len(gone)} files the finished "
                            f"run keeps: {gone[:5]}")
        if rd["untouched"] or not rd["java"]:
            continue
        seen = crash["java"].ok("versions", TABLE, f"K{i}")
        if sorted(int(s) for s in seen["snapshots"]) != remaining:
            problems.append(f"K{i}: Java lists snapshots {sorted(map(int, seen['snapshots']))[:5]}"
                            f".., the files are {remaining[:5]}..")
        lost = sorted(set(crash["finished"]["tags"]) - set(seen["tags"]))
        if lost:
            problems.append(f"K{i}: tags the finished run keeps are gone: {lost}")
        snapshots = dict(seen["snapshots"])
        for sid, rows in seen["snapshots"].items():
            expiring = mode.expires_snapshots and int(sid) != latest
            if isinstance(rows, dict) and "error" in rows and expiring:
                unreadable[rd["outcome"]] += 1
                del snapshots[sid]
        problems += wrong_reads(crash, f"K{i} ({rd['outcome']})",
                                {"snapshots": snapshots, "tags": seen["tags"]})
    print(f"\n[{ENGINE}/{mode.name}] unreadable snapshots (being expired) left by killed runs: "
          f"{dict(unreadable)}")
    assert not problems, "\n".join(problems)


def test_pypaimon_reads_latest_after_kill(crash):
    bad = []
    for rd in crash["rounds"]:
        want = reference(crash, str(rd["remaining"][-1]))
        if rd["py_k"] is not None and rd["py_k"] != want:
            bad.append(f"K{rd['i']} ({rd['outcome']}): "
                       f"{rd['py_k'] if isinstance(rd['py_k'], str) else ''}")
    assert not bad, "pypaimon reads other rows than Java did:\n" + "\n".join(bad)
    read = sum(rd["py_k"] is not None for rd in crash["rounds"])
    print(f"\n[{ENGINE}/{crash['mode'].name}] pypaimon read {read} of the killed copies")
    assert read >= 1, "no killed copy pypaimon could read"


def rerun_snapshots_wrong(crash, label, ids):
    """What is wrong with the snapshot ids a copy holds after a finished rerun."""
    latest, want = crash["latest"], crash["finished_ids"]
    if crash["mode"].name == "compact":
        # A rerun after a killed job that committed may compact once more.
        if (ids[:1] == [1] and ids == list(range(1, len(ids) + 1))
                and latest + 1 <= ids[-1] <= latest + 2):
            return []
        return [f"{label}: snapshots {ids[:3]}..{ids[-3:]}, want 1..{latest} and our commit(s)"]
    return [] if ids == want else [f"{label}: snapshots {ids[:3]}..{ids[-3:]}, want "
                                   f"{want[:3]}..{want[-3:]}"]


def test_rerun_finishes(crash):
    """The rerun succeeds and leaves what the uninterrupted run left: the same snapshots and,
    where the command only deletes, every file M has, and after remove-orphan-files (O) exactly
    the files M has after it (MO): what the killed run orphaned is reclaimed; Java reads them
    all as before."""
    problems = []
    final_state, clean_state = crash["final_state"], crash["clean_state"]
    for rd in crash["rounds"]:
        i, p = rd["i"], rd["rerun"]
        if p.returncode != 0:
            problems.append(f"R{i}: rerun failed ({p.returncode}): {(p.stdout + p.stderr)[-800:]}")
            continue
        problems += rerun_snapshots_wrong(crash, f"R{i}", rd["r_remaining"])
        gone = sorted(without_hints(final_state - rd["r_files"]))
        if crash["mode"].only_deletes and gone:
            problems.append(f"R{i} ({rd['outcome']}): files the finished run has that are "
                            f"gone {gone[:5]}")
        o_files, clean = without_hints(rd["o_files"]), without_hints(clean_state)
        if crash["mode"].only_deletes and o_files != clean:
            problems.append(f"O{i} ({rd['outcome']}): files MO does not have "
                            f"{sorted(o_files - clean)[:5]}, files it has that are gone "
                            f"{sorted(clean - o_files)[:5]}")
        if not rd["java"]:
            continue
        seen = crash["java"].ok("versions", TABLE, f"R{i}")
        if sorted(int(s) for s in seen["snapshots"]) != rd["r_remaining"]:
            listed = sorted(map(int, seen["snapshots"]))
            problems.append(f"R{i}: Java lists snapshots {listed[:5]}..")
        if sorted(seen["tags"]) != sorted(crash["finished"]["tags"]):
            problems.append(f"R{i}: tags {sorted(seen['tags'])}, the finished run's "
                            f"{sorted(crash['finished']['tags'])}")
        problems += wrong_reads(crash, f"R{i}", seen)
    assert not problems, "\n".join(problems)


def test_orphans_after_rerun(crash):
    problems = []
    extra_removed = collections.Counter()
    for rd in crash["rounds"]:
        i, p = rd["i"], rd["remove"]
        want = reference(crash, str(rd["r_remaining"][-1]))
        if p.returncode != 0:
            problems.append(f"O{i}: remove-orphan-files failed ({p.returncode}): "
                            f"{(p.stdout + p.stderr)[-800:]}")
            continue
        if rd["added"]:
            problems.append(f"O{i}: remove-orphan-files created files {rd['added'][:5]}")
        if rd["py_o"] != want:
            problems.append(f"O{i}: pypaimon reads other rows: {str(rd['py_o'])[:300]}")
        if not rd["java"]:
            continue
        java_found = crash["java"].ok("orphans", TABLE, f"R{i}")["orphans"]
        missed = sorted(set(java_found) - set(rd["removed"]))
        if missed:
            problems.append(f"O{i} ({rd['outcome']}): Java's orphans we did not remove: "
                            f"{missed[:10]} ({len(missed)})")
        extra = sorted(set(rd["removed"]) - set(java_found))
        for f in extra:
            extra_removed[f.split("/")[0] if "/" in f else f] += 1
        after = crash["java"].ok("orphans", TABLE, f"O{i}")["orphans"]
        if after:
            problems.append(f"O{i}: Java still finds orphans {after[:10]} ({len(after)})")
        seen = crash["java"].ok("versions", TABLE, f"O{i}")
        if sorted(int(s) for s in seen["snapshots"]) != rd["r_remaining"]:
            listed = sorted(map(int, seen["snapshots"]))
            problems.append(f"O{i}: Java lists snapshots {listed[:5]}..")
        if sorted(seen["tags"]) != sorted(crash["finished"]["tags"]):
            problems.append(f"O{i}: tags {sorted(seen['tags'])}")
        problems += wrong_reads(crash, f"O{i}", seen)
    found = {f"R{rd['i']}({rd['outcome']})": crash["java"].ok("orphans", TABLE,
                                                           f"R{rd['i']}")["orphans"]
             for rd in crash["rounds"] if rd["java"]}
    found = {k: len(v) for k, v in found.items() if v}
    print(f"\n[{ENGINE}/{crash['mode'].name}] Java's orphans after the reruns (then removed by "
          f"ours), by round: {str(found)[:600]}; files we removed that Java did not list, by "
          f"directory: {dict(extra_removed)}")
    assert not problems, "\n".join(problems)
