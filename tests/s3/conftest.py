"""Fixtures of the object-store tests: a real S3-protocol server on loopback.

moto's S3 server (PyPI `moto[server]`; `moto_atomic_server.py`, which makes its conditional
puts atomic, as S3's are) is started once per session on 127.0.0.1 with a port the OS picks.
pypaimon (an independent writer and reader) writes tables into it with its own S3 client;
the `paimon-compact` CLI ($PAIMON_COMPACT_CLI, engine $PAIMON_COMPACT_ENGINE) compacts
them by URI (`s3://bucket/warehouse/db.db/t`), configured only through the standard AWS
environment; pypaimon reads the result back. Every test uses a bucket of its own.
"""

import json
import os
import re
import subprocess
import sys
import time
import uuid

import boto3
import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema

CLI = os.environ.get("PAIMON_COMPACT_CLI")
ENGINE = os.environ.get("PAIMON_COMPACT_ENGINE", "wasm")
KEY, SECRET, REGION = "test-key", "test-secret", "us-east-1"


@pytest.fixture(scope="session")
def moto(tmp_path_factory):
    """The S3 server's port. Its output goes to a file: a pipe nobody drains would stall it."""
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with open(log, "w") as out:
        # The venv's own moto (this interpreter's), its writes made atomic as S3's are.
        server = os.path.join(os.path.dirname(__file__), "moto_atomic_server.py")
        proc = subprocess.Popen([sys.executable, server, "-H", "127.0.0.1", "-p", "0"],
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        port = None
        for _ in range(300):
            m = re.search(r"127\.0\.0\.1:(\d+)", log.read_text())
            if m:
                port = int(m.group(1))
                break
            if proc.poll() is not None:
                raise RuntimeError(f"moto_server exited: {log.read_text()}")
            time.sleep(0.1)
        assert port, f"moto_server printed no port: {log.read_text()}"
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def s3_client(endpoint):
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEY,
                        aws_secret_access_key=SECRET, region_name=REGION)


def cli_env(endpoint, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION=REGION,
               AWS_ENDPOINT_URL=endpoint, AWS_ALLOW_HTTP="true")
    env.update(extra)
    return env


class S3Warehouse:
    """A pypaimon warehouse at `s3://<bucket>/warehouse` on the loopback server."""

    def __init__(self, port):
        self.endpoint = f"http://127.0.0.1:{port}"
        self.bucket = f"wh-{uuid.uuid4().hex[:12]}"
        self.s3 = s3_client(self.endpoint)
        self.s3.create_bucket(Bucket=self.bucket)
        self.root = f"s3://{self.bucket}/warehouse"
        self.catalog = CatalogFactory.create({
            "warehouse": self.root, "fs.s3.endpoint": self.endpoint,
            "fs.s3.accessKeyId": KEY, "fs.s3.accessKeySecret": SECRET, "fs.s3.region": REGION})
        self.catalog.create_database("db", True)

    def uri(self, name):
        return f"{self.root}/db.db/{name}"

    def key(self, name):
        return f"warehouse/db.db/{name}"

    def create(self, name, schema, partition_keys=None, primary_keys=None, options=None):
        self.catalog.create_table(
            f"db.{name}",
            Schema.from_pyarrow_schema(schema, partition_keys=partition_keys,
                                       primary_keys=primary_keys, options=options or {}),
            False)

    def write(self, name, rows, schema):
        t = self.catalog.get_table(f"db.{name}")
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(pa.Table.from_pylist(rows, schema=schema))
        c.commit(w.prepare_commit())
        w.close()
        c.close()

    def read(self, name):
        t = self.catalog.get_table(f"db.{name}")
        rb = t.new_read_builder()
        rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
        return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))

    def objects(self, name):
        """Every object key under the table, relative to it (directory markers left out)."""
        prefix = self.key(name) + "/"
        out = set()
        for page in self.s3.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=prefix):
            for o in page.get("Contents", []):
                if not o["Key"].endswith("/"):
                    out.add(o["Key"][len(prefix):])
        return out

    def snapshots(self, name):
        out = []
        for k in sorted(self.objects(name)):
            if k.startswith("snapshot/snapshot-"):
                body = self.s3.get_object(Bucket=self.bucket, Key=f"{self.key(name)}/{k}")
                out.append(json.loads(body["Body"].read()))
        return sorted(out, key=lambda s: s["id"])

    def cli(self, *args, endpoint=None, env=None, timeout=300):
        """Runs the CLI with the AWS environment pointing at `endpoint` (the server by
        default, or a fault proxy in front of it)."""
        assert CLI, "PAIMON_COMPACT_CLI must name the paimon-compact binary"
        e = cli_env(endpoint or self.endpoint, **(env or {}))
        return subprocess.run([CLI, "--engine", ENGINE, *args], capture_output=True, text=True,
                              timeout=timeout, env=e)

    def compact(self, name, *flags, endpoint=None, env=None):
        p = self.cli("compact", self.uri(name), "--json", *flags, endpoint=endpoint, env=env)
        out = json.loads(p.stdout) if p.stdout.strip() else {}
        return p, out


@pytest.fixture
def s3wh(moto):
    return S3Warehouse(moto)
