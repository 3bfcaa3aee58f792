// The asynchronous API (src/async.js): storage whose methods return Promises, through the JSPI
// build where Node has JS Promise Integration and through the synchronous build elsewhere.
// The suite runs under the machine's Node and under Node 24 (CI stage 30), so both bridges
// are exercised on every run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import * as sync from '../src/index.js';
import {
  bridge, jspiAvailable, writeDemoTables, planTable, compactTable, planTasks, runTask,
  commitTasks, expireSnapshots, planBucket, MemoryStorage, StorageError, PaimonCompactError,
} from '../src/async.js';

const here = dirname(fileURLToPath(import.meta.url));
const NOW = 1767225600000;

/**
 * `mem` with every method answering through a Promise that settles on a later turn of the
 * event loop (a real suspension, as S3 makes), under JSPI; `mem` itself on the worker path,
 * whose storage must be synchronous. `fail(op, path)` may throw to inject a failure.
 */
function storageOver(mem, fail = () => {}) {
  const later = () => new Promise((resolve) => setImmediate(resolve));
  const asyncFace = bridge === 'jspi';
  const wrap = (op, fn) => (asyncFace
    ? async (...args) => { await later(); fail(op, args[0]); return fn(...args); }
    : (...args) => { fail(op, args[0]); return fn(...args); });
  return {
    size: wrap('size', (p) => mem.size(p)),
    readRange: wrap('readRange', (p, o, l) => mem.readRange(p, o, l)),
    list: wrap('list', (p) => mem.list(p)),
    createWriter: wrap('createWriter', (p) => {
      const w = mem.createWriter(p);
      return { write: wrap('write', (c) => w.write(c)), finish: wrap('finish', () => w.finish()), abort: wrap('abort', () => w.abort()) };
    }),
    delete: wrap('delete', (p) => mem.delete(p)),
    createIfAbsent: wrap('createIfAbsent', (p, b) => mem.createIfAbsent(p, b)),
  };
}

const dataFileSizes = (mem) => [...mem.files.entries()]
  .filter(([p]) => p.endsWith('.parquet')).map(([, b]) => b.length).sort((a, b) => a - b);

test('the bridge follows the engine: JSPI where WebAssembly.Suspending exists, the worker elsewhere', () => {
  assert.equal(jspiAvailable, typeof WebAssembly.Suspending === 'function');
  assert.equal(bridge, jspiAvailable ? 'jspi' : 'worker');
  const importWith = (value) => {
    try {
      execFileSync(process.execPath, ['-e', "import('./src/async.js').then((m) => console.log(m.bridge))"], {
        cwd: join(here, '..'), env: { ...process.env, PAIMON_COMPACT_NODE_BRIDGE: value }, encoding: 'utf8', stdio: 'pipe',
      });
      return null;
    } catch (e) {
      return e.stderr;
    }
  };
  assert.match(importWith('fibers'), /PAIMON_COMPACT_NODE_BRIDGE must be 'jspi' or 'worker'/);
  assert.equal(importWith('worker'), null);
  if (jspiAvailable) assert.equal(importWith('jspi'), null);
  else assert.match(importWith('jspi'), /has no WebAssembly.Suspending/);
});

test('async API: demo tables are compacted as by the synchronous API, with storage that suspends', async () => {
  const viaSync = new MemoryStorage();
  const viaAsync = new MemoryStorage();
  const tables = sync.writeDemoTables(viaSync, '', { nowMs: NOW, seed: 3 });
  const storage = storageOver(viaAsync);
  assert.deepEqual(await writeDemoTables(storage, '', { nowMs: NOW, seed: 3 }), tables);
  assert.deepEqual(dataFileSizes(viaAsync), dataFileSizes(viaSync));
  for (const table of tables) {
    const plan = await planTable(storage, table, { nowMs: NOW });
    assert.deepEqual(plan.summary, sync.planTable(viaSync, table, { nowMs: NOW }).summary);
    const phases = [];
    const report = await compactTable(storage, table, { nowMs: NOW, onProgress: (e) => phases.push(e.phase) });
    const expected = sync.compactTable(viaSync, table, { nowMs: NOW });
    assert.equal(report.status, 'complete');
    assert.equal(report.snapshot_after, expected.snapshot_after);
    assert.deepEqual(report.totals, expected.totals);
    assert.ok(phases.includes('compact'), phases.join());
  }
  // The data files the two wrote are the same bytes (their names carry each job's id).
  assert.deepEqual(dataFileSizes(viaAsync), dataFileSizes(viaSync));
  // Maintenance goes through the same bridge.
  const expired = await expireSnapshots(storage, tables[0], { tableOptions: { 'snapshot.num-retained.min': '1', 'snapshot.num-retained.max': '1' } });
  assert.deepEqual(expired.snapshots.expired_snapshots, [1, 2, 3, 4, 5, 6], JSON.stringify(expired).slice(0, 300));
  // Calls that never reach storage stay synchronous.
  assert.equal(typeof planBucket({ tableKind: 'primary-key', files: [] }).reason.rule, 'string');
});

