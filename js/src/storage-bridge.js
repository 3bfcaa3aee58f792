// The component's `paimon:compact/storage` import, forwarded to whichever storage the current
// call was given (see index.js). The component calls these synchronously.

let current = null;

/** Sets the storage the next component call uses (internal). */
export function useStorage(storage) {
  current = storage;
}

function active() {
  if (!current) {
    throw { tag: 'io', val: 'no storage is bound to this call' };
  }
  return current;
}

/** Turns a thrown StorageError (or anything) into the WIT `storage-error` variant. */
function asWitError(e) {
  if (e && typeof e === 'object' && typeof e.tag === 'string' && 'val' in e) return e;
  const kind = e?.kind ?? 'io';
  const tag = ['not-found', 'already-exists', 'permission', 'io'].includes(kind) ? kind : 'io';
  return { tag, val: String(e?.message ?? e) };
}

function call(fn) {
  try {
    return fn();
  } catch (e) {
    throw asWitError(e);
  }
}

export function size(path) {
  return call(() => BigInt(active().size(path)));
}

export function readRange(path, offset, len) {
  return call(() => active().readRange(path, Number(offset), Number(len)));
}

export function listObjects(prefix) {
  return call(() => active().list(prefix).map((o) => ({
    path: o.path,
    size: BigInt(o.size),
    modifiedMs: o.modifiedMs === undefined || o.modifiedMs === null ? undefined : BigInt(Math.trunc(o.modifiedMs)),
  })));
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
    return call(() => BigInt(w.#inner.finish()));
  }
  static abort(w) {
    call(() => w.#inner.abort());
  }
}

export function createWriter(path) {
  return call(() => new Writer(active().createWriter(path)));
}

function remove(path) {
  call(() => active().delete(path));
}
export { remove as delete };

export function createIfAbsent(path, bytes) {
  call(() => active().createIfAbsent(path, bytes));
}
