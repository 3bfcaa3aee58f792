// Storage implementations for the component: a local directory and memory.
import * as fs from 'node:fs';
import * as path from 'node:path';

/** A storage failure; `kind` is 'not-found' | 'already-exists' | 'permission' | 'io'. */
export class StorageError extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

// A temporary file of this process's writers: `.<name>.<pid>-<n>.tmp`.
function ownTemp(name) {
  if (!name.startsWith('.') || !name.endsWith('.tmp')) return false;
  const tail = name.slice(0, -4).split('.').pop() ?? '';
  return tail.split('-')[0] === String(process.pid);
}

function fromNode(e, p) {
  const kind = { ENOENT: 'not-found', EEXIST: 'already-exists', EACCES: 'permission', EPERM: 'permission' }[e?.code] ?? 'io';
  return new StorageError(kind, `${p}: ${e?.message ?? e}`);
}

/**
 * Files in a `Map` of path → Uint8Array. Handy for tests and for functions that stage data.
 * Write times are kept in `modified` (path → epoch ms) where known.
 */
export class MemoryStorage {
  constructor(files = new Map()) {
    this.files = files;
    this.modified = new Map();
  }
  size(p) {
    const f = this.files.get(p);
    if (!f) throw new StorageError('not-found', p);
    return f.length;
  }
  readRange(p, offset, len) {
    const f = this.files.get(p);
    if (!f) throw new StorageError('not-found', p);
    return f.subarray(offset, Math.min(f.length, offset + len));
  }
  list(prefix) {
    return [...this.files.keys()].filter((k) => k.startsWith(prefix)).sort().map((k) => ({ path: k, size: this.files.get(k).length, modifiedMs: this.modified.get(k) }));
  }
  createWriter(p) {
    const chunks = [];
    const files = this.files;
    const modified = this.modified;
    return {
      write(chunk) { chunks.push(Uint8Array.from(chunk)); },
      finish() {
        const total = chunks.reduce((n, c) => n + c.length, 0);
        const out = new Uint8Array(total);
        let at = 0;
        for (const c of chunks) { out.set(c, at); at += c.length; }
        files.set(p, out);
        modified.set(p, Date.now());
        return total;
      },
      abort() {},
    };
  }
  delete(p) {
    if (!this.files.delete(p)) throw new StorageError('not-found', p);
    this.modified.delete(p);
  }
  createIfAbsent(p, bytes) {
    if (this.files.has(p)) throw new StorageError('already-exists', p);
    this.files.set(p, Uint8Array.from(bytes));
    this.modified.set(p, Date.now());
  }
}

/**
 * A local directory. Paths are relative and may not leave the root. Paimon's external data
 * files are addressed by `file:` URIs; those are served only under `externalRoots` (absolute
 * directories) and listed back as `file:/abs/path`; any other URI is a permission error.
 */
export class FsStorage {
  constructor(root, { externalRoots = [] } = {}) {
    this.root = path.resolve(root);
    this.externalRoots = externalRoots.map((r) => path.resolve(r));
    this.counter = 0;
  }
  static #fileUri(p) {
    if (!p?.startsWith('file:')) return null;
    let rest = p.slice(5);
    if (rest.startsWith('//')) rest = rest.slice(2).replace(/^localhost/, '');
    return rest;
  }
  #resolve(p) {
    const abs = FsStorage.#fileUri(p);
    if (abs !== null) {
      const clean = abs.startsWith('/') && !abs.split('/').slice(1).some((s) => s === '' || s === '.' || s === '..');
      if (clean && this.externalRoots.some((r) => abs === r || abs.startsWith(r + '/'))) return abs;
      throw new StorageError('permission', `${p}: this file URI is outside the external directories this storage serves`);
    }
    if (!p || p.startsWith('/') || /^[A-Za-z][A-Za-z0-9+.-]*:/.test(p)
        || p.split('/').some((s) => s === '' || s === '.' || s === '..')) {
      throw new StorageError('permission', `${p}: paths must be relative and stay inside the storage root`);
    }
    return path.join(this.root, p);
  }
  #temp(target) {
    return path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}-${this.counter++}.tmp`);
  }
  size(p) {
    try {
      const st = fs.statSync(this.#resolve(p));
      if (!st.isFile()) throw new StorageError('not-found', `${p}: not a file`);
      return st.size;
    } catch (e) { throw e instanceof StorageError ? e : fromNode(e, p); }
  }
  readRange(p, offset, len) {
    let fd;
    try {
      fd = fs.openSync(this.#resolve(p), 'r');
      const buf = Buffer.allocUnsafe(len);
      let got = 0;
      while (got < len) {
        const n = fs.readSync(fd, buf, got, len - got, offset + got);
        if (n === 0) break;
        got += n;
      }
      return new Uint8Array(buf.buffer, buf.byteOffset, got);
    } catch (e) { throw e instanceof StorageError ? e : fromNode(e, p); } finally { if (fd !== undefined) fs.closeSync(fd); }
  }
  list(prefix) {
    const external = FsStorage.#fileUri(prefix);
    if (external !== null) prefix = `file:${external}`;
    const dirPart = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : '';
    const start = dirPart ? this.#resolve(dirPart) : this.root;
    const out = [];
    const walk = (dir) => {
      let entries;
      try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch (e) { if (e.code === 'ENOENT') return; throw fromNode(e, prefix); }
      for (const ent of entries) {
        const full = path.join(dir, ent.name);
        if (ent.isDirectory()) walk(full);
        // This process's unfinished writes stay invisible; other processes' temporary files
        // are listed, so that orphan removal sees what a killed writer left (its age
        // threshold keeps a live writer's).
        else if (ent.isFile() && !ownTemp(ent.name)) {
          const rel = external !== null
            ? `file:${full.split(path.sep).join('/')}`
            : path.relative(this.root, full).split(path.sep).join('/');
          if (rel.startsWith(prefix)) {
            const st = fs.statSync(full);
            out.push({ path: rel, size: st.size, modifiedMs: st.mtimeMs });
          }
        }
      }
    };
    walk(start);
    return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }
  createWriter(p) {
    const target = this.#resolve(p);
    try { fs.mkdirSync(path.dirname(target), { recursive: true }); } catch (e) { throw fromNode(e, p); }
    const temp = this.#temp(target);
    let fd;
    try { fd = fs.openSync(temp, 'wx'); } catch (e) { throw fromNode(e, p); }
    let size = 0;
    return {
      write(chunk) { try { fs.writeSync(fd, chunk); size += chunk.length; } catch (e) { throw fromNode(e, p); } },
      finish() {
        try { fs.fsyncSync(fd); fs.closeSync(fd); fs.renameSync(temp, target); return size; } catch (e) { throw fromNode(e, p); }
      },
      abort() { try { fs.closeSync(fd); } catch { /* already closed */ } fs.rmSync(temp, { force: true }); },
    };
  }
  delete(p) {
    try { fs.unlinkSync(this.#resolve(p)); } catch (e) { throw e instanceof StorageError ? e : fromNode(e, p); }
  }
  createIfAbsent(p, bytes) {
    const target = this.#resolve(p);
    try {
      fs.mkdirSync(path.dirname(target), { recursive: true });
      const temp = this.#temp(target);
      fs.writeFileSync(temp, bytes, { flag: 'wx' });
      try { fs.linkSync(temp, target); } finally { fs.rmSync(temp, { force: true }); }
    } catch (e) { throw e instanceof StorageError ? e : fromNode(e, p); }
  }
}