test('async API: a storage failure at any call is a typed error and the table is left as it was', async () => {
  const base = new MemoryStorage();
  const [table] = sync.writeDemoTables(base, '', { nowMs: NOW, seed: 4 });
  // Count the storage calls of one job, then fail each k-th of a spread of them.
  let calls = 0;
  const counting = new MemoryStorage(new Map(base.files));
  await compactTable(storageOver(counting, () => { calls += 1; }), table, { nowMs: NOW });
  assert.ok(calls > 20, `${calls} storage calls`);
  let failures = 0;
  for (let k = 1; k <= calls; k += Math.max(1, Math.floor(calls / 25))) {
    const mem = new MemoryStorage(new Map(base.files));
    let n = 0;
    const storage = storageOver(mem, (op, path) => {
      n += 1;
      if (n === k) throw new StorageError('io', `injected at call ${k} (${op} ${path})`);
    });
    const before = [...mem.files.keys()].sort();
    try {
      await compactTable(storage, table, { nowMs: NOW });
    } catch (e) {
      assert.ok(e instanceof PaimonCompactError, `call ${k}: ${e}`);
      assert.ok(['io', 'commit-unknown'].includes(e.kind), `call ${k}: ${e.kind} ${e.message}`);
      if (e.kind === 'io') {
        assert.deepEqual([...mem.files.keys()].sort(), before, `call ${k}: nothing left`);
      }
      failures += 1;
    }
  }
  assert.ok(failures > 10, `${failures} injected failures surfaced`);
});

test('async API: concurrent calls run one after another, each with its own storage', async () => {
  const a = new MemoryStorage();
  const b = new MemoryStorage();
  const [ta] = sync.writeDemoTables(a, '', { nowMs: NOW, seed: 8 });
  const [tb] = sync.writeDemoTables(b, '', { nowMs: NOW, seed: 9 });
  const [ra, rb, pa] = await Promise.all([
    compactTable(storageOver(a), ta, { nowMs: NOW }),
    compactTable(storageOver(b), tb, { nowMs: NOW }),
    planTable(storageOver(a), ta, { nowMs: NOW }),
  ]);
  assert.equal(ra.status, 'complete');
  assert.equal(rb.status, 'complete');
  // The plan ran after the first job had committed.
  assert.equal(pa.snapshot_id, ra.snapshot_after);
  assert.equal(pa.summary.buckets_with_work, 0);
  // Calls made while another is suspended in storage: a job is created and a bucket planned
  // while the first job waits.
  const c = new MemoryStorage();
  const [tc] = sync.writeDemoTables(c, '', { nowMs: NOW, seed: 10 });
  let suspended;
  const waiting = new Promise((resolve) => { suspended = resolve; });
  const slow = storageOver(c, () => suspended());
  const first = compactTable(slow, tc, { nowMs: NOW });
  await waiting;
  assert.equal(planBucket({ tableKind: 'primary-key', files: [] }).reason.rule, 'nothing-to-do');
  const second = planTable(storageOver(b), tb, { nowMs: NOW });
  assert.equal((await first).status, 'complete');
  assert.equal((await second).summary.buckets_with_work, 0);
  // A failing call does not stop the ones queued behind it.
  const results = await Promise.allSettled([
    compactTable(storageOver(a), 'no/such/table', { nowMs: NOW }),
    planTable(storageOver(b), tb, { nowMs: NOW }),
  ]);
  assert.equal(results[0].status, 'rejected');
  assert.ok(results[0].reason instanceof PaimonCompactError);
  assert.equal(results[1].status, 'fulfilled');
});

test('async API: fan-out tasks planned, run and committed through the bridge', async () => {
  const mem = new MemoryStorage();
  const storage = storageOver(mem);
  const tables = await writeDemoTables(storage, '', { nowMs: NOW, seed: 12 });
  const orders = tables.find((t) => t.endsWith('/orders'));
  const set = await planTasks(storage, orders, { nowMs: NOW });
  assert.ok(set.tasks.length > 1);
  const results = [];
  for (const task of set.tasks) results.push(await runTask(storage, task));
  const report = await commitTasks(storage, set.json, results, { nowMs: NOW });
  assert.equal(report.status, 'complete');
  assert.equal((await planTable(storage, orders, { nowMs: NOW })).summary.buckets_with_work, 0);
});

