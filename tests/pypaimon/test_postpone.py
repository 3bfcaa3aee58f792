"""Postpone-bucket tables (`bucket = -2`) written by pypaimon, compacted by us.

pypaimon writes such a table's rows into each partition's `bucket-postpone` directory, which
its readers (and Paimon Java's) skip until a compaction replays them into real buckets; it
cannot compact them itself. We do, and then pypaimon (and pypaimon-rust) read every row. The
bucket of every key must be the one Paimon's bucket function gives: pypaimon implements that
function for its fixed-bucket writers, so a `bucket = N` table it writes with the same keys is
the reference, file by file.
"""

import glob
import os

import pyarrow as pa
import pyarrow.parquet as pq

from test_compact import check_compact_snapshot

SCHEMA = pa.schema([
    pa.field("dt", pa.string(), nullable=False),
    pa.field("k", pa.int64(), nullable=False),
    pa.field("name", pa.string(), nullable=False),
    ("v", pa.string()),
    ("n", pa.int64()),
])
PARQUET = {"file.format": "parquet"}


def rows(commit, keys):
    return [{"dt": f"2025-01-0{k % 2 + 1}", "k": k, "name": f"user-name-{k:05d}",
             "v": f"c{commit}-{k}", "n": commit} for k in keys]


def sort_rows(rs):
    return sorted(rs, key=lambda r: (r["dt"], r["k"], r["name"]))


def keys_by_bucket(wh, name):
    """{(dt, bucket): sorted keys} from the live Parquet files of the real buckets."""
    base = os.path.join(wh.root, wh.path(name))
    # Files a compaction replaced stay on disk until expiry; their keys are in the same bucket.
    out = {}
    for path in glob.glob(os.path.join(base, "dt=*", "bucket-[0-9]*", "*.parquet")):
        parts = path.split(os.sep)
        dt, bucket = parts[-3].split("=", 1)[1], int(parts[-2].split("-", 1)[1])
        t = pq.ParquetFile(path).read(columns=["_KEY_k", "_KEY_name"])
        keys = out.setdefault((dt, bucket), set())
        keys.update(zip(t.column("_KEY_k").to_pylist(), t.column("_KEY_name").to_pylist()))
    return {k: sorted(v) for k, v in out.items()}


def test_postpone_files_are_replayed_into_buckets_pypaimon_then_reads(wh):
    opts = {"bucket": "-2", "postpone.default-bucket-num": "4", **PARQUET}
    wh.create("t", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "k", "name"], options=opts)
    expected = {}
    for c, keys in enumerate([range(0, 60), range(20, 80, 2), range(0, 100, 7)]):
        batch = rows(c, keys)
        wh.write("t", batch, SCHEMA)
        for r in batch:
            expected[(r["dt"], r["k"], r["name"])] = r
    # Until a compaction, readers see nothing: every row waits in the postpone buckets.
    assert wh.read("t") == []
    plan = wh.plan("t")
    postpone = [b for b in plan["buckets"] if b["bucket"] == -2]
    assert len(postpone) == 2, plan
    for b in postpone:
        assert b["blocked"] is None, b
        assert b["reason"]["rule"] == "postpone-replay", b
        assert b["reason"]["buckets"] == 4, b
        assert b["actions"][0]["op"] == "replay", b
    # Commit 1 wrote even keys only, all in the first partition.
    assert sorted(len(b["actions"][0]["files"]) for b in postpone) == [2, 3], plan
    before = len(wh.snapshots("t"))
    report = wh.compact("t")
    check_compact_snapshot(wh, "t", before)
    assert report["totals"]["rows_read"] >= len(expected), report
    assert sort_rows(wh.read("t")) == sort_rows(expected.values())
    # Nothing is left to replay, and every new file records the partition's 4 buckets.
    after = wh.plan("t")
    assert all(b["bucket"] >= 0 for b in after["buckets"]), after
    assert {b["bucket"] for b in after["buckets"]} <= {0, 1, 2, 3}, after

    # The same keys in a pypaimon-written `bucket = 4` table land in the same buckets.
    wh.create("ref", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "k", "name"],
              options={"bucket": "4", **PARQUET})
    wh.write("ref", list(expected.values()), SCHEMA)
    ours, ref = keys_by_bucket(wh, "t"), keys_by_bucket(wh, "ref")
    assert len(ref) > 4, ref.keys()
    assert ours == ref

    # More postpone rows on top: the partitions keep their 4 buckets, new keys and updates
    # land where the hash says, and pypaimon reads the merged result.
    batch = rows(9, range(50, 130, 3))
    wh.write("t", batch, SCHEMA)
    for r in batch:
        expected[(r["dt"], r["k"], r["name"])] = r
    plan = wh.plan("t")
    assert [b["reason"]["buckets"] for b in plan["buckets"]
            if b["bucket"] == -2] == [4, 4], plan
    wh.compact("t")
    assert sort_rows(wh.read("t")) == sort_rows(expected.values())
    wh.write("ref", batch, SCHEMA)
    assert keys_by_bucket(wh, "t") == keys_by_bucket(wh, "ref")


