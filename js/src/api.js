// The JavaScript API of paimon-compact, defined once over a transpiled component: index.js
// binds it synchronously (sync storage, the worker bridge for S3), async.js asynchronously
// (storage whose methods may return Promises, the JSPI bridge where Node has it).
import { randomBytes } from 'node:crypto';
import { takePanic } from './progress-bridge.js';

/**
 * An error from the component; `kind` is the WIT error case (`invalid-option`,
 * `not-compactable`, `corrupt-input`, `io`, `commit-unknown`, `conflict`, `unsupported`,
 * `illegal-state`, `internal`), `details` its payload. Branch on `kind`, never on the message:
 * after `commit-unknown` the snapshot may exist, so the job's files must stay.
 */
export class PaimonCompactError extends Error {
  constructor(payload) {
    const val = payload?.val;
    const message = typeof val === 'string' ? val : val?.message ?? JSON.stringify(payload);
    super(message);
    this.kind = payload?.tag ?? 'unknown';
    this.details = val;
  }
}

/**
 * The error a component call threw: the WIT `error` as a PaimonCompactError; a trap after the
 * component reported a panic as the `internal` PaimonCompactError carrying the panic's message,
 * or as `corrupt-input` of the file a decoder was reading when it panicked (and, for any trap,
 * `component` is reset).
 */
export function componentError(e, component) {
  if (e && typeof e === 'object' && 'payload' in e) return new PaimonCompactError(e.payload);
  // Anything else escaped the component's own error handling: a trap. That instance can never
  // be entered again, so the next call makes a new one.
  component?.reset();
  const panic = takePanic();
  let err = e;
  // A panic inside a decoder reading a file is about that file (WIT `progress.panicked`).
  if (panic?.decoding != null) {
    const message = `corrupt input '${panic.decoding}': ${panic.message}`;
    err = new PaimonCompactError({ tag: 'corrupt-input', val: { file: panic.decoding, message } });
  } else if (panic !== null) {
    err = new PaimonCompactError({ tag: 'internal', val: `the component panicked: ${panic.message}` });
  }
  // The call did not end by itself: whatever it had taken (a job's leases) is still held.
  if (err && typeof err === 'object') err.trapped = true;
  return err;
}

/**
 * Runs `first` (a component call: its value, or a Promise of it); when it throws or rejects
 * with a trapped error (`componentError`), runs `cleanup` (another call, on a new instance)
 * before the error goes on, with what `cleanup` returned as `error.cleanedUp`. A cleanup that
 * fails leaves the error as it was: the caller learns of the trap, not of its clean-up.
 */
function afterTrap(first, cleanup) {
  const rethrow = (e) => {
    if (!e?.trapped) throw e;
    let done;
    try {
      done = cleanup();
    } catch {
      throw e;
    }
    if (done && typeof done.then === 'function') {
      return done.then((v) => { e.cleanedUp = v; throw e; }, () => { throw e; });
    }
    e.cleanedUp = done;
    throw e;
  };
  let result;
  try {
    result = first();
  } catch (e) {
    return rethrow(e);
  }
  return result && typeof result.then === 'function' ? result.catch(rethrow) : result;
}

/** Calls `fn` on `component`, rethrowing its errors as PaimonCompactError. */
export function unwrap(fn, component) {
  try {
    return fn();
  } catch (e) {
    throw componentError(e, component);
  }
}

const toOptions = (options = {}) => Object.entries(options).map(([k, v]) => [k, String(v)]);

// The job's scope as the WIT `job-scope` record: the component parses and checks every part
// against the table, so the texts go over as the caller wrote them.
function jobScope({ partitions = [], where, partitionIdleTime, buckets, tableOptions = {} } = {}) {
  const text = (v) => (v === undefined || v === null ? undefined : String(v));
  return {
    partitions: partitions.map(String),
    whereClause: text(where),
    partitionIdleTime: text(partitionIdleTime),
    buckets: text(buckets),
    options: Object.entries(tableOptions).map(([k, v]) => [String(k), String(v)]),
  };
}

// The host's offset from UTC at `nowMs` (JavaScript's Date knows the zone).
function utcOffsetMs(nowMs) {
  return -new Date(nowMs).getTimezoneOffset() * 60 * 1000;
}

