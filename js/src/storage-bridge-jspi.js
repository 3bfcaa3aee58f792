// The component's `paimon:compact/storage` import in the JSPI build (dist-jspi, see build.mjs):
// every function is async, and jco wraps each in `WebAssembly.Suspending`, so the component is
// suspended until the storage's Promise settles. The storage is whichever the current call of
// async.js was given; its methods may return values or Promises.
import { asWitError, objectMeta, storageSlot } from './storage-bridge.js';

const slot = storageSlot();
/** Sets the storage the next component call uses (internal). */
export const useStorage = slot.use;
const active = slot.active;

async function call(fn) {
  try {
    return await fn();
  } catch (e) {
    throw asWitError(e);
  }
}

export function size(path) {
  return call(async () => BigInt(await active().size(path)));
}

export function readRange(path, offset, len) {
  return call(() => active().readRange(path, Number(offset), Number(len)));
}

export function listObjects(prefix) {
  return call(async () => (await active().list(prefix)).map(objectMeta));
}

export class Writer {
  #inner;
  constructor(inner) {
    this.#inner = inner;
  }
  write(chunk) {
    return call(async () => { await this.#inner.write(chunk); });
  }
  static finish(w) {
    return call(async () => BigInt(await w.#inner.finish()));
  }
  static abort(w) {
    return call(async () => { await w.#inner.abort(); });
  }
}

export function createWriter(path) {
  return call(async () => new Writer(await active().createWriter(path)));
}

function remove(path) {
  return call(async () => { await active().delete(path); });
}
export { remove as delete };

export function createIfAbsent(path, bytes) {
  return call(async () => { await active().createIfAbsent(path, bytes); });
}
