// Transpiles the component into an ES module (dist/) with jco, wiring the component's
// `storage`, `progress` and `codec` imports to the bridges in src/.
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
execFileSync(jco, [
  'transpile', wasm,
  '-o', join(here, 'dist'),
  '--name', 'paimon_compact',
  '--map', 'paimon:compact/storage@0.1.0=../src/storage-bridge.js',
  '--map', 'paimon:compact/progress@0.1.0=../src/progress-bridge.js',
  '--map', 'paimon:compact/codec@0.1.0=../src/codec-bridge.js',
], { stdio: 'inherit' });
console.log(`transpiled ${wasm} into ${join(here, 'dist')}`);
