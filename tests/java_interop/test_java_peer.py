"""Tables written by Paimon Java 1.0, compacted by us, read back by Java (and pypaimon).

Every table is written with `write-only = true` in many small commits (so only level-0 files,
as a dedicated compaction job would find them). The warehouse is copied twice: Java compacts
copy A with its own full compaction, our CLI compacts copy B with `--full`, and Java must read
the same rows from both (and from the original, or from a model where Java's batch reads hide
level 0). Then Java writes more rows on top of our snapshot with compaction on (and one last
write-only commit), we compact again, and Java must read what its own full compaction of the
same state reads. For changelog producers, the changelog our COMPACT snapshots carry must be
what Java's compaction writes.

The work is batched into four driver runs (one JVM each) for all tables together: build,
compact A (while our CLI compacts B), write on top of B, and the final reads.
"""

import glob
import json
import os
import random
import shutil
import sys

import pytest

from conftest import (REPO, Compaction, JavaRun, java, pypaimon_read, pypaimon_write,
                      snapshot_files, sort_rows)

DB = "db"


class Spec:
    """One table: its schema, its commits (rows as the driver's JSON), schema changes before
    given commits, the rows Java writes on top of our compaction, and how to check it."""

    def __init__(self, name, columns, commits, more, primary_keys=(), partition_keys=(),
                 options=None, alters=None, hides_level0=False, model=None, writer="java",
                 arrow_schema=None, pypaimon_reads=True, drops_rows=False, filters=(),
                 rolls=False):
        self.name = name
        self.columns = columns
        self.commits = commits
        self.more = more
        self.primary_keys = list(primary_keys)
        self.partition_keys = list(partition_keys)
        self.options = {"write-only": "true", **(options or {})}
        self.alters = alters or {}
        # Java's batch reads skip level 0 on deletion-vector and first-row tables: its read of
        # the uncompacted original is not the table's content, a model is.
        self.hides_level0 = hides_level0
        # Compaction itself drops rows (record-level expiry): what Java reads before it is not
        # what it reads after; a model is.
        self.drops_rows = drops_rows
        # Filtered reads (field, "ge" | "lt", value): Java prunes files by their value
        # statistics, so a wrong bound in ours shows as missing rows.
        self.filters = list(filters)
        # Outputs roll at a small target-file-size: Java checks the size every 1 000 rows and
        # we near the target, so the two compactions write different numbers of files.
        self.rolls = rolls
        self.model = model
        self.writer = writer
        self.arrow_schema = arrow_schema
        # pypaimon 2.1 refuses some options outright (NotImplementedError): no comparison there.
        self.pypaimon_reads = pypaimon_reads
        self.changelog = self.options.get("changelog-producer") in ("lookup", "full-compaction")

    @property
    def column_names(self):
        names = [c[0] for c in self.columns]
        for changes in self.alters.values():
            names += [c["add_column"] for c in changes if "add_column" in c]
        return names

    def expected(self, with_more):
        commits = self.commits + (self.more if with_more else [])
        if getattr(self.model, "per_commit", False):
            return self.model(self, commits)
        return self.model(self, [r for c in commits for r in c])


# ------------------------------------------------------------------ models

def _fill(spec, row):
    return {n: row.get(n) for n in spec.column_names}


def model_last_per_key(spec, rows):
    """Deduplicate: the last row of each key; -U and -D retract it."""
    out = {}
    for r in rows:
        key = tuple(r[k] for k in spec.primary_keys)
        if r.get("_kind") in ("-D", "-U"):
            out.pop(key, None)
        else:
            out[key] = _fill(spec, {k: v for k, v in r.items() if k != "_kind"})
    return sort_rows(out.values())


def model_first_per_key(spec, rows):
    out = {}
    for r in rows:
        out.setdefault(tuple(r[k] for k in spec.primary_keys), _fill(spec, r))
    return sort_rows(out.values())


# ------------------------------------------------------------------ the tables

def _rng(name):
    return random.Random(name)


def pk_base(name, options, kinds=("+I",), commits=8, per_commit=14, keys=30, more_kinds=None,
            **kw):
    """k INT NOT NULL primary key, v STRING, n BIGINT."""
    rng = _rng(name)

    def rows(c, n, ks):
        out = []
        for i in range(n):
            r = {"k": rng.randrange(keys), "v": f"{name}-{c}-{i}", "n": c * 100 + i}
            kind = rng.choice(ks)
            if kind != "+I":
                r["_kind"] = kind
            out.append(r)
        return out

    return Spec(name, [["k", "INT NOT NULL"], ["v", "STRING"], ["n", "BIGINT"]],
                [rows(c, per_commit, kinds) for c in range(commits)],
                [rows(100 + c, 10, more_kinds or kinds) for c in range(3)],
                primary_keys=["k"], options={"bucket": "2", **options}, **kw)


def partitioned():
    rng = _rng("partitioned")

    def rows(c, n):
        return [{"dt": f"2025-01-0{rng.randrange(1, 4)}", "k": rng.randrange(20),
                 "v": f"p{c}-{i}", "n": rng.randrange(1000),
                 **({"_kind": "-D"} if rng.random() < 0.1 else {})} for i in range(n)]

    return Spec("partitioned", [["dt", "STRING NOT NULL"], ["k", "INT NOT NULL"], ["v", "STRING"],
                                ["n", "BIGINT"]],
                [rows(c, 16) for c in range(8)], [rows(100 + c, 10) for c in range(3)],
                primary_keys=["dt", "k"], partition_keys=["dt"], options={"bucket": "2"})


ODD_PARTITIONS = ["a b", "x/y", "c=d", "100%", "\u00e9\u20ac\U0001F600", "#?&:*[]{}^'\"\\", "..", "",
                  " "]


def odd_names():
    """Partition values Paimon escapes in paths (`/`, `=`, `%`, quotes, brackets...), non-ASCII
    ones, `..`, and the empty and blank values, which both live in the default partition's
    directory while staying two partitions; a column whose name has a space, a non-ASCII
    letter, a dot and a dollar sign."""
    rng = _rng("odd_names")

    def rows(c, n):
        return [{"dt": rng.choice(ODD_PARTITIONS), "k": rng.randrange(12), "v": f"o{c}-{i}",
                 "n": rng.randrange(1000), "odd \u00fc-name.$1": f"\u00fc{i}",
                 **({"_kind": "-D"} if rng.random() < 0.1 else {})} for i in range(n)]

    return Spec("odd_names", [["dt", "STRING NOT NULL"], ["k", "INT NOT NULL"], ["v", "STRING"],
                              ["n", "BIGINT"], ["odd \u00fc-name.$1", "STRING"]],
                [rows(c, 24) for c in range(8)], [rows(100 + c, 12) for c in range(3)],
                primary_keys=["dt", "k"], partition_keys=["dt"], options={"bucket": "2"})


def partial_update():
    rng = _rng("partial_update")

    def rows(c, n):
        out = []
        for i in range(n):
            r = {"k": rng.randrange(25)}
            for col, gen in (("a", lambda: f"a{c}-{i}"), ("b", lambda: rng.randrange(100)),
                             ("c", lambda: rng.randrange(100) / 4)):
                if rng.random() < 0.5:
                    r[col] = gen()
            out.append(r)
        return out

    return Spec("partial_update", [["k", "INT NOT NULL"], ["a", "STRING"], ["b", "INT"],
                                   ["c", "DOUBLE"]],
                [rows(c, 14) for c in range(8)], [rows(100 + c, 10) for c in range(3)],
                primary_keys=["k"], options={"bucket": "2", "merge-engine": "partial-update"})


def aggregation():
    rng = _rng("aggregation")

    def rows(c, n):
        out = []
        for i in range(n):
            k = rng.randrange(20)
            r = {"k": k, "total": rng.randrange(-50, 100), "peak": rng.randrange(1000),
                 "last": None if rng.random() < 0.3 else f"l{c}-{i}",
                 "amount": f"{rng.randrange(-9999, 9999) / 100:.2f}",
                 # product retracts by Java's truncating division
                 "prod": rng.choice([1, 2, 3, -1, -2, None])}
            if rng.random() < 0.15:
                # A retraction (sum retracts; max and last_non_null_value ignore it).
                out.append({**r, "_kind": "-U"})
                r = dict(r, total=rng.randrange(100))
                r["_kind"] = "+U"
            out.append(r)
        return out

    return Spec("aggregation", [["k", "INT NOT NULL"], ["total", "BIGINT"], ["peak", "INT"],
                                ["last", "STRING"], ["amount", "DECIMAL(12,2)"],
                                ["prod", "INT"]],
                [rows(c, 12) for c in range(8)], [rows(100 + c, 10) for c in range(3)],
                primary_keys=["k"], pypaimon_reads=False,  # no ignore-retract in pypaimon 2.1
                options={"bucket": "2", "merge-engine": "aggregation",
                         "fields.total.aggregate-function": "sum",
                         "fields.peak.aggregate-function": "max",
                         "fields.peak.ignore-retract": "true",
                         "fields.last.aggregate-function": "last_non_null_value",
                         "fields.last.ignore-retract": "true",
                         "fields.amount.aggregate-function": "sum",
                         "fields.prod.aggregate-function": "product"})


def aggregation_more():
    """The other aggregate functions both Java and we implement, no retractions (a DECIMAL
    product's division would not terminate)."""
    rng = _rng("aggregation_more")

    def rows(c, n):
        def maybe(v):
            return None if rng.random() < 0.25 else v

        return [{"k": rng.randrange(15), "lo": maybe(rng.randrange(-500, 500)),
                 "first": maybe(f"f{c}-{i}"), "first_nn": maybe(f"n{c}-{i}"),
                 "all_true": maybe(rng.random() < 0.8), "any_true": maybe(rng.random() < 0.2),
                 "words": maybe(f"w{c}{i}"), "latest": maybe(rng.randrange(100)),
                 # each product rounds half up back to two decimals
                 "factor": maybe(rng.choice(["1.10", "0.55", "1.95", "-1.05", "0.33"]))}
                for i in range(n)]

    return Spec("aggregation_more",
                [["k", "INT NOT NULL"], ["lo", "INT"], ["first", "STRING"], ["first_nn", "STRING"],
                 ["all_true", "BOOLEAN"], ["any_true", "BOOLEAN"], ["words", "STRING"],
                 ["latest", "INT"], ["factor", "DECIMAL(10,2)"]],
                [rows(c, 12) for c in range(8)], [rows(100 + c, 10) for c in range(3)],
                primary_keys=["k"],
                options={"bucket": "2", "merge-engine": "aggregation",
                         "fields.lo.aggregate-function": "min",
                         "fields.first.aggregate-function": "first_value",
                         "fields.first_nn.aggregate-function": "first_non_null_value",
                         "fields.all_true.aggregate-function": "bool_and",
                         "fields.any_true.aggregate-function": "bool_or",
                         "fields.words.aggregate-function": "listagg",
                         "fields.words.list-agg-delimiter": "|",
                         "fields.latest.aggregate-function": "last_value",
                         "fields.factor.aggregate-function": "product"})


