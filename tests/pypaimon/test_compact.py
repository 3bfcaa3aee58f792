"""Tables written by pypaimon, compacted by us, read back by pypaimon."""

import concurrent.futures
import os

import pyarrow as pa
import pytest

from conftest import paimon_rust

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


def by_key(rows):
    return sorted(rows, key=lambda r: r["k"])


def test_primary_key_updates_and_deletes_are_merged(wh):
    options = {"bucket": "2", "rowkind.field": "op"}
    wh.create("t", PK_OP, primary_keys=["k"], options=options)
    expected = {}
    for c in range(6):
        rows = [{"k": i, "v": f"c{c}", "n": c, "op": "+I"} for i in range(0, 40, 1 + c % 2)]
        rows += [{"k": i, "v": "gone", "n": c, "op": "-D"} for i in range(c, 40, 9)]
        wh.write("t", rows, PK_OP)
        for r in rows:
            if r["op"] == "-D":
                expected.pop(r["k"], None)
            else:
                expected[r["k"]] = r
    before = wh.read("t")
    assert by_key(before) == by_key(expected.values())
    plan = wh.plan("t", "--full")
    assert plan["summary"]["buckets_blocked"] == 0, plan
    assert plan["summary"]["rewrites"] == 2, plan
    report = wh.compact("t", "--full")
    assert report["snapshot_after"] == 7, report
    assert report["totals"]["files_removed"] == 12
    assert report["totals"]["files_added"] == 2
    check_compact_snapshot(wh, "t", 6)
    assert wh.read("t") == before
    for b in report["buckets"]:
        assert [lv["level"] for lv in b["levels_after"]] == [5], b
    # pypaimon writes on top of our snapshot (an update and a delete) and merges with our files.
    wh.write("t", [{"k": 0, "v": "new", "n": 9, "op": "+U"},
                   {"k": 2, "v": None, "n": None, "op": "-D"}], PK_OP)
    expected[0] = {"k": 0, "v": "new", "n": 9, "op": "+U"}
    expected.pop(2, None)
    assert by_key(wh.read("t", drop=("op",))) == by_key(
        {k: v for k, v in r.items() if k != "op"} for r in expected.values())
    # And an automatic compaction of that level-0 file keeps it so.
    wh.compact("t")
    assert by_key(wh.read("t", drop=("op",))) == by_key(
        {k: v for k, v in r.items() if k != "op"} for r in expected.values())


def test_first_row_keeps_the_first_row_across_compactions(wh):
    # first-row tables skip level 0 in batch reads: pypaimon sees rows once we compact them.
    wh.create("t", PK, primary_keys=["k"], options={"bucket": "1", "merge-engine": "first-row"})
    first = {}
    for rnd in range(3):
        for c in range(3):
            rows = [{"k": (i * 7 + rnd * 17 + c * 5) % 60, "v": f"r{rnd}-{c}", "n": i}
                    for i in range(25)]
            wh.write("t", rows, PK)
            for r in rows:
                first.setdefault(r["k"], r)
        report = wh.compact("t")
        assert report["snapshot_after"] is not None, report
        assert by_key(wh.read("t")) == by_key(first.values()), rnd


def test_deletion_vectors_mark_rows_that_pypaimon_then_skips(wh):
    wh.create("t", PK, primary_keys=["k"], options={"bucket": "1",
                                                   "deletion-vectors.enabled": "true"})
    expected = {}
    base = [{"k": k, "v": f"base-{k}", "n": k} for k in range(3000)]
    wh.write("t", base, PK)
    expected.update((r["k"], r) for r in base)
    # pypaimon writes only level 0 here, which a deletion-vector reader skips.
    assert wh.read("t") == []
    wh.compact("t")
    assert by_key(wh.read("t")) == by_key(expected.values())
    # Small overlapping writes: the pick stays below the max level and the older copies of
    # the keys there are marked in a deletion vector that pypaimon applies.
    for c in range(2):
        rows = [{"k": k, "v": f"upd{c}", "n": -k} for k in range(c * 7, 3000, 151)]
        wh.write("t", rows, PK)
        expected.update((r["k"], r) for r in rows)
    report = wh.compact("t")
    b = report["buckets"][0]
    assert b["deletion_vector_marks"] > 0, report
    assert any(lv["level"] == 5 for lv in b["levels_after"]), report
    assert by_key(wh.read("t")) == by_key(expected.values())
    # Once more, now that the bucket has a deletion-vector index.
    rows = [{"k": k, "v": "again", "n": 0} for k in range(3, 3000, 301)]
    wh.write("t", rows, PK)
    expected.update((r["k"], r) for r in rows)
    wh.compact("t")
    assert by_key(wh.read("t")) == by_key(expected.values())
    wh.compact("t", "--full")
    assert by_key(wh.read("t")) == by_key(expected.values())
    assert len(wh.plan("t")["buckets"][0]["levels"]) == 1