test('the synchronous API refuses a storage that returns Promises, with a typed error that says what to use', () => {
  const mem = new MemoryStorage();
  const [table] = sync.writeDemoTables(mem, '', { nowMs: NOW, seed: 2 });
  const promising = { ...storageOverAlwaysAsync(mem) };
  assert.throws(() => sync.compactTable(promising, table, { nowMs: NOW }), (e) => {
    assert.ok(e instanceof sync.PaimonCompactError, String(e));
    assert.equal(e.kind, 'io');
    assert.match(e.message, /returns Promises.*async\.js/);
    return true;
  });
});

function storageOverAlwaysAsync(mem) {
  return {
    size: async (p) => mem.size(p),
    readRange: async (p, o, l) => mem.readRange(p, o, l),
    list: async (p) => mem.list(p),
    createWriter: async (p) => mem.createWriter(p),
    delete: async (p) => mem.delete(p),
    createIfAbsent: async (p, b) => mem.createIfAbsent(p, b),
  };
}

test('a panic in the component is an internal error carrying its message, its leases are released, and the next call gets a new instance', async () => {
  for (const api of [sync, { compactTable, planBucket }]) {
    const mem = new MemoryStorage();
    const [events, , orders] = sync.writeDemoTables(mem, '', { nowMs: NOW, seed: 6 });
    const storage = api === sync ? mem : storageOver(mem);
    const leases = () => [...mem.files.keys()].filter((p) => p.startsWith(`${orders}/compaction-lease/`));
    // The job panics in its tasks, after it took the partitions' leases (a 10-minute TTL).
    await assert.rejects(
      async () => api.compactTable(storage, orders, { nowMs: NOW, full: true, tableOptions: { 'paimon-compact.fault.panic': 'true' } }),
      (e) => {
        assert.ok(e instanceof PaimonCompactError || e instanceof sync.PaimonCompactError, String(e));
        assert.equal(e.kind, 'internal', e.message);
        assert.match(e.message, /^the component panicked: panicked at src\/rewrite\/writer_settings\.rs:\d+:\d+: fault injection/);
        assert.ok(!e.message.includes('\n'), e.message);
        assert.equal(e.trapped, true);
        // A new instance released the trapped job's leases (WIT `release-leases`).
        assert.ok(Array.isArray(e.cleanedUp) && e.cleanedUp.length > 0, String(e.cleanedUp));
        assert.ok(e.cleanedUp.every((p) => p.startsWith(`${orders}/compaction-lease/`)), String(e.cleanedUp));
        return true;
      },
    );
    assert.deepEqual(leases(), []);
    // The trapped instance is gone; the next calls run on a new one, and the table's next job
    // compacts every partition at once instead of skipping them as leased.
    assert.equal(api.planBucket({ tableKind: 'primary-key', files: [] }).reason.rule, 'nothing-to-do');
    assert.equal((await api.compactTable(storage, events, { nowMs: NOW, full: true })).status, 'complete');
    const next = await api.compactTable(storage, orders, { nowMs: NOW, full: true });
    assert.equal(next.status, 'complete', JSON.stringify(next.skipped));
    assert.deepEqual(next.skipped, []);
  }
});

test('a decoder panic on a corrupt manifest is corrupt-input naming the file, and the table is as it was', async () => {
  for (const api of [sync, { compactTable }]) {
    const mem = new MemoryStorage();
    const [, , orders] = sync.writeDemoTables(mem, '', { nowMs: NOW, seed: 7 });
    const manifest = [...mem.files.keys()].find((p) => p.startsWith(`${orders}/manifest/manifest-`)
      && !p.includes('manifest-list-') && !p.includes('index-manifest-'));
    // A record name in the embedded Avro schema that is not an Avro name: apache-avro panics
    // on it (found by the `avro_metadata` fuzz target); same length, so the header still parses.
    const bytes = Buffer.from(mem.files.get(manifest));
    const at = bytes.indexOf('FILE__KEY_STATS');
    assert.ok(at >= 0, 'the manifest schema names its key statistics record');
    bytes[at + 9] = '-'.charCodeAt(0);
    mem.files.set(manifest, new Uint8Array(bytes));
    const before = [...mem.files.keys()].sort();
    const storage = api === sync ? mem : storageOver(mem);
    await assert.rejects(
      async () => api.compactTable(storage, orders, { nowMs: NOW, full: true }),
      (e) => {
        assert.ok(e instanceof PaimonCompactError || e instanceof sync.PaimonCompactError, String(e));
        assert.equal(e.kind, 'corrupt-input', e.message);
        assert.equal(e.details.file, manifest);
        assert.equal(e.message.split(': ')[0], `corrupt input '${manifest}'`);
        assert.match(e.message, /': the Avro decoder failed on it: panicked at /);
        return true;
      },
    );
    assert.deepEqual([...mem.files.keys()].sort(), before, 'nothing written');
  }
});