def rbm32(values):
    """A 32-bit RoaringBitmap in its portable serialization (array containers, no run
    containers), as lower-case hex for the driver's BYTES."""
    import struct
    groups = {}
    for v in sorted(set(values)):
        groups.setdefault(v >> 16, []).append(v & 0xFFFF)
    keys = sorted(groups)
    out = struct.pack("<II", 12346, len(keys))
    for k in keys:
        out += struct.pack("<HH", k, len(groups[k]) - 1)
    offset = len(out) + 4 * len(keys)
    for k in keys:
        out += struct.pack("<I", offset)
        offset += 2 * len(groups[k])
    for k in keys:
        out += struct.pack(f"<{len(groups[k])}H", *groups[k])
    return out.hex()


def aggregation_collections():
    """The collection aggregates Java 1.0 and we both implement: `collect` (kept in order),
    `collect` with `distinct`, `merge_map` and keyed `nested_update`, with retractions, and
    `rbm32` (its serialized unions compare byte for byte). The `set_` columns' order is a Java
    hash table's, so they compare sorted (conftest)."""
    rng = _rng("aggregation_collections")

    def rows(c, n):
        out = []
        for i in range(n):
            k = rng.randrange(12)
            if c > 0 and rng.random() < 0.2:
                # retract what an earlier commit of the key may have added
                out.append({"k": k, "_kind": "-U", "tags": [rng.randrange(5)],
                            "set_words": [f"w{rng.randrange(4)}"],
                            "attrs": [[f"a{rng.randrange(4)}", 0]],
                            "set_items": [{"id": rng.randrange(4), "qty": 0}]})
                continue
            r = {"k": k}
            if c == 0 or rng.random() < 0.7:
                r["tags"] = [rng.randrange(5) for _ in range(rng.randrange(1, 3))]
            if c == 0 or rng.random() < 0.7:
                r["set_words"] = [f"w{rng.randrange(4)}" for _ in range(rng.randrange(1, 3))]
            if c == 0 or rng.random() < 0.7:
                r["attrs"] = [[f"a{j}", rng.randrange(100)]
                              for j in rng.sample(range(4), rng.randrange(1, 3))]
            if c == 0 or rng.random() < 0.7:
                r["set_items"] = [{"id": j, "qty": rng.randrange(100)}
                                  for j in rng.sample(range(4), rng.randrange(1, 3))]
            if rng.random() < 0.7:
                # sparse values in two containers, or a dense range the union turns into runs
                start = rng.randrange(0, 3000)
                r["rbm"] = rbm32(rng.sample(range(0, 70_000, 7), 5) if rng.random() < 0.5
                                 else range(start, start + rng.randrange(100, 600)))
            out.append(r)
        return out

    first = [{"k": k, "tags": [k % 5], "set_words": ["w0"], "attrs": [["a0", k]],
              "set_items": [{"id": 0, "qty": k}], "rbm": rbm32([k, 65536 + k])}
             for k in range(12)]
    return Spec("aggregation_collections",
                [["k", "INT NOT NULL"], ["tags", "ARRAY<INT>"], ["set_words", "ARRAY<STRING>"],
                 ["attrs", "MAP<STRING,INT>"], ["set_items", "ARRAY<ROW<id INT, qty INT>>"],
                 ["rbm", "BYTES"]],
                [first] + [rows(c, 12) for c in range(1, 8)], [rows(100 + c, 10) for c in range(3)],
                primary_keys=["k"], pypaimon_reads=False,
                options={"bucket": "2", "merge-engine": "aggregation",
                         "fields.tags.aggregate-function": "collect",
                         "fields.set_words.aggregate-function": "collect",
                         "fields.set_words.distinct": "true",
                         "fields.attrs.aggregate-function": "merge_map",
                         "fields.set_items.aggregate-function": "nested_update",
                         "fields.set_items.nested-key": "id",
                         "fields.rbm.aggregate-function": "rbm32",
                         "fields.rbm.ignore-retract": "true"})


def theta(hashes, theta=None, ordered=True):
    """A serialized compact theta sketch (DataSketches serial version 3, default seed) holding
    `hashes` (those under `theta`, when given: estimation mode), as lower-case hex: the union
    only moves hashes, so any positive 63-bit values make valid sketches."""
    import struct
    theta_long = (1 << 63) - 1 if theta is None else theta
    hs = sorted(h for h in set(hashes) if h < theta_long)
    if not ordered:
        hs = hs[1::2] + hs[0::2]
    if not hs and theta is None:
        return bytes([1, 3, 3, 0, 0, 0x1E, 0, 0]).hex()
    if len(hs) == 1 and theta is None:
        return (bytes([1, 3, 3, 0, 0, 0x3A]) + struct.pack("<Hq", 0x93CC, hs[0])).hex()
    pre_longs = 2 if theta is None else 3
    flags = 0x1A if ordered else 0x0A
    out = bytes([pre_longs, 3, 3, 0, 0, flags]) + struct.pack("<Hif", 0x93CC, len(hs), 1.0)
    if theta is not None:
        out += struct.pack("<q", theta)
    return (out + struct.pack(f"<{len(hs)}q", *hs)).hex()


def aggregation_sketches():
    """`theta_sketch`, merged by Java and by us and compared byte for byte: exact sketches from
    a shared pool of hashes (so unions overlap), single items, empty sketches, unordered ones,
    sketches in estimation mode, and keys whose unions pass the 4 096 nominal entries and the
    union's rebuild at 7 681 hashes."""
    rng = _rng("aggregation_sketches")
    pool = [rng.randrange(1, 1 << 63) for _ in range(400)]

    def sketch(big=False):
        roll = rng.random()
        if big:
            return theta(rng.randrange(1, 1 << 63) for _ in range(rng.randrange(2500, 3500)))
        if roll < 0.1:
            return theta([])
        if roll < 0.2:
            return theta([rng.choice(pool)])
        if roll < 0.3:
            return theta(rng.sample(pool, 30), theta=rng.randrange(1 << 61, 1 << 63))
        return theta(rng.sample(pool, rng.randrange(2, 40)), ordered=roll > 0.4)

    def rows(c, n):
        out = []
        for _ in range(n):
            k = rng.randrange(10)
            r = {"k": k, "n": c}
            if rng.random() < 0.85:
                r["s"] = sketch(big=k < 2)
            out.append(r)
        return out

    return Spec("aggregation_sketches", [["k", "INT NOT NULL"], ["n", "INT"], ["s", "BYTES"]],
                [rows(c, 8) for c in range(6)], [rows(100 + c, 6) for c in range(2)],
                primary_keys=["k"],
                options={"bucket": "1", "merge-engine": "aggregation",
                         "fields.n.aggregate-function": "sum",
                         "fields.s.aggregate-function": "theta_sketch"})


def hll(items, lg_k=12, kind="HLL_4", compact=True):
    """A serialized Apache DataSketches HLL sketch of `items` (the `datasketches` package from
    PyPI, the C++ library, whose images Java reads), as lower-case hex."""
    import datasketches
    sk = datasketches.hll_sketch(lg_k, getattr(datasketches.tgt_hll_type, kind))
    for i in items:
        sk.update(i)
    return (sk.serialize_compact() if compact else sk.serialize_updatable()).hex()


def aggregation_hll():
    """`hll_sketch`, merged by Java and by us and compared byte for byte: sketches of every
    mode (a list of coupons, a hash set, registers), type (HLL_4 with and without exceptions,
    HLL_6, HLL_8), both serializations, several lgK in one key (the union's downsampling in
    both directions), overlapping items and empty sketches."""
    rng = _rng("aggregation_hll")

    def sketch(k):
        count = rng.choice([0, 1, 3, 7, 20, 60, 300, 450, 2000, 20000] if k else [5, 40, 100])
        # Key 1 holds sketches of one lgK; the others mix lgK (the union takes the input's).
        lg_k = 11 if k == 1 else rng.choice([4, 5, 8, 10, 11, 12])
        start = rng.randrange(0, 3 * count + 1)
        return hll(range(start, start + count), lg_k=lg_k,
                   kind=rng.choice(["HLL_4", "HLL_4", "HLL_6", "HLL_8"]),
                   compact=rng.random() < 0.7)

    def rows(c, n):
        out = []
        for _ in range(n):
            k = rng.randrange(8)
            r = {"k": k, "n": c}
            if rng.random() < 0.85:
                r["s"] = sketch(k)
            out.append(r)
        return out

    return Spec("aggregation_hll", [["k", "INT NOT NULL"], ["n", "INT"], ["s", "BYTES"]],
                [rows(c, 10) for c in range(6)], [rows(100 + c, 8) for c in range(2)],
                primary_keys=["k"],
                options={"bucket": "1", "merge-engine": "aggregation",
                         "fields.n.aggregate-function": "sum",
                         "fields.s.aggregate-function": "hll_sketch"})


# Record-level expiry: a time in 2001 has expired, one in 2036 has not (both within INT, where
# Paimon 1.0 computes the expiry; 1.0 also fails on a null time, so there is none here: the
# Rust tests cover it).
EXPIRED_T, FRESH_T = 1_000_000_000, 2_100_000_000


