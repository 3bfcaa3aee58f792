"""Tables written by pypaimon, compacted by us, read back by pypaimon."""

import concurrent.futures

import pyarrow as pa

APPEND = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
PK = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64())])
PK_OP = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()),
                   ("n", pa.int64()), ("op", pa.string())])


def live_files(wh, name):
    return wh.plan(name)["summary"]["files"]


def append_rows(c, n=30):
    return [{"id": c * 100 + i, "dt": f"2025-01-0{i % 3 + 1}", "v": f"v{c}-{i}"} for i in range(n)]


def check_compact_snapshot(wh, name, before_count):
    snaps = wh.snapshots(name)
    assert len(snaps) == before_count + 1
    last = snaps[-1]
    assert last["commitKind"] == "COMPACT"
    assert last["totalRecordCount"] == snaps[-2]["totalRecordCount"] + last["deltaRecordCount"]
    return last


def test_append_unaware_bucket_partitioned(wh):
    wh.create("t", APPEND, partition_keys=["dt"], options={"bucket": "-1"})
    expected = []
    for c in range(6):
        rows = append_rows(c)
        wh.write("t", rows, APPEND)
        expected += rows
    assert wh.read("t") == wh.read("t")  # reads are stable
    plan = wh.plan("t")
    assert plan["summary"]["buckets_with_work"] == 3, plan
    assert plan["summary"]["files"] == 18
    report = wh.compact("t")
    assert report["snapshot_after"] == 7
    assert report["totals"]["files_removed"] == 18
    assert report["totals"]["files_added"] == 3
    check_compact_snapshot(wh, "t", 6)
    rows = wh.read("t")
    assert rows == sorted(expected, key=lambda r: __import__("json").dumps(r, sort_keys=True))
    assert live_files(wh, "t") == 3
    # pypaimon appends on top of our snapshot and reads everything.
    more = append_rows(9, 5)
    wh.write("t", more, APPEND)
    assert len(wh.read("t")) == len(expected) + 5
    assert wh.snapshots("t")[-1]["commitKind"] == "APPEND"


def test_append_fixed_buckets(wh):
    wh.create("t", APPEND, options={"bucket": "2", "bucket-key": "id"})
    expected = []
    for c in range(6):
        rows = append_rows(c)
        wh.write("t", rows, APPEND)
        expected += rows
    before = wh.read("t")
    plan = wh.plan("t", "--full")
    assert plan["summary"]["buckets_with_work"] == 2, plan
    report = wh.compact("t", "--full")
    assert report["totals"]["files_removed"] == 12
    assert report["totals"]["files_added"] == 2
    check_compact_snapshot(wh, "t", 6)
    assert wh.read("t") == before
    assert live_files(wh, "t") == 2
    wh.write("t", append_rows(7, 4), APPEND)
    assert len(wh.read("t")) == len(expected) + 4


def test_append_auto_compaction_takes_five_file_windows(wh):
    wh.create("t", APPEND, options={"bucket": "1"})
    for c in range(7):
        wh.write("t", append_rows(c, 10), APPEND)
    before = wh.read("t")
    plan = wh.plan("t")
    assert plan["buckets"][0]["files_removed"] == 5, plan
    report = wh.compact("t")
    assert report["totals"]["files_removed"] == 5
    assert wh.read("t") == before
    assert live_files(wh, "t") == 3


def pk_disjoint(wh, name, options, commits=5):
    wh.create(name, PK, primary_keys=["k"], options={"bucket": "1", **options})
    for c in range(commits):
        wh.write(name, [{"k": c * 100 + i, "v": f"c{c}", "n": i} for i in range(20)], PK)
    return [{"k": c * 100 + i, "v": f"c{c}", "n": i} for c in range(commits) for i in range(20)]


def test_primary_key_deduplicate_upgrade_only(wh):
    expected = pk_disjoint(wh, "t", {"target-file-size": "1 kb"})
    assert wh.read("t") == sorted(expected, key=lambda r: __import__("json").dumps(r, sort_keys=True))
    plan = wh.plan("t", "--full")
    assert plan["summary"]["upgrades"] == 5, plan
    assert plan["summary"]["buckets_blocked"] == 0
    report = wh.compact("t", "--full")
    assert report["totals"]["upgrades"] == 5
    assert report["buckets"][0]["levels_after"] == [
        {"level": 5, "files": 5, "bytes": report["buckets"][0]["bytes_before"]}]
    check_compact_snapshot(wh, "t", 5)
    rows = wh.read("t")
    assert len(rows) == 100
    # An update on top of the upgraded files is merged by pypaimon.
    wh.write("t", [{"k": 0, "v": "new", "n": -1}], PK)
    rows = {r["k"]: r for r in wh.read("t")}
    assert rows[0]["v"] == "new" and len(rows) == 100


