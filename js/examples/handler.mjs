// A serverless function handler (AWS Lambda / Cloud Functions style) that compacts a Paimon
// table directory with the paimon-compact component: plan, then compact and commit a COMPACT
// snapshot. Swap FsStorage for an object-store implementation of the same six methods to run
// it against S3-like storage.
//
//   node examples/handler.mjs <table-dir> [--full]      # run it locally on a table directory
import { basename, dirname, resolve } from 'node:path';
import { FsStorage, planTable, compactTable } from '../src/index.js';

export async function handler(event) {
  const dir = resolve(event.tableDir);
  const storage = new FsStorage(dirname(dir));
  const table = basename(dir);
  const plan = planTable(storage, table, { full: event.full });
  if (plan.summary.buckets_with_work === 0) {
    return { statusCode: 200, body: JSON.stringify({ compacted: false, reasons: plan.buckets.map((b) => b.reason_text) }) };
  }
  const report = compactTable(storage, table, {
    full: event.full,
    onProgress: (e) => console.error(`[${e.phase}] ${e.message}`),
  });
  return { statusCode: 200, body: JSON.stringify({ compacted: true, snapshot: report.snapshot_after, totals: report.totals }) };
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  const tableDir = process.argv[2];
  if (!tableDir) {
    console.error('usage: node examples/handler.mjs <table-dir> [--full]');
    process.exit(2);
  }
  const result = await handler({ tableDir, full: process.argv.includes('--full') });
  console.log(JSON.stringify(JSON.parse(result.body), null, 2));
}
