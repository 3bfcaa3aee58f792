"""Crash safety of compaction and of snapshot expiration, proved with the real peers (Paimon
Java 1.0, pypaimon).

Java writes one primary-key table W of many small commits, with one of its own full
compactions (committed without maintenance) every COMPACT_EVERY commits, so that expiring the
old snapshots also deletes data files and manifests. Java's reads of every snapshot of W
(`versions`) are the reference. The fixture runs once per MODE, each a command of ours that is
killed at every moment of its run:

* `expire`: W ends with a few more commits and our `compact --full --skip-maintenance` (so that
  pypaimon 2.1 can read the latest snapshot's manifests); the command is
  `expire-snapshots --retain-min 1 --retain-max 1 --older-than 1ms`.
* `compact`: W ends with Java's level-0 commits; the command is the dedicated job,
  `compact --full` (with its maintenance, which keeps every snapshot of a table this young)
  and a short lease (`--lease-ttl 2s`), so that the rerun's `--wait` outlives a killed run's
  lease quickly.

The command's run on a copy of W is timed, with the moment it first changes a file; then, in
ROUNDS rounds, each on a fresh copy K of W, it is started and SIGKILLed after a delay spread
from a little before that first change to 1.2x the run (earlier kills only stop a process
that is still starting). Outcomes: killed
before it changed anything, killed mid-run (a partial state), killed after the work was done,
or finished. Fewer than MIN_MID_RUN kills mid-run (the machine's load changed after the run
was timed) bring up to ROUNDS // 2 more rounds, whose delays walk a staircase down from the
earliest run that got to the end until the kills land mid-run. After each round:
  * pypaimon reads K's latest snapshot as Java read W's (where pypaimon can read that
    snapshot's manifests: this Java build writes manifests pypaimon 2.1 refuses, so in
    `compact` mode only once our snapshot is the latest);
  * K is copied to R and the same command is rerun to completion (with `--wait` in `compact`
    mode): it succeeds and the latest snapshot reads as W's latest;
  * R is copied to O and our `remove-orphan-files --older-than 1ms` runs on O.
Two JVMs at the end check every round (of the rounds whose kill came after the process had
exited or found the table untouched, which leave what an uninterrupted run leaves, only the
first PLAIN_RUNS_CHECKED: Java's reads of the others would repeat theirs): on K, every
snapshot that still has a snapshot file (they must be a contiguous range up to the latest)
reads as it read in W. In `expire` mode a
snapshot in the range the killed run was expiring (every one but the latest here) may fail to
read instead: the design (docs/maintenance.md, "Failures and reruns", as in Paimon's
ExpireSnapshotsImpl) deletes data files first and snapshot files last, so a snapshot being
expired may be unreadable while its file remains, but must never read wrong rows; the latest
must read. In `compact` mode nothing may fail to read, and a snapshot beyond W's latest (the
killed job's commit) must read as W's latest. On R: the latest reads identically; Java's
OrphanFilesClean (no-op cleaner, olderThan far in the future) finds only files our
remove-orphan-files removed from O; on O: the latest still reads identically and Java finds no
orphan.

In `compact` mode, COMMIT_ROUNDS more rounds are killed the moment the job's commit writes a
file into `manifest/` (the first temporary file, the first finished manifest, the first
finished manifest list), which lands the kill in the commit (outcome `killed-in-commit`: a
manifest file exists, the snapshot does not), a window of milliseconds that timed kills rarely
hit.

Knobs: PAIMON_CRASH_COMMITS (default 200; a quarter of it, at least 60, in `compact` mode),
PAIMON_CRASH_ROUNDS (default 20).
"""

import collections
import os
import random
import shutil
import subprocess
import time

import pytest

from conftest import CLI, ENGINE, JavaRun, cli, java_split, pypaimon_read, snapshot_files

DB = "db"
TABLE = "crash"
COMMITS = int(os.environ.get("PAIMON_CRASH_COMMITS", "200"))
COMPACT_EVERY = 20
ROUNDS = int(os.environ.get("PAIMON_CRASH_ROUNDS", "20"))
MIN_MID_RUN = 3  # kills that land mid-run, else more rounds aim there (see the fixture)
# `compact` mode: rounds killed the moment the job's commit writes a file into `manifest/`, so
# that the kill lands in the commit (before its snapshot), a window of a few milliseconds that
# timed kills rarely hit. Each round waits for a later file: the first one being written (a
# temporary file), the first finished manifest, the first finished manifest list (after which
# only the snapshot is left to write).
COMMIT_TRIGGERS = [lambda n: True,
                   lambda n: n.startswith("manifest-") and not n.startswith("manifest-list-"),
                   lambda n: n.startswith("manifest-list-")]
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


