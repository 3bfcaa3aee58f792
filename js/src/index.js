// paimon-compact for Node, synchronous: the WebAssembly component (transpiled by jco into
// ../dist) with storage supplied by JavaScript objects whose methods return their results
// (FsStorage, MemoryStorage, S3Storage through its worker bridge). The asynchronous API, for
// storage that returns Promises, is async.js.
import * as build from '../dist/paimon_compact.js';
import * as storageBridge from './storage-bridge.js';
import { useProgress } from './progress-bridge.js';
import { instances } from './instance.js';
import { makeApi, unwrap } from './api.js';

export { FsStorage, MemoryStorage, StorageError } from './storage.js';
export { S3Storage } from './s3-storage.js';
export { PaimonCompactError } from './api.js';

const component = instances(new URL('../dist/', import.meta.url), storageBridge, build);

/** Runs one component call with `storage` (and a progress listener) bound to its imports. */
function call(storage, onProgress, fn, map = (r) => r) {
  storageBridge.useStorage(storage);
  useProgress(onProgress ?? null);
  try {
    return map(unwrap(fn, component));
  } finally {
    storageBridge.useStorage(null);
    useProgress(null);
  }
}

export const {
  runConformance, planBucket, explainOptions, compactAppendFiles,
  expireSnapshots, expireChangelogs, expirePartitions, expireTags, removeOrphanFiles,
  planTable, compactTable, planTasks, runTask, commitTasks, abortTasks, renewLeases,
  writeDemoTables,
} = makeApi(component, call);
