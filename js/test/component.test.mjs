// The transpiled component in Node: same answers as the native CLI, real Parquet rewrites
// through JavaScript storage, and typed errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync, rmSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';

import { runConformance, planBucket, explainOptions, compactAppendFiles, planTable, compactTable, writeDemoTables, expireSnapshots, removeOrphanFiles, planTasks, runTask, commitTasks, abortTasks, MemoryStorage, FsStorage, StorageError, PaimonCompactError } from '../src/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const vectorsPath = join(root, 'tests', 'vectors', 'compaction-vectors.json');
const vectors = readFileSync(vectorsPath, 'utf8');
const cli = process.env.PAIMON_COMPACT_CLI ?? join(root, 'target', 'release', 'paimon-compact');
const fixtures = join(here, 'fixtures');

function native(args) {
  try {
    return execFileSync(cli, ['--engine', 'native', ...args], { encoding: 'utf8' });
  } catch (e) {
    return e.stdout;
  }
}

test('conformance in Node equals the native engine, both flavors', () => {
  for (const [flavor, flag] of [['java', []], ['cpp', ['--cpp']]]) {
    const report = runConformance(vectors, { flavor });
    assert.equal(report.failed, 0, report.text);
    assert.equal(report.text.trim(), native(['conformance', ...flag, vectorsPath]).trim());
  }
});

test('a bucket plan in Node equals the native engine', () => {
  const key = (n) => { const b = new Uint8Array(8); new DataView(b.buffer).setBigUint64(0, BigInt(n) ^ (1n << 63n)); return b; };
  const hex = (b) => Buffer.from(b).toString('hex');
  const files = [0, 1, 2, 3, 4].map((i) => ({ name: `f${i}`, size: 100 + i, minKey: key(i * 10), maxKey: key(i * 10 + 15), minSequenceNumber: i, maxSequenceNumber: i, level: 0, deleteRowCount: 0 }));
  const options = { 'num-sorted-run.compaction-trigger': '3' };
  const decision = planBucket({ tableKind: 'primary-key', options, files, nowMs: 5, localHour: 1 });
  const request = {
    table_kind: 'primary-key', options,
    files: files.map((f) => ({ file_name: f.name, file_size: f.size, row_count: 0, min_key: hex(f.minKey), max_key: hex(f.maxKey), min_sequence_number: f.minSequenceNumber, max_sequence_number: f.maxSequenceNumber, level: 0, delete_row_count: 0 })),
    context: { now_ms: 5, local_hour: 1 },
  };
  const dir = mkdtempSync(join(tmpdir(), 'pc-js-'));
  const reqPath = join(dir, 'req.json');
  execFileSync('sh', ['-c', `cat > ${reqPath}`], { input: JSON.stringify(request) });
  const nativeSummary = JSON.parse(native(['plan', '--json', reqPath]));
  rmSync(dir, { recursive: true, force: true });
  assert.equal(decision.reason.text, nativeSummary.reason);
  assert.equal(decision.reason.rule, nativeSummary.rule);
  assert.deepEqual(decision.files, nativeSummary.files);
  assert.equal(decision.outputLevel, nativeSummary.output_level);
  assert.equal(decision.reason.rule, 'size-amplification');
});

test('options errors are typed and name the key', () => {
  assert.throws(() => explainOptions('primary-key', { 'compaction.size-ratio': 'lots' }), (e) => {
    assert.ok(e instanceof PaimonCompactError);
    assert.equal(e.kind, 'invalid-option');
    assert.equal(e.details.key, 'compaction.size-ratio');
    return true;
  });
  assert.equal(explainOptions('append', {}).target_file_size, 268435456);
});

function fixtureStorage() {
  const storage = new MemoryStorage();
  const inputs = [];
  for (const name of readdirSync(fixtures).filter((n) => n.endsWith('.parquet')).sort()) {
    const bytes = new Uint8Array(readFileSync(join(fixtures, name)));
    const path = `t/bucket-0/${name}`;
    storage.files.set(path, bytes);
    const index = inputs.length;
    inputs.push({ path, rowCount: 1000, minSequenceNumber: index * 1000, maxSequenceNumber: index * 1000 + 999 });
  }
  return { storage, inputs };
}