def model_unexpired_last_per_key(spec, commits):
    """A writer keeps the last row of each key of a commit (its write buffer merges them);
    compaction drops the expired ones before merging, so an older unexpired version can win."""
    survivors = []
    for commit in commits:
        last = {}
        for r in commit:
            last[tuple(r[k] for k in spec.primary_keys)] = r
        survivors += [r for r in last.values() if r["t"] != EXPIRED_T]
    return model_last_per_key(spec, survivors)


model_unexpired_last_per_key.per_commit = True


def record_expiry():
    """`record-level.expire-time` on an INT seconds column: Java's own compaction and ours drop
    the same rows, including a key's newest version when it expired."""
    rng = _rng("record_expiry")

    def rows(c, n):
        return [{"k": rng.randrange(25), "v": f"e{c}-{i}",
                 "t": EXPIRED_T if rng.random() < 0.4 else FRESH_T}
                for i in range(n)]

    return Spec("record_expiry", [["k", "INT NOT NULL"], ["v", "STRING"], ["t", "INT"]],
                [rows(c, 14) for c in range(8)], [rows(100 + c, 10) for c in range(3)],
                primary_keys=["k"], drops_rows=True, model=model_unexpired_last_per_key,
                options={"bucket": "2", "record-level.expire-time": "1 d",
                         "record-level.time-field": "t"})


def changelog_dedup(name, producer):
    """`changelog-producer.row-deduplicate`: an update to the value a key already has writes no
    -U/+U pair (the values repeat often; `n` changes every time and is ignored)."""
    rng = _rng(name)

    def rows(c, n):
        return [{"k": rng.randrange(12), "v": rng.choice(["x", "y"]), "n": c * 100 + i}
                for i in range(n)]

    return Spec(name, [["k", "INT NOT NULL"], ["v", "STRING"], ["n", "BIGINT"]],
                [rows(c, 10) for c in range(8)], [rows(100 + c, 8) for c in range(3)],
                primary_keys=["k"],
                options={"bucket": "2", "changelog-producer": producer,
                         "changelog-producer.row-deduplicate": "true",
                         "changelog-producer.row-deduplicate-ignore-fields": "n"})


def file_naming():
    """The options that name and encode new files: `data-file.prefix`, `changelog-file.prefix`,
    `file.suffix.include.compression`, `file.compression.per.level`, and (newer than Java 1.0,
    which ignores them) `changelog-file.compression` and `metadata.stats-mode.per.level`."""
    return pk_base("file_naming", {"changelog-producer": "full-compaction",
                                   "data-file.prefix": "part-",
                                   "changelog-file.prefix": "cl-",
                                   "file.suffix.include.compression": "true",
                                   "file.compression.per.level": "5:gzip",
                                   "changelog-file.compression": "none",
                                   "metadata.stats-mode.per.level": "5:none"},
                   kinds=("+I", "+I", "+I", "-D"))


def sequence_field():
    """Deduplicate ordered by a user sequence field: a later write with a smaller `seq` loses."""
    rng = _rng("sequence_field")

    def rows(c, n):
        return [{"k": rng.randrange(20), "v": f"s{c}-{i}", "seq": rng.randrange(1000)}
                for i in range(n)]

    return Spec("sequence_field", [["k", "INT NOT NULL"], ["v", "STRING"], ["seq", "BIGINT"]],
                [rows(c, 12) for c in range(8)], [rows(100 + c, 10) for c in range(3)],
                primary_keys=["k"], options={"bucket": "2", "sequence.field": "seq"})


def partial_update_groups():
    """partial-update with two sequence groups, the second summing `total`, and a column in no
    group: three streams each write their own columns, out of order, and `-U` records retract
    the second group. Every key is inserted in commit 0, so each key's merge starts at an
    insert: there Paimon 1.0 (this Java) and HEAD (us) agree (format.md §9)."""
    rng = _rng("partial_update_groups")

    def maybe_seq():
        return None if rng.random() < 0.15 else rng.randrange(50)

    def rows(c, n):
        if c == 0:
            return [{"k": k, "a": f"a{k}", "b": k, "g1": 0, "c": f"c{k}", "total": 10,
                     "g2": 0, "d": f"d{k}"} for k in range(16)]
        out = []
        for i in range(n):
            k, roll = rng.randrange(16), rng.random()
            if roll < 0.35:
                out.append({"k": k, "a": rng.choice([f"a{c}-{i}", None]),
                            "b": rng.randrange(100), "g1": maybe_seq()})
            elif roll < 0.7:
                out.append({"k": k, "c": f"c{c}-{i}", "total": rng.randrange(1, 20),
                            "g2": maybe_seq()})
            elif roll < 0.85:
                out.append({"k": k, "d": rng.choice([f"d{c}-{i}", None])})
            else:
                out.append({"k": k, "c": "gone", "total": rng.randrange(1, 5),
                            "g2": rng.randrange(50), "_kind": "-U"})
        return out

    return Spec("partial_update_groups",
                [["k", "INT NOT NULL"], ["a", "STRING"], ["b", "INT"], ["g1", "BIGINT"],
                 ["c", "STRING"], ["total", "BIGINT"], ["g2", "BIGINT"], ["d", "STRING"]],
                [rows(c, 14) for c in range(8)], [rows(100 + c, 10) for c in range(3)],
                primary_keys=["k"], pypaimon_reads=False,
                options={"bucket": "2", "merge-engine": "partial-update",
                         "fields.g1.sequence-group": "a,b",
                         "fields.g2.sequence-group": "c,total",
                         "fields.total.aggregate-function": "sum"})


def partial_update_deletes():
    """partial-update with `partial-update.remove-record-on-delete`: -D removes the key.

    This Java build throws a NullPointerException when it merges a key's insert after its
    delete (the merged row is null), so keys 20-29 are written in commits 0-3, deleted in 4-7
    and never written again; keys 0-19 are only updated."""
    rng = _rng("partial_update_deletes")

    def rows(c, n):
        out = []
        for i in range(n):
            if c in range(4, 8) and rng.random() < 0.3:
                out.append({"k": rng.randrange(20, 30), "_kind": "-D"})
                continue
            r = {"k": rng.randrange(30 if c < 4 else 20)}
            if rng.random() < 0.6:
                r["a"] = f"a{c}-{i}"
            if rng.random() < 0.6:
                r["b"] = rng.randrange(100)
            out.append(r)
        return out

    return Spec("partial_update_deletes", [["k", "INT NOT NULL"], ["a", "STRING"], ["b", "INT"]],
                [rows(c, 12) for c in range(8)], [rows(100 + c, 10) for c in range(3)],
                primary_keys=["k"], pypaimon_reads=False,  # not in pypaimon 2.1
                options={"bucket": "2", "merge-engine": "partial-update",
                         "partial-update.remove-record-on-delete": "true"})


NESTED_COLUMNS = [
    ["k", "INT NOT NULL"], ["arr", "ARRAY<INT>"], ["m", "MAP<STRING, INT>"],
    ["r", "ROW<a INT, b STRING, tags ARRAY<STRING>>"], ["d", "DECIMAL(10,2)"],
    ["ts", "TIMESTAMP(3)"], ["raw", "BYTES"], ["day", "DATE"],
]


def nested_row(rng, k, c, i):
    def maybe(v):
        return None if rng.random() < 0.15 else v

    return {
        "k": k,
        "arr": maybe([rng.randrange(10) if rng.random() > 0.1 else None
                      for _ in range(rng.randrange(4))]),
        "m": maybe({f"m{j}": rng.randrange(100) for j in range(rng.randrange(3))}),
        "r": maybe({"a": maybe(rng.randrange(100)), "b": maybe(f"b{c}-{i}"),
                    "tags": maybe([f"t{j}" for j in range(rng.randrange(3))])}),
        "d": maybe(f"{rng.randrange(-99999, 99999) / 100:.2f}"),
        "ts": maybe(f"2024-0{rng.randrange(1, 10)}-1{rng.randrange(10)}T0{rng.randrange(10)}:"
                    f"{rng.randrange(10, 60)}:{rng.randrange(10, 60)}.{rng.randrange(1000):03d}"),
        "raw": maybe(bytes(rng.randrange(256) for _ in range(rng.randrange(6))).hex()),
        "day": maybe(f"2023-1{rng.randrange(3)}-2{rng.randrange(9)}"),
    }


ORC_COLUMNS = [
    ["k", "INT NOT NULL"], ["c", "CHAR(5)"], ["vc", "VARCHAR(10)"], ["s", "STRING"],
    ["b", "BOOLEAN"], ["t", "TINYINT"], ["sm", "SMALLINT"], ["f", "FLOAT"], ["db", "DOUBLE"],
    ["d", "DECIMAL(20,4)"], ["d2", "DECIMAL(9,2)"], ["day", "DATE"], ["tm", "TIME"],
    ["ts", "TIMESTAMP(3)"], ["ts9", "TIMESTAMP(9)"], ["ltz", "TIMESTAMP_LTZ(6)"],
    ["raw", "BYTES"], ["arr", "ARRAY<INT>"], ["m", "MAP<STRING, INT>"],
    ["r", "ROW<a INT, b STRING, tags ARRAY<STRING>>"], ["bag", "MULTISET<STRING>"],
]