class Mode:
    """The command a fixture kills, and what its finished run leaves."""

    def __init__(self, name, command, rerun_flags, ours_ends_w, commits):
        self.name = name
        # Java's commits to W: enough old snapshots for expiry to delete data files; fewer for
        # a compaction, which only adds a snapshot (Java reads every snapshot of every copy).
        self.commits = commits
        self.command = command
        self.rerun_flags = rerun_flags
        # W ends with our full compaction (pypaimon can read its latest snapshot).
        self.ours_ends_w = ours_ends_w

    def run(self, tdir, *extra):
        return subprocess.Popen([CLI, "--engine", ENGINE, self.command[0], tdir,
                                 *self.command[1:], *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


MODES = {"expire": Mode("expire", EXPIRE, [], True, COMMITS),
         "compact": Mode("compact", COMPACT, ["--wait"], False,
                         max(3 * COMPACT_EVERY, COMMITS // 4))}


def table_dir(warehouse):
    return os.path.join(str(warehouse), f"{DB}.db", TABLE)


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


def build_steps(commits):
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


@pytest.fixture(scope="module", params=list(MODES))
def crash(request, tmp_path_factory, java_classpath):
    assert CLI, "PAIMON_COMPACT_CLI must name the paimon-compact binary"
    mode = MODES[request.param]
    root = tmp_path_factory.mktemp(f"crash-{mode.name}")
    work = str(root / "java")
    w = str(root / "W")
    t0 = time.monotonic()
    built = JavaRun(work, "build", w, build_steps(mode.commits)).results(timeout=900)
    assert not [r for r in built.items if "error" in r], [r for r in built.items if "error" in r]
    if mode.ours_ends_w:
        ours = cli("compact", table_dir(w), "--full", "--skip-maintenance", "--json")
        assert ours.returncode == 0, f"our compaction failed: {ours.stdout}\n{ours.stderr}"
    print(f"\n[{ENGINE}/{mode.name}] built in {time.monotonic() - t0:.1f}s")
    # Java's reads of every snapshot of W (W is never changed) come from the checking JVM at
    # the end, with everything else.
    ids = [s["id"] for s in snapshot_files(table_dir(w))]
    latest = ids[-1]
    assert ids == list(range(1, latest + 1)), ids
    assert (snapshot_files(table_dir(w))[-1]["commitKind"] == "COMPACT") == mode.ours_ends_w
    w_state = file_state(table_dir(w))

    # Time the full run (twice: a first wasm start may compile the component).
    # Also when the first file changes: before that the process is only starting (loading
    # the component is most of a short run), and kills there teach nothing.
    durations, first_changes = [], []
    final_state = None
    for m in range(2):
        dst = str(root / f"measure{m}")
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
        want = [latest] if mode.name == "expire" else ids + [latest + 1]
        assert [s["id"] for s in snapshot_files(table_dir(dst))] == want
        final_state = set(file_state(table_dir(dst)))
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

    manifest_dir = os.path.join(table_dir(w), "manifest")
    w_manifests = set(os.listdir(manifest_dir))

    def one_round(i, delay, at_commit=None):
        """Round i: a fresh copy K of W, the command killed after `delay` s (`at_commit`:
        when a file of `manifest/` that W does not have matches it), then R and O."""
        k = str(root / f"K{i}")
        shutil.copytree(w, k)
        k_manifests = os.path.join(table_dir(k), "manifest")
        t = time.monotonic()
        p = mode.run(table_dir(k))
        if at_commit is not None:
            while p.poll() is None and not any(
                    at_commit(n) for n in set(os.listdir(k_manifests)) - w_manifests):
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
        elif (set(state) == final_state if mode.name == "expire"
              else latest + 1 in remaining):
            # The work is done: the expiry's deletions all happened, or the job committed.
            outcome = "killed-after-work"
        elif mode.name == "compact" and set(os.listdir(k_manifests)) - w_manifests:
            # The commit had begun: a manifest file exists, its snapshot does not.
            outcome = "killed-in-commit"
        else:
            outcome = "killed-mid-run"
        outcomes[outcome] += 1
        rd = {"i": i, "delay": delay, "outcome": outcome, "k": k, "remaining": remaining,
              "untouched": state == w_state, "at_commit": at_commit is not None}
        # pypaimon reads the latest snapshot of K as Java read W's latest, where it can read
        # that snapshot's manifests (ours: see the module documentation).
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
        o = str(root / f"O{i}")
        shutil.copytree(r, o)
        rd["o"] = o
        rd["remove"] = cli("remove-orphan-files", table_dir(o), "--older-than", "1ms", "--json")
        rd["removed"] = sorted(set(file_state(table_dir(r))) - set(file_state(table_dir(o))))
        rd["added"] = sorted(set(file_state(table_dir(o))) - set(file_state(table_dir(r))))
        try:
            rd["py_o"] = pypaimon_read(o, TABLE)
        except Exception as e:
            rd["py_o"] = f"pypaimon failed: {type(e).__name__}: {e}"
        rounds.append(rd)

    for i in range(ROUNDS):
        # Spread over start..1.2x the run, jittered within each slot.
        one_round(i, start + (1.2 * duration - start) * (i + rng.random()) / ROUNDS)
    if mode.name == "compact":
        for trigger in COMMIT_TRIGGERS:
            one_round(len(rounds), 0.0, at_commit=trigger)
    # The run's length was measured once, before the rounds; when the machine's load changed
    # since (other test stages run beside this one), the kills may have missed the middle of
    # the run. Then up to ROUNDS // 2 more rounds walk a staircase from the earliest run that
    # got to the end: a step earlier after a run that finished or a kill after the work, a
    # step later after a kill that found the table untouched, so the kills settle where the
    # run changes the table.
    done = ("finished", "killed-after-work")
    delay = min([r["delay"] for r in rounds if r["outcome"] in done], default=1.2 * duration)
    step = max(0.002, duration / 40)
    extra = 0
    while outcomes["killed-mid-run"] < MIN_MID_RUN and extra < ROUNDS // 2:
        delay = max(0.0, delay - step)
        one_round(len(rounds), delay)
        if rounds[-1]["outcome"] == "killed-untouched":
            delay += 2 * step
        elif rounds[-1]["outcome"] == "killed-mid-run":
            delay += step
        extra += 1
    print(f"[{ENGINE}/{mode.name}] outcomes over {len(rounds)} rounds "
          f"({time.monotonic() - t_rounds:.1f}s): {dict(outcomes)}")
    print(f"[{ENGINE}/{mode.name}] delays: " + ", ".join(f"{x['delay']:.2f}({x['outcome'][0:8]},"
                                             f"{len(x['remaining'])})" for x in rounds))

    # Two JVMs check every round but the plain runs past the first few (PLAIN_RUNS_CHECKED:
    # their K, R and O are what an uninterrupted run leaves, so Java's reads of the others would
    # repeat theirs; our own checks and pypaimon's reads still cover every round). An untouched
    # K is W byte for byte (same files, sizes and mtimes): Java's reads of W stand for it.
    steps = [{"op": "versions", "table": TABLE, "label": "W"}]
    plain = 0
    for rd in rounds:
        rd["java"] = rd["outcome"] not in ("finished", "killed-untouched")
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
    original = checked.ok("versions", TABLE, "W")["snapshots"]
    assert sorted(int(s) for s in original) == ids
    bad = {s: r for s, r in original.items() if isinstance(r, dict)}
    assert not bad, f"Java cannot read every snapshot of W: {str(bad)[:2000]}"
    print(f"[{ENGINE}/{mode.name}] Java check of {sum(rd['java'] for rd in rounds)} of "
          f"{len(rounds)} rounds: {time.monotonic() - t:.1f}s; "
          f"fixture total {time.monotonic() - t0:.1f}s")
    return {"mode": mode.name, "original": original, "latest": latest, "rounds": rounds,
            "outcomes": outcomes, "java": checked}


def test_kill_happened_mid_run(crash):
    assert crash["outcomes"]["killed-mid-run"] >= 1, (
        f"no kill landed mid-run: {dict(crash['outcomes'])}")


def test_kills_landed_in_the_commit(crash):
    """`compact` mode: the rounds aimed at the commit killed it between its manifests and its
    snapshot (the other tests check what those rounds left, as for every round). Expiry has
    no commit."""
    if crash["mode"] != "compact":
        return
    aimed = [rd for rd in crash["rounds"] if rd["at_commit"]]
    assert len(aimed) == COMMIT_ROUNDS
    assert crash["outcomes"]["killed-in-commit"] >= 1, (
        f"no kill landed in the commit: {[(rd['delay'], rd['outcome']) for rd in aimed]}")


def wrong_reads(crash, label, seen):
    """What is wrong with Java's reads `seen` (snapshot id -> rows) of a copy: a snapshot of W
    must read as in W, one beyond W's latest (a compaction's commit) as W's latest."""
    original, latest = crash["original"], crash["latest"]
    out = []
    for sid, rows in sorted(seen.items(), key=lambda kv: int(kv[0])):
        want = original[sid] if int(sid) <= latest else original[str(latest)]
        if rows != want:
            out.append(f"{label}: snapshot {sid} reads "
                       f"{'an error' if isinstance(rows, dict) else 'other rows'} "
                       f"({str(rows)[:200]})")
    return out


def test_killed_state_reads(crash):
    """Every snapshot left with a snapshot file reads as before, or (only while it was being
    expired) fails to read; never different rows. The latest always reads. A killed
    compaction's commit, if it happened, reads as the table did before it."""
    original, latest, mode = crash["original"], crash["latest"], crash["mode"]
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
        if mode == "compact" and (first != 1 or remaining[-1] > latest + 1):
            problems.append(f"K{i}: a compaction left snapshots {remaining[:3]}.."
                            f"{remaining[-3:]}")
        if rd["untouched"] or not rd["java"]:
            continue
        seen = crash["java"].ok("versions", TABLE, f"K{i}")["snapshots"]
        if sorted(int(s) for s in seen) != remaining:
            problems.append(f"K{i}: Java lists snapshots {sorted(map(int, seen))[:5]}.., "
                            f"the files are {remaining[:5]}..")
        for sid, rows in seen.items():
            expiring = mode == "expire" and int(sid) != latest
            if isinstance(rows, dict) and "error" in rows and expiring:
                unreadable[rd["outcome"]] += 1
                seen = {k: v for k, v in seen.items() if k != sid}
        problems += wrong_reads(crash, f"K{i} ({rd['outcome']})", seen)
    print(f"\n[{ENGINE}/{mode}] unreadable snapshots (being expired) left by killed runs: "
          f"{dict(unreadable)}")
    assert not problems, "\n".join(problems)


def test_pypaimon_reads_latest_after_kill(crash):
    want = crash["original"][str(crash["latest"])]
    bad = [f"K{rd['i']} ({rd['outcome']}): {rd['py_k'] if isinstance(rd['py_k'], str) else ''}"
           for rd in crash["rounds"] if rd["py_k"] is not None and rd["py_k"] != want]
    assert not bad, "pypaimon reads other rows than Java did in W:\n" + "\n".join(bad)
    read = sum(rd["py_k"] is not None for rd in crash["rounds"])
    print(f"\n[{ENGINE}/{crash['mode']}] pypaimon read {read} of the killed copies")
    assert read >= 1, "no killed copy pypaimon could read"


def rerun_snapshots_wrong(crash, label, ids):
    """What is wrong with the snapshot ids a copy holds after a finished rerun."""
    latest = crash["latest"]
    if crash["mode"] == "expire":
        return [] if ids == [latest] else [f"{label}: snapshots left {ids}, want [{latest}]"]
    if ids[:1] == [1] and ids == list(range(1, len(ids) + 1)) and latest + 1 <= ids[-1] <= latest + 2:
        return []
    return [f"{label}: snapshots {ids[:3]}..{ids[-3:]}, want 1..{latest} and our commit(s)"]


def test_rerun_finishes(crash):
    problems = []
    for rd in crash["rounds"]:
        i, p = rd["i"], rd["rerun"]
        if p.returncode != 0:
            problems.append(f"R{i}: rerun failed ({p.returncode}): {(p.stdout + p.stderr)[-800:]}")
            continue
        problems += rerun_snapshots_wrong(crash, f"R{i}", rd["r_remaining"])
        if not rd["java"]:
            continue
        seen = crash["java"].ok("versions", TABLE, f"R{i}")["snapshots"]
        if sorted(int(s) for s in seen) != rd["r_remaining"]:
            problems.append(f"R{i}: Java lists snapshots {sorted(map(int, seen))[:5]}..")
        problems += wrong_reads(crash, f"R{i}", seen)
    assert not problems, "\n".join(problems)


def test_orphans_after_rerun(crash):
    latest = crash["latest"]
    want = crash["original"][str(latest)]
    problems = []
    extra_removed = collections.Counter()
    for rd in crash["rounds"]:
        i, p = rd["i"], rd["remove"]
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
        seen = crash["java"].ok("versions", TABLE, f"O{i}")["snapshots"]
        if sorted(int(s) for s in seen) != rd["r_remaining"]:
            problems.append(f"O{i}: Java lists snapshots {sorted(map(int, seen))[:5]}..")
        problems += wrong_reads(crash, f"O{i}", seen)
    found = {f"R{rd['i']}({rd['outcome']})": crash["java"].ok("orphans", TABLE,
                                                           f"R{rd['i']}")["orphans"]
             for rd in crash["rounds"] if rd["java"]}
    found = {k: v for k, v in found.items() if v}
    print(f"\n[{ENGINE}/{crash['mode']}] Java's orphans after the reruns (then removed by ours): "
          f"{str(found)[:600]}; files we removed that Java did not list, by directory: "
          f"{dict(extra_removed)}")
    assert not problems, "\n".join(problems)