def test_partial_update_and_aggregation_merge_with_their_engine(wh):
    for engine, opts in [
        ("partial-update", {}),
        ("aggregation", {"fields.n.aggregate-function": "sum"}),
    ]:
        name = engine.replace("-", "_")
        wh.create(name, PK, primary_keys=["k"],
                  options={"bucket": "1", "merge-engine": engine, **opts})
        expected = {}
        for c in range(5):
            rows = [{"k": i % 30, "v": None if (i + c) % 3 == 0 else f"c{c}-{i}",
                     "n": None if (i + c) % 4 == 0 else c * 10 + i}
                    for i in range(0, 40, 1 + c % 3)]
            wh.write(name, rows, PK)
            for r in rows:
                old = expected.get(r["k"], {"k": r["k"], "v": None, "n": None})
                v = r["v"] if r["v"] is not None else old["v"]
                if engine == "aggregation":
                    n = r["n"] if old["n"] is None else old["n"] + (r["n"] or 0)
                else:
                    n = r["n"] if r["n"] is not None else old["n"]
                expected[r["k"]] = {"k": r["k"], "v": v, "n": n}
        report = wh.compact(name, "--full")
        assert report["totals"]["rewrites"] == 1, (engine, report)
        assert report["totals"]["files_added"] == 1, (engine, report)
        assert by_key(wh.read(name)) == by_key(expected.values()), engine
        # pypaimon merges its own new write with our compacted file the same way.
        wh.write(name, [{"k": 0, "v": None, "n": 5}], PK)
        old = expected[0]
        expected[0] = {"k": 0, "v": old["v"],
                       "n": (old["n"] or 0) + 5 if engine == "aggregation" else 5}
        assert by_key(wh.read(name)) == by_key(expected.values()), engine


def test_newer_aggregates_merge_as_pypaimon_merges_them_on_read(wh):
    """Functions Paimon Java 1.0 does not have (`listagg` with `fields.<f>.distinct`, Paimon
    1.1+) or that it computes differently (`product`, exact since 1.1): pypaimon 2.1 merges
    them on read, so its read of the uncompacted table is the reference for ours."""
    wh.create("agg", PK, primary_keys=["k"],
              options={"bucket": "1", "merge-engine": "aggregation",
                       "fields.v.aggregate-function": "listagg",
                       "fields.v.distinct": "true",
                       "fields.v.list-agg-delimiter": "|",
                       "fields.n.aggregate-function": "product"})
    words = ["a", "b", "c|a", "b| |d", "", None]
    for c in range(6):
        rows = [{"k": i % 9, "v": words[(i + c) % len(words)],
                 "n": None if (i + c) % 5 == 0 else (i + c) % 3 - 1 or 2}
                for i in range(0, 30, 1 + c % 2)]
        wh.write("agg", rows, PK)
    before = by_key(wh.read("agg"))
    assert any(r["v"] and "|" in r["v"] for r in before), before
    report = wh.compact("agg", "--full")
    assert report["totals"]["files_added"] == 1, report
    assert by_key(wh.read("agg")) == before


NESTED = pa.schema([
    pa.field("k", pa.int64(), nullable=False),
    ("latest", pa.map_(pa.string(), pa.struct([("v", pa.int64()), ("ts", pa.string())]))),
    ("lines", pa.list_(pa.struct([("id", pa.int64()), ("a", pa.string()), ("b", pa.int64())]))),
])


def _canonical_nested(rows):
    """Rows of NESTED with map entries and nested rows in one order: Paimon's order for both is
    a Java hash table's."""
    import json

    def canon(v):
        return None if v is None else sorted((json.dumps(x, sort_keys=True) for x in v))

    return sorted(((r["k"], canon(r["latest"]), canon(r["lines"])) for r in rows),
                  key=json.dumps)


