"""The CLI as Paimon's dedicated compaction job on pypaimon-written tables: write-only tables
are compacted, the scope flags narrow the job, refused tables and postpone buckets exit 3 with
the reason and are left unchanged, malformed flags are typed errors, and compact-database
runs one job per table."""

import json
import os
import shutil

import pyarrow as pa

from conftest import cli

APPEND = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
PK = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64())])

INCOMPLETE = 3


def append_rows(c, n=30):
    return [{"id": c * 100 + i, "dt": f"2025-01-0{i % 3 + 1}", "v": f"v{c}-{i}"} for i in range(n)]


def tree(wh, name):
    """Every file of the table and its bytes."""
    base = os.path.join(wh.root, wh.path(name))
    out = {}
    for dirpath, _, names in os.walk(base):
        for n in names:
            p = os.path.join(dirpath, n)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, base)] = fh.read()
    return out


def live_by_partition(wh, name):
    plan = wh.plan(name)
    return {(b["partition"], b["bucket"]): b["files"] for b in plan["buckets"]}


def test_write_only_tables_are_compacted(wh):
    wh.create("t", PK, primary_keys=["k"], options={"bucket": "2", "write-only": "true"})
    for c in range(6):
        wh.write("t", [{"k": (i * 3 + c) % 50, "v": f"c{c}", "n": i} for i in range(30)], PK)
    before = wh.read("t")
    schema = tree(wh, "t")["schema/schema-0"]
    report = wh.compact("t", "--strategy", "full")
    assert report["status"] == "complete", report
    assert report["schema_version"] == 1
    assert wh.snapshots("t")[-1]["commitKind"] == "COMPACT"
    assert wh.read("t") == before
    assert tree(wh, "t")["schema/schema-0"] == schema
    # A dynamic option cannot turn write-only back on for the job.
    wh.write("t", [{"k": 1, "v": "late", "n": 0}], PK)
    report = wh.compact("t", "--full", "--option", "write-only=true")
    assert report["snapshot_after"] is not None, report
    assert any("write-only" in w for w in report["warnings"]), report


def test_partition_scope_compacts_only_the_named_partition(wh):
    wh.create("t", APPEND, partition_keys=["dt"], options={"bucket": "-1"})
    for c in range(6):
        wh.write("t", append_rows(c), APPEND)
    before = live_by_partition(wh, "t")
    rows = wh.read("t")
    report = wh.compact("t", "--partition", "dt=2025-01-02")
    assert report["status"] == "complete", report
    assert report["scope"]["buckets_outside_partitions"] == 2, report
    after = live_by_partition(wh, "t")
    for key, files in before.items():
        if key[0] == "dt=2025-01-02":
            assert after[key] == 1, (key, after)
        else:
            assert after[key] == files, (key, after)
    assert wh.read("t") == rows
    # --where over the other two.
    report = wh.compact("t", "--where", "dt IN ('2025-01-01', '2025-01-03')")
    assert report["totals"]["buckets_compacted"] == 2, report
    assert all(n == 1 for n in live_by_partition(wh, "t").values())
    assert wh.read("t") == rows


def test_malformed_flags_are_typed_errors_and_change_nothing(wh):
    wh.create("t", APPEND, partition_keys=["dt"], options={"bucket": "-1"})
    for c in range(3):
        wh.write("t", append_rows(c), APPEND)
    before = tree(wh, "t")
    for flags, key in [
        (["--buckets", "0-1"], "buckets"),
        (["--where", "v = 'x'"], "where"),
        (["--where", "dt LIKE '2025%'"], "where"),
        (["--partition", "nope=1"], "partition"),
        (["--partition-idle-time", "soon"], "partition-idle-time"),
        (["--option", "bucket=4"], "bucket"),
        (["--option", "compaction.min.file-nun=3"], "compaction.min.file-nun"),
    ]:
        code, out = wh.tool("compact", "t", *flags, check=False)
        assert code == 1, (flags, out)
        assert out["error"]["kind"] == "invalid-option", (flags, out)
        assert out["error"]["key"] == key, (flags, out)
        assert "\n" not in out["error"]["message"]
    assert tree(wh, "t") == before
    # A flag of the wrong shape never reaches the core: a usage error.
    p = cli("compact", os.path.join(wh.root, wh.path("t")), "--option", "novalue")
    assert p.returncode == 2 and "key=value" in p.stderr, p.stderr
    p = cli("compact", os.path.join(wh.root, wh.path("t")), "--full", "--strategy", "minor")
    assert p.returncode == 2, p.stderr


