"""The Node module on S3: the example serverless handler (js/examples/handler.mjs) compacts a
pypaimon table on the loopback S3 server through `S3Storage` (the AWS SDK in a worker thread,
bridged to the component's synchronous storage calls with Atomics.wait); pypaimon reads the
rows back and keeps writing. Needs `npm ci && node build.mjs` in js/ (CI stage 30 does it)."""

import json
import os
import shutil
import subprocess

import pytest

from conftest import cli_env
from test_s3 import PK, compact_snapshots, pk_table

JS = os.path.join(os.path.dirname(__file__), "..", "..", "js")
READY = os.path.exists(os.path.join(JS, "dist", "paimon_compact.js")) and \
    os.path.isdir(os.path.join(JS, "node_modules", "@aws-sdk", "client-s3"))

pytestmark = pytest.mark.skipif(
    not READY and os.environ.get("PAIMON_COMPACT_REQUIRE_NODE") != "1",
    reason="js/ is not built (cd js && npm ci && node build.mjs)")


def handler(wh, name, *flags, endpoint=None):
    assert READY, "js/ is not built: cd js && npm ci && node build.mjs"
    p = subprocess.run([shutil.which("node") or "node", "examples/handler.mjs", wh.uri(name), *flags],
                       cwd=JS, capture_output=True, text=True, timeout=300,
                       env=cli_env(endpoint or wh.endpoint))
    return p


def test_the_node_handler_compacts_a_table_on_s3(s3wh):
    before = pk_table(s3wh, "t")
    p = handler(s3wh, "t", "--full")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["compacted"] and out["status"] == "complete", out
    snaps = compact_snapshots(s3wh, "t")
    assert [s["id"] for s in snaps] == [out["snapshot"]]
    assert s3wh.read("t") == before
    assert out["requests"]["put"] > 0 and out["requests"]["list"] > 0, out
    s3wh.write("t", [{"k": 2, "v": "after"}], PK)
    assert {"k": 2, "v": "after"} in s3wh.read("t")


def test_a_table_the_cli_planned_as_nothing_to_do_is_left_alone_by_node(s3wh):
    pk_table(s3wh, "t", commits=1, buckets=1)
    p = handler(s3wh, "t")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["compacted"] is False
    assert compact_snapshots(s3wh, "t") == []
