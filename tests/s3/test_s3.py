"""Tables in an object store: the CLI compacts pypaimon tables on a real S3-protocol server
(moto, loopback) by `s3://` URI, configured only by the standard AWS environment; pypaimon
reads the rows back and keeps writing. Two compactors racing on one table make exactly one
COMPACT snapshot; throttling, server errors and connection resets injected by a proxy give a
typed error or a retried success, never a half-committed table."""

import collections
import json

import pyarrow as pa
import pytest

from faults import FaultProxy, Rule

PK = pa.schema([("k", pa.int64()), ("v", pa.string())])
APPEND = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("s", pa.string())])
TYPED_KINDS = {"io", "commit-unknown", "conflict"}


def pk_table(wh, name, commits=3, buckets=2):
    wh.create(name, PK, primary_keys=["k"],
              options={"bucket": str(buckets), "write-only": "true"})
    for i in range(commits):
        wh.write(name, [{"k": j, "v": f"v{i}-{j}"} for j in range(i * 40, i * 40 + 100)], PK)
    return wh.read(name)


def data_files(objects):
    return {k for k in objects if k.startswith("bucket-") or "/bucket-" in k}


def compact_snapshots(wh, name):
    return [s for s in wh.snapshots(name) if s["commitKind"] == "COMPACT"]


def test_a_primary_key_table_on_s3_is_compacted_and_read_back(s3wh):
    before = pk_table(s3wh, "t")
    p, r = s3wh.compact("t", "--full")
    assert p.returncode == 0, p.stderr
    assert r["status"] == "complete", r
    snaps = s3wh.snapshots("t")
    assert snaps[-1]["commitKind"] == "COMPACT" and snaps[-1]["id"] == r["snapshot_after"]
    assert s3wh.read("t") == before
    q = r["storage_requests"]
    assert q["get"] > 0 and q["put"] > 0 and q["list"] > 0, q
    # pypaimon keeps writing on top of our snapshot.
    s3wh.write("t", [{"k": 1, "v": "new"}], PK)
    after = s3wh.read("t")
    assert {"k": 1, "v": "new"} in after and len(after) == len(before)


def test_a_partitioned_append_table_on_s3(s3wh):
    s3wh.create("a", APPEND, partition_keys=["dt"],
                options={"bucket": "-1", "write-only": "true"})
    for i in range(6):
        s3wh.write("a", [{"id": i * 100 + j, "dt": f"d{j % 2}", "s": f"s{i}"}
                         for j in range(100)], APPEND)
    before = s3wh.read("a")
    p, r = s3wh.compact("a", "--full")
    assert p.returncode == 0, p.stderr
    assert r["status"] == "complete", r
    assert r["totals"]["files_after"] < r["totals"]["files_before"], r["totals"]
    assert s3wh.read("a") == before


def test_text_report_names_the_requests(s3wh):
    pk_table(s3wh, "t", commits=2)
    p = s3wh.cli("compact", s3wh.uri("t"), "--full")
    assert p.returncode == 0, p.stderr
    assert "object-store requests:" in p.stdout, p.stdout


def test_a_missing_table_and_a_missing_bucket_are_clear_errors(s3wh):
    p = s3wh.cli("compact", s3wh.uri("absent"), "--json")
    assert p.returncode != 0
    err = json.loads(p.stdout)["error"]
    assert err["kind"] == "corrupt-input" and "not a Paimon table" in err["message"], err
    p = s3wh.cli("compact", "s3://no-such-bucket-here/w/db.db/t", "--json")
    assert p.returncode != 0
    assert json.loads(p.stdout)["error"]["kind"] in ("io", "not-compactable"), p.stdout


def test_the_loopback_store_lets_one_of_racing_conditional_puts_win(s3wh):
    """The premise of every race test here: of several conditional puts of one key at once,
    exactly one succeeds, as on S3. moto alone lets two win now and then (moto_atomic_server.py
    says why): seen once in 40 keys of 8 writers each, and once in a run of the racing test
    below. The window is short, so this check catches a regression only sometimes."""
    import concurrent.futures

    import botocore.exceptions

    def put(key, writer):
        try:
            s3wh.s3.put_object(Bucket=s3wh.bucket, Key=key, Body=f"w{writer}".encode(),
                               IfNoneMatch="*")
            return 1
        except botocore.exceptions.ClientError as e:
            assert e.response["Error"]["Code"] in ("PreconditionFailed", "412"), e.response
            return 0

    wins = collections.Counter()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for k in range(60):
            wins[k] = sum(pool.map(lambda w, k=k: put(f"race/k{k}", w), range(8)))
    assert set(wins.values()) == {1}, {k: n for k, n in wins.items() if n != 1}


