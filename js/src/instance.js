// One component instance at a time, made again after a trap. jco's output (built with
// `--instantiation sync`, see build.mjs) is an `instantiate` function, not an instance made on
// import: a trap (a panic, the guest's memory exhausted) leaves an instance that can never be
// entered again, and a long-lived process (a server, a warm function) must not stay broken.
// The core modules are compiled once; an instance is cheap to make.
import { readFileSync } from 'node:fs';
import * as shim from '@bytecodealliance/preview2-shim';
import * as progress from './progress-bridge.js';
import * as codec from './codec-bridge.js';

const camel = (s) => s.replace(/-([a-z])/g, (_, c) => c.toUpperCase());

/** The WASI imports, from jco's preview2 shim (`wasi:cli/terminal-input` → `cli.terminalInput`). */
const wasi = new Proxy({}, {
  get(_, key) {
    const m = /^wasi:([a-z-]+)\/([a-z-]+)/.exec(String(key));
    return m ? shim[camel(m[1])]?.[camel(m[2])] : undefined;
  },
});

/**
 * The instances of the build in `dist` (a directory URL), whose storage import is
 * `storageBridge`. `current()` is the live instance (made on first use); `reset()` discards it
 * after a trap, so the next call makes a new one.
 */
export function instances(dist, storageBridge, { instantiate }) {
  const modules = new Map();
  const core = (name) => {
    if (!modules.has(name)) modules.set(name, new WebAssembly.Module(readFileSync(new URL(name, dist))));
    return modules.get(name);
  };
  const imports = new Proxy({}, {
    get(_, key) {
      switch (key) {
        case 'paimon:compact/storage': return storageBridge;
        case 'paimon:compact/progress': return progress;
        case 'paimon:compact/codec': return codec;
        default: return wasi[key];
      }
    },
  });
  let live = null;
  return {
    current() {
      live ??= instantiate(core, imports);
      return live;
    },
    reset() {
      live = null;
    },
  };
}