test('append files are rewritten through JavaScript storage, the same through a directory as in memory', () => {
  const { storage, inputs } = fixtureStorage();
  assert.ok(inputs.length >= 2, 'fixtures present');
  const events = [];
  const result = compactAppendFiles(storage, { inputs, outputDir: 't/bucket-0', filePrefix: 'data-out-', options: { 'file.compression': 'zstd' }, creationTimeMs: 1 }, { onProgress: (e) => events.push(e) });
  assert.equal(result.outputs.reduce((n, o) => n + o.rowCount, 0), 2000);
  assert.deepEqual(events.map((e) => [e.phase, e.done, e.total]), [['rewrite', 0, 2], ['rewrite', 2, 2]]);
  const out = storage.files.get(result.outputs[0].path);
  assert.equal(Buffer.from(out.subarray(0, 4)).toString(), 'PAR1');
  // The `codec` import: Node's own zstd takes the pages when this Node has it (22.15+) and
  // it is not switched off; otherwise nothing is offered and the component's zstd does the work.
  const nodeZstd = typeof zlib.zstdCompressSync === 'function' && process.env.PAIMON_COMPACT_NATIVE_CODEC !== '0';
  assert.equal(result.metrics.host_codec.offered, nodeZstd);
  assert.equal(result.metrics.host_codec.pages_compressed > 0, nodeZstd);
  assert.equal(result.metrics.host_codec.pages_decompressed > 0, nodeZstd);
  // The same rewrite through a directory gives the same bytes.
  const dir = mkdtempSync(join(tmpdir(), 'pc-js-fs-'));
  const fsStorage = new FsStorage(dir);
  for (const i of inputs) { const w = fsStorage.createWriter(i.path); w.write(storage.files.get(i.path)); w.finish(); }
  const fsResult = compactAppendFiles(fsStorage, { inputs, outputDir: 't/bucket-0', filePrefix: 'data-out-', options: { 'file.compression': 'zstd' }, creationTimeMs: 1 });
  assert.deepEqual(fsResult.outputs, result.outputs);
  assert.deepEqual(new Uint8Array(readFileSync(join(dir, result.outputs[0].path))), out);
  rmSync(dir, { recursive: true, force: true });
});

test('every storage error kind surfaces as a typed io error, and nothing is left behind', () => {
  for (const kind of ['not-found', 'already-exists', 'permission', 'io']) {
    for (const marker of ['data-in-1', 'data-out-']) {
      const { storage, inputs } = fixtureStorage();
      const before = [...storage.files.keys()].sort();
      const failing = new Proxy(storage, {
        get(target, prop) {
          const v = target[prop];
          if (typeof v !== 'function') return v;
          return (...args) => {
            if (typeof args[0] === 'string' && args[0].includes(marker)) throw new StorageError(kind, `injected ${kind}`);
            return v.apply(target, args);
          };
        },
      });
      assert.throws(() => compactAppendFiles(failing, { inputs, outputDir: 't/bucket-0', filePrefix: 'data-out-', creationTimeMs: 1 }), (e) => {
        assert.ok(e instanceof PaimonCompactError, String(e));
        assert.equal(e.kind, 'io', e.message);
        assert.equal(e.details.kind.tag, kind, e.message);
        assert.ok(e.details.path.includes(marker), e.details.path);
        return true;
      });
      assert.deepEqual([...storage.files.keys()].sort(), before, `${kind} at ${marker}: storage unchanged`);
    }
  }
});

