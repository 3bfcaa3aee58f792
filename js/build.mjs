// Transpiles the component with jco into two ES modules, each an `instantiate` function
// (`--instantiation sync`: src/instance.js supplies the imports, the bridges in src/ and the
// WASI shim, and makes a new instance after a trap):
// - dist/: synchronous imports and exports, for index.js (every Node; S3 through a worker);
// - dist-jspi/: the storage imports suspend the component (JS Promise Integration) and the
//   exports that reach storage return Promises, for async.js where Node has JSPI.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const wasm = resolve(process.env.PAIMON_COMPACT_COMPONENT ?? join(here, '..', 'target', 'wasm32-wasip2', 'component', 'paimon_compact.wasm'));
if (!existsSync(wasm)) {
  console.error(`component not found at ${wasm}: build it first (.ci/stages/05-component.sh)`);
  process.exit(1);
}
const jco = join(here, 'node_modules', '.bin', 'jco');
const pkg = 'paimon:compact';
const version = '0.1.0';

function transpile(out, extra = []) {
  execFileSync(jco, [
    'transpile', wasm,
    '-o', join(here, out),
    '--name', 'paimon_compact',
    '--quiet',
    '--instantiation', 'sync',
    ...extra,
  ], { stdio: 'inherit' });
  console.log(`transpiled ${wasm} into ${join(here, out)}`);
}

transpile('dist');

// Every storage function may suspend; every export that calls storage is async. An export
// left out here would trap on its first storage call under JSPI, which the tests would show.
const storage = `${pkg}/storage@${version}`;
const job = `${pkg}/table-compactor@${version}#[method]compaction-job`;
const asyncImports = [
  'size', 'read-range', 'list-objects', 'create-writer', 'delete', 'create-if-absent',
  '[method]writer.write', '[static]writer.finish', '[static]writer.abort',
].map((f) => `${storage}#${f}`);
const asyncExports = [
  `${pkg}/compactor@${version}#compact-append-files`,
  ...['plan', 'run', 'plan-tasks', 'run-task', 'commit-tasks', 'abort-tasks', 'renew-leases', 'release-leases'].map((m) => `${job}.${m}`),
  `${pkg}/table-compactor@${version}#write-demo-tables`,
  `${pkg}/table-maintenance@${version}#run`,
];
transpile('dist-jspi', [
  '--async-mode', 'jspi',
  ...asyncImports.flatMap((f) => ['--async-imports', f]),
  ...asyncExports.flatMap((f) => ['--async-exports', f]),
]);
