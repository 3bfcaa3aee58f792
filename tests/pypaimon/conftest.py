"""Fixtures of the pypaimon interoperability tests.

pypaimon (an independent implementation, from PyPI) writes real Paimon tables; our table layer
compacts them through the `paimon-compact` CLI ($PAIMON_COMPACT_CLI) on the engine named by
$PAIMON_COMPACT_ENGINE (`wasm`, the component in wasmtime, by default; or `native`); pypaimon
reads the result back and appends on top of our snapshot. After every compaction pypaimon-rust
(PyPI, a second independent reader built on paimon-rust) must read the same rows as pypaimon,
when it is installed (`PAIMON_COMPACT_REQUIRE_RUST_READER=1` makes its absence a failure).
"""

import json
import os
import subprocess

import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema

try:
    import pypaimon_rust.datafusion as paimon_rust
except ImportError:  # pragma: no cover - depends on the platform's wheels
    paimon_rust = None
    if os.environ.get("PAIMON_COMPACT_REQUIRE_RUST_READER") == "1":
        raise

CLI = os.environ.get("PAIMON_COMPACT_CLI")
ENGINE = os.environ.get("PAIMON_COMPACT_ENGINE", "wasm")


def cli(*args):
    """Runs the CLI on the chosen engine; returns the completed process."""
    assert CLI, "PAIMON_COMPACT_CLI must name the paimon-compact binary"
    return subprocess.run([CLI, "--engine", ENGINE, *args], capture_output=True, text=True,
                          timeout=300)


class Warehouse:
    def __init__(self, root):
        self.root = str(root)
        self.catalog = CatalogFactory.create({"warehouse": self.root})
        self.catalog.create_database("db", True)

    def create(self, name, schema, partition_keys=None, primary_keys=None, options=None):
        self.catalog.create_table(
            f"db.{name}",
            Schema.from_pyarrow_schema(
                schema, partition_keys=partition_keys, primary_keys=primary_keys,
                options=options or {}),
            False)
        return self.table(name)

    def table(self, name):
        return self.catalog.get_table(f"db.{name}")

    def write(self, name, rows, schema):
        t = self.table(name)
        wb = t.new_batch_write_builder()
        w = wb.new_write()
        c = wb.new_commit()
        w.write_arrow(pa.Table.from_pylist(rows, schema=schema))
        c.commit(w.prepare_commit())
        w.close()
        c.close()

    def read(self, name, drop=()):
        t = self.table(name)
        rb = t.new_read_builder()
        rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
        rows = [{k: v for k, v in r.items() if k not in drop} for r in rows]
        return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))

    def read_rust(self, name, drop=()):
        """The rows pypaimon-rust reads, sorted like `read`."""
        t = paimon_rust.PaimonCatalog({"warehouse": self.root}).get_table(f"db.{name}")
        rb = t.new_read_builder()
        batches = rb.new_read().read(rb.new_scan().plan().splits())
        rows = [r for b in batches for r in b.to_pylist()]
        rows = [{k: v for k, v in r.items() if k not in drop} for r in rows]
        return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))

    def path(self, name):
        return f"db.db/{name}"

    def tool(self, cmd, name, *flags, check=True):
        p = cli(cmd, os.path.join(self.root, self.path(name)), "--json", *flags)
        out = json.loads(p.stdout) if p.stdout.strip() else {}
        if check:
            assert p.returncode == 0, f"{cmd} failed: {p.stdout}\n{p.stderr}"
        return p.returncode, out

    def plan(self, name, *flags):
        return self.tool("plan", name, *flags)[1]

    def compact(self, name, *flags):
        out = self.tool("compact", name, *flags)[1]
        if paimon_rust is not None:
            assert self.read_rust(name) == self.read(name), \
                f"pypaimon-rust and pypaimon disagree on {name} after our compaction"
        return out

    def snapshots(self, name):
        d = os.path.join(self.root, self.path(name), "snapshot")
        out = []
        for f in sorted(os.listdir(d)):
            if f.startswith("snapshot-"):
                with open(os.path.join(d, f)) as fh:
                    out.append(json.load(fh))
        return sorted(out, key=lambda s: s["id"])

    def files(self, name):
        base = os.path.join(self.root, self.path(name))
        out = set()
        for dirpath, _, names in os.walk(base):
            for n in names:
                out.add(os.path.relpath(os.path.join(dirpath, n), base))
        return out


@pytest.fixture
def wh(tmp_path):
    return Warehouse(tmp_path / "wh")