def test_refused_tables_exit_3_and_stay_byte_for_byte(wh):
    wh.create("t", PK, primary_keys=["k"], options={"bucket": "1",
                                                   "metadata.iceberg.storage": "table-location"})
    for c in range(3):
        wh.write("t", [{"k": i, "v": f"c{c}", "n": i} for i in range(10)], PK)
    before = tree(wh, "t")
    code, report = wh.tool("compact", "t", "--full", check=False)
    assert code == INCOMPLETE, report
    assert report["status"] == "refused"
    assert "metadata.iceberg.storage" in report["not_compactable"]
    assert tree(wh, "t") == before


def test_postpone_files_the_job_cannot_replay_are_kept_with_the_reason(wh):
    # `changelog-producer = input`: the replayed rows' changelog is the writers' to produce
    # (Parquet, ORC and Avro postpone files are replayed: tests/pypaimon/test_postpone.py).
    wh.create("t", PK, primary_keys=["k"], options={"bucket": "-2",
                                                   "changelog-producer": "input"})
    for c in range(3):
        wh.write("t", [{"k": i, "v": f"c{c}", "n": i} for i in range(10)], PK)
    before = tree(wh, "t")
    plan = wh.plan("t")
    assert plan["not_compactable"] is None, plan
    postponed = [b for b in plan["buckets"] if b["bucket"] == -2]
    assert postponed and all("postpone" in b["blocked"] for b in postponed), plan
    # Without maintenance (which would write the EARLIEST hint) nothing changes at all.
    code, report = wh.tool("compact", "t", "--skip-maintenance", check=False)
    assert code == INCOMPLETE, report
    assert report["status"] == "incomplete"
    assert any(s["bucket"] == -2 and "postpone" in s["reason"] for s in report["skipped"]), report
    assert "maintenance" not in report
    assert tree(wh, "t") == before


def test_compact_database_runs_one_job_per_table_and_reports_failures(wh):
    for name in ["a", "b", "broken"]:
        wh.create(name, APPEND, partition_keys=["dt"], options={"bucket": "-1"})
        for c in range(6):
            wh.write(name, append_rows(c), APPEND)
    wh.create("skipme", APPEND, options={"bucket": "-1"})
    rows = {n: wh.read(n) for n in ["a", "b"]}
    shutil.rmtree(os.path.join(wh.root, wh.path("broken"), "manifest"))
    p = cli("compact-database", wh.root, "--json", "--excluding-tables", "db\\.skip.*")
    out = json.loads(p.stdout)
    assert p.returncode == 1, (p.stdout, p.stderr)
    by = {t["table"]: t for t in out["tables"]}
    assert set(by) == {"db.a", "db.b", "db.broken"}, by.keys()
    assert out["compacted"] == 2 and out["failed"] == 1, out
    assert by["db.broken"]["error"]["kind"] in ("io", "corrupt-input"), by["db.broken"]
    for n in ["a", "b"]:
        assert by[f"db.{n}"]["report"]["status"] == "complete"
        assert wh.read(n) == rows[n]
    p = cli("compact-database", wh.root, "--including-tables", "db\\.nothing")
    assert p.returncode == 2 and "no table" in p.stderr, p.stderr


