// Storage over S3 (and S3-compatible stores) for Node, with the AWS SDK v3.
//
// The component calls storage synchronously; the SDK is asynchronous. Two bridges join them
// (docs: the README's "Node and S3: two bridges"):
// - the worker bridge, on every Node this package supports: a worker thread owns an SDK
//   client; each call posts a request to it and blocks on `Atomics.wait` until the worker has
//   answered on a message port, then takes the answer with `receiveMessageOnPort`. These are
//   this class's own (synchronous) methods, which the synchronous API (index.js) calls.
// - the JSPI bridge, where WebAssembly has JS Promise Integration: the component is suspended
//   while an SDK call in the main thread runs. That is `storage.async`, the same storage with
//   Promise-returning methods, which the async API (async.js) calls.
//
// Each operation (and the multipart writer) is written once, as a generator that yields the
// S3 requests it needs; the bridges differ only in how they run a request.
import { Worker, MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { StorageError } from './storage.js';
import { s3Ops } from './s3-ops.js';

/** Bytes a writer buffers before it uses a multipart upload, and the size of each part. */
const PART_SIZE = 10 * 1024 * 1024;

/** Runs a request generator to its end, each request answered synchronously by `call`. */
function runSync(steps, call) {
  let step = steps.next();
  while (!step.done) {
    let answer;
    try {
      answer = call(...step.value);
    } catch (e) {
      step = steps.throw(e);
      continue;
    }
    step = steps.next(answer);
  }
  return step.value;
}

/** Runs a request generator to its end, each request answered by the Promise of `call`. */
async function runAsync(steps, call) {
  let step = steps.next();
  while (!step.done) {
    let answer;
    try {
      answer = await call(...step.value);
    } catch (e) {
      step = steps.throw(e);
      continue;
    }
    step = steps.next(answer);
  }
  return step.value;
}

/**
 * A file being uploaded: holds at most one part (10 MiB); a file that fits is one PUT, a larger
 * one a multipart upload whose parts go up as they fill, aborted by `abort` or a failed part.
 * Its methods are request generators.
 */
class Upload {
  #key;
  #chunks = [];
  #buffered = 0;
  #uploadId = null;
  #etags = [];
  #size = 0;

  constructor(key) {
    this.#key = key;
  }

  *write(chunk) {
    this.#chunks.push(Uint8Array.from(chunk));
    this.#buffered += chunk.length;
    this.#size += chunk.length;
    if (this.#buffered >= PART_SIZE) yield* this.#sendPart();
  }

  *finish() {
    const key = this.#key;
    if (this.#uploadId === null) {
      yield ['put', { key, body: Buffer.concat(this.#chunks, this.#buffered) }];
      return this.#size;
    }
    if (this.#buffered > 0) yield* this.#sendPart();
    try {
      yield ['uploadComplete', { key, uploadId: this.#uploadId, etags: this.#etags }];
    } catch (e) {
      yield* this.#abortQuietly();
      throw e;
    }
    return this.#size;
  }

  *abort() {
    this.#chunks = [];
    yield* this.#abortUpload();
  }

  *#sendPart() {
    const key = this.#key;
    const body = Buffer.concat(this.#chunks, this.#buffered);
    this.#chunks = [];
    this.#buffered = 0;
    try {
      if (this.#uploadId === null) this.#uploadId = yield ['uploadStart', { key }];
      this.#etags.push(yield ['uploadPart', { key, uploadId: this.#uploadId, partNumber: this.#etags.length + 1, body }]);
    } catch (e) {
      yield* this.#abortQuietly();
      throw e;
    }
  }

  *#abortUpload() {
    if (this.#uploadId !== null) {
      const uploadId = this.#uploadId;
      this.#uploadId = null;
      yield ['uploadAbort', { key: this.#key, uploadId }];
    }
  }

  // After a failure, the first failure is the one to report.
  *#abortQuietly() {
    try {
      yield* this.#abortUpload();
    } catch { /* reported: the failure that led here */ }
  }
}

/**
 * A table's storage in an S3 bucket: paths are keys under `prefix` (the table's parent, for
 * example `warehouse/db.db`). `client` is the S3 client's configuration (`region`,
 * `endpoint`, `credentials`, `forcePathStyle`, ...); without one, the SDK reads the standard
 * AWS environment. `createIfAbsent` is a conditional put (`If-None-Match: *`).
 *
 * The methods are synchronous (the worker bridge, started on first use); `async` is the same
 * storage with Promise-returning methods (the JSPI bridge, in this thread).
 */
export class S3Storage {
  #config;
  #prefix;
  #worker = null;
  #port = null;
  #signal = null;
  #direct = null;
  #async = null;

  constructor({ bucket, prefix = '', client = {} }) {
    if (!bucket) throw new TypeError('S3Storage needs a bucket');
    this.bucket = bucket;
    this.#prefix = prefix.replace(/^\/+|\/+$/g, '');
    this.#config = { bucket, client };
  }

  /** Stops the worker, if one was started; the synchronous methods cannot be used afterwards. */
  close() {
    const worker = this.#worker;
    this.#worker = null;
    return worker ? worker.terminate() : Promise.resolve(0);
  }

  /** Requests made so far through both bridges, by kind (`get`, `head`, `put`, `list`, `delete`). */
  requests() {
    const total = { get: 0, head: 0, put: 0, list: 0, delete: 0 };
    const add = (c) => { for (const k of Object.keys(total)) total[k] += c[k] ?? 0; };
    if (this.#worker) add(this.#callWorker('counts', {}));
    if (this.#direct) add(this.#direct.counts);
    return total;
  }

  /** Which bridges this storage has used so far: a subset of `['worker', 'jspi']`. */
  bridgesUsed() {
    return [...(this.#worker ? ['worker'] : []), ...(this.#direct ? ['jspi'] : [])];
  }

  size(p) {
    return this.#sync(this.#sizeSteps(p));
  }

  readRange(p, offset, len) {
    return this.#sync(this.#readRangeSteps(p, offset, len));
  }

  list(prefix) {
    return this.#sync(this.#listSteps(prefix));
  }

  createWriter(p) {
    const upload = new Upload(this.#key(p));
    return {
      write: (chunk) => this.#sync(upload.write(chunk)),
      finish: () => this.#sync(upload.finish()),
      abort: () => this.#sync(upload.abort()),
    };
  }

  delete(p) {
    this.#sync(this.#deleteSteps(p));
  }

  createIfAbsent(p, bytes) {
    this.#sync(this.#createIfAbsentSteps(p, bytes));
  }

  /** The same storage with Promise-returning methods (the JSPI bridge). */
  get async() {
    if (!this.#async) {
      const run = (steps) => this.#runDirect(steps);
      this.#async = {
        size: (p) => run(this.#sizeSteps(p)),
        readRange: (p, offset, len) => run(this.#readRangeSteps(p, offset, len)),
        list: (prefix) => run(this.#listSteps(prefix)),
        createWriter: (p) => {
          const upload = new Upload(this.#key(p));
          return {
            write: (chunk) => run(upload.write(chunk)),
            finish: () => run(upload.finish()),
            abort: () => run(upload.abort()),
          };
        },
        delete: (p) => run(this.#deleteSteps(p)).then(() => undefined),
        createIfAbsent: (p, bytes) => run(this.#createIfAbsentSteps(p, bytes)).then(() => undefined),
      };
    }
    return this.#async;
  }

  *#sizeSteps(p) {
    return yield ['size', { key: this.#key(p) }];
  }

  *#readRangeSteps(p, offset, len) {
    return yield ['readRange', { key: this.#key(p), offset, len }];
  }

  *#listSteps(prefix) {
    const root = this.#prefix ? `${this.#prefix}/` : '';
    const found = yield ['list', { prefix: root + prefix }];
    return found
      .map((o) => ({ path: o.key.slice(root.length), size: o.size, modifiedMs: o.modifiedMs }))
      .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  *#deleteSteps(p) {
    yield ['delete', { key: this.#key(p) }];
  }

  *#createIfAbsentSteps(p, bytes) {
    yield ['createIfAbsent', { key: this.#key(p), body: Uint8Array.from(bytes) }];
  }

  #key(p) {
    if (!p || p.startsWith('/') || p.split('/').some((s) => s === '' || s === '.' || s === '..')) {
      throw new StorageError('permission', `${p}: paths must be relative and stay inside the storage root`);
    }
    return this.#prefix ? `${this.#prefix}/${p}` : p;
  }

  #sync(steps) {
    return runSync(steps, (op, args) => this.#callWorker(op, args));
  }

  #runDirect(steps) {
    this.#direct ??= s3Ops(this.#config);
    const direct = this.#direct;
    return runAsync(steps, async (op, args) => {
      try {
        return await direct.run(op, args);
      } catch (e) {
        throw new StorageError(e?.kind ?? 'io', e?.message ?? String(e));
      }
    });
  }

  #callWorker(op, args) {
    if (!this.#worker) {
      const { port1, port2 } = new MessageChannel();
      this.#port = port1;
      this.#signal = new Int32Array(new SharedArrayBuffer(4));
      this.#worker = new Worker(new URL('./s3-worker.js', import.meta.url), {
        workerData: { port: port2, signal: this.#signal.buffer, config: this.#config },
        transferList: [port2],
      });
      // The worker must not keep a finished script alive.
      this.#worker.unref();
    }
    Atomics.store(this.#signal, 0, 0);
    this.#worker.postMessage({ op, args });
    Atomics.wait(this.#signal, 0, 0);
    const got = receiveMessageOnPort(this.#port);
    if (!got) throw new StorageError('io', `${op}: the S3 worker did not answer`);
    const { value, error } = got.message;
    if (error) throw new StorageError(error.kind, error.message);
    return value;
  }
}
