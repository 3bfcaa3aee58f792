// Loads the planner and simulator compiled with wasm-bindgen (cargo feature `web`).
//
//   import { load } from './loader.js';
//   const pc = await load();                 // fetches paimon_compact_bg.wasm next to this file
//   const sim = new pc.WebSimulation(pc.defaultConfig());
//   sim.advance(1000); const view = sim.view(sim.length);
//
// In Node, pass the wasm bytes: `await load(fs.readFileSync(path))`.
// Exports: planBucket(request), defaultConfig(), parseReplay(text), WebSimulation.
import init, * as pc from './paimon_compact.js';

let ready = null;

/** Initialises the module once; `source` is a URL, Response, bytes or a compiled module. */
export function load(source) {
  if (!ready) {
    ready = init(source === undefined ? undefined : { module_or_path: source }).then(() => pc);
  }
  return ready;
}
