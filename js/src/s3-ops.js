// The S3 operations behind S3Storage (see s3-storage.js), as async functions over one AWS SDK
// client: the worker thread of the worker bridge runs them, and so does the main thread under
// the JSPI bridge. Errors leave as { kind, message } with the storage error kinds.
import {
  S3Client, HeadObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand,
  DeleteObjectCommand, CreateMultipartUploadCommand, UploadPartCommand,
  CompleteMultipartUploadCommand, AbortMultipartUploadCommand,
} from '@aws-sdk/client-s3';

function kindOf(e) {
  const status = e?.$metadata?.httpStatusCode;
  const name = e?.name ?? '';
  if (status === 404 || name === 'NotFound' || name === 'NoSuchKey' || name === 'NoSuchBucket') return 'not-found';
  if (status === 412 || name === 'PreconditionFailed') return 'already-exists';
  if (status === 403 || status === 401 || name === 'AccessDenied') return 'permission';
  return 'io';
}

async function bytesOf(body) {
  const chunks = [];
  for await (const c of body) chunks.push(c);
  return Buffer.concat(chunks);
}

/**
 * The operations on `config.bucket` with a client from `config.client`. `run(op, args)`
 * resolves to the operation's value or rejects with `{ kind, message }`; `counts` are the
 * requests made so far, by kind.
 */
export function s3Ops(config) {
  const client = new S3Client(config.client);
  const counts = { get: 0, head: 0, put: 0, list: 0, delete: 0 };
  const ops = {
    async size({ key }) {
      counts.head++;
      const r = await client.send(new HeadObjectCommand({ Bucket: config.bucket, Key: key }));
      return r.ContentLength ?? 0;
    },
    async readRange({ key, offset, len }) {
      if (len === 0) return new Uint8Array(0);
      counts.get++;
      try {
        const r = await client.send(new GetObjectCommand({
          Bucket: config.bucket, Key: key, Range: `bytes=${offset}-${offset + len - 1}`,
        }));
        return new Uint8Array(await bytesOf(r.Body));
      } catch (e) {
        // A range that starts at the end is refused (416): the trait reads fewer bytes there.
        if (e?.$metadata?.httpStatusCode === 416) return new Uint8Array(0);
        throw e;
      }
    },
    async list({ prefix }) {
      const out = [];
      let token;
      do {
        counts.list++;
        const r = await client.send(new ListObjectsV2Command({
          Bucket: config.bucket, Prefix: prefix, ContinuationToken: token,
        }));
        for (const o of r.Contents ?? []) {
          if (!o.Key.endsWith('/')) {
            out.push({ key: o.Key, size: o.Size ?? 0, modifiedMs: o.LastModified?.getTime() });
          }
        }
        token = r.IsTruncated ? r.NextContinuationToken : undefined;
      } while (token);
      return out;
    },
    async put({ key, body }) {
      counts.put++;
      await client.send(new PutObjectCommand({ Bucket: config.bucket, Key: key, Body: body }));
      return body.length;
    },
    async uploadStart({ key }) {
      counts.put++;
      const r = await client.send(new CreateMultipartUploadCommand({ Bucket: config.bucket, Key: key }));
      return r.UploadId;
    },
    async uploadPart({ key, uploadId, partNumber, body }) {
      counts.put++;
      const r = await client.send(new UploadPartCommand({
        Bucket: config.bucket, Key: key, UploadId: uploadId, PartNumber: partNumber, Body: body,
      }));
      return r.ETag;
    },
    async uploadComplete({ key, uploadId, etags }) {
      counts.put++;
      await client.send(new CompleteMultipartUploadCommand({
        Bucket: config.bucket, Key: key, UploadId: uploadId,
        MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
      }));
      return null;
    },
    async uploadAbort({ key, uploadId }) {
      counts.delete++;
      await client.send(new AbortMultipartUploadCommand({ Bucket: config.bucket, Key: key, UploadId: uploadId }));
      return null;
    },
    async delete({ key }) {
      counts.delete++;
      await client.send(new DeleteObjectCommand({ Bucket: config.bucket, Key: key }));
      return null;
    },
    async createIfAbsent({ key, body }) {
      counts.put++;
      try {
        await client.send(new PutObjectCommand({ Bucket: config.bucket, Key: key, Body: body, IfNoneMatch: '*' }));
        return null;
      } catch (e) {
        if (kindOf(e) !== 'already-exists') throw e;
        // A retried put may have met its own first attempt: the same bytes are ours.
        counts.get++;
        const r = await client.send(new GetObjectCommand({ Bucket: config.bucket, Key: key }));
        const existing = await bytesOf(r.Body);
        if (Buffer.compare(existing, Buffer.from(body)) === 0) return null;
        throw e;
      }
    },
  };

  async function run(op, args) {
    try {
      return await ops[op](args);
    } catch (e) {
      throw { kind: kindOf(e), message: `${args?.key ?? args?.prefix ?? ''}: ${e?.name ?? 'Error'}: ${e?.message ?? e}` };
    }
  }
  return { run, counts };
}