def orc_row(rng, k, c, i):
    """A row of every type Paimon writes to ORC, with times before 1970 and before ORC's 2015
    base, fractions down to nanoseconds, negative decimals and nulls everywhere."""
    def maybe(v):
        return None if rng.random() < 0.15 else v

    year = rng.choice([1965, 1969, 2010, 2014, 2015, 2024, 2031])
    frac9 = f"{rng.randrange(10 ** 9):09d}"
    return {
        "k": k,
        "c": maybe(rng.choice(["a", "ab ", "abcde", ""])),
        "vc": maybe(f"v{c}-{i}"),
        "s": maybe(f"s{rng.randrange(1000)}"),
        "b": maybe(rng.random() < 0.5),
        "t": maybe(rng.randrange(-128, 128)),
        "sm": maybe(rng.randrange(-32768, 32768)),
        "f": maybe(rng.randrange(-1000, 1000) / 8),
        "db": maybe(rng.randrange(-10 ** 6, 10 ** 6) / 3),
        "d": maybe(f"{rng.randrange(-10 ** 12, 10 ** 12) / 10 ** 4:.4f}"),
        "d2": maybe(f"{rng.randrange(-10 ** 6, 10 ** 6) / 100:.2f}"),
        "day": maybe(f"{year}-0{rng.randrange(1, 10)}-1{rng.randrange(10)}"),
        "tm": maybe(f"1{rng.randrange(10)}:{rng.randrange(10, 60)}:0{rng.randrange(10)}."
                    f"{rng.randrange(1000):03d}"),
        "ts": maybe(f"{year}-0{rng.randrange(1, 10)}-1{rng.randrange(10)}T0{rng.randrange(10)}:"
                    f"{rng.randrange(10, 60)}:{rng.randrange(10, 60)}.{rng.randrange(1000):03d}"),
        "ts9": maybe(f"{year}-12-31T23:59:5{rng.randrange(10)}.{frac9}"),
        "ltz": maybe(f"{year}-0{rng.randrange(1, 10)}-0{rng.randrange(1, 10)}T1{rng.randrange(10)}:"
                     f"00:00.{rng.randrange(10 ** 6):06d}"),
        "raw": maybe(bytes(rng.randrange(256) for _ in range(rng.randrange(6))).hex()),
        "arr": maybe([maybe(rng.randrange(10)) for _ in range(rng.randrange(4))]),
        "m": maybe({f"m{j}": maybe(rng.randrange(100)) for j in range(rng.randrange(3))}),
        "r": maybe({"a": maybe(rng.randrange(100)), "b": maybe(f"b{c}-{i}"),
                    "tags": maybe([f"t{j}" for j in range(rng.randrange(3))])}),
        "bag": maybe({f"e{j}": rng.randrange(1, 4) for j in range(rng.randrange(3))}),
    }


def orc_types():
    """`file.format = orc` (Paimon's default before 0.8) with every type, zlib-compressed."""
    rng = _rng("orc_types")
    return Spec("orc_types", ORC_COLUMNS,
                [[orc_row(rng, rng.randrange(25), c, i) for i in range(12)] for c in range(8)],
                [[orc_row(rng, rng.randrange(25), 100 + c, i) for i in range(10)]
                 for c in range(3)],
                primary_keys=["k"],
                options={"bucket": "2", "file.format": "orc", "file.compression": "zlib"},
                filters=[("d2", "ge", "0.00"), ("day", "lt", "2015-01-01"),
                         ("sm", "ge", 0)],
                pypaimon_reads=False)  # pypaimon has no MULTISET type


def orc_append():
    """An append table stored as ORC: decoded, written as ORC, pruned by our statistics."""
    rng = _rng("orc_append")

    def rows(c, n):
        return [{"k": c * 100 + i, **{key: v for key, v in orc_row(rng, 0, c, i).items()
                                      if key not in ("k", "c", "bag")}} for i in range(n)]

    # pypaimon reads this table too: no MULTISET (pypaimon has no such type) and no CHAR
    # (pyarrow returns ORC's CHAR values with the padding Java's reader trims; `orc_types`
    # has both, read by Java).
    return Spec("orc_append", [["k", "INT NOT NULL"]] + ORC_COLUMNS[2:-1],
                [rows(c, 15) for c in range(8)], [rows(100 + c, 10) for c in range(3)],
                options={"bucket": "2", "bucket-key": "k", "file.format": "orc"},
                filters=[("k", "ge", 350), ("ts", "lt", "2015-01-01T00:00:00"),
                         ("vc", "ge", "v5")])


AVRO_COLUMNS = [c for c in ORC_COLUMNS
                if c[0] not in ("ts9", "arr", "m", "r", "bag")] + [["ts6", "TIMESTAMP(6)"]]


def avro_types():
    """`file.format = avro` with every flat type (Avro has no nested columns here and no
    timestamps above precision 6): Java writes Avro, we merge into Avro files."""
    rng = _rng("avro_types")

    def row(k, c, i):
        r = {key: v for key, v in orc_row(rng, k, c, i).items()
             if key in {name for name, _ in AVRO_COLUMNS}}
        r["ts6"] = None if i % 6 == 0 else f"20{10 + i % 20}-0{1 + c % 9}-11T12:00:00.{i:06d}"
        return r

    return Spec("avro_types", AVRO_COLUMNS,
                [[row(rng.randrange(25), c, i) for i in range(12)] for c in range(8)],
                [[row(rng.randrange(25), 100 + c, i) for i in range(10)] for c in range(3)],
                primary_keys=["k"],
                options={"bucket": "2", "file.format": "avro", "avro.codec": "deflate"},
                filters=[("d2", "ge", "0.00"), ("sm", "ge", 0)])


def avro_append():
    """An append table stored as Avro: decoded and written as Avro (zstd)."""
    rng = _rng("avro_append")

    def rows(c, n):
        return [{"id": c * 100 + i, "v": f"av{c}-{i}", "d": f"{rng.randrange(10 ** 6) / 1000:.3f}",
                 "ts": f"2024-05-0{rng.randrange(1, 10)}T12:34:56.{rng.randrange(10 ** 6):06d}",
                 "day": f"2023-0{rng.randrange(1, 10)}-1{rng.randrange(10)}"}
                for i in range(n)]

    return Spec("avro_append", [["id", "BIGINT"], ["v", "STRING"], ["d", "DECIMAL(12,3)"],
                                ["ts", "TIMESTAMP(6)"], ["day", "DATE"]],
                [rows(c, 15) for c in range(8)], [rows(100 + c, 10) for c in range(3)],
                options={"bucket": "2", "bucket-key": "id", "file.format": "avro"},
                filters=[("id", "ge", 350), ("d", "ge", "500.000")])


def nested_pk():
    rng = _rng("nested_pk")
    return Spec("nested_pk", NESTED_COLUMNS,
                [[nested_row(rng, rng.randrange(25), c, i) for i in range(12)] for c in range(8)],
                [[nested_row(rng, rng.randrange(25), 100 + c, i) for i in range(10)]
                 for c in range(3)],
                primary_keys=["k"], options={"bucket": "2"})


def nested_avro_spec(name, options):
    """A table of nested columns (NESTED_COLUMNS and a map with INT keys, which Paimon's Avro
    layout stores as an array of key/value records) in Avro files, per `options`."""
    rng = _rng(name)

    def row(k, c, i):
        r = nested_row(rng, k, c, i)
        r["mi"] = (None if rng.random() < 0.15 else
                   {str(rng.randrange(-5, 5)): (None if rng.random() < 0.2 else f"v{c}-{i}")
                    for _ in range(rng.randrange(3))})
        return r

    return Spec(name, NESTED_COLUMNS + [["mi", "MAP<INT, STRING>"]],
                [[row(rng.randrange(25), c, i) for i in range(12)] for c in range(8)],
                [[row(rng.randrange(25), 100 + c, i) for i in range(10)] for c in range(3)],
                primary_keys=["k"], options={"bucket": "2", **options})


def nested_level0_avro():
    """`file.format.per.level = '0:avro'` on a table of nested columns: Java writes level 0
    as Avro (arrays, rows, string-keyed maps as Avro maps, maps of other keys as arrays of
    key/value records), our merges read those files and write Parquet above.
    Multisets are stored as these maps are, and are left out: this Java build's Avro writer
    fails on a multiset of non-string elements (a ClassCastException), and its Parquet reader
    pairs a multiset's counts with the wrong elements (its own compaction of a MULTISET<STRING>
    column then reads differently from its read before it, though pyarrow reads the right
    counts in its files and in ours); the unit tests of the Avro reader cover them."""
    return nested_avro_spec("nested_level0_avro", {"file.format.per.level": "0:avro"})


def nested_avro():
    """`file.format = avro` on a table of nested columns: Java writes Avro, we merge into
    Avro files of Paimon's nested layout (records named by path, maps of non-string keys as
    arrays of key/value records), which Java then reads and writes on top of."""
    return nested_avro_spec("nested_avro", {"file.format": "avro"})


def append_fixed():
    rng = _rng("append_fixed")

    def rows(c, n):
        return [{"id": c * 100 + i, "dt": f"2025-01-0{rng.randrange(1, 4)}", "v": f"v{c}-{i}",
                 "d": f"{rng.randrange(10 ** 6) / 1000:.3f}",
                 "ts": f"2024-05-0{rng.randrange(1, 10)}T12:34:56.{rng.randrange(10 ** 6):06d}",
                 "raw": bytes([c, i, rng.randrange(256)]).hex(),
                 "arr": [f"x{j}" for j in range(rng.randrange(3))],
                 "m": {str(j): f"mv{j}" for j in range(rng.randrange(3))},
                 "r": {"x": rng.randrange(100) / 8, "y": f"y{i}"}} for i in range(n)]

    return Spec("append_fixed", [["id", "BIGINT"], ["dt", "STRING"], ["v", "STRING"],
                                 ["d", "DECIMAL(12,3)"], ["ts", "TIMESTAMP(6)"], ["raw", "BYTES"],
                                 ["arr", "ARRAY<STRING>"], ["m", "MAP<INT, STRING>"],
                                 ["r", "ROW<x DOUBLE, y STRING>"]],
                [rows(c, 15) for c in range(8)], [rows(100 + c, 10) for c in range(3)],
                options={"bucket": "2", "bucket-key": "id"},
                filters=[("ts", "lt", "2024-05-05T12:34:56.500000"), ("d", "ge", "500.000"),
                         ("id", "ge", 350)])


def file_index_append():
    """`file-index.bloom-filter.columns` on an append table: each commit holds the ids of one
    residue mod 8 across the whole range (value statistics cannot prune them), and the
    compaction rolls every few inputs, so only bloom filters let Java's scan skip files."""
    rng = _rng("file_index_append")

    def rows(c, n):
        return [{"id": i * 8 + c % 8, "name": f"n{i * 8 + c % 8}",
                 "pad": "".join(rng.choice("0123456789abcdef") for _ in range(120))}
                for i in range(n)]

    return Spec("file_index_append", [["id", "BIGINT"], ["name", "STRING"], ["pad", "STRING"]],
                [rows(c, 40) for c in range(8)], [rows(c, 10) for c in range(3)],
                options={"bucket": "1", "bucket-key": "id",
                         "file-index.bloom-filter.columns": "id,name",
                         "file-index.bloom-filter.id.items": "64",
                         "file-index.bloom-filter.name.items": "64",
                         "target-file-size": "12 kb"},
                filters=[("id", "eq", 17), ("name", "eq", "n42")], rolls=True)


