"""A `write-only` backlog for benches/README.md ("Many sorted runs"): a primary-key table of one
bucket written by pypaimon in N commits of R rows each (every commit one level-0 run).

    python benches/merge/backlog.py <warehouse> 500 2000
"""
import sys
import time

import pyarrow as pa
from pypaimon import CatalogFactory, Schema
root = sys.argv[1]; n = int(sys.argv[2]); rows = int(sys.argv[3])
cat = CatalogFactory.create({"warehouse": root})
cat.create_database("db", True)
schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.string()), ("b", pa.int64()), ("c", pa.float64()), ("d", pa.string())])
cat.create_table("db.t", Schema.from_pyarrow_schema(schema, primary_keys=["k"], options={"bucket": "1", "write-only": "true"}), True)
t = cat.get_table("db.t")
t0 = time.time()
for c in range(n):
    wb = t.new_batch_write_builder()
    w = wb.new_write(); cm = wb.new_commit()
    ks = [(c * 7919 + i * 104729) % (rows * 50) for i in range(rows)]
    w.write_arrow(pa.table({"k": ks, "a": [f"value-{c}-{i}-" + "x" * 40 for i in range(rows)], "b": [c * i for i in range(rows)], "c": [i / 3 for i in range(rows)], "d": [f"d{i % 100}" for i in range(rows)]}, schema=schema))
    cm.commit(w.prepare_commit()); w.close(); cm.close()
print("wrote", n, "commits in", round(time.time() - t0, 1), "s")