def _nested_rows(c):
    rows = []
    for i in range(12):
        k = (i + c) % 7
        # map values: later or earlier times, a null time (skipped), a null value (removes)
        latest = [(f"m{(i + c) % 3}",
                   None if (i + c) % 11 == 0 else
                   {"v": c * 100 + i, "ts": None if (i * c) % 7 == 3
                    else f"2025-01-0{1 + (i * 5 + c * 3) % 9}"})]
        # nested rows: partial, each update fills some of a and b
        lines = [{"id": (i + j) % 3, "a": f"a{c}{i}" if (i + j + c) % 2 else None,
                  "b": c * 10 + j if (i + c + j) % 3 else None} for j in range(2)]
        rows.append({"k": k, "latest": latest if (i + c) % 5 else None,
                     "lines": lines if (i + 2 * c) % 4 else None})
    return rows


def test_nested_partial_update_merges_as_pypaimon_merges_it_on_read(wh):
    """`nested_partial_update` (Paimon HEAD, not in Java 1.0): pypaimon 2.1 merges it on read,
    so its read of the uncompacted table is the reference for ours."""
    wh.create("nested", NESTED, primary_keys=["k"],
              options={"bucket": "1", "merge-engine": "aggregation",
                       "fields.lines.aggregate-function": "nested_partial_update",
                       "fields.lines.nested-key": "id"})
    for c in range(6):
        wh.write("nested", _nested_rows(c), NESTED)
    before = _canonical_nested(wh.read("nested"))
    assert any(r[2] and len(r[2]) > 1 for r in before), before
    report = wh.compact("nested", "--full")
    assert report["totals"]["files_added"] == 1, report
    assert _canonical_nested(wh.read("nested")) == before


def _keytime(acc, new):
    """Paimon HEAD's merge_map_with_keytime on two maps (lists of (key, row) pairs)."""
    if acc is None or new is None:
        return new if acc is None else acc
    out = dict(acc)
    for k, row in new:
        if row is None:
            out.pop(k, None)
        elif row["ts"] is None:
            continue
        elif out.get(k) is None or out[k]["ts"] is None or row["ts"] > out[k]["ts"]:
            out[k] = row
    return list(out.items())


def test_merge_map_with_keytime_merges_as_paimon_head_does(wh):
    """`merge_map_with_keytime` (Paimon HEAD): Java 1.0 has no such function and pypaimon 2.1
    fails to merge it on read (its aggregator expects map entries as dicts, pyarrow gives
    tuples), so the reference is a model of HEAD's aggregator over the rows
    in write order, and pypaimon-rust, which reads without that aggregator, reads our file."""
    if paimon_rust is None:
        pytest.skip("pypaimon-rust has no wheel for this platform")
    wh.create("keytime", NESTED, primary_keys=["k"],
              options={"bucket": "1", "merge-engine": "aggregation",
                       "fields.latest.aggregate-function": "merge_map_with_keytime",
                       "fields.lines.aggregate-function": "last_value"})
    expected = {}
    for c in range(8):
        # One row per key and commit: pypaimon's writer would merge a commit's rows of a key
        # with the same failing aggregator.
        rows = list({r["k"]: r for r in _nested_rows(c)}.values())
        wh.write("keytime", rows, NESTED)
        for r in rows:
            acc = expected.get(r["k"], (None, None))
            expected[r["k"]] = (_keytime(acc[0], r["latest"]), r["lines"])
    report = wh.compact("keytime", "--full")
    assert report["totals"]["files_added"] == 1, report
    want = _canonical_nested([{"k": k, "latest": m, "lines": lines}
                              for k, (m, lines) in expected.items()])
    got = _canonical_nested(wh.read_rust("keytime"))
    assert any(r[1] and len(r[1]) > 1 for r in got), got
    assert got == want


def test_external_data_paths_are_read_and_written(wh, tmp_path):
    # pypaimon puts data files under data-file.external-paths; the manifests hold their URIs.
    ext = tmp_path / "external"
    ext.mkdir()
    wh.create("t", APPEND, options={"bucket": "-1",
                                    "data-file.external-paths": f"file://{ext}",
                                    "data-file.external-paths.strategy": "round-robin"})
    expected = []
    for c in range(6):
        rows = append_rows(c, 10)
        wh.write("t", rows, APPEND)
        expected += rows
    before = wh.read("t")
    assert len(before) == 60
    outside = lambda: {str(p) for p in ext.rglob("*.parquet")}
    written_by_pypaimon = outside()
    assert len(written_by_pypaimon) == 6
    report = wh.compact("t")
    assert report["totals"]["files_removed"] == 6, report
    assert report["totals"]["files_added"] == 1, report
    assert wh.read("t") == before
    # The new file went to the external path too (Paimon's writers would put it there).
    assert len(outside() - written_by_pypaimon) == 1
    assert not any(f.endswith(".parquet") for f in wh.files("t") if "bucket-" in f)
    wh.write("t", append_rows(8, 3), APPEND)
    assert len(wh.read("t")) == 63