def test_a_new_partition_gets_its_bucket_count_from_its_rows(wh):
    opts = {"bucket": "-2", "postpone.target-row-num-per-bucket": "10", **PARQUET}
    wh.create("t", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "k", "name"], options=opts)
    batch = [r for r in rows(0, range(70)) if r["dt"] == "2025-01-01"]  # 35 rows
    wh.write("t", batch, SCHEMA)
    plan = wh.plan("t")
    assert [b["reason"]["buckets"] for b in plan["buckets"]] == [4], plan
    wh.compact("t")
    assert sort_rows(wh.read("t")) == sort_rows(batch)
    assert {b["bucket"] for b in wh.plan("t")["buckets"]} <= {0, 1, 2, 3}


def test_avro_postpone_files_are_replayed(wh):
    # pypaimon, like Paimon's Java writers, writes postpone files as Avro unless the table
    # names a format: the replay reads them, decimals and timestamps included.
    schema = pa.schema([
        pa.field("k", pa.int32(), nullable=False),
        ("amount", pa.decimal128(12, 2)),
        ("at", pa.timestamp("us")),
        ("flag", pa.bool_()),
        ("d", pa.float64()),
        ("s", pa.string()),
    ])
    import datetime
    import decimal
    _replayed_from_avro(wh, schema, buckets=2, batches=[
        [{"k": k, "amount": decimal.Decimal(f"{c}{k}.{k % 100:02d}"),
          "at": datetime.datetime(2025, 1, 1, 0, 0, k % 60, 123456 + c),
          "flag": k % 2 == 0, "d": k / 7 + c, "s": None if k % 5 == 0 else f"s{c}-{k}"}
         for k in range(c * 10, 40 + c * 10)] for c in range(3)])


def _replayed_from_avro(wh, schema, buckets, batches):
    """Writes `batches` (a commit each) to a new postpone table of `schema` keyed by `k`,
    whose postpone files pypaimon writes as Avro (no format named); compacts it; every key's
    newest row must read back, from the table's buckets."""
    wh.create("t", schema, primary_keys=["k"],
              options={"bucket": "-2", "postpone.default-bucket-num": str(buckets)})
    expected = {}
    for batch in batches:
        wh.write("t", batch, schema)
        expected.update((r["k"], r) for r in batch)
    files = [f for f in wh.files("t") if "bucket-postpone" in f]
    assert files and all(f.endswith(".avro") for f in files), files
    plan = wh.plan("t")
    assert plan["buckets"][0]["blocked"] is None, plan
    wh.compact("t")
    assert {b["bucket"] for b in wh.plan("t")["buckets"]} <= set(range(buckets))
    assert sorted(wh.read("t"), key=lambda r: r["k"]) == [expected[k] for k in sorted(expected)]


