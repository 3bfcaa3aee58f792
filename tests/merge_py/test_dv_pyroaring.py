"""A deletion-vector index file written by the merge rewriter, read back with pyroaring.

`cargo test --test merge_dv_export` writes `index-merge-0` (Paimon's format: version byte,
then per data file a big-endian length, the magic 1581511376, a portable 32-bit RoaringBitmap
and a CRC32 of magic + bitmap) and `index-merge-0.json` (where each vector is, and the
positions it must hold) into $PAIMON_MERGE_DV_OUT. This reader shares no code with ours.
"""

import json
import os
import struct
import zlib
from pathlib import Path

from pyroaring import BitMap

OUT = Path(os.environ.get("PAIMON_MERGE_DV_OUT", "target/tmp/merge-dv"))
MAGIC = 1581511376


def test_deletion_vectors_read_back_with_pyroaring():
    data = (OUT / "index-merge-0").read_bytes()
    ranges = json.loads((OUT / "index-merge-0.json").read_text())
    assert data[0] == 1, "version byte"
    assert len(ranges) == 2
    end = 1
    for r in ranges:
        off, length = r["offset"], r["length"]
        assert off == end, "vectors follow each other"
        (stored_len,) = struct.unpack(">i", data[off:off + 4])
        assert stored_len == length
        (magic,) = struct.unpack(">i", data[off + 4:off + 8])
        assert magic == MAGIC
        body = data[off + 4:off + 4 + length]
        (crc,) = struct.unpack(">I", data[off + 4 + length:off + 8 + length])
        assert zlib.crc32(body) & 0xFFFFFFFF == crc
        bitmap = BitMap.deserialize(body[4:])
        assert list(bitmap) == r["positions"], r["data_file"]
        assert len(bitmap) == r["cardinality"]
        end = off + 8 + length
    assert end == len(data), "nothing after the last vector"
    positions = {r["data_file"]: r["positions"] for r in ranges}
    # Keys of level 0 found in level 2 (k % 3 == 0) are marked there at k / 3.
    assert positions["data-l2.parquet"][:4] == [0, 5, 7, 10]
    assert len(positions["data-l4.parquet"]) > len(positions["data-l2.parquet"])
