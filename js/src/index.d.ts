// Types of the paimon-compact Node module.

/** Where a storage call failed. */
export type StorageErrorKind = 'not-found' | 'already-exists' | 'permission' | 'io';

export class StorageError extends Error {
  constructor(kind: StorageErrorKind, message: string);
  kind: StorageErrorKind;
}

/** A file being written; nothing is visible until `finish`. */
export interface StorageWriter {
  write(chunk: Uint8Array): void;
  /** Makes the file visible; returns its size. */
  finish(): number;
  abort(): void;
}

/** What the component needs from storage. Throw a `StorageError` to fail a call. */
export interface Storage {
  size(path: string): number;
  readRange(path: string, offset: number, len: number): Uint8Array;
  /** Sorted by path; `modifiedMs` (epoch ms) where known: orphan removal keeps files of unknown age. */
  list(prefix: string): { path: string; size: number; modifiedMs?: number }[];
  createWriter(path: string): StorageWriter;
  delete(path: string): void;
  /** Atomically creates `path`, throwing `StorageError('already-exists')` if it exists. */
  createIfAbsent(path: string, bytes: Uint8Array): void;
}

/** A file being written, for the asynchronous API: each method may return a Promise. */
export interface AsyncStorageWriter {
  write(chunk: Uint8Array): void | Promise<void>;
  finish(): number | Promise<number>;
  abort(): void | Promise<void>;
}

/**
 * Storage for the asynchronous API (`paimon-compact/async`): the methods of `Storage`, each of
 * which may return a Promise (rejecting with a `StorageError` to fail the call). Under the
 * worker bridge (a Node without JSPI) the asynchronous API needs a `Storage` (synchronous).
 */
export interface AsyncStorage {
  size(path: string): number | Promise<number>;
  readRange(path: string, offset: number, len: number): Uint8Array | Promise<Uint8Array>;
  list(prefix: string): { path: string; size: number; modifiedMs?: number }[] | Promise<{ path: string; size: number; modifiedMs?: number }[]>;
  createWriter(path: string): AsyncStorageWriter | Promise<AsyncStorageWriter>;
  delete(path: string): void | Promise<void>;
  createIfAbsent(path: string, bytes: Uint8Array): void | Promise<void>;
}

export class MemoryStorage implements Storage {
  constructor(files?: Map<string, Uint8Array>);
  files: Map<string, Uint8Array>;
  size(path: string): number;
  readRange(path: string, offset: number, len: number): Uint8Array;
  /** Sorted by path; `modifiedMs` (epoch ms) where known: orphan removal keeps files of unknown age. */
  list(prefix: string): { path: string; size: number; modifiedMs?: number }[];
  createWriter(path: string): StorageWriter;
  delete(path: string): void;
  createIfAbsent(path: string, bytes: Uint8Array): void;
}

export class FsStorage implements Storage {
  /** `externalRoots`: absolute directories whose `file:` URIs (Paimon external data files) are served. */
  constructor(root: string, options?: { externalRoots?: string[] });
  root: string;
  externalRoots: string[];
  size(path: string): number;
  readRange(path: string, offset: number, len: number): Uint8Array;
  /** Sorted by path; `modifiedMs` (epoch ms) where known: orphan removal keeps files of unknown age. */
  list(prefix: string): { path: string; size: number; modifiedMs?: number }[];
  createWriter(path: string): StorageWriter;
  delete(path: string): void;
  createIfAbsent(path: string, bytes: Uint8Array): void;
}

/**
 * A table's storage in an S3 bucket (or an S3-compatible store): paths are keys under `prefix`
 * (the table's parent, e.g. `warehouse/db.db`). Its own methods are synchronous, for the
 * synchronous API: the AWS SDK runs in a worker thread (started on first use) and each call
 * blocks on `Atomics.wait` until it answers. `async` is the same storage with Promise-returning
 * methods in this thread, which the asynchronous API uses under JSPI (`paimon-compact/async`).
 * `createIfAbsent` is a conditional put (`If-None-Match: *`); writers hold at most one 10 MiB
 * part and use a multipart upload beyond it, aborted on failure.
 */
