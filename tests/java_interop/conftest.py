"""Fixtures of the Paimon Java interoperability tests.

Paimon Java 1.0 (the reference implementation, from the PyPI wheel paimon-python-ali, prepared
by tests/java/setup.sh) writes real tables through tests/java/PaimonDriver.java; our
`paimon-compact` CLI ($PAIMON_COMPACT_CLI, engine $PAIMON_COMPACT_ENGINE: `wasm` by default, or
`native`) compacts them; Java (and pypaimon) read them back. A JVM costs seconds to start, so
every Java phase is one driver run over a JSON script of many steps.

Environment: PAIMON_COMPACT_CLI (required), PAIMON_COMPACT_ENGINE, PAIMON_JAVA_CLASSPATH (the
driver's classpath; by default tests/java/setup.sh is run once to produce it).
"""

import datetime
import decimal
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CLI = os.environ.get("PAIMON_COMPACT_CLI")
ENGINE = os.environ.get("PAIMON_COMPACT_ENGINE", "wasm")

_classpath = None


def classpath():
    """The driver's classpath: $PAIMON_JAVA_CLASSPATH, or what tests/java/setup.sh prints."""
    global _classpath
    if _classpath is None:
        _classpath = os.environ.get("PAIMON_JAVA_CLASSPATH")
        if not _classpath:
            p = subprocess.run(["bash", os.path.join(REPO, "tests", "java", "setup.sh"),
                                sys.executable], capture_output=True, text=True, timeout=900)
            assert p.returncode == 0, f"tests/java/setup.sh failed:\n{p.stdout}\n{p.stderr}"
            _classpath = p.stdout.strip().splitlines()[-1]
    return _classpath


class JavaRun:
    """One driver run in the background: `start` now, `results` when needed."""

    def __init__(self, workdir, name, warehouse, steps, jvm_args=()):
        os.makedirs(workdir, exist_ok=True)
        self.script = os.path.join(workdir, f"{name}.json")
        self.out = os.path.join(workdir, f"{name}.out.json")
        self.err = os.path.join(workdir, f"{name}.stderr")
        self.steps = steps
        with open(self.script, "w") as fh:
            json.dump({"warehouse": str(warehouse), "steps": steps}, fh)
        with open(self.err, "w") as err:
            # Small heap and few JIT threads: the machine has 2 cores and the CLI runs beside.
            self.proc = subprocess.Popen(
                ["java", "-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", *jvm_args,
                 "-cp", classpath(), "PaimonDriver", self.script, self.out],
                stdout=subprocess.DEVNULL, stderr=err)

    def results(self, timeout=600):
        code = self.proc.wait(timeout=timeout)
        if code != 0 or not os.path.exists(self.out):
            with open(self.err) as fh:
                tail = fh.read()[-4000:]
            raise AssertionError(f"the Java driver failed ({code}) on {self.script}:\n{tail}")
        with open(self.out) as fh:
            return Results(json.load(fh)["results"])


def java_split(workdir, name, warehouse, steps, jvms=2, timeout=600):
    """Runs independent steps (reads and checks, each naming its own warehouse or reading the
    default one, none changing what another reads) on `jvms` drivers at once, the steps dealt
    round-robin, and merges their results. One driver uses one core for long checks (its
    C1-only JIT keeps startups short), so on this 2-core machine two drivers take about half
    the time (benches/README.md, "CI")."""
    runs = [JavaRun(workdir, f"{name}-{i}", warehouse, steps[i::jvms]) for i in range(jvms)]
    items = []
    for run in runs:
        items += run.results(timeout).items
    return Results(items)


def java(workdir, name, warehouse, steps, timeout=600, jvm_args=()):
    """Runs the driver on `steps` and waits for its results (`jvm_args`: such as
    `-Duser.timezone=<zone>`, the zone Paimon's ORC writer stores wall clocks in)."""
    return JavaRun(workdir, name, warehouse, steps, jvm_args).results(timeout)


class Results:
    """The driver's per-step results, found by (op, table, label): a step's optional "label"
    is echoed in its result."""

    def __init__(self, results):
        self.items = results

    def find(self, op, table, label=None):
        hits = [r for r in self.items if r["op"] == op and r["table"] == table
                and r.get("label") == label]
        assert len(hits) == 1, f"{len(hits)} results for {op} {table} {label}"
        return hits[0]

    def ok(self, op, table, label=None):
        r = self.find(op, table, label)
        assert "error" not in r, f"Java's {op} of {table} failed: {r['error']}"
        return r


def cli(*args, timeout=300):
    """Runs our CLI on the chosen engine; returns the completed process."""
    assert CLI, "PAIMON_COMPACT_CLI must name the paimon-compact binary"
    return subprocess.run([CLI, "--engine", ENGINE, *args], capture_output=True, text=True,
                          timeout=timeout)