test('whole tables: demo tables are planned, compacted into a COMPACT snapshot, and planned again', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pc-js-table-'));
  const storage = new FsStorage(dir);
  const tables = writeDemoTables(storage, '', { nowMs: 1767225600000, seed: 7 });
  assert.equal(tables.length, 3);
  const events = tables.find((t) => t.endsWith('/events'));
  const plan = planTable(storage, events);
  assert.ok(plan.summary.buckets_with_work > 0, JSON.stringify(plan.summary));
  const progress = [];
  const report = compactTable(storage, events, { onProgress: (e) => progress.push(e.phase) });
  assert.equal(report.snapshot_after, report.snapshot_before + 1);
  assert.equal(report.totals.files_removed, plan.summary.files_removed);
  assert.ok(progress.includes('compact'));
  const snapshot = JSON.parse(readFileSync(join(dir, events, 'snapshot', `snapshot-${report.snapshot_after}`), 'utf8'));
  assert.equal(snapshot.commitKind, 'COMPACT');
  assert.equal(planTable(storage, events).summary.buckets_with_work, 0);
  // The native engine reads the table the component committed.
  const nativePlan = JSON.parse(native(['plan', '--json', join(dir, events)]));
  assert.equal(nativePlan.snapshot_id, report.snapshot_after);
  rmSync(dir, { recursive: true, force: true });
});