def test_external_path_outside_the_allowed_directories_is_refused(wh, tmp_path):
    ext = tmp_path / "external"
    ext.mkdir()
    wh.create("t", APPEND, options={"bucket": "-1",
                                    "data-file.external-paths": f"file://{ext}",
                                    "data-file.external-paths.strategy": "round-robin"})
    for c in range(6):
        wh.write("t", append_rows(c, 5), APPEND)
    # Move the directory and point the table elsewhere: the manifests still name the old
    # place, which the host no longer serves.
    import json as _json
    import os
    schema_file = os.path.join(wh.root, wh.path("t"), "schema", "schema-0")
    with open(schema_file) as fh:
        doc = _json.load(fh)
    other = tmp_path / "other"
    other.mkdir()
    doc["options"]["data-file.external-paths"] = f"file://{other}"
    with open(schema_file, "w") as fh:
        _json.dump(doc, fh)
    files_before = wh.files("t")
    code, out = wh.tool("compact", "t", check=False)
    assert code == 1
    assert out["error"]["kind"] in ("io", "storage"), out
    assert "external" in out["error"]["message"], out
    assert wh.files("t") == files_before


def test_append_files_of_older_schema_versions_are_rewritten_as_the_latest(wh):
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    old = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int32())])
    wh.create("t", old, options={"bucket": "1"})
    for c in range(3):
        wh.write("t", [{"id": c * 10 + i, "v": f"old{c}", "n": i} for i in range(10)], old)
    # ALTER TABLE: a column added, one renamed, one widened.
    wh.catalog.alter_table("db.t", [
        SchemaChange.add_column("extra", AtomicType("STRING")),
        SchemaChange.rename_column("v", "label"),
        SchemaChange.update_column_type("n", AtomicType("BIGINT")),
    ])
    new = pa.schema([("id", pa.int64()), ("label", pa.string()), ("n", pa.int64()),
                     ("extra", pa.string())])
    for c in range(3, 5):
        wh.write("t", [{"id": c * 10 + i, "label": f"new{c}", "n": 1000 + i, "extra": "x"}
                       for i in range(10)], new)
    before = wh.read("t")
    assert len(before) == 50 and sum(r["extra"] is None for r in before) == 30
    plan = wh.plan("t", "--full")
    assert plan["summary"]["buckets_blocked"] == 0, plan
    report = wh.compact("t", "--full")
    assert report["totals"]["files_removed"] == 5, report
    assert report["totals"]["files_added"] == 1, report
    assert wh.read("t") == before
    # The new file is written in the latest schema version.
    manifest_files = wh.table("t").new_read_builder().new_scan().plan().splits()[0].files
    assert [f.schema_id for f in manifest_files] == [1]
    wh.write("t", [{"id": 99, "label": "after", "n": 5, "extra": "y"}], new)
    assert len(wh.read("t")) == 51


def test_primary_key_files_of_older_schema_versions_are_merged(wh):
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    old = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()),
                     ("n", pa.int32())])
    wh.create("t", old, primary_keys=["k"], options={"bucket": "1"})
    for c in range(3):
        wh.write("t", [{"k": i, "v": f"old{c}", "n": c} for i in range(c, 30, 2)], old)
    wh.catalog.alter_table("db.t", [
        SchemaChange.add_column("extra", AtomicType("STRING")),
        SchemaChange.rename_column("v", "label"),
        SchemaChange.update_column_type("n", AtomicType("BIGINT")),
    ])
    new = pa.schema([pa.field("k", pa.int64(), nullable=False), ("label", pa.string()),
                     ("n", pa.int64()), ("extra", pa.string())])
    for c in range(3, 5):
        wh.write("t", [{"k": i, "label": f"new{c}", "n": 100 + c, "extra": f"e{c}"}
                       for i in range(c, 40, 3)], new)
    before = wh.read("t")
    report = wh.compact("t", "--full")
    assert report["snapshot_after"] is not None and not report["skipped"], report
    assert report["totals"]["files_added"] == 1, report
    assert wh.read("t") == before
    files = wh.table("t").new_read_builder().new_scan().plan().splits()[0].files
    assert [f.schema_id for f in files] == [1]


