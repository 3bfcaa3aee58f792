// Types of `paimon-compact/async`: the functions of the synchronous module, those that reach
// storage returning Promises and taking storage whose methods may return Promises.
import type {
  AsyncStorage, Storage, AppendRequest, AppendResult, ProgressEvent, TableJobOptions, TablePlan,
  CompactReport, TaskSet, AbortReport, MaintenanceOptions, MaintenanceReport,
} from './index.js';

export * from './index.js';

/** Whether this Node has JS Promise Integration (`WebAssembly.Suspending`). */
export const jspiAvailable: boolean;
/**
 * The bridge this process uses: 'jspi' (the component suspends while storage Promises settle)
 * or 'worker' (the synchronous build; storage must be synchronous, S3Storage's worker thread
 * serves S3). Chosen by `jspiAvailable`, or by `PAIMON_COMPACT_NODE_BRIDGE`.
 */
export const bridge: 'jspi' | 'worker';

/** Under 'jspi' any `AsyncStorage` (an S3Storage through its `async` face); under 'worker' a `Storage`. */
type AnyStorage = AsyncStorage | Storage;
type Progress = { onProgress?: (e: ProgressEvent) => void };

export function compactAppendFiles(storage: AnyStorage, request: AppendRequest, opts?: Progress): Promise<AppendResult>;
export function planTable(storage: AnyStorage, tablePath: string, options?: TableJobOptions): Promise<TablePlan>;
export function compactTable(storage: AnyStorage, tablePath: string, options?: TableJobOptions): Promise<CompactReport>;
export function writeDemoTables(storage: AnyStorage, root?: string, opts?: { nowMs?: number; seed?: number }): Promise<string[]>;
export function planTasks(storage: AnyStorage, tablePath: string, options?: TableJobOptions): Promise<TaskSet>;
export function runTask(storage: AnyStorage, task: string | object, opts?: Progress & { attempt?: Uint8Array }): Promise<string>;
export function commitTasks(storage: AnyStorage, taskSet: string | object, results: Array<string | object>, options?: TableJobOptions & { rewriteMs?: number; allOrNothing?: boolean }): Promise<CompactReport>;
export function abortTasks(storage: AnyStorage, taskSet: string | object, results?: Array<string | object>): Promise<AbortReport>;
export function renewLeases(storage: AnyStorage, taskSet: string | object, ttlMs?: number, nowMs?: number): Promise<string>;
export function expireSnapshots(storage: AnyStorage, tablePath: string, options?: MaintenanceOptions): Promise<MaintenanceReport>;
export function expireChangelogs(storage: AnyStorage, tablePath: string, options?: MaintenanceOptions): Promise<MaintenanceReport>;
export function expirePartitions(storage: AnyStorage, tablePath: string, options?: MaintenanceOptions): Promise<MaintenanceReport>;
export function expireTags(storage: AnyStorage, tablePath: string, options?: MaintenanceOptions): Promise<MaintenanceReport>;
export function removeOrphanFiles(storage: AnyStorage, tablePath: string, options?: MaintenanceOptions): Promise<MaintenanceReport>;