def test_primary_key_updates_and_deletes_need_the_merge_rewriter(wh):
    options = {"bucket": "2", "rowkind.field": "op"}
    wh.create("t", PK_OP, primary_keys=["k"], options=options)
    for c in range(6):
        rows = [{"k": i, "v": f"c{c}", "n": c, "op": "+I"} for i in range(0, 40, 1 + c % 2)]
        rows += [{"k": 40 + c, "v": "gone", "n": c, "op": "-D"}]
        wh.write("t", rows, PK_OP)
    before = wh.read("t")
    files_before = wh.files("t")
    plan = wh.plan("t", "--full")
    assert plan["summary"]["buckets_blocked"] == 2, plan
    assert all("merge rewriter" in b["blocked"] for b in plan["buckets"])
    report = wh.compact("t", "--full")
    assert report["snapshot_after"] is None
    assert len(report["skipped"]) == 2
    assert wh.read("t") == before
    assert wh.files("t") == files_before


def test_first_row_rows_become_visible_after_compaction(wh):
    # first-row tables skip level 0 in batch reads: pypaimon sees nothing until compaction.
    expected = pk_disjoint(wh, "t", {"merge-engine": "first-row", "target-file-size": "1 kb"})
    assert wh.read("t") == []
    report = wh.compact("t", "--full")
    assert report["totals"]["upgrades"] == 5, report
    assert len(wh.read("t")) == len(expected)


def test_deletion_vectors_table_rows_become_visible_after_compaction(wh):
    expected = pk_disjoint(wh, "t", {"deletion-vectors.enabled": "true",
                                     "target-file-size": "1 kb"})
    assert wh.read("t") == []
    report = wh.compact("t", "--full")
    assert report["totals"]["upgrades"] == 5, report
    assert len(wh.read("t")) == len(expected)
    # A later overlapping write needs a lookup merge: reported as blocked, nothing changes.
    wh.write("t", [{"k": 1, "v": "x", "n": 0}], PK)
    before = wh.read("t")
    plan = wh.plan("t", "--full")
    assert plan["summary"]["buckets_blocked"] == 1, plan
    assert wh.read("t") == before


def test_partial_update_and_aggregation_upgrade_and_block(wh):
    for engine, opts in [
        ("partial-update", {}),
        ("aggregation", {"fields.n.aggregate-function": "sum"}),
    ]:
        name = engine.replace("-", "_")
        expected = pk_disjoint(wh, name, {"merge-engine": engine, "target-file-size": "1 kb",
                                          **opts})
        report = wh.compact(name, "--full")
        assert report["totals"]["upgrades"] == 5, (engine, report)
        assert len(wh.read(name)) == len(expected)
        # Overlapping keys must be merged with the engine: blocked, unchanged.
        wh.write(name, [{"k": 0, "v": None, "n": 5}], PK)
        before = wh.read(name)
        plan = wh.plan(name, "--full")
        assert plan["summary"]["buckets_blocked"] == 1, (engine, plan)
        wh.compact(name, "--full")
        assert wh.read(name) == before


def test_two_compactors_race_exactly_one_commits(wh):
    wh.create("t", APPEND, partition_keys=["dt"], options={"bucket": "-1"})
    for c in range(6):
        wh.write("t", append_rows(c), APPEND)
    before = wh.read("t")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda _: wh.tool("compact", "t", "--no-lease", check=False),
                             range(2)))
    compacts = [s for s in wh.snapshots("t") if s["commitKind"] == "COMPACT"]
    assert len(compacts) == 1, runs
    for code, out in runs:
        if code != 0:
            assert out["error"]["kind"] == "conflict", out
        else:
            assert out["snapshot_after"] in (7, None), out
    assert wh.read("t") == before


def test_corrupt_manifest_is_reported_with_its_name(wh):
    wh.create("t", APPEND, options={"bucket": "-1"})
    wh.write("t", append_rows(0), APPEND)
    snap = wh.snapshots("t")[-1]
    import os
    path = os.path.join(wh.root, wh.path("t"), "manifest", snap["deltaManifestList"])
    with open(path, "r+b") as f:
        f.truncate(20)
    code, out = wh.tool("plan", "t", check=False)
    assert code == 1
    assert out["error"]["kind"] == "corrupt-input"
    assert snap["deltaManifestList"] in out["error"]["message"]