def test_two_compactors_racing_on_s3_make_one_compact_snapshot(s3wh):
    """Both plan on the same snapshot without leases; the conditional put lets exactly one
    publish, the other gives up with a typed error and removes what it wrote."""
    import concurrent.futures
    outcomes = collections.Counter()
    for round_ in range(3):
        name = f"race{round_}"
        before = pk_table(s3wh, name, commits=3)
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            runs = list(pool.map(lambda _: s3wh.compact(name, "--full", "--no-lease"), range(2)))
        for p, r in runs:
            if p.returncode == 0:
                outcomes[r["status"]] += 1
            else:
                kind = json.loads(p.stdout)["error"]["kind"]
                assert kind in TYPED_KINDS, p.stdout
                outcomes[kind] += 1
        assert len(compact_snapshots(s3wh, name)) == 1, [p.stdout for p, _ in runs]
        assert s3wh.read(name) == before
        # The loser left nothing behind that no snapshot names.
        p = s3wh.cli("remove-orphan-files", s3wh.uri(name), "--older-than", "0 s", "--json",
                     "--dry-run")
        assert p.returncode == 0, p.stderr
        orphans = json.loads(p.stdout)["orphans"]
        assert orphans["candidates"] == 0 and orphans["referenced"] > 0, (
            p.stdout, [q.stdout[-3000:] + q.stderr[-1000:] for q, _ in runs])
    print("race outcomes:", dict(outcomes))
    assert outcomes["complete"] >= 3, outcomes


def test_throttling_is_retried(s3wh, moto):
    before = pk_table(s3wh, "t")
    with FaultProxy(moto) as proxy:
        rule = proxy.add(Rule("status", status=503, first=1, times=4))
        five = proxy.add(Rule("status", method="PUT", status=500, first=2, times=1))
        p, r = s3wh.compact("t", "--full", endpoint=proxy.endpoint)
    assert p.returncode == 0, p.stderr
    assert r["status"] == "complete"
    assert rule.fired == 4 and five.fired == 1
    assert s3wh.read("t") == before
    assert len(compact_snapshots(s3wh, "t")) == 1


def test_a_commit_the_store_refuses_leaves_the_table_unchanged(s3wh, moto):
    before = pk_table(s3wh, "t")
    objects = s3wh.objects("t")
    with FaultProxy(moto) as proxy:
        proxy.add(Rule("status", method="PUT", path_contains="/snapshot/snapshot-", status=500,
                       times=10**6))
        p, r = s3wh.compact("t", "--full", endpoint=proxy.endpoint,
                            env={"PAIMON_COMPACT_STORE_RETRIES": "1"})
    assert p.returncode != 0
    err = json.loads(p.stdout)["error"]
    assert err["kind"] == "io", err
    assert compact_snapshots(s3wh, "t") == []
    assert s3wh.read("t") == before
    # Every data file the job wrote was removed again.
    assert data_files(s3wh.objects("t")) == data_files(objects)


def test_a_commit_whose_answer_is_lost_is_found_committed(s3wh, moto):
    """The store creates the snapshot, the client sees a reset: the job reads the snapshot
    back, recognizes its own commit and reports success, once."""
    before = pk_table(s3wh, "t")
    with FaultProxy(moto) as proxy:
        rule = proxy.add(Rule("reset-after", method="PUT", path_contains="/snapshot/snapshot-"))
        p, r = s3wh.compact("t", "--full", endpoint=proxy.endpoint)
    assert rule.fired == 1
    assert p.returncode == 0, p.stdout + p.stderr
    assert r["status"] == "complete"
    assert len(compact_snapshots(s3wh, "t")) == 1
    assert s3wh.read("t") == before


def test_connection_resets_anywhere_never_half_commit(s3wh, moto):
    """Cuts the connection on the k-th request of a job (no retries), for k spread over the
    whole job: each run either completes or fails with a typed error, and a failed run leaves
    the table's snapshots and rows as they were."""
    name, gen = "t0", 0
    before = pk_table(s3wh, name)
    pk_table(s3wh, "probe")
    with FaultProxy(moto) as proxy:
        # How many requests a clean run of the same job makes.
        p, r = s3wh.compact("probe", "--full", endpoint=proxy.endpoint)
        assert p.returncode == 0, p.stderr
        total = len(proxy.requests)
        ks = sorted({max(1, total * i // 8) for i in range(1, 8)} | {1, total})
        outcomes = collections.Counter()
        for k in ks:
            proxy.clear()
            proxy.add(Rule("reset-before", first=k))
            snaps = s3wh.snapshots(name)
            p, r = s3wh.compact(name, "--full", endpoint=proxy.endpoint,
                                env={"PAIMON_COMPACT_STORE_RETRIES": "0"})
            proxy.clear()
            if p.returncode == 0:
                outcomes[r["status"]] += 1
                assert s3wh.read(name) == before
                gen += 1
                name = f"t{gen}"
                before = pk_table(s3wh, name)
            else:
                kind = json.loads(p.stdout)["error"]["kind"]
                assert kind in TYPED_KINDS, p.stdout
                outcomes[kind] += 1
                assert s3wh.snapshots(name) == snaps, f"k={k}: the table changed"
                assert s3wh.read(name) == before
    print(f"resets over {total} requests at {ks}:", dict(outcomes))
    assert sum(n for k, n in outcomes.items() if k in TYPED_KINDS) >= 3, outcomes