def file_index_pk():
    """A bloom filter on a primary-key table's value column whose values scatter over the
    whole range in every key range, compacted into several max-level files."""
    def rows(c, n):
        # Commits interleave their keys, so the compaction rewrites them all.
        return [{"k": i * 8 + c, "v": (i * 8 + c) * 37 % 997, "pad": f"p{(i * 8 + c) * 7919}" * 6}
                for i in range(n)]

    return Spec("file_index_pk", [["k", "INT NOT NULL"], ["v", "INT"], ["pad", "STRING"]],
                [rows(c, 250) for c in range(8)], [rows(c, 20) for c in range(3)],
                primary_keys=["k"],
                options={"bucket": "1", "file-index.bloom-filter.columns": "v",
                         "file-index.bloom-filter.v.items": "64", "target-file-size": "4 kb"},
                filters=[("v", "eq", 100 * 37 % 997)], rolls=True)


def file_index_bitmap():
    """`file-index.bitmap.columns` on an append table: names and timestamps of one residue of
    the id mod 8 per commit (statistics cannot prune an equality), and a low-cardinality
    column with nulls; the indexes are embedded (a high threshold), so Java's scan can skip
    files by them and its reader keeps only the rows the bitmaps name. (This Java build has
    no `bsi` index: Rust tests cover ours.)"""
    rng = _rng("file_index_bitmap")

    def rows(c, n):
        out = []
        for i in range(n):
            k = i * 8 + c % 8
            out.append({"id": k, "name": f"n{k}", "cat": None if k % 5 == 0 else k % 7,
                        "ts": f"2024-03-{1 + k % 28:02d}T{k % 24:02d}:00:00.{k % 1000:03d}",
                        "pad": "".join(rng.choice("0123456789abcdef") for _ in range(120))})
        return out

    return Spec("file_index_bitmap", [["id", "BIGINT"], ["name", "STRING"], ["cat", "INT"],
                                      ["ts", "TIMESTAMP(3)"], ["pad", "STRING"]],
                [rows(c, 40) for c in range(8)], [rows(c, 10) for c in range(3)],
                options={"bucket": "1", "bucket-key": "id",
                         "file-index.bitmap.columns": "name,cat,ts",
                         "file-index.in-manifest-threshold": "64 kb",
                         "target-file-size": "12 kb"},
                filters=[("name", "eq", "n42"), ("ts", "eq", "2024-03-18T17:00:00.017000"),
                         ("cat", "eq", 3), ("cat", "lt", 2)], rolls=True)


def append_unaware():
    rng = _rng("append_unaware")

    def rows(c, n):
        return [{"id": c * 100 + i, "dt": f"2025-01-0{rng.randrange(1, 4)}", "v": f"u{c}-{i}"}
                for i in range(n)]

    return Spec("append_unaware", [["id", "BIGINT"], ["dt", "STRING"], ["v", "STRING"]],
                [rows(c, 15) for c in range(8)], [rows(100 + c, 10) for c in range(3)],
                partition_keys=["dt"],
                options={"bucket": "-1", "data-file.prefix": "app-",
                         "file.suffix.include.compression": "true"})


def evolved_pk():
    """ADD COLUMN (flat and nested) after commit 3, an option-only schema change after 5."""
    rng = _rng("evolved_pk")

    def rows(c, n, evolved):
        out = []
        for i in range(n):
            r = {"k": rng.randrange(25), "v": f"e{c}-{i}",
                 "r": {"a": rng.randrange(100), "b": f"rb{i}"}}
            if evolved:
                r["extra"] = None if rng.random() < 0.3 else f"x{c}"
                r["tags"] = [f"g{j}" for j in range(rng.randrange(3))]
            out.append(r)
        return out

    return Spec("evolved_pk", [["k", "INT NOT NULL"], ["v", "STRING"],
                               ["r", "ROW<a INT, b STRING>"]],
                [rows(c, 12, c >= 3) for c in range(8)], [rows(100 + c, 10, True) for c in range(3)],
                primary_keys=["k"], options={"bucket": "2"},
                alters={3: [{"add_column": "extra", "type": "STRING"},
                            {"add_column": "tags", "type": "ARRAY<STRING>"}],
                        5: [{"set_option": "some.option", "value": "x"}]})


def evolved_append():
    rng = _rng("evolved_append")

    def rows(c, n, evolved):
        out = []
        for i in range(n):
            r = {"id": c * 100 + i, "v": f"ea{c}-{i}", "m": {f"k{i % 3}": c}}
            if evolved:
                r["extra"] = rng.randrange(1000)
            out.append(r)
        return out

    return Spec("evolved_append", [["id", "BIGINT"], ["v", "STRING"], ["m", "MAP<STRING, INT>"]],
                [rows(c, 12, c >= 3) for c in range(8)], [rows(100 + c, 10, True) for c in range(3)],
                options={"bucket": "2", "bucket-key": "id"},
                alters={3: [{"add_column": "extra", "type": "INT"}],
                        5: [{"set_option": "some.option", "value": "x"}]})


def option_change_only():
    """A new schema version with the same fields (ALTER TABLE SET) midway, nested columns."""
    rng = _rng("option_change")
    spec = Spec("option_change", NESTED_COLUMNS,
                [[nested_row(rng, rng.randrange(20), c, i) for i in range(10)] for c in range(8)],
                [[nested_row(rng, rng.randrange(20), 100 + c, i) for i in range(8)]
                 for c in range(3)],
                primary_keys=["k"], options={"bucket": "1"},
                alters={4: [{"set_option": "some.option", "value": "x"}]})
    return spec


def dynamic_bucket():
    """bucket = -1 with a primary key: Java's writers need an assigned bucket, pypaimon writes."""
    import pyarrow as pa

    rng = _rng("dynamic")
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()),
                        ("n", pa.int64())])

    def rows(c, n):
        return [{"k": rng.randrange(60), "v": f"dyn{c}-{i}", "n": c * 1000 + i}
                for i in range(n)]

    return Spec("dynamic", [["k", "BIGINT NOT NULL"], ["v", "STRING"], ["n", "BIGINT"]],
                [rows(c, 25) for c in range(6)], [rows(100 + c, 15) for c in range(3)],
                primary_keys=["k"],
                options={"bucket": "-1", "dynamic-bucket.target-row-num": "20"},
                model=model_last_per_key, writer="pypaimon", arrow_schema=schema)


# This Java build (paimon 1.0-SNAPSHOT of 2024-09) writes manifests without
# `_VALUE_STATS_COLS`, which pypaimon 2.1 cannot read (KeyError). Tables with this option have
# every manifest rewritten by each commit, ours included, so that after our compaction the base
# list holds only our manifests and pypaimon can read them; the others keep Java's manifests
# in our base list (the common case), and only Java reads them.
FULL_MANIFEST_COMPACTION = {"manifest.full-compaction-threshold-size": "1 b"}
JAVA_MANIFESTS_KEPT = {"dedup", "aggregation", "append_unaware", "evolved_append"}


def all_specs():
    specs = [
        pk_base("dedup", {}, kinds=("+I", "+I", "+I", "+U", "-D")),
        partitioned(),
        odd_names(),
        partial_update(),
        aggregation(),
        pk_base("first_row", {"merge-engine": "first-row"}, hides_level0=True,
                model=model_first_per_key),
        pk_base("deletion_vectors", {"deletion-vectors.enabled": "true"},
                kinds=("+I", "+I", "+I", "-D"), hides_level0=True, model=model_last_per_key),
        pk_base("changelog_lookup", {"changelog-producer": "lookup"},
                kinds=("+I", "+I", "+I", "-D")),
        pk_base("changelog_full", {"changelog-producer": "full-compaction"},
                kinds=("+I", "+I", "+I", "-D")),
        pk_base("dv_lookup", {"deletion-vectors.enabled": "true", "changelog-producer": "lookup"},
                kinds=("+I", "+I", "+I", "-D"), hides_level0=True, model=model_last_per_key),
        # `file.format.per.level = '0:avro'` (a documented setting for faster writes): Java
        # writes level 0 as Avro and higher levels as Parquet; our merges read the Avro files.
        pk_base("level0_avro", {"file.format.per.level": "0:avro"},
                kinds=("+I", "+I", "+I", "-D")),
        pk_base("level0_avro_dv_lookup", {"file.format.per.level": "0:avro",
                                          "deletion-vectors.enabled": "true",
                                          "changelog-producer": "lookup"},
                kinds=("+I", "+I", "+I", "-D"), hides_level0=True, model=model_last_per_key),
        # ORC tables: read and written as ORC (zstd by default), with deletion vectors and
        # lookup changelog reading every file of a bucket, and ORC at level 0 only.
        pk_base("orc_pk", {"file.format": "orc"}, kinds=("+I", "+I", "+I", "-D")),
        pk_base("orc_dv_lookup", {"file.format": "orc", "deletion-vectors.enabled": "true",
                                  "changelog-producer": "lookup"},
                kinds=("+I", "+I", "+I", "-D"), hides_level0=True, model=model_last_per_key),
        pk_base("level0_orc", {"file.format.per.level": "0:orc"},
                kinds=("+I", "+I", "+I", "-D")),
        # LZO (Java's ORC compresses with aircompressor): our decoder reads Java's blocks, and
        # Java reads the blocks of our encoder.
        pk_base("orc_lzo", {"file.format": "orc", "file.compression": "lzo"},
                kinds=("+I", "+I", "+I", "-D")),
        orc_types(),
        orc_append(),
        # Avro tables (`file.format = avro`): read and written as Avro.
        pk_base("avro_pk", {"file.format": "avro"}, kinds=("+I", "+I", "+I", "-D")),
        avro_types(),
        avro_append(),
        aggregation_more(),
        aggregation_collections(),
        sequence_field(),
        record_expiry(),
        file_naming(),
        changelog_dedup("changelog_dedup_lookup", "lookup"),
        changelog_dedup("changelog_dedup_full", "full-compaction"),
        partial_update_deletes(),
        partial_update_groups(),
        nested_pk(),
        nested_level0_avro(),
        nested_avro(),
        append_fixed(),
        file_index_append(),
        file_index_pk(),
        file_index_bitmap(),
        aggregation_sketches(),
        aggregation_hll(),
        append_unaware(),
        evolved_pk(),
        evolved_append(),
        option_change_only(),
        dynamic_bucket(),
    ]
    # For iterating on a few tables by hand (CI runs them all).
    only = os.environ.get("PAIMON_PEER_ONLY")
    if only:
        specs = [s for s in specs if s.name in only.split(",")]
    for spec in specs:
        if spec.writer == "java":
            if spec.name in JAVA_MANIFESTS_KEPT:
                spec.pypaimon_reads = False
            else:
                spec.options.update(FULL_MANIFEST_COMPACTION)
    return specs