class Compaction:
    """What one `paimon-compact compact --json` run of a table did."""

    def __init__(self, table_dir, *flags):
        self.table_dir = table_dir
        self.proc = cli("compact", table_dir, "--json", *flags)
        try:
            self.report = json.loads(self.proc.stdout) if self.proc.stdout.strip() else {}
        except json.JSONDecodeError:
            self.report = {}

    @property
    def ok(self):
        return self.proc.returncode == 0

    def message(self):
        err = self.report.get("error") if isinstance(self.report, dict) else None
        if err:
            # The message starts with its kind already ("unsupported: ...").
            return str(err.get("message"))
        return (self.proc.stdout + self.proc.stderr).strip()[-2000:]

    def check(self):
        assert self.ok, f"our compaction of {self.table_dir} failed: {self.message()}"
        return self.report


def rewrite_json(path, change):
    """Rewrites the JSON file at `path` with `change` (a function editing the document)."""
    with open(path) as fh:
        doc = json.load(fh)
    change(doc)
    with open(path, "w") as fh:
        json.dump(doc, fh, indent=2)


def age_tag(tdir, name, days=2, now=None):
    """Moves a tag's tagCreateTime `days` back from `now` (default: the current time), as
    Jackson writes a LocalDateTime: an array of its fields. The tag must have a TTL."""
    t = (now or datetime.datetime.now()) - datetime.timedelta(days=days)

    def change(doc):
        assert "tagCreateTime" in doc, f"tag {name} has no TTL: {doc}"
        doc["tagCreateTime"] = [t.year, t.month, t.day, t.hour, t.minute, t.second,
                                t.microsecond * 1000]

    rewrite_json(os.path.join(tdir, "tag", f"tag-{name}"), change)


def snapshot_files(table_dir):
    """The snapshot JSON documents of a table, by id."""
    d = os.path.join(table_dir, "snapshot")
    out = []
    for f in os.listdir(d):
        if f.startswith("snapshot-"):
            with open(os.path.join(d, f)) as fh:
                out.append(json.load(fh))
    return sorted(out, key=lambda s: s["id"])


# ------------------------------------------------------------------ pypaimon reads

def canonical(value):
    """A pypaimon (pyarrow) value in the driver's canonical JSON form."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, datetime.datetime):
        return value.replace(tzinfo=None).isoformat()
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, datetime.time):
        # As Java's LocalTime prints it: seconds only when not zero (or a fraction follows),
        # the fraction in groups of three digits.
        text = value.strftime("%H:%M")
        if value.second or value.microsecond:
            text += value.strftime(":%S")
        if value.microsecond:
            frac = f"{value.microsecond:06d}"
            text += "." + (frac[:3] if frac.endswith("000") else frac)
        return text
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
            # pyarrow's map: a list of (key, value) tuples.
            pairs = [[canonical(k), canonical(v)] for k, v in value]
            return sorted(pairs, key=lambda p: json.dumps(p[0], separators=(",", ":")))
        return [canonical(x) for x in value]
    if isinstance(value, tuple):
        return [canonical(x) for x in value]
    return str(value)


def _unordered(row):
    """A column named `set_*` holds a collection whose order Paimon leaves to a Java hash
    table (a distinct `collect`, a keyed `nested_update`): its elements are compared sorted."""
    return {k: sorted(v, key=json.dumps) if k.startswith("set_") and isinstance(v, list) else v
            for k, v in row.items()}


def sort_rows(rows):
    rows = [_unordered(r) for r in rows]
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, separators=(",", ":")))


def pypaimon_read(warehouse, table, db="db"):
    """Every row pypaimon reads from the table, canonical and sorted like the driver's."""
    from pypaimon import CatalogFactory

    t = CatalogFactory.create({"warehouse": str(warehouse)}).get_table(f"{db}.{table}")
    rb = t.new_read_builder()
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    return sort_rows([{k: canonical(v) for k, v in r.items()} for r in rows])


def pypaimon_write(warehouse, table, rows, schema, db="db"):
    """One pypaimon commit of `rows` (dicts) with the pyarrow `schema`."""
    import pyarrow as pa
    from pypaimon import CatalogFactory

    t = CatalogFactory.create({"warehouse": str(warehouse)}).get_table(f"{db}.{table}")
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    c = wb.new_commit()
    w.write_arrow(pa.Table.from_pylist(rows, schema=schema))
    c.commit(w.prepare_commit())
    w.close()
    c.close()


@pytest.fixture(scope="session")
def java_classpath():
    return classpath()