export class S3Storage implements Storage {
  /** `client`: the S3 client's configuration (`region`, `endpoint`, `credentials`,
   * `forcePathStyle`, ...); without it the SDK reads the standard AWS environment. */
  constructor(options: { bucket: string; prefix?: string; client?: Record<string, unknown> });
  bucket: string;
  /** Stops the worker thread, if one was started; the synchronous methods cannot be used afterwards. */
  close(): Promise<number>;
  /** Requests made so far through both bridges, by kind. */
  requests(): { get: number; head: number; put: number; list: number; delete: number };
  /** The bridges used so far. */
  bridgesUsed(): Array<'worker' | 'jspi'>;
  /** The same storage with Promise-returning methods (the JSPI bridge). */
  readonly async: AsyncStorage;
  size(path: string): number;
  readRange(path: string, offset: number, len: number): Uint8Array;
  list(prefix: string): { path: string; size: number; modifiedMs?: number }[];
  createWriter(path: string): StorageWriter;
  delete(path: string): void;
  createIfAbsent(path: string, bytes: Uint8Array): void;
}

/** The component's error cases (the WIT `error` variant). */
export type ErrorKind =
  | 'invalid-option'
  | 'not-compactable'
  /** `details`: `{ file, message }`. Also what a decoder's panic on a file's bytes becomes. */
  | 'corrupt-input'
  | 'io'
  /** The snapshot may or may not exist: the job kept its files; check `details.path`. */
  | 'commit-unknown'
  | 'conflict'
  | 'unsupported'
  /** The caller broke the API's contract. */
  | 'illegal-state'
  /** A bug in the component, not the caller's fault. */
  | 'internal';

/** Why a table is not compacted by design (the WIT `not-compactable-reason`). */
export type NotCompactableReason =
  | { tag: 'write-only' }
  | { tag: 'table-option'; val: { key: string; value: string; because: string } }
  | { tag: 'unaware-bucket-auto-compaction' }
  /** `val`: deletion vectors are enabled too. */
  | { tag: 'data-evolution'; val: boolean }
  | { tag: 'blob-table' }
  | { tag: 'postpone-bucket' }
  | { tag: 'coordinator-needs-unaware-append' };

export class PaimonCompactError extends Error {
  kind: ErrorKind;
  /** The case's payload: e.g. `{ key, value, message }` for 'invalid-option',
   *  `{ reason: NotCompactableReason, message }` for 'not-compactable',
   *  `{ kind: { tag, val }, path, message }` for 'io' and 'commit-unknown' (`val`: the
   *  storage's own words), the message string for the other cases. */
  details: unknown;
  /** Set when the call trapped (a panic, the guest's memory exhausted): the instance was
   *  discarded, and the next call makes a new one. */
  trapped?: boolean;
  /** After a trapped `compactTable`: the lease objects a new instance released for the job
   *  (absent if that release failed; the leases then expire after their TTL). */
  cleanedUp?: string[];
}

export type Flavor = 'java' | 'cpp';
export type TableKind = 'primary-key' | 'append';
/** Paimon option keys and values, e.g. `{ 'target-file-size': '128 mb' }`. */
export type Options = Record<string, string | number | boolean>;

export interface ConformanceReport {
  passed: number;
  failed: number;
  skipped: number;
  failures: { name: string; message: string }[];
  /** One line per failure, then `N passed, M failed`. */
  text: string;
}

export function runConformance(vectorsJson: string, opts?: { flavor?: Flavor }): ConformanceReport;

export interface DataFile {
  name: string;
  size: number | bigint;
  rowCount?: number | bigint;
  /** Order-preserving key bytes. */
  minKey?: Uint8Array | number[];
  maxKey?: Uint8Array | number[];
  minSequenceNumber?: number | bigint;
  maxSequenceNumber?: number | bigint;
  level?: number;
  /** Unknown (`null`) means the file may contain deletes. */
  deleteRowCount?: number | bigint | null;
  creationTimeMs?: number | bigint;
  hasDeletionVector?: boolean;
}