SPECS = all_specs()
NAMES = [s.name for s in SPECS]
BY_NAME = {s.name: s for s in SPECS}


# ------------------------------------------------------------------ the pipeline

def build_steps(spec):
    steps = [{"op": "create", "table": spec.name, "columns": spec.columns,
              "primary_keys": spec.primary_keys, "partition_keys": spec.partition_keys,
              "options": spec.options}]
    batch = []
    for i, commit in enumerate(spec.commits):
        if i in spec.alters:
            if batch:
                steps.append({"op": "write", "table": spec.name, "commits": batch})
                batch = []
            steps.append({"op": "alter", "table": spec.name, "changes": spec.alters[i]})
        batch.append(commit)
    steps.append({"op": "write", "table": spec.name, "commits": batch})
    return steps


def create_with_pypaimon(warehouse, spec):
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database(DB, True)
    catalog.create_table(f"{DB}.{spec.name}", Schema.from_pyarrow_schema(
        spec.arrow_schema, partition_keys=spec.partition_keys or None,
        primary_keys=spec.primary_keys, options=spec.options), False)
    for commit in spec.commits:
        pypaimon_write(warehouse, spec.name, commit, spec.arrow_schema)


class Pipeline:
    pass


def filtered_reads(spec, label):
    """Java's reads of the table with each of its filters. One manifest-reading thread: Paimon
    1.0's append scan caches the filter per schema in a plain HashMap from every thread of its
    manifest pool, and two threads filling it at once fail the read now and then with a
    ConcurrentModificationException (2 of 600 reads of a table we compacted, on this machine;
    Java's own compactions leave the same two manifests; docs/format.md)."""
    return [{"op": "read", "table": spec.name, "label": f"{label}-filter-{i}",
             "filter": {"field": field, "op": op, "value": value},
             "options": {"scan.manifest.parallelism": "1"}}
            for i, (field, op, value) in enumerate(spec.filters)]


@pytest.fixture(scope="module")
def run(tmp_path_factory, java_classpath):
    base = tmp_path_factory.mktemp("java_peer")
    work = str(base / "scripts")
    w, a, b, c = (base / x for x in ("W", "A", "B", "C"))
    tdir = lambda wh, name: os.path.join(str(wh), f"{DB}.db", name)
    p = Pipeline()
    p.dirs = {"W": w, "A": a, "B": b, "C": c}
    p.table_dir = tdir

    # 1. Build every table in W (pypaimon's first: Java reads them all at the end).
    for spec in SPECS:
        if spec.writer == "pypaimon":
            create_with_pypaimon(w, spec)
    steps = []
    for spec in SPECS:
        if spec.writer == "java":
            steps += build_steps(spec)
    for spec in SPECS:
        steps += [{"op": "read", "table": spec.name, "label": "orig"},
                  {"op": "snapshots", "table": spec.name, "label": "orig"},
                  {"op": "tag", "table": spec.name, "name": "before"}]
    p.built = java(work, "1-build", w, steps)
    p.snaps0 = {s.name: snapshot_files(tdir(w, s.name)) for s in SPECS}

    def changelog_of(spec, first, label, **extra):
        """The changelog that the snapshot after `first` wrote, as Java streams it."""
        return {"op": "read", "table": spec.name, "label": label, "with_kind": True,
                "options": {"incremental-between": f"{first},{first + 1}",
                            "incremental-between-scan-mode": "changelog"}, **extra}

    # 2. Java compacts copy A while our CLI compacts copy B.
    shutil.copytree(w, a)
    shutil.copytree(w, b)
    steps = []
    for spec in SPECS:
        steps += [{"op": "compact", "table": spec.name, "label": "java"},
                  {"op": "read", "table": spec.name, "label": "java"},
                  {"op": "files", "table": spec.name, "label": "java"}]
        steps += filtered_reads(spec, "java")
        if spec.changelog:
            steps.append(changelog_of(spec, p.snaps0[spec.name][-1]["id"], "java-changelog"))
    job = JavaRun(work, "2-java-compacts-A", a, steps)
    p.ours1 = {s.name: Compaction(tdir(b, s.name), "--full") for s in SPECS}
    p.snaps1 = {s.name: snapshot_files(tdir(b, s.name)) for s in SPECS}
    p.py1 = {}
    for s in SPECS:
        try:
            p.py1[s.name] = pypaimon_read(b, s.name)
        except Exception as e:  # reported by the test that needs it
            p.py1[s.name] = e
    p.java_a = job.results()

    # 3. Java reads our snapshot (now, and the one before it), then writes on top of it with
    #    compaction on; pypaimon does the same for the table Java cannot write.
    steps = []
    for spec in SPECS:
        last = p.snaps0[spec.name][-1]["id"]
        steps += [{"op": "read", "table": spec.name, "label": "ours1"},
                  {"op": "files", "table": spec.name, "label": "ours1"},
                  {"op": "read", "table": spec.name, "label": "travel",
                   "options": {"scan.snapshot-id": str(last)}},
                  {"op": "read", "table": spec.name, "label": "tagged",
                   "options": {"scan.tag-name": "before"}}]
        steps += filtered_reads(spec, "ours1")
        if spec.changelog:
            steps.append(changelog_of(spec, last, "ours-changelog"))
        if spec.writer == "java" and p.ours1[spec.name].ok:
            # Commits with compaction on (Java's writer compacts over our files), then one
            # more write-only commit, so that our next compaction has level-0 input again.
            steps += [{"op": "write", "table": spec.name, "label": "more",
                       "options": {"write-only": "false"}, "commits": spec.more[:-1]},
                      {"op": "write", "table": spec.name, "label": "more-l0",
                       "commits": spec.more[-1:]},
                      {"op": "read", "table": spec.name, "label": "more"}]
    p.java_b = java(work, "3-java-on-B", b, steps)
    p.py_more = {}
    for spec in SPECS:
        if spec.writer == "pypaimon" and p.ours1[spec.name].ok:
            try:
                for commit in spec.more:
                    pypaimon_write(b, spec.name, commit, spec.arrow_schema)
                p.py_more[spec.name] = None
            except Exception as e:
                p.py_more[spec.name] = e

    # 4. We compact B again; Java compacts a copy of the same state (C) as the reference, and
    #    reads both.
    shutil.copytree(b, c)
    p.snaps_c = {s.name: snapshot_files(tdir(c, s.name)) for s in SPECS}
    p.ours2 = {s.name: Compaction(tdir(b, s.name), "--full") for s in SPECS
               if p.ours1[s.name].ok}
    p.snaps2 = {n: snapshot_files(tdir(b, n)) for n in p.ours2}
    steps = []
    for spec in SPECS:
        if spec.name not in p.ours2:
            continue
        steps += [{"op": "compact", "table": spec.name, "label": "java2", "warehouse": str(c)},
                  {"op": "read", "table": spec.name, "label": "java2", "warehouse": str(c)},
                  {"op": "files", "table": spec.name, "label": "java2", "warehouse": str(c)},
                  {"op": "read", "table": spec.name, "label": "ours2"},
                  {"op": "files", "table": spec.name, "label": "ours2"}]
        if spec.changelog:
            last = p.snaps_c[spec.name][-1]["id"]
            steps += [changelog_of(spec, last, "java2-changelog", warehouse=str(c)),
                      changelog_of(spec, last, "ours2-changelog")]
    p.java_final = java(work, "4-final", b, steps)
    return p


def require_round1(run, name):
    if name not in run.ours1:
        pytest.skip(f"{name} is not among the tables PAIMON_PEER_ONLY names")
    ours = run.ours1[name]
    if not ours.ok:
        pytest.fail(f"our first compaction of {name} failed: {ours.message()}")
    return ours.report


def layout(files):
    """How many files sit in each (partition, bucket, level)."""
    out = {}
    for f in files:
        key = (json.dumps(f["partition"], sort_keys=True), f["bucket"], f["level"])
        out[key] = out.get(key, 0) + 1
    return sorted(out.items())


# ------------------------------------------------------------------ the tests

@pytest.mark.parametrize("name", NAMES)
def test_written_by_java_our_full_compaction_reads_as_java_own(run, name):
    spec = BY_NAME[name]
    build = run.built
    for step in build.items:
        if step["table"] == name and step["op"] in ("create", "write", "alter"):
            assert "error" not in step, f"Java could not build {name}: {step['error']}"
    orig = sort_rows(build.ok("read", name, "orig")["rows"])
    orig_snaps = build.ok("snapshots", name, "orig")["snapshots"]
    run.java_a.ok("compact", name, "java")
    java_rows = sort_rows(run.java_a.ok("read", name, "java")["rows"])
    # The reference itself: Java's compaction keeps what Java read (or what the model says).
    if spec.model is not None:
        assert java_rows == spec.expected(with_more=False), "Java's own compaction vs the model"
    if not spec.hides_level0 and not spec.drops_rows:
        assert java_rows == orig
    assert java_rows, f"{name}: no rows to compare"

    report = require_round1(run, name)
    assert report.get("snapshot_after") is not None, report
    snaps = run.snaps1[name]
    assert len(orig_snaps) == len(run.snaps0[name])
    assert len(snaps) == len(orig_snaps) + 1
    assert snaps[-1]["id"] == report["snapshot_after"]
    assert snaps[-1]["commitKind"] == "COMPACT"
    assert snaps[-1]["totalRecordCount"] == snaps[-2]["totalRecordCount"] + snaps[-1][
        "deltaRecordCount"]

    ours = sort_rows(run.java_b.ok("read", name, "ours1")["rows"])
    assert ours == java_rows, f"{name}: Java reads other rows after our compaction"
    # The snapshot before ours still reads as it did, by id and by tag.
    assert sort_rows(run.java_b.ok("read", name, "travel")["rows"]) == orig
    assert sort_rows(run.java_b.ok("read", name, "tagged")["rows"]) == orig
    # Our files sit where Java's full compaction puts its own, as many per (partition,
    # bucket, level): the tables are far below the target file size.
    if not spec.rolls:
        assert layout(run.java_b.ok("files", name, "ours1")["files"]) == layout(
            run.java_a.ok("files", name, "java")["files"])


