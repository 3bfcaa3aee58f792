"""The Node module on S3: the example serverless handler (js/examples/handler.mjs) compacts a
pypaimon table on the loopback S3 server through `S3Storage` and the asynchronous API, under
both bridges: the machine's Node (20: the AWS SDK in a worker thread, the component blocked
on Atomics.wait) and Node 24 (JS Promise Integration: the component suspended while the SDK
runs in the main thread). pypaimon reads the rows back and keeps writing; a store that
refuses the job's writes gives a typed error and leaves the table as it was. Needs
`npm ci && node build.mjs` in js/ and Node 24 in target/ (CI stage 30 does both)."""

import json
import os
import shutil
import subprocess

import pytest

from conftest import cli_env
from faults import FaultProxy, Rule
from test_s3 import PK, compact_snapshots, data_files, pk_table

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
JS = os.path.join(ROOT, "js")
READY = os.path.exists(os.path.join(JS, "dist", "paimon_compact.js")) and \
    os.path.exists(os.path.join(JS, "dist-jspi", "paimon_compact.js")) and \
    os.path.isdir(os.path.join(JS, "node_modules", "@aws-sdk", "client-s3"))
REQUIRED = os.environ.get("PAIMON_COMPACT_REQUIRE_NODE") == "1"
# The Node with JSPI that CI stage 30 unpacks from the npm registry.
NODE24 = os.environ.get("PAIMON_COMPACT_NODE24") or os.path.join(
    os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target"),
    "node-24.22.3", "package", "bin", "node")

pytestmark = pytest.mark.skipif(
    not READY and not REQUIRED, reason="js/ is not built (cd js && npm ci && node build.mjs)")


def node_for(bridge):
    if bridge == "worker":
        return shutil.which("node") or "node"
    if not os.path.exists(NODE24):
        if REQUIRED:
            pytest.fail(f"Node 24 is not at {NODE24} (CI stage 30 unpacks it)")
        pytest.skip("Node 24 is not unpacked")
    return NODE24


BRIDGES = ["worker", "jspi"]


def handler(wh, name, *flags, bridge, endpoint=None):
    assert READY, "js/ is not built: cd js && npm ci && node build.mjs"
    env = cli_env(endpoint or wh.endpoint)
    # The machine's Node 20 has no JSPI and takes the worker on its own; Node 24 takes JSPI.
    env.pop("PAIMON_COMPACT_NODE_BRIDGE", None)
    p = subprocess.run([node_for(bridge), "examples/handler.mjs", wh.uri(name), *flags],
                       cwd=JS, capture_output=True, text=True, timeout=300, env=env)
    return p


@pytest.mark.parametrize("bridge", BRIDGES)
def test_the_node_handler_compacts_a_table_on_s3(s3wh, bridge):
    before = pk_table(s3wh, "t")
    p = handler(s3wh, "t", "--full", bridge=bridge)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["bridge"] == bridge and out["bridges_used"] == [bridge], out
    assert out["compacted"] and out["status"] == "complete", out
    snaps = compact_snapshots(s3wh, "t")
    assert [s["id"] for s in snaps] == [out["snapshot"]]
    assert s3wh.read("t") == before
    assert out["requests"]["put"] > 0 and out["requests"]["list"] > 0, out
    s3wh.write("t", [{"k": 2, "v": "after"}], PK)
    assert {"k": 2, "v": "after"} in s3wh.read("t")


@pytest.mark.parametrize("bridge", BRIDGES)
def test_a_store_refusing_the_jobs_writes_is_a_typed_error_and_changes_nothing(s3wh, moto, bridge):
    before = pk_table(s3wh, "t")
    objects = s3wh.objects("t")
    with FaultProxy(moto) as proxy:
        # Every data file upload fails, past the SDK's retries.
        rule = proxy.add(Rule("status", method="PUT", path_contains="/bucket-", status=500,
                              times=10**6))
        p = handler(s3wh, "t", "--full", bridge=bridge, endpoint=proxy.endpoint)
    assert rule.fired > 0
    assert p.returncode == 1, p.stdout + p.stderr
    out = json.loads(p.stdout)
    assert out["bridge"] == bridge, out
    assert out["error"]["kind"] == "io", out
    assert "\n" not in out["error"]["message"]
    assert compact_snapshots(s3wh, "t") == []
    assert s3wh.read("t") == before
    assert data_files(s3wh.objects("t")) == data_files(objects)


def test_a_table_the_cli_planned_as_nothing_to_do_is_left_alone_by_node(s3wh):
    pk_table(s3wh, "t", commits=1, buckets=1)
    p = handler(s3wh, "t", bridge="worker")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["compacted"] is False
    assert compact_snapshots(s3wh, "t") == []