export interface StrategyState {
  lastFullCompactionMs: number | null;
  gentleCounter: number;
}

export interface BucketRequest {
  tableKind?: TableKind;
  flavor?: Flavor;
  options?: Options;
  files: DataFile[];
  /** A forced full compaction instead of the automatic pick. */
  full?: boolean;
  /** The decision's clock (the component reads none). */
  nowMs?: number;
  localHour?: number;
  state?: StrategyState;
}

export type TaskAction =
  | { op: 'upgrade'; file: string; toLevel: number }
  | { op: 'rewrite'; outputLevel: number; sections: string[][][]; alone?: string };

export interface Decision {
  files: string[];
  outputLevel?: number;
  dropDelete: boolean;
  actions: TaskAction[];
  released: string[];
  reason: { rule: string; text: string; details: Record<string, unknown> };
  writeStall?: { sortedRuns: number; stopTrigger: number; waitForLatestCompaction: boolean; waitForPreparingCheckpoint: boolean };
  state: StrategyState | null;
}

export function planBucket(request: BucketRequest): Decision;
export function explainOptions(tableKind: TableKind, options: Options, opts?: { flavor?: Flavor }): Record<string, unknown>;

export interface ProgressEvent {
  phase: string;
  done: number;
  total: number;
  unit: string;
  message: string;
}

export interface AppendRequest {
  /** Files in sequence order, as their manifest entries describe them. */
  inputs: { path: string; rowCount: number; minSequenceNumber: number; maxSequenceNumber: number; deletedRows?: number[] }[];
  outputDir: string;
  /** New files are `<filePrefix><n>.parquet`; make it unique (e.g. `data-<uuid>-`). */
  filePrefix: string;
  options?: Options;
  creationTimeMs?: number;
}

export interface AppendResult {
  outputs: { path: string; size: number; rowCount: number; minSequenceNumber: number; maxSequenceNumber: number; level: number }[];
  requeueLast: boolean;
  metrics: Record<string, unknown>;
}

export function compactAppendFiles(storage: Storage, request: AppendRequest, opts?: { onProgress?: (e: ProgressEvent) => void }): AppendResult;

export interface TableJobOptions {
  /** Forced full compaction of every bucket in scope (same as `strategy: 'full'`). */
  full?: boolean;
  /** `full` rewrites every file in scope; `minor` (the default) takes the planner's pick. */
  strategy?: 'full' | 'minor';
  /** Only these partitions (`k1=v1,k2=v2`, some or all partition columns). */
  partitions?: string[];
  /** Only partitions matching this predicate over partition columns (not with `partitions`). */
  where?: string;
  /** Only partitions whose newest file is at least this old (`'1 d'`). */
  partitionIdleTime?: string;
  /** Only these buckets (`'0-3,7'`; fixed-bucket tables). */
  buckets?: string;
  /** Table options for this job only; the schema is not changed. */
  tableOptions?: Record<string, string>;
  /** Leave out the maintenance after the commit (expiry of tags, partitions, consumers, snapshots, changelogs). */
  skipMaintenance?: boolean;
  /** The job's clock (defaults to now). */
  nowMs?: number;
  localHour?: number;
  /** Shown to other jobs holding partition leases. */
  owner?: string;
  /** Partition lease time-to-live; `null` runs without leases. */
  leaseTtlMs?: number | null;
  maxCommitRetries?: number;
  onProgress?: (e: ProgressEvent) => void;
}

/** A table's plan: per partition and bucket, levels, actions and the planner's reason. */
export interface TablePlan {
  table_path: string;
  snapshot_id: number | null;
  table_kind: 'PrimaryKey' | 'Append';
  not_compactable: string | null;
  full: boolean;
  buckets: {
    partition: string;
    bucket: number;
    files: number;
    bytes: number;
    levels: { level: number; files: number; bytes: number }[];
    reason_text: string;
    actions: Record<string, unknown>[];
    files_removed: number;
    blocked: string | null;
  }[];
  summary: { partitions: number; buckets: number; files: number; bytes: number; buckets_with_work: number; buckets_blocked: number; rewrites: number; upgrades: number; files_removed: number };
}

