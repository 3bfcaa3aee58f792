"""Tables written by our own writer (the demo) are read by pypaimon, before and after we
compact them."""

import json
import os
import subprocess

from pypaimon import CatalogFactory

from conftest import cli


def read(catalog, name):
    t = catalog.get_table(name)
    rb = t.new_read_builder()
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def test_demo_tables_are_read_by_pypaimon(tmp_path):
    root = str(tmp_path / "wh")
    os.makedirs(root)
    out = cli("demo", "--dir", root, "--no-compact", "--json")
    assert out.returncode == 0, out.stderr
    assert len(json.loads(out.stdout)["tables"]) == 3
    catalog = CatalogFactory.create({"warehouse": root})
    events = read(catalog, "demo.events")
    assert len(events) == 360
    orders = read(catalog, "demo.orders")
    assert 0 < len(orders) < 50  # deletes and updates merged by pypaimon
    assert len(read(catalog, "demo.metrics")) == 240
    for name in ["events", "metrics"]:
        before = read(catalog, f"demo.{name}")
        p = cli("compact", os.path.join(root, "demo.db", name), "--json")
        assert p.returncode == 0, p.stderr
        report = json.loads(p.stdout)
        assert report["snapshot_after"] == 7, report
        assert read(catalog, f"demo.{name}") == before
