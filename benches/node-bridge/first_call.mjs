// Cold start of the jco module in Node: a fresh process imports paimon-compact (the component
// instantiated; V8 compiles the core modules) and makes its first planner call. Prints one JSON
// line: milliseconds from process start to the import's end and to the first call's return.
// Run each measurement in a new process (V8 keeps no compiled WebAssembly between processes):
//
//   node benches/node-bridge/first_call.mjs <js dir with dist/ built> [sync|async]
import { pathToFileURL } from 'node:url';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';

const [dir, flavour = 'sync'] = process.argv.slice(2);
if (!dir) {
  console.error('usage: first_call.mjs <js dir> [sync|async]');
  process.exit(2);
}
const entry = flavour === 'async' ? 'src/async.js' : 'src/index.js';
const api = await import(pathToFileURL(join(resolve(dir), entry)).href);
const imported = performance.now();
const decision = await api.planBucket({ tableKind: 'primary-key', files: [] });
const called = performance.now();
if (decision.reason.rule !== 'nothing-to-do') {
  console.error(`unexpected decision: ${JSON.stringify(decision.reason)}`);
  process.exit(1);
}
console.log(JSON.stringify({ flavour, node: process.version, import_ms: Math.round(imported),
  first_call_ms: Math.round(called) }));