def test_descending_sequence_field_keeps_the_smallest_sequence_as_pypaimon_reads_it(wh):
    # Paimon Java 1.0 (the test jar) predates `sequence.field.sort-order`; pypaimon 2.1
    # implements it in its merge-on-read, so it is the peer here.
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()),
                        ("seq", pa.int64())])
    wh.create("t", schema, primary_keys=["k"], options={
        "bucket": "1", "sequence.field": "seq", "sequence.field.sort-order": "descending",
        "write-only": "true"})
    smallest = {}
    for c in range(5):
        rows = [{"k": i % 7, "v": f"c{c}-{i}", "seq": (c * 37 + i * 11) % 50} for i in range(14)]
        wh.write("t", rows, schema)
        for r in rows:
            if r["k"] not in smallest or r["seq"] <= smallest[r["k"]]["seq"]:
                smallest[r["k"]] = r
    before = wh.read("t")
    assert sorted(before, key=lambda r: r["k"]) == [smallest[k] for k in sorted(smallest)]
    report = wh.compact("t", "--full")
    assert report["status"] == "complete", report
    assert wh.read("t") == before


def test_explain_options_reports_the_planners_values_with_job_overrides(wh):
    wh.create("t", PK, primary_keys=["k"], options={
        "bucket": "1", "write-only": "true", "compaction.max-size-amplification-percent": "150"})
    p = cli("explain-options", os.path.join(wh.root, wh.path("t")),
            "--option", "compaction.size-ratio=4", "--option", "write-only=true")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    universal = doc["primary_key"]["universal"]
    assert universal["max_size_amplification_percent"] == 150
    assert universal["size_ratio_percent"] == 4
    assert universal["sorted_run_trigger"] == 5
    assert doc["num_sorted_run_stop_trigger"] == 8
    assert doc["routing"]["dedicated_job"] == "merge-tree"
    assert doc["routing"]["writer_skips_compaction"] is False
    assert any("write-only" in w for w in doc["warnings"]), doc["warnings"]


def test_compact_dry_run_reports_plan_and_maintenance_and_writes_nothing(wh):
    wh.create("t", PK, primary_keys=["k"], options={
        "bucket": "1", "write-only": "true", "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "2"})
    for c in range(5):
        wh.write("t", [{"k": i, "v": f"c{c}", "n": i} for i in range(10)], PK)
    before = tree(wh, "t")
    code, out = wh.tool("compact", "t", "--dry-run", "--full")
    assert code == 0 and out["dry_run"] is True, out
    assert out["plan"]["summary"]["buckets_with_work"] == 1, out["plan"]
    expired = out["maintenance"]["snapshots"]["expired_snapshots"]
    assert expired == [1, 2, 3], out["maintenance"]
    assert tree(wh, "t") == before
    # The real job then does it.
    report = wh.compact("t", "--full")
    assert report["maintenance"]["snapshots"]["expired_snapshots"], report["maintenance"]
    assert len(wh.snapshots("t")) == 2


def test_expired_partitions_go_and_their_directories_with_clean_empty_directories(wh):
    wh.create("t", APPEND, partition_keys=["dt"], options={
        "bucket": "-1", "snapshot.clean-empty-directories": "true"})
    rows = [{"id": i, "dt": dt, "v": "x"} for i, dt in enumerate(["2020-01-01", "2999-01-01"] * 5)]
    for c in range(3):
        wh.write("t", rows, APPEND)
    base = os.path.join(wh.root, wh.path("t"))
    assert os.path.isdir(os.path.join(base, "dt=2020-01-01"))
    p = cli("expire-partitions", base, "--expiration-time", "1 d", "--json")
    assert p.returncode == 0, p.stderr
    assert [e["spec"] for e in json.loads(p.stdout)["partitions"]["expired"]] == [[["dt", "2020-01-01"]]]
    assert {r["dt"] for r in wh.read("t")} == {"2999-01-01"}
    p = cli("expire-snapshots", base, "--retain-min", "1", "--retain-max", "1", "--older-than", "1ms",
            "--json")
    assert p.returncode == 0, p.stderr
    assert not os.path.exists(os.path.join(base, "dt=2020-01-01")), os.listdir(base)
    assert len(wh.read("t")) == 15