@pytest.mark.parametrize("name", NAMES)
def test_java_writes_on_top_of_our_snapshot_and_we_compact_again(run, name):
    spec = BY_NAME[name]
    require_round1(run, name)
    if spec.writer == "java":
        run.java_b.ok("write", name, "more")
        run.java_b.ok("write", name, "more-l0")
        written = sort_rows(run.java_b.ok("read", name, "more")["rows"])
    else:
        assert run.py_more.get(name) is None, f"pypaimon's write on top: {run.py_more[name]}"
        written = None
    ours2 = run.ours2[name]
    report = ours2.check()
    snaps = run.snaps2[name]
    run.java_final.ok("compact", name, "java2")
    reference = sort_rows(run.java_final.ok("read", name, "java2")["rows"])
    if spec.model is not None:
        assert reference == spec.expected(with_more=True), "Java's own compaction vs the model"
    if written is not None and not spec.hides_level0 and not spec.drops_rows:
        assert reference == written
    ours = sort_rows(run.java_final.ok("read", name, "ours2")["rows"])
    assert ours == reference, f"{name}: Java reads other rows after our second compaction"
    # The last commit on top was write-only (level 0): there was work to do.
    assert report.get("snapshot_after") is not None, report
    assert snaps[-1]["id"] == report["snapshot_after"]
    assert snaps[-1]["commitKind"] == "COMPACT"
    if not spec.rolls:
        assert layout(run.java_final.ok("files", name, "ours2")["files"]) == layout(
            run.java_final.ok("files", name, "java2")["files"])


@pytest.mark.parametrize("name", [s.name for s in SPECS if s.pypaimon_reads])
def test_pypaimon_reads_our_compaction_as_java_does(run, name):
    require_round1(run, name)
    rows = run.py1[name]
    if isinstance(rows, Exception):
        pytest.fail(f"pypaimon cannot read our compaction of {name}: {rows!r}")
    assert rows == sort_rows(run.java_b.ok("read", name, "ours1")["rows"])


def test_dynamic_bucket_hash_index_is_kept(run):
    """bucket = -1 primary key: the HASH index (index/ files, index manifest) that assigns keys
    to buckets must survive our compaction, or the next writer duplicates keys."""
    import fastavro

    name = "dynamic"
    require_round1(run, name)
    spec = BY_NAME[name]
    table = run.table_dir(run.dirs["B"], name)

    def index_entries(snapshot):
        assert snapshot.get("indexManifest"), f"snapshot {snapshot['id']} has no index manifest"
        with open(os.path.join(table, "manifest", snapshot["indexManifest"]), "rb") as fh:
            return list(fastavro.reader(fh))

    before = index_entries(run.snaps0[name][-1])
    assert any(e["_INDEX_TYPE"] == "HASH" for e in before), before
    # Our first compaction's snapshot (the one after the build's last) keeps them.
    ours = [s for s in run.snaps1[name] if s["id"] == run.ours1[name].report["snapshot_after"]]
    assert ours and ours[0]["commitKind"] == "COMPACT"
    after = index_entries(ours[0])
    hash_files = lambda es: sorted((e["_BUCKET"], e["_FILE_NAME"]) for e in es
                                   if e["_INDEX_TYPE"] == "HASH" and e["_KIND"] == 0)
    assert hash_files(after) == hash_files(before)
    for _, f in hash_files(after):
        assert os.path.exists(os.path.join(table, "index", f)), f
    # Every bucket with data has its index file.
    data_buckets = {f["bucket"] for f in run.java_b.ok("files", name, "ours1")["files"]}
    assert data_buckets <= {b for b, _ in hash_files(after)}
    assert sort_rows(run.java_b.ok("read", name, "ours1")["rows"]) == spec.expected(False)
    assert run.py1[name] == spec.expected(False)
    # pypaimon wrote on top (assigning buckets through the index) and we compacted again:
    # still one row per key, and the latest index manifest still names existing files.
    run.ours2[name].check()
    final = sort_rows(run.java_final.ok("read", name, "ours2")["rows"])
    assert final == spec.expected(True)
    assert len({r["k"] for r in final}) == len(final)
    latest = index_entries(run.snaps2[name][-1])
    for _, f in hash_files(latest):
        assert os.path.exists(os.path.join(table, "index", f)), f
    assert pypaimon_read(run.dirs["B"], name) == spec.expected(True)


@pytest.mark.parametrize("name", [s.name for s in SPECS if s.changelog])
def test_changelog_of_our_compactions_streams_as_java_own(run, name):
    """changelog-producer lookup / full-compaction: the changelog files our COMPACT snapshots
    carry are what a streaming reader consumes; they must hold what Java's own compaction of
    the same state writes (first from nothing but level 0, then over Java's own writes)."""
    require_round1(run, name)
    java1 = sort_rows(run.java_a.ok("read", name, "java-changelog")["rows"])
    assert java1, "Java's own compaction wrote no changelog"
    assert sort_rows(run.java_b.ok("read", name, "ours-changelog")["rows"]) == java1
    run.ours2[name].check()
    java2 = sort_rows(run.java_final.ok("read", name, "java2-changelog")["rows"])
    assert sort_rows(run.java_final.ok("read", name, "ours2-changelog")["rows"]) == java2


def test_new_files_are_named_and_encoded_as_the_options_ask(run):
    """Our files of `file_naming`: named with the prefixes and the table codec's extension
    (Paimon HEAD's `.zst`; this Java build names its files without it), max-level data files in
    the level's codec, changelog files in theirs. (No snappy here: the Java peer's classpath
    has no snappy library to read it with.)"""
    import pyarrow.parquet as pq

    require_round1(run, "file_naming")
    files = run.java_b.ok("files", "file_naming", "ours1")["files"]
    assert files and all(f["level"] == 5 for f in files), files
    table = run.table_dir(run.dirs["B"], "file_naming")
    for f in files:
        assert f["file"].startswith("part-") and f["file"].endswith(".zst.parquet"), f
        meta = pq.ParquetFile(os.path.join(table, f"bucket-{f['bucket']}", f["file"])).metadata
        assert meta.row_group(0).column(0).compression == "GZIP", f
    # Append tables take the prefix and extension too.
    appended = run.java_b.ok("files", "append_unaware", "ours1")["files"]
    assert all(f["file"].startswith("app-") and f["file"].endswith(".zst.parquet")
               for f in appended), appended
    java = run.java_a.ok("files", "file_naming", "java")["files"]
    assert all(f["file"].startswith("part-") for f in java), java
    # Java's writer wrote changelog files into B too, after our first compaction.
    changelog = [os.path.join(root, name) for root, _, names in os.walk(table)
                 for name in names if name.startswith("cl-")]
    ours = [p for p in changelog if p.endswith(".zst.parquet")]
    assert ours, changelog
    for path in ours:
        meta = pq.ParquetFile(path).metadata
        assert meta.row_group(0).column(0).compression == "UNCOMPRESSED", path


@pytest.mark.parametrize("name,max_level_format", [
    ("orc_pk", "orc"), ("orc_types", "orc"), ("orc_append", "orc"), ("level0_orc", "parquet"),
    ("avro_pk", "avro"), ("avro_types", "avro"), ("avro_append", "avro"),
    ("nested_level0_avro", "parquet"), ("nested_avro", "avro")])
def test_our_files_are_in_the_format_their_level_asks_for(run, name, max_level_format):
    """ORC and Avro tables stay so: every file of our compaction is an ORC file (magic,
    postscript, and pyarrow's ORC reader opening it with the rows its manifest entry counts)
    or an Avro container (magic and fastavro counting its records), and
    `file.format.per.level = '0:orc'` writes the higher levels as Parquet."""
    import pyarrow.orc as po
    import pyarrow.parquet as pq

    require_round1(run, name)
    files = run.java_b.ok("files", name, "ours1")["files"]
    assert files
    table = run.table_dir(run.dirs["B"], name)
    for f in files:
        path = os.path.join(table, f"bucket-{f['bucket']}", f["file"])
        assert f["file"].endswith("." + max_level_format), f
        if max_level_format == "orc":
            with open(path, "rb") as h:
                assert h.read(3) == b"ORC", f
            assert po.ORCFile(path).nrows == f["rowCount"], f
        elif max_level_format == "avro":
            import fastavro

            with open(path, "rb") as h:
                assert h.read(4) == b"Obj\x01", f
                h.seek(0)
                assert sum(1 for _ in fastavro.reader(h)) == f["rowCount"], f
        else:
            assert pq.ParquetFile(path).metadata.num_rows == f["rowCount"], f


def test_nested_avro_files_java_wrote_are_merged(run):
    """The nested table's level-0 files are Avro containers Java wrote (arrays, rows, maps and
    multisets inside), and our full compaction merged every one of them: what is live after
    it is Parquet (checked above), and the rows read as Java's own compaction's (the first
    test)."""
    name = "nested_level0_avro"
    require_round1(run, name)
    source = run.table_dir(run.dirs["W"], name)
    avro = glob.glob(os.path.join(source, "bucket-*", "*.avro"))
    assert len(avro) >= 8, avro
    for path in avro:
        with open(path, "rb") as h:
            assert h.read(4) == b"Obj\x01", path
    live = {f["file"] for f in run.java_b.ok("files", name, "ours1")["files"]}
    assert not any(os.path.basename(p) in live for p in avro)


