"""Ray from PyPI on a local cluster bound to loopback: `paimon_compact.ray.compact_table` (the
installed wheel) plans a pypaimon table on S3 (moto), runs its tasks as Ray tasks, commits once;
pypaimon reads the same rows back. Skipped only when the stage does not ask for Ray."""

import json
import os

import pyarrow as pa
import pytest

from conftest import ENGINE, cli_env

ray = pytest.importorskip("ray") if not os.environ.get("PAIMON_COMPACT_REQUIRE_RAY") else __import__("ray")
paimon_compact = __import__("paimon_compact")
import paimon_compact.ray as pc_ray  # noqa: E402

PK = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def test_the_python_api_compacts_on_this_machine(s3wh, monkeypatch):
    # The binary the wheel carries, not the build tree's.
    monkeypatch.delenv("PAIMON_COMPACT_CLI", raising=False)
    assert paimon_compact.binary().endswith("paimon_compact/bin/paimon-compact")
    s3wh.create("p", PK, partition_keys=["dt"], primary_keys=["k", "dt"],
                options={"bucket": "2", "write-only": "true"})
    for i in range(3):
        s3wh.write("p", [{"k": j, "dt": f"d{j % 2}", "v": f"v{i}"} for j in range(60)], PK)
    before = s3wh.read("p")
    r = paimon_compact.compact_table(s3wh.uri("p"), full=True, engine=ENGINE,
                                     env=cli_env(s3wh.endpoint))
    assert r["status"] == "complete", r
    assert s3wh.read("p") == before
    with pytest.raises(paimon_compact.PaimonCompactError) as e:
        paimon_compact.compact_table(s3wh.uri("absent"), engine=ENGINE, env=cli_env(s3wh.endpoint))
    assert e.value.kind == "corrupt-input"


def test_ray_workers_compact_one_table_and_commit_once(s3wh, cluster):
    s3wh.create("t", PK, partition_keys=["dt"], primary_keys=["k", "dt"],
                options={"bucket": "4", "write-only": "true"})
    for i in range(4):
        s3wh.write("t", [{"k": j, "dt": f"d{j % 2}", "v": f"v{i}-{j}"}
                         for j in range(i * 25, i * 25 + 120)], PK)
    before = s3wh.read("t")
    seen = []
    r = pc_ray.compact_table(s3wh.uri("t"), num_workers=2, full=True, engine=ENGINE,
                             env=cli_env(s3wh.endpoint), progress=lambda d, t: seen.append((d, t)))
    assert r["status"] == "complete", json.dumps(r)[:500]
    assert seen and seen[-1][0] == seen[-1][1] >= 4, seen
    compacts = [s for s in s3wh.snapshots("t") if s["commitKind"] == "COMPACT"]
    assert len(compacts) == 1 and compacts[0]["id"] == r["snapshot_after"]
    assert s3wh.read("t") == before
    assert r["totals"]["buckets_compacted"] >= 4, r["totals"]


def test_the_wheel_ships_the_component_precompiled(tmp_path, monkeypatch):
    """A fresh machine's first start loads the artifact `precompile` wrote into the wheel
    instead of compiling (an empty cache directory; the start well under a second)."""
    monkeypatch.delenv("PAIMON_COMPACT_CLI", raising=False)
    import subprocess
    out = subprocess.run([paimon_compact.binary(), "--cache-dir", str(tmp_path / "empty"), "info"],
                         capture_output=True, text=True, check=True).stdout
    info = json.loads(out)
    assert info["source"] == "precompiled", info
    assert info["cache_file"].startswith(os.path.dirname(paimon_compact.binary())), info
    assert info["refused"] == [], info
