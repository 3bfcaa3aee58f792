// A serverless function handler (AWS Lambda / Cloud Functions style) that compacts a Paimon
// table with the paimon-compact component: plan, then compact and commit a COMPACT snapshot.
// The table is an `s3://bucket/warehouse/db.db/table` URI (S3Storage; credentials, region
// and endpoint from the standard AWS environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_REGION, and AWS_ENDPOINT_URL for an S3-compatible store, which is then addressed
// path-style) or a local table directory (FsStorage).
//
// It uses the asynchronous API (src/async.js): on a Node with JS Promise Integration (24+) the
// component waits for the AWS SDK in this thread; elsewhere S3Storage's worker thread does the
// requests. The answer says which bridge ran.
//
//   node examples/handler.mjs <s3://bucket/.../table | table-dir> [--full]
import { basename, dirname, resolve } from 'node:path';
import { FsStorage, S3Storage, PaimonCompactError, planTable, compactTable, bridge } from '../src/async.js';

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
  const plan = await planTable(storage, name, { full: event.full });
  if (plan.summary.buckets_with_work === 0) {
    return { statusCode: 200, body: JSON.stringify({ compacted: false, bridge, reasons: plan.buckets.map((b) => b.reason_text) }) };
  }
  const report = await compactTable(storage, name, {
    full: event.full,
    onProgress: (e) => console.error(`[${e.phase}] ${e.message}`),
  });
  const s3 = storage instanceof S3Storage;
  return {
    statusCode: 200,
    body: JSON.stringify({
      compacted: true, snapshot: report.snapshot_after, status: report.status, totals: report.totals, bridge,
      requests: s3 ? storage.requests() : undefined, bridges_used: s3 ? storage.bridgesUsed() : undefined,
    }),
  };
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  const table = process.argv[2];
  if (!table) {
    console.error('usage: node examples/handler.mjs <s3://bucket/.../table | table-dir> [--full]');
    process.exit(2);
  }
  try {
    const result = await handler({ table, full: process.argv.includes('--full') });
    console.log(JSON.stringify(JSON.parse(result.body), null, 2));
  } catch (e) {
    // A typed failure as one JSON line: the kind to branch on and the one-line message.
    if (!(e instanceof PaimonCompactError)) throw e;
    console.log(JSON.stringify({ error: { kind: e.kind, message: e.message }, bridge }));
    process.exitCode = 1;
  }
}
