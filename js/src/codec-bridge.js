// The component's `paimon:compact/codec` import: zstd run by Node's own zlib, when this Node
// has it (zlib gained zstd in Node 22.15 / 23.8). Otherwise nothing is offered and the
// component compresses with its own (wasm) zstd; the files are the same either way.
import zlib from 'node:zlib';

// `PAIMON_COMPACT_NATIVE_CODEC=0` keeps zstd inside the component (to compare, or to rule
// Node's zstd out).
const nativeZstd =
  typeof zlib.zstdCompressSync === 'function' &&
  typeof zlib.zstdDecompressSync === 'function' &&
  globalThis.process?.env?.PAIMON_COMPACT_NATIVE_CODEC !== '0';

/** Whether this Node runs `algorithm` natively. */
export function offers(algorithm) {
  return algorithm === 'zstd' && nativeZstd;
}

function unsupported(algorithm) {
  // jco turns a thrown value into the WIT `result`'s error (a string here).
  throw `codec ${algorithm} is not offered by this host`;
}

export function compress(algorithm, level, data) {
  if (!offers(algorithm)) unsupported(algorithm);
  try {
    return zlib.zstdCompressSync(data, {
      params: { [zlib.constants.ZSTD_c_compressionLevel]: level },
    });
  } catch (e) {
    throw String(e?.message ?? e);
  }
}

export function decompress(algorithm, data, _sizeHint) {
  if (!offers(algorithm)) unsupported(algorithm);
  try {
    // The result must fit in the component's 32-bit memory; a frame that inflates beyond
    // that is refused rather than allowed to exhaust this process.
    return zlib.zstdDecompressSync(data, { maxOutputLength: 2 ** 32 - 1 });
  } catch (e) {
    throw String(e?.message ?? e);
  }
}