function jobSettings({ full = false, strategy, nowMs = Date.now(), localHour = new Date(nowMs).getHours(), owner = `paimon-compact-node@${process.pid}`, leaseTtlMs = 10 * 60 * 1000, maxCommitRetries = 10, skipMaintenance = false, ...scope } = {}) {
  if (strategy !== undefined && strategy !== 'full' && strategy !== 'minor') {
    throw new TypeError(`strategy must be 'full' or 'minor', not '${strategy}'`);
  }
  if (full && strategy === 'minor') throw new TypeError("full: true and strategy: 'minor' contradict each other");
  return {
    full: Boolean(full) || strategy === 'full',
    nowMs: BigInt(nowMs),
    localHour,
    jobId: new Uint8Array(randomBytes(16)),
    owner,
    leaseTtlMs: leaseTtlMs === null ? undefined : BigInt(leaseTtlMs),
    maxCommitRetries,
    scope: jobScope(scope),
    skipMaintenance: Boolean(skipMaintenance),
    utcOffsetMs: BigInt(utcOffsetMs(nowMs)),
  };
}

const jsonText = (v) => (typeof v === 'string' ? v : JSON.stringify(v));

/**
 * The API over one transpiled component: `component.current()` is its live instance
 * (src/instance.js). `call(storage, onProgress, fn, map)` runs a component call `fn` with
 * `storage` and `onProgress` bound to the imports and returns `map` of its result: the value
 * itself in the synchronous API (index.js), a Promise in the asynchronous one (async.js).
 * Everything else, from the request shapes to the reports, is this one definition.
 */
