// A serverless function handler (AWS Lambda / Cloud Functions style) that compacts a Paimon
// table with the paimon-compact component: plan, then compact and commit a COMPACT snapshot.
// The table is an `s3://bucket/warehouse/db.db/table` URI (S3Storage; credentials, region
// and endpoint from the standard AWS environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_REGION, and AWS_ENDPOINT_URL for an S3-compatible store, which is then addressed
// path-style) or a local table directory (FsStorage).
//
//   node examples/handler.mjs <s3://bucket/.../table | table-dir> [--full]
import { basename, dirname, resolve } from 'node:path';
import { FsStorage, S3Storage, planTable, compactTable } from '../src/index.js';

/** The storage rooted at the table's parent, and the table's name in it. */
export function openTable(table) {
  const m = /^s3a?:\/\/([^/]+)\/(.+)$/.exec(table);
  if (m) {
    const key = m[2].replace(/\/+$/, '');
    const cut = key.lastIndexOf('/');
    const client = {};
    if (process.env.AWS_ENDPOINT_URL) {
      client.endpoint = process.env.AWS_ENDPOINT_URL;
      client.forcePathStyle = true;
    }
    return {
      storage: new S3Storage({ bucket: m[1], prefix: cut < 0 ? '' : key.slice(0, cut), client }),
      name: key.slice(cut + 1),
    };
  }
  const dir = resolve(table);
  return { storage: new FsStorage(dirname(dir)), name: basename(dir) };
}

export async function handler(event) {
  const { storage, name } = openTable(event.table ?? event.tableDir);
  const plan = planTable(storage, name, { full: event.full });
  if (plan.summary.buckets_with_work === 0) {
    return { statusCode: 200, body: JSON.stringify({ compacted: false, reasons: plan.buckets.map((b) => b.reason_text) }) };
  }
  const report = compactTable(storage, name, {
    full: event.full,
    onProgress: (e) => console.error(`[${e.phase}] ${e.message}`),
  });
  const requests = storage instanceof S3Storage ? storage.requests() : undefined;
  return {
    statusCode: 200,
    body: JSON.stringify({ compacted: true, snapshot: report.snapshot_after, status: report.status, totals: report.totals, requests }),
  };
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  const table = process.argv[2];
  if (!table) {
    console.error('usage: node examples/handler.mjs <s3://bucket/.../table | table-dir> [--full]');
    process.exit(2);
  }
  const result = await handler({ table, full: process.argv.includes('--full') });
  console.log(JSON.stringify(JSON.parse(result.body), null, 2));
}
