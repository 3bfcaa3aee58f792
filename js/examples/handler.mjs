// A serverless function handler (AWS Lambda / Cloud Functions style) that compacts the small
// Parquet files of an append bucket directory with the paimon-compact component.
//
//   node examples/handler.mjs <bucket-dir>      # run it locally on a directory
import { FsStorage, compactAppendFiles } from '../src/index.js';
import { randomUUID } from 'node:crypto';
import { basename, dirname, resolve } from 'node:path';

export async function handler(event) {
  const dir = resolve(event.bucketDir);
  const storage = new FsStorage(dirname(dir));
  const bucket = basename(dir);
  const inputs = storage
    .list(`${bucket}/`)
    .filter((o) => o.path.endsWith('.parquet') && !o.path.includes('/data-compact-'))
    .map((o, i) => ({ path: o.path, rowCount: event.rowCounts?.[o.path] ?? 0, minSequenceNumber: i, maxSequenceNumber: i }));
  if (inputs.length < 2) {
    return { statusCode: 200, body: JSON.stringify({ compacted: 0, reason: 'fewer than two files' }) };
  }
  const result = compactAppendFiles(storage, {
    inputs,
    outputDir: bucket,
    filePrefix: `data-compact-${randomUUID()}-`,
    options: event.options ?? {},
    creationTimeMs: Date.now(),
  }, { onProgress: (e) => console.error(`[${e.phase}] ${e.message}`) });
  return { statusCode: 200, body: JSON.stringify({ compacted: inputs.length, outputs: result.outputs }) };
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  const bucketDir = process.argv[2];
  if (!bucketDir) {
    console.error('usage: node examples/handler.mjs <bucket-dir>');
    process.exit(2);
  }
  console.log(JSON.stringify(await handler({ bucketDir }), null, 2));
}