def test_value_statistics_of_our_files_prune_correctly(wh):
    wh.create("t", APPEND, options={"bucket": "-1"})
    expected = []
    for c in range(6):
        rows = append_rows(c)
        wh.write("t", rows, APPEND)
        expected += rows
    report = wh.compact("t")
    # Our manifest entries carry value statistics over every column (read with fastavro:
    # pypaimon's scan does not surface them).
    import glob
    import os

    import fastavro
    assert report["snapshot_after"] is not None
    added = []
    for f in glob.glob(os.path.join(wh.root, wh.path("t"), "manifest", "manifest-*")):
        if "manifest-list" in f:
            continue
        with open(f, "rb") as fh:
            added += [r["_FILE"] for r in fastavro.reader(fh) if r["_KIND"] == 0
                      and r["_FILE"]["_FILE_SOURCE"] == 1]
    assert added and all(a["_VALUE_STATS_COLS"] == ["id", "dt", "v"] for a in added), added
    for lo, hi in [(0, 50), (120, 260), (505, 10_000), (-5, 0)]:
        t = wh.table("t")
        rb = t.new_read_builder()
        pb = rb.new_predicate_builder()
        rb = rb.with_filter(pb.and_predicates([pb.greater_or_equal("id", lo),
                                               pb.less_than("id", hi)]))
        got = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
        want = [r for r in expected if lo <= r["id"] < hi]
        assert sorted(r["id"] for r in got if lo <= r["id"] < hi) == sorted(r["id"] for r in want)


def test_value_statistics_of_merged_files_prune_correctly(wh):
    wh.create("pk", PK, primary_keys=["k"], options={"bucket": "2"})
    latest = {}
    for c in range(5):
        rows = [{"k": (i * 7 + c) % 90, "v": f"c{c}-{i}", "n": c * 100 + i} for i in range(60)]
        wh.write("pk", rows, PK)
        latest.update((r["k"], r) for r in rows)
    wh.compact("pk", "--full")
    for lo, hi in [(0, 150), (200, 330), (400, 10_000)]:
        rb = wh.table("pk").new_read_builder()
        pb = rb.new_predicate_builder()
        rb = rb.with_filter(pb.and_predicates([pb.greater_or_equal("n", lo),
                                               pb.less_than("n", hi)]))
        got = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
        got = sorted(r["k"] for r in got if lo <= r["n"] < hi)
        assert got == sorted(k for k, r in latest.items() if lo <= r["n"] < hi), (lo, hi)


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


