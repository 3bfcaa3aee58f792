// Storage over S3 (and S3-compatible stores) for Node, with the AWS SDK v3.
//
// The component calls storage synchronously; the SDK is asynchronous. The bridge is a worker
// thread that owns the SDK client: each call posts a request to it and blocks on
// `Atomics.wait` until the worker has answered on a message port, then takes the answer with
// `receiveMessageOnPort`. This works on every Node version this package supports (20+), in
// Lambda-style handlers and plain scripts alike.
import { Worker, MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { StorageError } from './storage.js';

/** Bytes a writer buffers before it uses a multipart upload, and the size of each part. */
const PART_SIZE = 10 * 1024 * 1024;

/**
 * A table's storage in an S3 bucket: paths are keys under `prefix` (the table's parent, for
 * example `warehouse/db.db`). `client` is the S3 client's configuration (`region`,
 * `endpoint`, `credentials`, `forcePathStyle`, ...); without one, the SDK reads the standard
 * AWS environment. `createIfAbsent` is a conditional put (`If-None-Match: *`).
 */
export class S3Storage {
  #worker;
  #port;
  #signal;
  #prefix;

  constructor({ bucket, prefix = '', client = {} }) {
    if (!bucket) throw new TypeError('S3Storage needs a bucket');
    this.bucket = bucket;
    this.#prefix = prefix.replace(/^\/+|\/+$/g, '');
    const { port1, port2 } = new MessageChannel();
    this.#port = port1;
    this.#signal = new Int32Array(new SharedArrayBuffer(4));
    this.#worker = new Worker(new URL('./s3-worker.js', import.meta.url), {
      workerData: { port: port2, signal: this.#signal.buffer, config: { bucket, client } },
      transferList: [port2],
    });
    // The worker must not keep a finished script alive.
    this.#worker.unref();
  }

  /** Stops the worker; the storage cannot be used afterwards. */
  close() {
    return this.#worker.terminate();
  }

  /** Requests made so far, by kind (`get`, `head`, `put`, `list`, `delete`). */
  requests() {
    return this.#call('counts', {});
  }

  #key(p) {
    if (!p || p.startsWith('/') || p.split('/').some((s) => s === '' || s === '.' || s === '..')) {
      throw new StorageError('permission', `${p}: paths must be relative and stay inside the storage root`);
    }
    return this.#prefix ? `${this.#prefix}/${p}` : p;
  }

  #call(op, args) {
    Atomics.store(this.#signal, 0, 0);
    this.#worker.postMessage({ op, args });
    Atomics.wait(this.#signal, 0, 0);
    const got = receiveMessageOnPort(this.#port);
    if (!got) throw new StorageError('io', `${op}: the S3 worker did not answer`);
    const { value, error } = got.message;
    if (error) throw new StorageError(error.kind, error.message);
    return value;
  }

  size(p) {
    return this.#call('size', { key: this.#key(p) });
  }

  readRange(p, offset, len) {
    return this.#call('readRange', { key: this.#key(p), offset, len });
  }

  list(prefix) {
    const root = this.#prefix ? `${this.#prefix}/` : '';
    return this.#call('list', { prefix: root + prefix })
      .map((o) => ({ path: o.key.slice(root.length), size: o.size, modifiedMs: o.modifiedMs }))
      .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  /**
   * A writer that holds at most one part (10 MiB): a file that fits is one PUT, a larger one a
   * multipart upload whose parts go up as they fill, aborted by `abort` or a failed part.
   */
  createWriter(p) {
    const key = this.#key(p);
    let chunks = [];
    let buffered = 0;
    let uploadId = null;
    const etags = [];
    let size = 0;
    const call = (op, args) => this.#call(op, args);
    const abortUpload = () => {
      if (uploadId !== null) {
        const id = uploadId;
        uploadId = null;
        call('uploadAbort', { key, uploadId: id });
      }
    };
    const sendPart = () => {
      const body = Buffer.concat(chunks, buffered);
      chunks = [];
      buffered = 0;
      try {
        if (uploadId === null) uploadId = call('uploadStart', { key });
        etags.push(call('uploadPart', { key, uploadId, partNumber: etags.length + 1, body }));
      } catch (e) {
        try { abortUpload(); } catch { /* the first failure is the one to report */ }
        throw e;
      }
    };
    return {
      write: (chunk) => {
        chunks.push(Uint8Array.from(chunk));
        buffered += chunk.length;
        size += chunk.length;
        if (buffered >= PART_SIZE) sendPart();
      },
      finish: () => {
        if (uploadId === null) {
          call('put', { key, body: Buffer.concat(chunks, buffered) });
          return size;
        }
        if (buffered > 0) sendPart();
        try {
          call('uploadComplete', { key, uploadId, etags });
        } catch (e) {
          try { abortUpload(); } catch { /* the first failure is the one to report */ }
          throw e;
        }
        return size;
      },
      abort: () => {
        chunks = [];
        abortUpload();
      },
    };
  }

  delete(p) {
    this.#call('delete', { key: this.#key(p) });
  }

  createIfAbsent(p, bytes) {
    this.#call('createIfAbsent', { key: this.#key(p), body: Uint8Array.from(bytes) });
  }
}