test('the dedicated job: a write-only table is compacted within its scope, malformed scopes are typed errors', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pc-js-scope-'));
  try {
    const storage = new FsStorage(dir);
    const tables = writeDemoTables(storage, '', { nowMs: 1767225600000, seed: 7 });
    const events = tables.find((t) => t.endsWith('/events'));
    // Writers of this table skip compaction; the job compacts it anyway.
    const schemaPath = join(dir, events, 'schema', 'schema-0');
    const schema = JSON.parse(readFileSync(schemaPath, 'utf8'));
    schema.options['write-only'] = 'true';
    writeFileSync(schemaPath, JSON.stringify(schema));
    const plan = planTable(storage, events);
    assert.equal(plan.not_compactable, null);
    const partitions = [...new Set(plan.buckets.map((b) => b.partition))];
    assert.ok(partitions.length > 1, JSON.stringify(partitions));
    const report = compactTable(storage, events, { partitions: [partitions[0]], tableOptions: { 'write-only': 'true' } });
    assert.equal(report.status, 'complete', JSON.stringify(report));
    assert.equal(report.schema_version, 1);
    assert.deepEqual([...new Set(report.buckets.map((b) => b.partition))], [partitions[0]]);
    assert.equal(report.scope.buckets_outside_partitions, partitions.length - 1);
    assert.ok(report.warnings.some((w) => w.includes('write-only')), JSON.stringify(report.warnings));
    assert.equal(JSON.parse(readFileSync(schemaPath, 'utf8')).options['write-only'], 'true', 'the schema is not changed');
    const before = readdirSync(join(dir, events, 'snapshot')).sort();
    for (const [scope, key] of [[{ where: "kind LIKE 'a%'" }, 'where'], [{ buckets: '0' }, 'buckets'], [{ partitionIdleTime: 'soon' }, 'partition-idle-time'], [{ tableOptions: { bucket: '3' } }, 'bucket']]) {
      assert.throws(() => compactTable(storage, events, scope), (e) => {
        assert.ok(e instanceof PaimonCompactError, String(e));
        assert.equal(e.kind, 'invalid-option', e.message);
        assert.equal(e.details.key, key, e.message);
        return true;
      });
    }
    assert.throws(() => compactTable(storage, events, { strategy: 'most' }), TypeError);
    assert.deepEqual(readdirSync(join(dir, events, 'snapshot')).sort(), before, 'failed jobs commit nothing');
    // The rest, by predicate, with the native engine reading the same scope the same way.
    const rest = partitions.slice(1).map((p) => `'${p.split('=')[1]}'`).join(', ');
    const nativePlan = JSON.parse(native(['plan', '--json', '--where', `dt IN (${rest})`, join(dir, events)]));
    const wasmPlan = planTable(storage, events, { where: `dt IN (${rest})` });
    assert.equal(wasmPlan.summary.buckets_with_work, nativePlan.summary.buckets_with_work);
    assert.equal(wasmPlan.scope.buckets_outside_partitions, 1);
    assert.equal(compactTable(storage, events, { where: `dt IN (${rest})`, strategy: 'full' }).status, 'complete');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('maintenance in Node: the job expires snapshots after its commit, standalone runs dry and for real', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pc-js-maint-'));
  try {
    const storage = new FsStorage(dir);
    const tables = writeDemoTables(storage, '', { nowMs: 1767225600000, seed: 7 });
    const events = tables.find((t) => t.endsWith('/events'));
    const snapshots = () => readdirSync(join(dir, events, 'snapshot')).filter((f) => f.startsWith('snapshot-')).length;
    const before = snapshots();
    assert.ok(before > 3, String(before));
    // Retention overrides for this job only: keep at most three snapshots.
    const keep3 = { 'snapshot.num-retained.min': '1', 'snapshot.num-retained.max': '3' };
    const skipped = compactTable(storage, events, { tableOptions: keep3, skipMaintenance: true });
    assert.equal(skipped.maintenance, undefined);
    assert.equal(snapshots(), before + 1);
    const dry = expireSnapshots(storage, events, { tableOptions: keep3, dryRun: true });
    assert.ok(dry.dry_run && dry.snapshots.expired_snapshots.length > 0, JSON.stringify(dry.snapshots));
    assert.equal(snapshots(), before + 1, 'a dry run changes nothing');
    const real = expireSnapshots(storage, events, { tableOptions: keep3 });
    assert.deepEqual(real.snapshots.expired_snapshots, dry.snapshots.expired_snapshots);
    assert.ok(snapshots() <= 3, String(snapshots()));
    // The native engine still plans the table (every retained file exists).
    const nativePlan = JSON.parse(native(['plan', '--json', join(dir, events)]));
    assert.equal(nativePlan.snapshot_id, skipped.snapshot_after);
    // A stray file older than the threshold goes; the table's own files stay.
    const stray = join(events, 'dt=2026-01-01', 'bucket-0', 'data-stray.parquet');
    const w = storage.createWriter(stray);
    w.write(new Uint8Array([1, 2, 3]));
    w.finish();
    const orphans = removeOrphanFiles(storage, events, { olderThanMs: Date.now() + 1000, nowMs: Date.now() + 2000 });
    assert.deepEqual(orphans.orphans.deleted.filter((p) => p.endsWith('data-stray.parquet')).length, 1, JSON.stringify(orphans.orphans));
    assert.equal(JSON.parse(native(['plan', '--json', join(dir, events)])).snapshot_id, skipped.snapshot_after);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('explainOptions reports what universal compaction decides with', () => {
  const e = explainOptions('primary-key', { 'compaction.max-size-amplification-percent': '150', 'compaction.size-ratio': '3', 'num-sorted-run.compaction-trigger': '4', 'write-only': 'true' });
  assert.equal(e.primary_key.universal.max_size_amplification_percent, 150);
  assert.equal(e.primary_key.universal.size_ratio_percent, 3);
  assert.equal(e.primary_key.universal.sorted_run_trigger, 4);
  assert.equal(e.routing.dedicated_job, 'merge-tree');
  assert.equal(e.routing.writer_skips_compaction, true);
});

test('a table error is typed and nothing is written', () => {
  const storage = new MemoryStorage();
  assert.throws(() => planTable(storage, 'no.db/such_table'), (e) => {
    assert.ok(e instanceof PaimonCompactError, String(e));
    return true;
  });
  assert.equal(storage.files.size, 0);
});

test('FsStorage serves file: URIs only under its external roots, and lists them as URIs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pc-fs-'));
  const ext = mkdtempSync(join(tmpdir(), 'pc-ext-'));
  try {
    const storage = new FsStorage(dir, { externalRoots: [ext] });
    const uri = `file:${ext}/bucket-0/data-1.parquet`;
    const w = storage.createWriter(uri);
    w.write(new Uint8Array([1, 2, 3]));
    w.finish();
    assert.equal(storage.size(`file://${ext}/bucket-0/data-1.parquet`), 3);
    assert.deepEqual(storage.list(`file:${ext}/bucket-0/`).map((o) => o.path), [uri]);
    assert.deepEqual(readdirSync(dir), [], 'nothing lands under the root');
    for (const bad of [`file:${ext}/../x`, 'file:/etc/passwd', 's3://b/k', 'file:relative']) {
      assert.throws(() => storage.size(bad), (e) => e instanceof StorageError && e.kind === 'permission', bad);
    }
    storage.delete(uri);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(ext, { recursive: true, force: true });
  }
});

// Every file under `dir`, relative to it.
function filesUnder(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath ?? e.path, e.name).slice(dir.length + 1))
    .sort();
}

