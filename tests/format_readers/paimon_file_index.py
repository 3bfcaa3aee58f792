"""Readers of Paimon's file-index format (docs/format.md §6, "File indexes"), written from the
format's description and independent of our Rust writer, so the Python suites can check the
indexes we embed against the data files they describe.

Every reader returns plain Python values: sets of row positions, and the values as Paimon's
index writers see them (strings, ints for integers, dates, times, epoch milliseconds or
microseconds of timestamps and unscaled decimals, floats, bools).
"""

import struct

MAGIC = 1493475289347502


def bodies(blob):
    """The file-index container: {(column, index type): body bytes}."""
    magic, version, head, ncols = struct.unpack_from(">qiii", blob, 0)
    assert (magic, version) == (MAGIC, 1), (magic, version)
    at, out = 20, {}

    def utf(at):
        (n,) = struct.unpack_from(">H", blob, at)
        return blob[at + 2:at + 2 + n].decode(), at + 2 + n

    for _ in range(ncols):
        column, at = utf(at)
        (nidx,) = struct.unpack_from(">i", blob, at)
        at += 4
        for _ in range(nidx):
            kind, at = utf(at)
            start, length = struct.unpack_from(">ii", blob, at)
            at += 8
            out[(column, kind)] = blob[start:start + length]
    # The redundant length (zero), then the bodies.
    assert struct.unpack_from(">i", blob, at) == (0,) and at + 4 == head, (at, head)
    return out