def test_pypaimon_appends_during_our_compaction_are_not_lost(wh):
    import json
    import os
    import subprocess
    import time

    from conftest import CLI, ENGINE

    wh.create("t", APPEND, options={"bucket": "-1"})
    expected = []
    for c in range(8):
        rows = [{"id": c * 100_000 + i, "dt": "d", "v": f"v{c}-{i}" * 4} for i in range(60_000)]
        wh.write("t", rows, APPEND)
        expected += rows
    table_dir = os.path.join(wh.root, wh.path("t"))
    job = subprocess.Popen([CLI, "--engine", ENGINE, "compact", table_dir, "--json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # A streaming writer committing every 200 ms while the job runs.
    appended = 0
    while job.poll() is None or appended == 0:
        rows = [{"id": -1 - appended * 10 - i, "dt": "d", "v": "during"} for i in range(10)]
        wh.write("t", rows, APPEND)
        expected += rows
        appended += 1
        time.sleep(0.2)
    out, err = job.communicate()
    assert job.returncode == 0, (out, err)
    report = json.loads(out)
    assert report["snapshot_after"] is not None, report
    print("commit:", report["commit"], "appends during the job:", appended)
    # Whether or not an append landed between our plan and our commit (then the commit was
    # rebased over it), nothing pypaimon wrote is lost.
    rows = wh.read("t")
    assert len(rows) == len(expected)
    assert {r["id"] for r in rows} == {r["id"] for r in expected}
    kinds = [s["commitKind"] for s in wh.snapshots("t")]
    assert kinds.count("COMPACT") == 1 and kinds.count("APPEND") == 8 + appended


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


def base_manifests(wh, name):
    """The manifest list entries of the latest snapshot's base list (read with fastavro)."""
    import fastavro
    snap = wh.snapshots(name)[-1]
    path = os.path.join(wh.root, wh.path(name), "manifest", snap["baseManifestList"])
    with open(path, "rb") as fh:
        return list(fastavro.reader(fh))


def test_small_manifests_of_pypaimon_commits_are_merged_by_our_commit(wh):
    # pypaimon never merges manifests; 32 commits leave 31 in the base list and one delta.
    wh.create("t", APPEND, partition_keys=["dt"], options={"bucket": "-1"})
    expected = []
    for c in range(32):
        rows = append_rows(c, 6)
        wh.write("t", rows, APPEND)
        expected += rows
    assert len(base_manifests(wh, "t")) == 31
    before = wh.read("t")
    report = wh.compact("t")
    merge = report["commit"]["manifest_merge"]
    assert merge["kind"] == "minor", merge
    assert (merge["manifests_before"], merge["manifests_after"]) == (32, 1), merge
    after = base_manifests(wh, "t")
    assert len(after) == 1
    assert after[0]["_NUM_ADDED_FILES"] == 32 * 3 and after[0]["_NUM_DELETED_FILES"] == 0
    assert wh.read("t") == before and len(before) == len(expected)
    wh.write("t", append_rows(99, 3), APPEND)
    assert len(wh.read("t")) == len(expected) + 3


def test_full_manifest_compaction_of_a_primary_key_table(wh):
    # A tiny threshold: every compaction folds the base list into ADD entries only.
    options = {"bucket": "1", "rowkind.field": "op", "manifest.full-compaction-threshold-size": "1 b"}
    wh.create("t", PK_OP, primary_keys=["k"], options=options)
    for round_ in range(3):
        for c in range(5):
            n = round_ * 5 + c
            rows = [{"k": i, "v": f"r{n}", "n": n, "op": "+I"} for i in range(n % 3, 30, 2)]
            rows += [{"k": i, "v": None, "n": None, "op": "-D"} for i in range(n % 7, 30, 11)]
            wh.write("t", rows, PK_OP)
        before = wh.read("t")
        report = wh.compact("t", "--full")
        merge = report["commit"]["manifest_merge"]
        assert merge["kind"] == "full", merge
        after = base_manifests(wh, "t")
        assert all(m["_NUM_DELETED_FILES"] == 0 for m in after), after
        assert wh.read("t") == before
        if round_ > 0:
            # The previous compaction's DELETE entries met their ADDs.
            assert merge["entries_cancelled"] > 0, merge


def test_weight_robin_external_paths_follow_their_weights(wh, tmp_path):
    # Our new files go to an external path drawn with the probability of its weight.
    light, heavy = tmp_path / "light", tmp_path / "heavy"
    light.mkdir()
    heavy.mkdir()
    wh.create("t", APPEND, partition_keys=["dt"], options={
        "bucket": "-1",
        "data-file.external-paths": f"file://{light},file://{heavy}",
        "data-file.external-paths.strategy": "weight-robin",
        "data-file.external-paths.weights": "1,1000000"})
    for c in range(6):
        wh.write("t", append_rows(c, 12), APPEND)
    before = wh.read("t")
    files = lambda d: {str(p) for p in d.rglob("*.parquet")}
    light_before, heavy_before = files(light), files(heavy)
    report = wh.compact("t", "--allow-external", str(light), "--allow-external", str(heavy))
    assert report["totals"]["files_added"] == 3, report
    assert wh.read("t") == before
    assert files(light) == light_before
    assert len(files(heavy) - heavy_before) == 3


def test_long_strings_keep_prunable_parquet_statistics(wh):
    # Our STRING statistics and column index are cut to 64 bytes (a prefix below, a bumped
    # prefix above, on character boundaries): pyarrow's row-group and page pruning on the
    # compacted files must still find every value, and pypaimon must read them all back.
    import glob
    import os

    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    def long_value(c, i):
        tail = "\u007f\u007f" if i % 3 == 0 else "☃é"
        return f"{(i * 37 + c) % 50:02d}" + "ñ" * (30 + i % 7) + tail

    wh.create("t", APPEND, options={"bucket": "-1"})
    expected = []
    for c in range(4):
        rows = [{"id": c * 100 + i, "dt": "x", "v": long_value(c, i)} for i in range(40)]
        wh.write("t", rows, APPEND)
        expected += rows
    report = wh.compact("t", "--full")
    assert report["snapshot_after"] is not None
    rb = wh.table("t").new_read_builder()
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    assert sorted((r["id"], r["v"]) for r in got) == sorted((r["id"], r["v"]) for r in expected)
    files = [f for f in glob.glob(os.path.join(wh.root, wh.path("t"), "**", "data-*.parquet"),
                                  recursive=True)]
    assert files
    # Our output's chunk statistics are the cut ones (the values are 64 to 90 bytes long).
    ours = [f for f in files
            if any(len(pq.ParquetFile(f).metadata.row_group(g).column(2).statistics.max
                       .encode()) <= 64
                   for g in range(pq.ParquetFile(f).metadata.num_row_groups))]
    assert ours, files
    values = sorted({r["v"] for r in expected})
    probes = [values[0], values[-1], values[len(values) // 2]]
    for f in files:
        whole = pq.read_table(f, columns=["id", "v"])
        for probe in probes:
            want = sorted(whole.filter(pc.equal(whole["v"], probe))["id"].to_pylist())
            pruned = pq.read_table(f, columns=["id", "v"], filters=[("v", "=", probe)])
            assert sorted(pruned["id"].to_pylist()) == want, (f, probe)
            above = pq.read_table(f, columns=["id", "v"], filters=[("v", ">=", probe)])
            assert above.num_rows == sum(1 for v in whole["v"].to_pylist() if v >= probe)


def _index_readers():
    """tests/format_readers/paimon_file_index.py: Paimon's file-index format, read on its own."""
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "format_readers"))
    import paimon_file_index

    return paimon_file_index


def _our_files_with_their_index(wh, name):
    """(data file as a pyarrow table, its embedded file index) of every live file."""
    import pyarrow.parquet as pq

    rb = wh.table(name).new_read_builder()
    out = []
    for split in rb.new_scan().plan().splits():
        for f in split.files:
            path = os.path.join(wh.root, wh.path(name), f"bucket-{split.bucket}", f.file_name)
            out.append((pq.read_table(path), f.embedded_index))
    return out


def _positions(values):
    want = {}
    for i, v in enumerate(values):
        want.setdefault(v, set()).add(i)
    return want


FILE_INDEXED = pa.schema([("id", pa.int64()), ("s", pa.string()), ("flag", pa.bool_()),
                          ("v", pa.int64()), ("d", pa.decimal128(10, 2)),
                          ("ts", pa.timestamp("us"))])


def test_bitmap_v2_and_bsi_indexes_describe_the_rows_of_our_files(wh):
    """`file-index.bitmap.columns` in version 2 (sorted blocks, booleans included) and
    `file-index.bsi.columns` over integers, decimals and timestamps, negatives and nulls: each
    index we embed, read by an independent reader of Paimon's format, names exactly the rows
    of the data file that hold each value. (Java reads our version-1 bitmaps in
    tests/java_interop; its build here has neither version 2 nor `bsi`, whose bytes golden
    vectors from Paimon Java HEAD's writers check instead: src/rewrite/file_index/golden.rs.)"""
    import datetime
    import decimal

    fi = _index_readers()
    wh.create("t", FILE_INDEXED, options={
        "bucket": "1", "bucket-key": "id",
        "file-index.bitmap.columns": "s,flag",
        "file-index.bitmap.s.version": "2", "file-index.bitmap.flag.version": "2",
        "file-index.bitmap.s.index-block-size": "64 b",
        "file-index.bsi.columns": "v,d,ts",
        "file-index.in-manifest-threshold": "1 mb"})
    base = datetime.datetime(2024, 1, 1)
    for c in range(4):
        wh.write("t", [{
            "id": c * 100 + i,
            "s": None if i % 9 == 0 else f"s{i % 13}",
            "flag": None if i % 11 == 0 else i % 3 == 0,
            "v": None if i % 7 == 0 else (i * 37 - 900) * (c + 1),
            "d": None if i % 8 == 0 else decimal.Decimal(i * 1000 - 20000 - c) / 100,
            "ts": base + datetime.timedelta(microseconds=i * 1_234_567 - 9_000_000 * c),
        } for i in range(50)], FILE_INDEXED)
    before = wh.read("t")
    wh.compact("t", "--full")
    assert wh.read("t") == before
    files = _our_files_with_their_index(wh, "t")
    assert len(files) == 1
    epoch = datetime.datetime(1970, 1, 1)
    for data, blob in files:
        assert blob, "no embedded index"
        bodies = fi.bodies(blob)
        assert set(bodies) == {("s", "bitmap"), ("flag", "bitmap"), ("v", "bsi"), ("d", "bsi"),
                               ("ts", "bsi")}
        n = data.num_rows
        col = lambda c: data.column(c).to_pylist()
        # Version 2; the strings need several 64-byte blocks.
        assert bodies[("s", "bitmap")][0] == 2 and bodies[("flag", "bitmap")][0] == 2
        assert fi.bitmap(bodies[("s", "bitmap")], "string") == (n, _positions(col("s")))
        assert fi.bitmap(bodies[("flag", "bitmap")], ">?") == (n, _positions(col("flag")))
        exact = {
            "v": col("v"),
            "d": [None if x is None else int(x * 100) for x in col("d")],
            "ts": [None if x is None else (x - epoch) // datetime.timedelta(microseconds=1)
                   for x in col("ts")],
        }
        for c, values in exact.items():
            assert fi.bsi(bodies[(c, "bsi")]) == (
                n, {i: v for i, v in enumerate(values) if v is not None}), c
        assert any(v < 0 for v in exact["v"] if v is not None)


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_range_bitmap_indexes_number_the_rows_of_our_files_in_value_order(wh, fmt):
    """`file-index.range-bitmap.columns` (Paimon 1.3+; the bytes are checked against Java
    HEAD's writer in the Rust tests): read on its own, each index we embed gives every row
    with a value a code, and the codes order the rows as their values do, nulls in none; in
    Parquet and ORC tables alike (timestamps included)."""
    import datetime

    import pyarrow.orc as po
    import pyarrow.parquet as pq

    fi = _index_readers()
    schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("n", pa.int32()),
                        ("x", pa.float64()), ("ts", pa.timestamp("ms"))])
    columns = ("s", "n", "x", "ts")
    wh.create("t", schema, options={
        "bucket": "1", "bucket-key": "id", "file.format": fmt,
        "file-index.range-bitmap.columns": ",".join(columns),
        "file-index.range-bitmap.s.chunk-size": "64 b",
        "file-index.in-manifest-threshold": "1 mb"})
    base = datetime.datetime(2024, 1, 1)
    for c in range(3):
        wh.write("t", [{"id": c * 100 + i,
                        "s": None if i % 9 == 0 else f"name-{(i * 7) % 40:03d}",
                        "n": None if i % 8 == 0 else (i * 37 - 900) * (c + 1),
                        "x": None if i % 10 == 0 else (i % 13) / 3 - 2,
                        "ts": None if i % 6 == 0 else
                        base + datetime.timedelta(milliseconds=(i % 17) * 1234 - 5000)}
                       for i in range(60)], schema)
    before = wh.read("t")
    wh.compact("t", "--full")
    assert wh.read("t") == before
    rb = wh.table("t").new_read_builder()
    files = [(split, f) for split in rb.new_scan().plan().splits() for f in split.files]
    assert len(files) == 1
    for split, f in files:
        path = os.path.join(wh.root, wh.path("t"), f"bucket-{split.bucket}", f.file_name)
        data = po.read_table(path) if fmt == "orc" else pq.read_table(path)
        bodies = fi.bodies(f.embedded_index)
        assert set(bodies) == {(c, "range-bitmap") for c in columns}, set(bodies)
        for c in columns:
            values = data.column(c).to_pylist()
            rows, distinct, codes = fi.range_bitmap(bodies[(c, "range-bitmap")])
            assert rows == len(values)
            assert distinct == len({v for v in values if v is not None})
            assert set(codes) == {i for i, v in enumerate(values) if v is not None}, c
            ranked = sorted({v for v in values if v is not None})
            assert all(codes[i] == ranked.index(v) for i, v in enumerate(values)
                       if v is not None), c


