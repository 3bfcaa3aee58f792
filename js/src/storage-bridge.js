// The component's `paimon:compact/storage` import, forwarded to whichever storage the current
// call was given (see index.js). The component calls these synchronously; the JSPI build's
// asynchronous twin is storage-bridge-jspi.js.

/**
 * The storage the current component call was given: `use` binds it (internal), `active`
 * returns it or fails the storage call. Each bridge has its own, so a synchronous call made
 * while an asynchronous one is suspended never unbinds the suspended call's storage.
 */
export function storageSlot() {
  let current = null;
  return {
    use(storage) {
      current = storage;
    },
    active() {
      if (!current) {
        throw { tag: 'io', val: 'no storage is bound to this call' };
      }
      return current;
    },
  };
}

const slot = storageSlot();
/** Sets the storage the next component call uses (internal). */
export const useStorage = slot.use;
const active = slot.active;

/** Turns a thrown StorageError (or anything) into the WIT `storage-error` variant. */
export function asWitError(e) {
  if (e && typeof e === 'object' && typeof e.tag === 'string' && 'val' in e) return e;
  const kind = e?.kind ?? 'io';
  const tag = ['not-found', 'already-exists', 'permission', 'io'].includes(kind) ? kind : 'io';
  return { tag, val: String(e?.message ?? e) };
}

/** Calls the storage (`fn`) and returns `map` of its answer, errors as the WIT variant. */
function call(fn, map = (v) => v) {
  try {
    const value = fn();
    if (typeof value?.then === 'function') {
      value.then(() => {}, () => {});
      throw {
        tag: 'io',
        val: 'this storage returns Promises, which the synchronous API cannot wait for: use async.js (JSPI, Node 24+) or a storage with synchronous methods',
      };
    }
    return map(value);
  } catch (e) {
    throw asWitError(e);
  }
}

export function size(path) {
  return call(() => active().size(path), BigInt);
}

export function readRange(path, offset, len) {
  return call(() => active().readRange(path, Number(offset), Number(len)));
}

/** A listing entry as the WIT `object-meta` record. */
export function objectMeta(o) {
  return {
    path: o.path,
    size: BigInt(o.size),
    modifiedMs: o.modifiedMs === undefined || o.modifiedMs === null ? undefined : BigInt(Math.trunc(o.modifiedMs)),
  };
}

export function listObjects(prefix) {
  return call(() => active().list(prefix), (found) => found.map(objectMeta));
}

export class Writer {
  #inner;
  constructor(inner) {
    this.#inner = inner;
  }
  write(chunk) {
    call(() => this.#inner.write(chunk));
  }
  static finish(w) {
    return call(() => w.#inner.finish(), BigInt);
  }
  static abort(w) {
    call(() => w.#inner.abort());
  }
}

export function createWriter(path) {
  return call(() => active().createWriter(path), (inner) => new Writer(inner));
}

function remove(path) {
  call(() => active().delete(path));
}
export { remove as delete };

export function createIfAbsent(path, bytes) {
  call(() => active().createIfAbsent(path, bytes));
}