@pytest.mark.parametrize("name", ["file_index_append", "file_index_pk"])
def test_java_skips_our_files_by_the_bloom_filters_we_write(run, name):
    """Our compacted files carry the bloom filters in their manifest entries, and Java's scan
    of the append table prunes by them: a lookup of one value plans fewer files than the table
    has (value statistics alone prune none here) and returns exactly the rows that hold it.
    Java 1.0 neither writes file indexes on its own primary-key compactions nor prunes such
    files by ours in this scan, so there only the rows and the indexes are checked."""
    require_round1(run, name)
    files = run.java_b.ok("files", name, "ours1")["files"]
    assert len(files) >= 3, files
    assert all(f["embeddedIndexBytes"] > 0 and f["extraFiles"] == 0 for f in files), files
    every = sort_rows(run.java_b.ok("read", name, "ours1")["rows"])
    for i, (field, _, value) in enumerate(BY_NAME[name].filters):
        step = run.java_b.ok("read", name, f"ours1-filter-{i}")
        assert sort_rows(step["rows"]) == [r for r in every if r[field] == value]
        if name == "file_index_append":
            assert 1 <= step["planned_files"] < len(files), (field, step["planned_files"], files)


def test_our_bitmap_indexes_name_each_value_rows_in_the_file(run):
    """Each bitmap of our embedded indexes, decoded here from Paimon's format on its own,
    names exactly the positions of the rows that hold its value in the data file (this Java
    build prunes files by the bitmaps but does not filter rows with them, so this is where a
    wrong row number shows)."""
    import base64
    import datetime

    import pyarrow.parquet as pq

    sys.path.insert(0, os.path.join(REPO, "tests", "format_readers"))
    import paimon_file_index

    name = "file_index_bitmap"
    require_round1(run, name)
    table = run.table_dir(run.dirs["B"], name)
    files = run.java_b.ok("files", name, "ours1")["files"]
    epoch = datetime.datetime(1970, 1, 1)
    for f in files:
        data = pq.read_table(os.path.join(table, f"bucket-{f['bucket']}", f["file"]))
        bodies = paimon_file_index.bodies(base64.b64decode(f["embeddedIndex"]))
        assert {c for c, _ in bodies} == {"name", "cat", "ts"}, bodies.keys()
        for column, kind in (("name", "string"), ("cat", ">i"), ("ts", ">q")):
            body = bodies[(column, "bitmap")]
            assert body[0] == 1  # version 1, which every Paimon reader reads
            rows, index = paimon_file_index.bitmap(body, kind)
            assert rows == data.num_rows == f["rowCount"]
            want = {}
            for i, v in enumerate(data.column(column).to_pylist()):
                if column == "ts" and v is not None:
                    v = (v - epoch) // datetime.timedelta(milliseconds=1)
                want.setdefault(v, set()).add(i)
            assert index == want, (f["file"], column)


@pytest.mark.parametrize("zone", ["Asia/Shanghai", "America/New_York"])
def test_orc_timestamps_written_in_a_jvm_zone_read_the_same_after_our_compaction(tmp_path, zone):
    """Paimon's ORC writer stores TIMESTAMP and TIMESTAMP_LTZ values as wall clocks of its JVM's
    zone. Java writes in `zone` (Shanghai had summer time in 1986-1991; New York's changes
    twice a year), we compact (our files are written in UTC), and Java reads exactly the rows
    it read before, in that zone and in UTC; then Java writes on top and reads them all."""
    name = "orc_zone"
    rng = _rng(f"orc_zone {zone}")
    columns = [["k", "INT NOT NULL"], ["ts", "TIMESTAMP(3)"], ["ts9", "TIMESTAMP(9)"],
               ["ltz", "TIMESTAMP_LTZ(6)"], ["day", "DATE"]]
    keep = {c for c, _ in columns}
    # Times around transitions: a spring gap, an autumn overlap, Shanghai's 1988 summer.
    edges = ["1988-04-10T01:30:00", "1988-07-01T12:00:00", "1988-09-11T00:30:00",
             "2024-03-10T01:59:59.999", "2024-07-04T12:00:00", "2024-11-03T01:30:00",
             "1969-12-31T23:59:58.500", "2037-06-01T00:00:00"]

    def rows(c, n):
        out = [{key: v for key, v in orc_row(rng, rng.randrange(40), c, i).items() if key in keep}
               for i in range(n)]
        for i, t in enumerate(edges):
            out.append({"k": 100 + c * 10 + i, "ts": t,
                        "ts9": t if "." in t else t + ".000000123", "ltz": t,
                        "day": "2024-01-01"})
        return out

    w = tmp_path / "W"
    zone_jvm = [f"-Duser.timezone={zone}"]
    steps = [{"op": "create", "table": name, "columns": columns, "primary_keys": ["k"],
              "partition_keys": [], "options": {"bucket": "1", "file.format": "orc",
                                                "write-only": "true"}},
             {"op": "write", "table": name, "commits": [rows(c, 12) for c in range(4)]},
             {"op": "read", "table": name, "label": "orig"},
             # A wall clock in UTC's second before 1970, which no file written in UTC holds
             # for ORC's readers: refused, the table left as it was.
             {"op": "create", "table": "edge", "columns": columns[:2], "primary_keys": ["k"],
              "partition_keys": [], "options": {"bucket": "1", "file.format": "orc",
                                                "write-only": "true"}},
             {"op": "write", "table": "edge", "commits": [[{"k": 1, "ts": "1969-12-31T23:59:59.999"}],
                                                          [{"k": 2, "ts": "2024-01-01T00:00:00"}]]}]
    orig = sort_rows(java(tmp_path, "1-build", w, steps, jvm_args=zone_jvm)
                     .ok("read", name, "orig")["rows"])
    edge = os.path.join(str(w), f"{DB}.db", "edge")
    edge_files = sorted(os.listdir(os.path.join(edge, "bucket-0")))
    refused = Compaction(edge, "--full")
    assert not refused.ok and "before 1970" in refused.message(), refused.message()
    assert refused.report["error"]["kind"] == "unsupported"
    assert sorted(os.listdir(os.path.join(edge, "bucket-0"))) == edge_files
    table = os.path.join(str(w), f"{DB}.db", name)
    # Paimon 1.0 reads TIMESTAMP_LTZ from ORC in the reader's zone, so a UTC reader sees other
    # LTZ values than the writer's zone; each reader must see after our compaction what it
    # saw before.
    utc_jvm = ["-Duser.timezone=UTC"]
    utc_orig = sort_rows(java(tmp_path, "1-read-UTC", w, [{"op": "read", "table": name,
                                                          "label": "orig"}], jvm_args=utc_jvm)
                         .ok("read", name, "orig")["rows"])
    assert [{k: v for k, v in r.items() if k != "ltz"} for r in utc_orig] == \
        [{k: v for k, v in r.items() if k != "ltz"} for r in orig]
    before = set(os.listdir(os.path.join(table, "bucket-0")))
    Compaction(table, "--full").check()
    assert set(os.listdir(os.path.join(table, "bucket-0"))) != before
    for reader, jvm, want in ((zone, zone_jvm, orig), ("UTC", utc_jvm, utc_orig)):
        got = java(tmp_path, f"2-read-{reader.replace('/', '_')}", w,
                   [{"op": "read", "table": name, "label": "ours"}], jvm_args=jvm)
        assert sort_rows(got.ok("read", name, "ours")["rows"]) == want, reader
    more = rows(9, 6)
    res = java(tmp_path, "3-more", w, [{"op": "write", "table": name, "commits": [more]},
                                       {"op": "read", "table": name, "label": "all"}],
               jvm_args=zone_jvm)
    merged = {r["k"]: r for r in orig}
    merged.update({r["k"]: r for r in sort_rows(
        java(tmp_path, "3-more-alone", tmp_path / "W2",
             [{"op": "create", "table": name, "columns": columns, "primary_keys": ["k"],
               "partition_keys": [], "options": {"bucket": "1", "file.format": "orc"}},
              {"op": "write", "table": name, "commits": [more]},
              {"op": "read", "table": name, "label": "alone"}], jvm_args=zone_jvm)
        .ok("read", name, "alone")["rows"])})
    assert sort_rows(res.ok("read", name, "all")["rows"]) == sort_rows(merged.values())


def test_java_skips_our_files_and_rows_by_the_bitmap_indexes_we_write(run):
    """Our compacted files carry bitmap indexes in their manifest entries:
    Java's scan skips the files whose bitmaps hold no row of an equality (value statistics
    alone prune none here), and its reader keeps the rows the bitmaps name, so a wrong row
    number shows as missing rows."""
    name = "file_index_bitmap"
    require_round1(run, name)
    files = run.java_b.ok("files", name, "ours1")["files"]
    assert len(files) >= 3, files
    assert all(f["embeddedIndexBytes"] > 0 and f["extraFiles"] == 0 for f in files), files
    every = sort_rows(run.java_b.ok("read", name, "ours1")["rows"])
    ops = {"eq": lambda a, b: a == b, "lt": lambda a, b: a < b}
    for i, (field, op, value) in enumerate(BY_NAME[name].filters):
        step = run.java_b.ok("read", name, f"ours1-filter-{i}")
        want = [r for r in every if r[field] is not None and ops[op](r[field], value)]
        assert want and sort_rows(step["rows"]) == want, (field, op, value)
        if field in ("name", "ts"):
            assert 1 <= step["planned_files"] < len(files), (field, step["planned_files"])


@pytest.mark.parametrize("name", [s.name for s in SPECS if s.filters])
def test_filtered_reads_prune_by_our_statistics_as_by_java_own(run, name):
    """Java prunes files by their value statistics (DECIMAL, TIMESTAMP, integer columns here):
    the rows of a filtered read of our compaction are those of Java's own."""
    require_round1(run, name)
    for i, f in enumerate(BY_NAME[name].filters):
        java = sort_rows(run.java_a.ok("read", name, f"java-filter-{i}")["rows"])
        ours = sort_rows(run.java_b.ok("read", name, f"ours1-filter-{i}")["rows"])
        assert java and len(java) < len(sort_rows(run.java_a.ok("read", name, "java")["rows"])), f
        assert ours == java, f