def roaring(blob, at=0):
    """RoaringBitmap's portable serialization at `at`: (set of rows, bytes read)."""
    (cookie,) = struct.unpack_from("<I", blob, at)
    start = at
    if cookie & 0xFFFF == 12347:  # with run containers
        n = (cookie >> 16) + 1
        run_flags = blob[at + 4:at + 4 + (n + 7) // 8]
        at += 4 + (n + 7) // 8
    else:
        assert cookie == 12346, cookie
        (n,) = struct.unpack_from("<I", blob, at + 4)
        run_flags = bytes((n + 7) // 8)
        at += 8
    keys = [struct.unpack_from("<HH", blob, at + 4 * i) for i in range(n)]
    at += 4 * n
    if cookie == 12346 or n >= 4:
        at += 4 * n  # container offsets
    rows = set()
    for i, (key, card_minus_1) in enumerate(keys):
        high = key << 16
        if run_flags[i // 8] >> (i % 8) & 1:
            (runs,) = struct.unpack_from("<H", blob, at)
            at += 2
            for r in range(runs):
                lo, ln = struct.unpack_from("<HH", blob, at + 4 * r)
                rows.update(high + v for v in range(lo, lo + ln + 1))
            at += 4 * runs
        elif card_minus_1 + 1 <= 4096:
            vals = struct.unpack_from(f"<{card_minus_1 + 1}H", blob, at)
            rows.update(high + v for v in vals)
            at += 2 * (card_minus_1 + 1)
        else:
            words = struct.unpack_from("<1024Q", blob, at)
            rows.update(high + w * 64 + b for w, word in enumerate(words) for b in range(64)
                        if word >> b & 1)
            at += 8192
    return rows, at - start


def _value(body, at, kind):
    """One dictionary value: `kind` is "string" or a struct code (">b", ">h", ">i", ">q",
    ">f", ">d", ">?")."""
    if kind == "string":
        (n,) = struct.unpack_from(">i", body, at)
        return body[at + 4:at + 4 + n].decode(), at + 4 + n
    (v,) = struct.unpack_from(kind, body, at)
    return v, at + struct.calcsize(kind)


def bitmap(body, kind):
    """A bitmap index, version 1 or 2: (row count, {value (None: nulls): set of rows})."""
    version = body[0]
    assert version in (1, 2), version
    rows, distinct, has_null = struct.unpack_from(">ii?", body, 1)
    at = 10
    entries = []  # (value, offset or -1 - row)
    if has_null:
        entries.append((None, struct.unpack_from(">i", body, at)[0]))
        at += 8 if version == 2 else 4  # version 2 adds the null bitmap's length
    if version == 1:
        for _ in range(distinct):
            value, at = _value(body, at, kind)
            entries.append((value, struct.unpack_from(">i", body, at)[0]))
            at += 4
        body_start = at
    else:
        (nblocks,) = struct.unpack_from(">i", body, at)
        at += 4
        directory = []
        for _ in range(nblocks):
            first, at = _value(body, at, kind)
            directory.append((first, struct.unpack_from(">i", body, at)[0]))
            at += 4
        (blocks_len,) = struct.unpack_from(">i", body, at)
        at += 4
        blocks_start, body_start = at, at + blocks_len
        seen = []
        for first, offset in directory:
            b = blocks_start + offset
            (count,) = struct.unpack_from(">i", body, b)
            b += 4
            for i in range(count):
                value, b = _value(body, b, kind)
                off, length = struct.unpack_from(">ii", body, b)
                b += 8
                if i == 0:
                    assert value == first, (value, first)
                entries.append((value, off))
                seen.append(value)
        assert len(seen) == distinct and seen == sorted(seen), seen
    out = {}
    for value, offset in entries:
        out[value] = {-1 - offset} if offset < 0 else roaring(body, body_start + offset)[0]
    return rows, out


def bsi(body):
    """A bit-sliced index: (row count, {row: value}) for the rows with a value."""
    assert body[0] == 1
    (rows,) = struct.unpack_from(">i", body, 1)
    at, values = 5, {}
    for sign in (1, -1):
        present = body[at]
        at += 1
        if not present:
            continue
        assert body[at] == 1
        lo, hi = struct.unpack_from(">qq", body, at + 1)
        at += 17
        ebm, n = roaring(body, at)
        at += n
        (nslices,) = struct.unpack_from(">i", body, at)
        at += 4
        assert nslices == max(hi - lo, 0).bit_length(), (nslices, lo, hi)
        acc = {r: 0 for r in ebm}
        for bit in range(nslices):
            slice_rows, n = roaring(body, at)
            at += n
            assert slice_rows <= ebm
            for r in slice_rows:
                acc[r] |= 1 << bit
        for r, v in acc.items():
            assert lo <= lo + v <= hi, (r, v, lo, hi)
            assert r not in values
            values[r] = sign * (lo + v)
    assert at == len(body), (at, len(body))
    return rows, values


def range_bitmap(body):
    """A range bitmap: (row count, number of distinct values, {row: code}) for the rows with a
    value, a code being the value's position in the sorted dictionary (which is skipped: the
    codes' order is what a test can compare with the data's)."""
    (header_len,) = struct.unpack_from(">i", body, 0)
    assert body[4] == 1
    rows, cardinality = struct.unpack_from(">ii", body, 5)
    (dictionary_len,) = struct.unpack_from(">i", body, 4 + header_len - 4)
    at = 4 + header_len + dictionary_len
    (bsi_header_len,) = struct.unpack_from(">i", body, at)
    assert body[at + 4] == 1
    slices = body[at + 5]
    present_len, directory_len = struct.unpack_from(">ii", body, at + 6)
    assert directory_len == 8 * slices
    directory = [struct.unpack_from(">ii", body, at + 14 + 8 * i) for i in range(slices)]
    assert bsi_header_len == 10 + directory_len
    start = at + 4 + bsi_header_len
    present, n = roaring(body, start)
    assert n == present_len
    codes = {r: 0 for r in present}
    end = start + present_len
    for bit, (offset, length) in enumerate(directory):
        rows_with_bit, n = roaring(body, start + present_len + offset)
        assert n == length and rows_with_bit <= present
        end = max(end, start + present_len + offset + length)
        for r in rows_with_bit:
            codes[r] |= 1 << bit
    assert end == len(body), (end, len(body))
    return rows, cardinality, codes
