// paimon-compact for Node, asynchronous: the same functions as index.js, each of those that
// reach storage returning a Promise, for storage whose methods return Promises (S3 through
// the AWS SDK, or any object with the Storage methods).
//
// Two bridges join the asynchronous storage to the component, which calls storage
// synchronously (the README's "Node and S3: two bridges" has the measurements):
// - 'jspi', where WebAssembly has JS Promise Integration (`WebAssembly.Suspending`; Node 24
//   and later): the JSPI build (dist-jspi) suspends the component while a storage Promise
//   settles, all in this thread. An S3Storage is used through `storage.async`.
// - 'worker' elsewhere (Node 20 and 22): the synchronous build, with the storage's own
//   synchronous methods; S3Storage's run its requests in a worker thread and block on
//   Atomics.wait. A storage here must have synchronous methods.
// `PAIMON_COMPACT_NODE_BRIDGE=worker|jspi` overrides the choice (benchmarks, tests).
//
// One component instance serves every call, so calls run one after another in the order they
// were made; run more processes or worker threads for parallel jobs.
import { makeApi, componentError } from './api.js';
import { useProgress } from './progress-bridge.js';
import { instances } from './instance.js';

export { FsStorage, MemoryStorage, StorageError } from './storage.js';
export { S3Storage } from './s3-storage.js';
export { PaimonCompactError } from './api.js';

/** Whether this Node has JS Promise Integration. */
export const jspiAvailable = typeof WebAssembly.Suspending === 'function' && typeof WebAssembly.promising === 'function';

function chooseBridge() {
  const forced = process.env.PAIMON_COMPACT_NODE_BRIDGE;
  if (forced === undefined || forced === '') return jspiAvailable ? 'jspi' : 'worker';
  if (forced !== 'jspi' && forced !== 'worker') {
    throw new TypeError(`PAIMON_COMPACT_NODE_BRIDGE must be 'jspi' or 'worker', not '${forced}'`);
  }
  if (forced === 'jspi' && !jspiAvailable) {
    throw new TypeError(`PAIMON_COMPACT_NODE_BRIDGE=jspi, but Node ${process.version} has no WebAssembly.Suspending`);
  }
  return forced;
}

/** The bridge this process uses: 'jspi' or 'worker'. */
export const bridge = chooseBridge();

const dist = bridge === 'jspi' ? '../dist-jspi/' : '../dist/';
const build = await import(`${dist}paimon_compact.js`);
const storageBridge = await import(bridge === 'jspi' ? './storage-bridge-jspi.js' : './storage-bridge.js');
const { useStorage } = storageBridge;
const component = instances(new URL(dist, import.meta.url), storageBridge, build);

// The storage face each bridge calls: S3Storage's Promise methods under JSPI, its own
// (synchronous) methods otherwise.
const face = (storage) => (bridge === 'jspi' && storage?.async ? storage.async : storage);

let tail = Promise.resolve();

/** Runs one component call after the calls made before it, with `storage` bound. */
function call(storage, onProgress, fn, map = (r) => r) {
  const run = tail.then(async () => {
    useStorage(face(storage));
    useProgress(onProgress ?? null);
    let value;
    try {
      value = await fn();
    } catch (e) {
      throw componentError(e, component);
    } finally {
      useStorage(null);
      useProgress(null);
    }
    return map(value);
  });
  tail = run.catch(() => {});
  return run;
}

export const {
  runConformance, planBucket, explainOptions, compactAppendFiles,
  expireSnapshots, expireChangelogs, expirePartitions, expireTags, removeOrphanFiles,
  planTable, compactTable, planTasks, runTask, commitTasks, abortTasks, renewLeases,
  writeDemoTables,
} = makeApi(component, call);