/** What a table compaction did (delta-rs style metrics). */
export interface CompactReport {
  table_path: string;
  job_id: string;
  snapshot_before: number | null;
  snapshot_after: number | null;
  totals: { files_removed: number; files_added: number; bytes_removed: number; bytes_added: number; rows_read: number; rows_written: number; rewrites: number; upgrades: number; [k: string]: number };
  buckets: Record<string, unknown>[];
  skipped: { partition: string; bucket: number; reason: string }[];
  leases_held_elsewhere: Record<string, unknown>[];
  warnings: string[];
  [k: string]: unknown;
}

export function planTable(storage: Storage, tablePath: string, options?: TableJobOptions): TablePlan;
export function compactTable(storage: Storage, tablePath: string, options?: TableJobOptions): CompactReport;
export function writeDemoTables(storage: Storage, root?: string, opts?: { nowMs?: number; seed?: number }): string[];

/** A planned fan-out job (docs/fanout.md). */
export interface TaskSet {
  /** The job id, 32 hex digits. */
  jobId: string;
  /** The whole set as versioned JSON; give it to `commitTasks` or `abortTasks`. */
  json: string;
  /** Each task as versioned JSON, self-contained; run each with `runTask` anywhere. */
  tasks: string[];
}
/** Fan-out, step 1: plans the job and takes its leases. */
export function planTasks(storage: Storage, tablePath: string, options?: TableJobOptions): TaskSet;
/** Fan-out, step 2: runs one task (JSON text or object) as a new attempt; the result as JSON text. */
export function runTask(storage: Storage, task: string | object, opts?: { onProgress?: (e: ProgressEvent) => void; attempt?: Uint8Array }): string;
/** Fan-out, step 3: commits one result per task as one COMPACT snapshot, then the maintenance. */
export function commitTasks(storage: Storage, taskSet: string | object, results: Array<string | object>, options?: TableJobOptions & { rewriteMs?: number; allOrNothing?: boolean }): CompactReport;
/** What `abortTasks` did. */
export interface AbortReport {
  job_id: string;
  deleted: string[];
  /** Files that could not be deleted: orphans for `removeOrphanFiles`. */
  failed: string[];
  leases_released: number;
}
/** Fan-out: aborts the job, deleting everything its tasks wrote and releasing its leases. */
export function abortTasks(storage: Storage, taskSet: string | object, results?: Array<string | object>): AbortReport;
/** Fan-out: renews the job's leases for `ttlMs` from `nowMs`; the task set JSON with the new leases. */
export function renewLeases(storage: Storage, taskSet: string | object, ttlMs?: number, nowMs?: number): string;

/** A standalone maintenance run (docs/maintenance.md). */
export interface MaintenanceOptions {
  /** Report what would be deleted or committed, and change nothing. */
  dryRun?: boolean;
  /** Table options for this run only (e.g. `snapshot.num-retained.max`). */
  tableOptions?: Record<string, string>;
  /** Orphan removal: only files last modified before this (epoch ms; default one day ago). */
  olderThanMs?: number;
  nowMs?: number;
}
/** What a maintenance run did, step by step (absent steps did not run). */
export type MaintenanceReport = Record<string, any>;
export function expireSnapshots(storage: Storage, tablePath: string, options?: MaintenanceOptions): MaintenanceReport;
export function expireChangelogs(storage: Storage, tablePath: string, options?: MaintenanceOptions): MaintenanceReport;
export function expirePartitions(storage: Storage, tablePath: string, options?: MaintenanceOptions): MaintenanceReport;
export function expireTags(storage: Storage, tablePath: string, options?: MaintenanceOptions): MaintenanceReport;
export function removeOrphanFiles(storage: Storage, tablePath: string, options?: MaintenanceOptions): MaintenanceReport;