export function makeApi(component, call) {
  const x = () => component.current();
  const newJob = (tablePath, settings) => new (x().tableCompactor.CompactionJob)(tablePath, settings);
  /** Runs a conformance vectors file (JSON text); `flavor` is 'java' (default) or 'cpp'. */
  function runConformance(vectorsJson, { flavor = 'java' } = {}) {
    const r = unwrap(() => x().planner.runConformance(vectorsJson, flavor), component);
    return { passed: r.passed, failed: r.failed, skipped: r.skipped, failures: r.failures, text: r.text };
  }

  /** Plans one bucket. See index.d.ts for the request and decision shapes. */
  function planBucket(request) {
    const req = {
      tableKind: request.tableKind ?? 'primary-key',
      flavor: request.flavor ?? 'java',
      options: toOptions(request.options),
      files: (request.files ?? []).map((f) => ({
        name: f.name,
        size: BigInt(f.size),
        rowCount: BigInt(f.rowCount ?? 0),
        minKey: Uint8Array.from(f.minKey ?? []),
        maxKey: Uint8Array.from(f.maxKey ?? []),
        minSequenceNumber: BigInt(f.minSequenceNumber ?? 0),
        maxSequenceNumber: BigInt(f.maxSequenceNumber ?? 0),
        level: f.level ?? 0,
        deleteRowCount: f.deleteRowCount === undefined || f.deleteRowCount === null ? undefined : BigInt(f.deleteRowCount),
        creationTimeMs: BigInt(f.creationTimeMs ?? 0),
        hasDeletionVector: Boolean(f.hasDeletionVector),
      })),
      full: Boolean(request.full),
      nowMs: BigInt(request.nowMs ?? 0),
      localHour: request.localHour ?? 0,
      role: request.role ?? 'dedicated-job',
      state: request.state
        ? { lastFullCompactionMs: request.state.lastFullCompactionMs == null ? undefined : BigInt(request.state.lastFullCompactionMs), gentleCounter: request.state.gentleCounter ?? 0 }
        : undefined,
    };
    const d = unwrap(() => x().planner.planBucket(req), component);
    return {
      files: d.files,
      outputLevel: d.outputLevel,
      dropDelete: d.dropDelete,
      actions: d.actions.map((a) => (a.tag === 'upgrade' ? { op: 'upgrade', file: a.val[0], toLevel: a.val[1] } : { op: 'rewrite', outputLevel: a.val.outputLevel, sections: a.val.sections, alone: a.val.alone })),
      released: d.released,
      reason: { rule: d.reason.rule, text: d.reason.text, details: JSON.parse(d.reason.detailsJson) },
      writeStall: d.writeStall,
      state: d.state ? { lastFullCompactionMs: d.state.lastFullCompactionMs === undefined ? null : Number(d.state.lastFullCompactionMs), gentleCounter: d.state.gentleCounter } : null,
    };
  }

  /** The options as the planner reads them (defaults and derivations applied). */
  function explainOptions(tableKind, options, { flavor = 'java' } = {}) {
    return JSON.parse(unwrap(() => x().planner.explainOptions(tableKind, flavor, toOptions(options)), component));
  }

  /**
   * Rewrites append-table Parquet files through `storage` (FsStorage, MemoryStorage, or any
   * object with the same methods). On error nothing is left behind and the inputs are untouched.
   */
  function compactAppendFiles(storage, request, { onProgress } = {}) {
    const req = {
      inputs: request.inputs.map((f) => ({
        path: f.path,
        rowCount: BigInt(f.rowCount),
        minSequenceNumber: BigInt(f.minSequenceNumber),
        maxSequenceNumber: BigInt(f.maxSequenceNumber),
        deletedRows: f.deletedRows ? BigUint64Array.from(f.deletedRows.map(BigInt)) : undefined,
      })),
      outputDir: request.outputDir,
      filePrefix: request.filePrefix,
      options: toOptions(request.options),
      creationTimeMs: BigInt(request.creationTimeMs ?? Date.now()),
    };
    return call(storage, onProgress, () => x().compactor.compactAppendFiles(req), (r) => ({
      outputs: r.outputs.map((o) => ({ path: o.path, size: Number(o.size), rowCount: Number(o.rowCount), minSequenceNumber: Number(o.minSequenceNumber), maxSequenceNumber: Number(o.maxSequenceNumber), level: o.level })),
      requeueLast: r.requeueLast,
      metrics: JSON.parse(r.metrics),
    }));
  }

  // One maintenance task through the WIT `table-maintenance.run`; the report as an object.
  function maintain(storage, tablePath, task, { dryRun = false, tableOptions = {}, olderThanMs, nowMs = Date.now() } = {}) {
    const settings = {
      nowMs: BigInt(nowMs),
      utcOffsetMs: BigInt(utcOffsetMs(nowMs)),
      dryRun: Boolean(dryRun),
      jobId: new Uint8Array(randomBytes(16)),
      options: Object.entries(tableOptions).map(([k, v]) => [String(k), String(v)]),
      olderThanMs: olderThanMs === undefined || olderThanMs === null ? undefined : BigInt(olderThanMs),
    };
    return call(storage, null, () => x().tableMaintenance.run(tablePath, task, settings), JSON.parse);
  }

  // Task JSON as the CLI writes it carries `table_uri` too; the component ignores it.

  /** Expires old snapshots (the table's `snapshot.*` options, overridable in `tableOptions`). */
  function expireSnapshots(storage, tablePath, options = {}) {
    return maintain(storage, tablePath, 'expire-snapshots', options);
  }

  /** Expires long-lived changelogs (`changelog.*`). */
  function expireChangelogs(storage, tablePath, options = {}) {
    return maintain(storage, tablePath, 'expire-changelogs', options);
  }

  /** Drops expired partitions with an OVERWRITE snapshot (`partition.*`). */
  function expirePartitions(storage, tablePath, options = {}) {
    return maintain(storage, tablePath, 'expire-partitions', options);
  }

  /** Deletes tags whose retention has passed. */
  function expireTags(storage, tablePath, options = {}) {
    return maintain(storage, tablePath, 'expire-tags', options);
  }

  /**
   * Deletes files no snapshot, tag, branch or changelog references, last modified before
   * `olderThanMs` (epoch ms; default one day ago).
   */
  function removeOrphanFiles(storage, tablePath, options = {}) {
    return maintain(storage, tablePath, 'remove-orphan-files', options);
  }

  /**
   * Plans a whole table (`tablePath` relative to the storage root): every partition and bucket,
   * with the planner's reason. Reads only.
   */
  function planTable(storage, tablePath, options = {}) {
    const settings = jobSettings(options);
    const job = () => newJob(tablePath, settings);
    return call(storage, null, () => job().plan(), (r) => JSON.parse(r.json));
  }

  /**
   * Compacts a whole table and commits a COMPACT snapshot; returns the job's metrics. On any
   * failure before the snapshot exists, every file the job wrote is deleted. A trap (a panic,
   * the guest's memory exhausted) ends the call before the job could clean up: a new instance
   * then releases the job's partition leases (WIT `release-leases`; the released lease objects
   * are the error's `cleanedUp`), so the next job need not wait out their TTL; the files the
   * job wrote are left to `removeOrphanFiles`.
   */
  function compactTable(storage, tablePath, options = {}) {
    const settings = jobSettings(options);
    const job = () => newJob(tablePath, settings);
    return afterTrap(
      () => call(storage, options.onProgress, () => job().run(), (r) => JSON.parse(r.json)),
      () => call(storage, null, () => job().releaseLeases()),
    );
  }

  /**
   * Fan-out, step 1 (docs/fanout.md): plans the job on the table at `tablePath` and takes its
   * partitions' leases; returns `{ jobId, json, tasks }`: the task set as JSON (keep it for
   * `commitTasks` / `abortTasks`) and each task as JSON, self-contained, runnable by `runTask`
   * in any process (Node, the CLI's `run-task`) with the same storage.
   */
  function planTasks(storage, tablePath, options = {}) {
    const settings = jobSettings(options);
    const job = () => newJob(tablePath, settings);
    return call(storage, null, () => job().planTasks(), (set) => ({ jobId: set.jobId, json: set.json, tasks: set.tasks }));
  }

  /**
   * Fan-out, step 2: runs one task (its JSON text or object) as a new attempt (16 random bytes;
   * a retry is another attempt and never overwrites the first's files). Writes only new files;
   * returns the result as JSON text for `commitTasks`.
   */
  function runTask(storage, task, { onProgress, attempt } = {}) {
    const text = jsonText(task);
    const tablePath = JSON.parse(text).table_path;
    const settings = jobSettings({});
    const job = () => newJob(tablePath, settings);
    const bytes = attempt ?? new Uint8Array(randomBytes(16));
    return call(storage, onProgress, () => job().runTask(text, bytes));
  }

  /**
   * Fan-out, step 3: commits one result per task (the first given for each) as one COMPACT
   * snapshot, deletes the other attempts' files, releases the leases and runs the maintenance
   * (unless `skipMaintenance`). Returns the job's report.
   */
  function commitTasks(storage, taskSet, results, options = {}) {
    const set = jsonText(taskSet);
    const tablePath = JSON.parse(set).table_path;
    const settings = jobSettings(options);
    const job = () => newJob(tablePath, settings);
    const commitOptions = {
      rewriteMs: options.rewriteMs === undefined ? undefined : BigInt(options.rewriteMs),
      allOrNothing: Boolean(options.allOrNothing),
    };
    return call(storage, options.onProgress, () => job().commitTasks(set, results.map(jsonText), commitOptions), (r) => JSON.parse(r.json));
  }

  /** Fan-out: aborts the job, deleting everything its tasks wrote; returns what was deleted. */
  function abortTasks(storage, taskSet, results = []) {
    const set = jsonText(taskSet);
    const settings = jobSettings({});
    const job = () => newJob(JSON.parse(set).table_path, settings);
    return call(storage, null, () => job().abortTasks(set, results.map(jsonText)), JSON.parse);
  }

  /** Fan-out: renews the job's leases for `ttlMs` from now; returns the new task set JSON. */
  function renewLeases(storage, taskSet, ttlMs = 10 * 60 * 1000, nowMs = Date.now()) {
    const set = jsonText(taskSet);
    const settings = jobSettings({});
    const job = () => newJob(JSON.parse(set).table_path, settings);
    return call(storage, null, () => job().renewLeases(set, BigInt(nowMs), BigInt(ttlMs)));
  }

  /** Writes the built-in demo tables under `root`; returns their paths. */
  function writeDemoTables(storage, root = '', { nowMs = Date.now(), seed = 42 } = {}) {
    return call(storage, null, () => x().tableCompactor.writeDemoTables(root, BigInt(nowMs), BigInt(seed)));
  }
  return { runConformance, planBucket, explainOptions, compactAppendFiles, expireSnapshots, expireChangelogs, expirePartitions, expireTags, removeOrphanFiles, planTable, compactTable, planTasks, runTask, commitTasks, abortTasks, renewLeases, writeDemoTables };
}