def test_file_indexes_of_a_primary_key_table_follow_the_rows_of_its_data_files(wh):
    """On a primary-key table the indexes cover the value columns of each key-value file, in
    the order of its rows; a version-1 bitmap of a BOOLEAN column is left out (Paimon 1.0
    cannot read one back), never written wrongly."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()),
                        ("n", pa.int64()), ("b", pa.bool_())])
    fi = _index_readers()
    wh.create("p", schema, primary_keys=["k"], options={
        "bucket": "1", "file-index.bitmap.columns": "v,b", "file-index.bsi.columns": "n",
        "file-index.in-manifest-threshold": "1 mb"})
    for c in range(4):
        wh.write("p", [{"k": (i * 7 + c * 13) % 90, "v": f"v{(i + c) % 6}",
                        "n": None if i % 10 == 0 else i - 20 * c, "b": i % 2 == 0}
                       for i in range(40)], schema)
    before = wh.read("p")
    wh.compact("p", "--full")
    assert wh.read("p") == before
    for data, blob in _our_files_with_their_index(wh, "p"):
        bodies = fi.bodies(blob)
        assert set(bodies) == {("v", "bitmap"), ("n", "bsi")}
        n = data.num_rows
        assert fi.bitmap(bodies[("v", "bitmap")], "string") == (
            n, _positions(data.column("v").to_pylist()))
        assert fi.bsi(bodies[("n", "bsi")]) == (
            n, {i: v for i, v in enumerate(data.column("n").to_pylist()) if v is not None})