def test_orc_postpone_files_are_replayed_into_orc_buckets(wh):
    """A table that writes ORC (`file.format = orc`): pypaimon's postpone files are ORC, our
    replay reads them, the real buckets are written as ORC, and pypaimon reads every row."""
    wh.create("t", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "k", "name"],
              options={"bucket": "-2", "postpone.default-bucket-num": "3", "file.format": "orc"})
    expected = {}
    for c, keys in enumerate([range(0, 40), range(10, 50, 3)]):
        batch = rows(c, keys)
        wh.write("t", batch, SCHEMA)
        for r in batch:
            expected[(r["dt"], r["k"], r["name"])] = r
    postponed = [f for f in wh.files("t") if "bucket-postpone" in f]
    assert postponed and all(f.endswith(".orc") for f in postponed), postponed
    plan = wh.plan("t")
    assert all(b["blocked"] is None for b in plan["buckets"]), plan
    wh.compact("t")
    assert sort_rows(wh.read("t")) == sort_rows(expected.values())
    base = os.path.join(wh.root, wh.path("t"))
    written = glob.glob(os.path.join(base, "dt=*", "bucket-[0-9]*", "*"))
    assert written and all(p.endswith(".orc") for p in written), written
    for path in written:
        with open(path, "rb") as f:
            assert f.read(3) == b"ORC", path


def test_nested_avro_postpone_files_are_replayed(wh):
    """A table with nested columns (a list of rows, a row, a list of ints): pypaimon writes
    its postpone files as Avro with those nested records, the replay reads them as the merge
    reads nested Avro, and every row reaches its bucket with its nested values intact.
    (pypaimon 2.1 cannot write a map to Avro; the Rust suite replays maps.)"""
    schema = pa.schema([
        pa.field("k", pa.int64(), nullable=False),
        ("lines", pa.list_(pa.struct([("id", pa.int64()), ("a", pa.string())]))),
        ("point", pa.struct([("x", pa.float64()), ("y", pa.int32())])),
        ("ids", pa.list_(pa.int32())),
    ])
    _replayed_from_avro(wh, schema, buckets=3, batches=[
        [{"k": k,
          "lines": None if k % 5 == 0 else [{"id": j, "a": None if j == 1 else f"{c}-{k}"}
                                             for j in range(k % 3)],
          "point": None if k % 4 == 0 else {"x": k / 3 + c, "y": None if k % 6 == 1 else k},
          "ids": [k, c] if k % 2 else []}
         for k in range(c * 10, 30 + c * 10)] for c in range(3)])


def test_postpone_files_of_older_schema_versions_are_replayed(wh):
    """ALTER TABLE between writes of a postpone table (a column added, one renamed, one
    widened, a nested field added): the older postpone files are replayed through their
    column map onto the latest schema, in Avro (pypaimon's default) and in Parquet."""
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    old = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()),
                     ("n", pa.int32()), ("ids", pa.list_(pa.int32()))])
    new = pa.schema([pa.field("k", pa.int64(), nullable=False), ("label", pa.string()),
                     ("n", pa.int64()), ("ids", pa.list_(pa.int32())), ("extra", pa.string())])
    for name, fmt in [("avro_t", {}), ("parquet_t", PARQUET)]:
        wh.create(name, old, primary_keys=["k"],
                  options={"bucket": "-2", "postpone.default-bucket-num": "2", **fmt})
        expected = {}
        for c in range(2):
            batch = [{"k": k, "v": f"old{c}", "n": c, "ids": [k, c]} for k in range(c, 30, 2)]
            wh.write(name, batch, old)
            for r in batch:
                expected[r["k"]] = {"k": r["k"], "label": r["v"], "n": r["n"], "ids": r["ids"],
                                    "extra": None}
        wh.catalog.alter_table(f"db.{name}", [
            SchemaChange.add_column("extra", AtomicType("STRING")),
            SchemaChange.rename_column("v", "label"),
            SchemaChange.update_column_type("n", AtomicType("BIGINT")),
        ])
        batch = [{"k": k, "label": "new", "n": 100 + k, "ids": [], "extra": f"e{k}"}
                 for k in range(0, 40, 3)]
        wh.write(name, batch, new)
        for r in batch:
            expected[r["k"]] = r
        plan = wh.plan(name)
        assert all(b["blocked"] is None for b in plan["buckets"]), plan
        wh.compact(name)
        assert {b["bucket"] for b in wh.plan(name)["buckets"]} <= {0, 1}, name
        got = sorted(wh.read(name), key=lambda r: r["k"])
        assert got == [expected[k] for k in sorted(expected)], name