test('fan-out: the CLI plans, Node runs the tasks (one twice), the CLI commits one snapshot', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pc-js-fanout-'));
  try {
    const storage = new FsStorage(dir);
    const tables = writeDemoTables(storage, '', { nowMs: 1767225600000, seed: 11 });
    const orders = tables.find((t) => t.endsWith('/orders'));
    const tableDir = join(dir, orders);
    const rowsBefore = native(['plan', '--json', tableDir]);
    assert.ok(JSON.parse(rowsBefore).summary.buckets_with_work > 1);
    const taskDir = join(dir, 'tasks');
    native(['tasks', tableDir, '--out', taskDir]);
    const taskFiles = readdirSync(taskDir).filter((n) => n.startsWith('task-')).sort();
    assert.ok(taskFiles.length > 1, taskFiles.join());
    let first = null;
    for (const name of taskFiles) {
      const task = JSON.parse(readFileSync(join(taskDir, name), 'utf8'));
      // The CLI's storage is rooted at the table's parent; Node's here at `dir`.
      task.table_path = orders;
      const result = runTask(storage, task);
      if (first === null) {
        first = JSON.parse(result);
        // A second attempt of the same task: its result replaces the first one's file.
        const again = JSON.parse(runTask(storage, task));
        assert.notEqual(again.attempt, first.attempt);
        writeFileSync(join(taskDir, name.replace('task-', 'result-')), JSON.stringify({ ...again, table_uri: tableDir }));
        continue;
      }
      writeFileSync(join(taskDir, name.replace('task-', 'result-')), JSON.stringify({ ...JSON.parse(result), table_uri: tableDir }));
    }
    // Results name written files relative to the table, whatever each host's storage root.
    const job = JSON.parse(readFileSync(join(taskDir, 'job.json'), 'utf8'));
    assert.equal(job.tasks.length, taskFiles.length);
    const report = JSON.parse(native(['commit-tasks', taskDir, '--json']));
    assert.equal(report.snapshot_after, job.planned_on + 1, JSON.stringify(report).slice(0, 400));
    // The unused attempt's files are gone: every file with the job's tag is referenced.
    for (const p of first.written) {
      assert.ok(!filesUnder(tableDir).includes(p), `${p} of the unused attempt is gone`);
    }
    assert.ok(first.written.length > 0);
    assert.equal(JSON.parse(native(['plan', '--json', tableDir])).snapshot_id, job.planned_on + 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('fan-out in Node alone: a missing result is refused, an abort leaves the table as it was', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pc-js-abort-'));
  try {
    const storage = new FsStorage(dir);
    const tables = writeDemoTables(storage, '', { nowMs: 1767225600000, seed: 5 });
    const events = tables.find((t) => t.endsWith('/events'));
    const before = filesUnder(dir);
    const set = planTasks(storage, events);
    assert.ok(set.tasks.length > 0);
    const results = set.tasks.map((t) => runTask(storage, t));
    assert.throws(() => commitTasks(storage, set.json, results.slice(1)), (e) => e instanceof PaimonCompactError && e.kind === 'illegal-state');
    const aborted = abortTasks(storage, set.json, results);
    assert.equal(aborted.failed.length, 0);
    assert.ok(aborted.deleted.length >= results.length);
    assert.deepEqual(filesUnder(dir), before);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
