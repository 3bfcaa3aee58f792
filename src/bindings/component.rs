//! The WASI 0.2 component: the wit-bindgen exports mapped onto [`crate::api`], and the host's
//! imports adapted to the core's services (`storage` to the [`Storage`] trait, `progress` to
//! [`api::Services`], `codec` to [`crate::host_codec::HostCodec`]). Type mapping only: every
//! default, check, clock, sleep and progress report is the API's, which the host's native
//! engine calls too.

use std::sync::Arc;

use crate::api;
use crate::error::{ErrorKind, NotCompactable};
use crate::maintenance::maintain::MaintenanceTask;
use crate::meta::{CompactionFile, FileSource, Key, Level, SequenceNumber};
use crate::options::{Flavor, TableKind};
use crate::plan::{PlannerRole, StrategyState};
use crate::storage::{
    ObjectMeta, Storage, StorageError, StorageErrorKind, StorageResult, StorageWriter,
};
use crate::table::JobScope;

wit_bindgen::generate!({
    path: "wit",
    world: "compactor-component",
});

use exports::paimon::compact::compactor as wc;
use exports::paimon::compact::planner as wp;
use paimon::compact::codec as wcodec;
use paimon::compact::progress as wpr;
use paimon::compact::storage as ws;
use paimon::compact::types as wt;

struct Component;

export!(Component);

// ---------------------------------------------------------------------------------------------
// Errors and common types

/// The WIT `storage-error` of `kind`, carrying the storage's own words (`detail`).
fn storage_error_kind(kind: StorageErrorKind, detail: String) -> wt::StorageError {
    match kind {
        StorageErrorKind::NotFound => wt::StorageError::NotFound(detail),
        StorageErrorKind::AlreadyExists => wt::StorageError::AlreadyExists(detail),
        StorageErrorKind::Permission => wt::StorageError::Permission(detail),
        StorageErrorKind::Io => wt::StorageError::Io(detail),
    }
}

fn not_compactable_reason(reason: NotCompactable) -> wt::NotCompactableReason {
    use wt::NotCompactableReason as W;
    match reason {
        NotCompactable::WriteOnly => W::WriteOnly,
        NotCompactable::TableOption {
            key,
            value,
            because,
        } => W::TableOption(wt::TableOptionRefusal {
            key,
            value,
            because,
        }),
        NotCompactable::UnawareBucketAutoCompaction => W::UnawareBucketAutoCompaction,
        NotCompactable::DataEvolution { deletion_vectors } => W::DataEvolution(deletion_vectors),
        NotCompactable::BlobTable => W::BlobTable,
        NotCompactable::PostponeBucket => W::PostponeBucket,
        NotCompactable::CoordinatorNeedsUnawareAppend => W::CoordinatorNeedsUnawareAppend,
    }
}

/// The core's error as the WIT `error`. The cause does not cross: the message already says
/// what it said, except that a storage failure's own words also travel in the `io-error`'s
/// `kind` payload.
fn to_wit_error(e: crate::Error) -> wt::Error {
    let detail = std::error::Error::source(&e)
        .and_then(|s| s.downcast_ref::<StorageError>())
        .map(|s| s.message.clone())
        .unwrap_or_default();
    let message = e.message;
    match e.kind {
        ErrorKind::InvalidOption { key, value } => wt::Error::InvalidOption(wt::OptionError {
            key,
            value,
            message,
        }),
        ErrorKind::NotCompactable { reason } => {
            wt::Error::NotCompactable(wt::NotCompactableError {
                reason: not_compactable_reason(reason),
                message,
            })
        }
        ErrorKind::CorruptInput { file } => {
            wt::Error::CorruptInput(wt::CorruptError { file, message })
        }
        ErrorKind::Io { storage, path } => wt::Error::Io(wt::IoError {
            kind: storage_error_kind(storage, detail),
            path,
            message,
        }),
        ErrorKind::CommitUnknown { storage, path } => wt::Error::CommitUnknown(wt::IoError {
            kind: storage_error_kind(storage, detail),
            path,
            message,
        }),
        ErrorKind::Conflict => wt::Error::Conflict(message),
        ErrorKind::Unsupported => wt::Error::Unsupported(message),
        ErrorKind::IllegalState => wt::Error::IllegalState(message),
        ErrorKind::Internal => wt::Error::Internal(message),
    }
}

fn flavor(f: wt::Flavor) -> Flavor {
    match f {
        wt::Flavor::Java => Flavor::Java,
        wt::Flavor::Cpp => Flavor::Cpp,
    }
}

fn table_kind(k: wt::TableKind) -> TableKind {
    match k {
        wt::TableKind::PrimaryKey => TableKind::PrimaryKey,
        wt::TableKind::Append => TableKind::Append,
    }
}

// ---------------------------------------------------------------------------------------------
// Storage: the host's import behind the core's trait

/// The host's storage. Every call crosses the component boundary once. A unit value (the
/// import is global), so clones are the same storage and it can be shared.
#[derive(Clone, Copy)]
struct HostStorage;

/// The host's storage error about `path`. The core's message names the path itself, so a
/// host's words that only repeat it (`a/b`, or `a/b: reason`) are trimmed to the rest: a
/// missing file reads `storage: not found: 'a/b'`, not `... 'a/b': a/b`.
fn from_host(e: ws::StorageError, path: &str) -> StorageError {
    let (kind, message) = match e {
        ws::StorageError::NotFound(m) => (StorageErrorKind::NotFound, m),
        ws::StorageError::AlreadyExists(m) => (StorageErrorKind::AlreadyExists, m),
        ws::StorageError::Permission(m) => (StorageErrorKind::Permission, m),
        ws::StorageError::Io(m) => (StorageErrorKind::Io, m),
    };
    let message = if message == path {
        String::new()
    } else {
        match message
            .strip_prefix(path)
            .and_then(|m| m.strip_prefix(": "))
        {
            Some(rest) => rest.to_string(),
            None => message,
        }
    };
    StorageError::new(kind, path, message)
}

struct HostWriter {
    writer: Option<ws::Writer>,
    path: String,
}

impl StorageWriter for HostWriter {
    fn write(&mut self, chunk: &[u8]) -> StorageResult<()> {
        match &self.writer {
            Some(w) => w.write(chunk).map_err(|e| from_host(e, &self.path)),
            None => Err(StorageError::new(
                StorageErrorKind::Io,
                &self.path,
                "writer already closed",
            )),
        }
    }

    fn finish(mut self: Box<Self>) -> StorageResult<u64> {
        let w = self.writer.take().ok_or_else(|| {
            StorageError::new(StorageErrorKind::Io, &self.path, "writer already closed")
        })?;
        ws::Writer::finish(w).map_err(|e| from_host(e, &self.path))
    }

    fn abort(mut self: Box<Self>) -> StorageResult<()> {
        match self.writer.take() {
            Some(w) => ws::Writer::abort(w).map_err(|e| from_host(e, &self.path)),
            None => Ok(()),
        }
    }
}

/// The host's `codec` import, when it offers zstd.
struct HostZstd;

impl crate::host_codec::HostCodec for HostZstd {
    fn zstd_compress(&self, level: i32, input: &[u8]) -> Result<Vec<u8>, String> {
        wcodec::compress(wcodec::Algorithm::Zstd, level, input)
    }

    fn zstd_decompress(&self, input: &[u8], size_hint: Option<usize>) -> Result<Vec<u8>, String> {
        let hint = size_hint.map_or(0, |n| n as u64);
        wcodec::decompress(wcodec::Algorithm::Zstd, input, hint)
    }
}

impl Storage for HostStorage {
    fn size(&self, path: &str) -> StorageResult<u64> {
        ws::size(path).map_err(|e| from_host(e, path))
    }

    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        ws::read_range(path, offset, len).map_err(|e| from_host(e, path))
    }

    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        ws::list_objects(prefix)
            .map(|v| {
                v.into_iter()
                    .map(|o| ObjectMeta {
                        path: o.path,
                        size: o.size,
                        modified_ms: o.modified_ms,
                    })
                    .collect()
            })
            .map_err(|e| from_host(e, prefix))
    }

    fn create_writer(&self, path: &str) -> StorageResult<Box<dyn StorageWriter>> {
        let writer = ws::create_writer(path).map_err(|e| from_host(e, path))?;
        Ok(Box::new(HostWriter {
            writer: Some(writer),
            path: path.to_string(),
        }))
    }

    fn delete(&self, path: &str) -> StorageResult<()> {
        ws::delete(path).map_err(|e| from_host(e, path))
    }

    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()> {
        ws::create_if_absent(path, bytes).map_err(|e| from_host(e, path))
    }
}

// ---------------------------------------------------------------------------------------------
// Services beside the storage

/// The host's storage, as the API takes it.
fn storage() -> Arc<dyn Storage> {
    Arc::new(HostStorage)
}

/// Progress events, forwarded to the host's `progress` import.
fn report_progress(e: api::ProgressEvent) {
    wpr::report(&wpr::ProgressEvent {
        phase: e.phase,
        done: e.done,
        total: e.total,
        unit: e.unit,
        message: e.message,
    });
}

fn services() -> api::Services<'static> {
    api::Services {
        progress: Some(&report_progress),
        // Asked once per call that may rewrite; a host without zstd keeps the component's own.
        host_codec: wcodec::offers(wcodec::Algorithm::Zstd)
            .then(|| Arc::new(HostZstd) as Arc<dyn crate::host_codec::HostCodec>),
    }
}

/// Makes a panic reach the host as what it is: the first export call installs a hook that
/// sends the panic's message and location, on one line, to the host's `progress.panicked`
/// before the trap that follows (a trap alone tells the host nothing of where or why), then
/// runs the default hook (the message on the guest's stderr). A panic inside a third-party
/// decoder cannot be caught here (panic = abort), so the hook also names the file it was
/// decoding (`decoder_panics`): the host reports that as corrupt input of the file.
fn report_panics() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info.to_string().replace(":\n", ": ").replace('\n', " ");
            match crate::decoder_panics::decoding(&message) {
                Some((file, message)) => wpr::panicked(&message, Some(&file)),
                None => wpr::panicked(&message, None),
            }
            default(info);
        }));
    });
}

/// JSON for the WIT fields that carry it; a failure is an error, not an empty string.
fn json<T: serde::Serialize>(value: &T) -> Result<String, wt::Error> {
    api::to_json(value).map_err(to_wit_error)
}

// ---------------------------------------------------------------------------------------------
// Planner

fn data_file(f: wp::DataFile) -> CompactionFile {
    CompactionFile {
        file_name: f.name,
        file_size: f.size,
        row_count: f.row_count,
        min_key: Key::from_bytes(f.min_key),
        max_key: Key::from_bytes(f.max_key),
        min_sequence_number: SequenceNumber(f.min_sequence_number),
        max_sequence_number: SequenceNumber(f.max_sequence_number),
        level: Level::new(f.level),
        delete_row_count: f.delete_row_count,
        creation_time_ms: f.creation_time_ms,
        // Not in the WIT record; the planner does not read it.
        file_source: FileSource::default(),
        has_deletion_vector: f.has_deletion_vector,
    }
}

fn bucket_request(r: wp::BucketRequest) -> api::BucketRequest {
    api::BucketRequest {
        table_kind: table_kind(r.table_kind),
        flavor: flavor(r.flavor),
        options: r.options,
        files: r.files.into_iter().map(data_file).collect(),
        full: r.full,
        now_ms: r.now_ms,
        local_hour: r.local_hour,
        state: r.state.map(|s| StrategyState {
            last_full_compaction_ms: s.last_full_compaction_ms,
            gentle_counter: s.gentle_counter as usize,
        }),
        role: match r.role {
            wp::PlannerRole::DedicatedJob => PlannerRole::DedicatedJob,
            wp::PlannerRole::Writer => PlannerRole::Writer,
        },
    }
}

fn decision(d: api::Decision) -> wp::Decision {
    wp::Decision {
        files: d.files,
        output_level: d.output_level,
        drop_delete: d.drop_delete,
        actions: d
            .actions
            .into_iter()
            .map(|a| match a {
                api::TaskAction::Upgrade { file, to_level } => {
                    wp::TaskAction::Upgrade((file, to_level))
                }
                api::TaskAction::Rewrite(r) => wp::TaskAction::Rewrite(wp::RewriteAction {
                    output_level: r.output_level,
                    sections: r.sections,
                    alone: r.alone,
                }),
            })
            .collect(),
        released: d.released,
        reason: wp::Reason {
            rule: d.reason.rule,
            text: d.reason.text,
            details_json: d.reason.details_json,
        },
        write_stall: d.write_stall.map(|w| wp::WriteStall {
            sorted_runs: w.sorted_runs as u32,
            stop_trigger: w.stop_trigger as u32,
            wait_for_latest_compaction: w.wait_for_latest_compaction,
            wait_for_preparing_checkpoint: w.wait_for_preparing_checkpoint,
        }),
        state: d.state.map(|s| wp::StrategyState {
            last_full_compaction_ms: s.last_full_compaction_ms,
            gentle_counter: s.gentle_counter as u32,
        }),
    }
}

impl wp::Guest for Component {
    fn plan_bucket(request: wp::BucketRequest) -> Result<wp::Decision, wt::Error> {
        report_panics();
        api::plan_bucket(&bucket_request(request))
            .map(decision)
            .map_err(to_wit_error)
    }

    fn explain_options(
        kind: wt::TableKind,
        fl: wt::Flavor,
        options: Vec<(String, String)>,
    ) -> Result<String, wt::Error> {
        report_panics();
        api::explain_options(table_kind(kind), flavor(fl), &options)
            .map(|v| v.to_string())
            .map_err(to_wit_error)
    }

    fn run_conformance(
        vectors_json: String,
        fl: wt::Flavor,
    ) -> Result<wp::ConformanceReport, wt::Error> {
        report_panics();
        let r = api::run_conformance(&vectors_json, flavor(fl)).map_err(to_wit_error)?;
        Ok(wp::ConformanceReport {
            passed: r.passed as u32,
            failed: r.failed as u32,
            skipped: r.skipped as u32,
            text: r.to_string(),
            failures: r
                .failures
                .into_iter()
                .map(|f| wp::CaseFailure {
                    name: f.name,
                    message: f.message,
                })
                .collect(),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Compactor

fn append_request(r: wc::AppendRequest) -> api::AppendRequest {
    api::AppendRequest {
        inputs: r
            .inputs
            .into_iter()
            .map(|f| api::AppendInputFile {
                path: f.path,
                row_count: f.row_count,
                min_sequence_number: f.min_sequence_number,
                max_sequence_number: f.max_sequence_number,
                deleted_rows: f.deleted_rows,
            })
            .collect(),
        output_dir: r.output_dir,
        file_prefix: r.file_prefix,
        options: r.options,
        creation_time_ms: r.creation_time_ms,
    }
}

fn append_result(r: api::AppendResult) -> wc::AppendResult {
    wc::AppendResult {
        outputs: r
            .outputs
            .into_iter()
            .map(|o| wc::OutputFile {
                path: o.path,
                size: o.size,
                row_count: o.row_count,
                min_sequence_number: o.min_sequence_number,
                max_sequence_number: o.max_sequence_number,
                level: o.level,
            })
            .collect(),
        requeue_last: r.requeue_last,
        metrics: r.metrics_json,
    }
}

impl wc::Guest for Component {
    fn compact_append_files(request: wc::AppendRequest) -> Result<wc::AppendResult, wt::Error> {
        report_panics();
        api::compact_append_files(storage(), &append_request(request), &services())
            .map(append_result)
            .map_err(to_wit_error)
    }
}

// ---------------------------------------------------------------------------------------------
// Table compactor

use crate::table::fanout::{Task, TaskResult, TaskSet};
use exports::paimon::compact::table_compactor as wtc;

/// A compaction job resource: the path and settings; each call reads the table afresh.
pub struct CompactionJob {
    table_path: String,
    job: api::TableJob,
}

fn table_job(s: wtc::JobSettings) -> api::TableJob {
    api::TableJob {
        full: s.full,
        now_ms: s.now_ms,
        local_hour: s.local_hour,
        job_id: s.job_id,
        owner: s.owner,
        lease_ttl_ms: s.lease_ttl_ms,
        max_commit_retries: s.max_commit_retries,
        scope: JobScope {
            partitions: s.scope.partitions,
            where_clause: s.scope.where_clause,
            partition_idle_time: s.scope.partition_idle_time,
            buckets: s.scope.buckets,
            options: s.scope.options,
        },
        skip_maintenance: s.skip_maintenance,
        utc_offset_ms: s.utc_offset_ms,
    }
}

impl wtc::GuestCompactionJob for CompactionJob {
    fn new(table_path: String, settings: wtc::JobSettings) -> Self {
        report_panics();
        CompactionJob {
            table_path,
            job: table_job(settings),
        }
    }

    fn plan(&self) -> Result<wtc::TablePlan, wt::Error> {
        report_panics();
        let p = api::plan_table(storage(), &self.table_path, &self.job).map_err(to_wit_error)?;
        Ok(wtc::TablePlan {
            snapshot_id: p.snapshot_id,
            buckets_with_work: p.summary.buckets_with_work as u32,
            files_removed: p.summary.files_removed as u32,
            json: json(&p)?,
        })
    }

    fn run(&self) -> Result<wtc::CompactReport, wt::Error> {
        report_panics();
        let job = api::compact_table(storage(), &self.table_path, &self.job, &services())
            .map_err(to_wit_error)?;
        compact_report(&job)
    }

    fn plan_tasks(&self) -> Result<wtc::TaskSet, wt::Error> {
        report_panics();
        let set = api::plan_tasks(storage(), &self.table_path, &self.job).map_err(to_wit_error)?;
        Ok(wtc::TaskSet {
            job_id: set.job_id.clone(),
            json: json(&set)?,
            tasks: set.tasks.iter().map(json).collect::<Result<_, _>>()?,
        })
    }

    fn run_task(&self, task: String, attempt: Vec<u8>) -> Result<String, wt::Error> {
        report_panics();
        let task = Task::from_json(&task).map_err(to_wit_error)?;
        let r = api::run_task(storage(), &task, &attempt, &services()).map_err(to_wit_error)?;
        json(&r)
    }

    fn commit_tasks(
        &self,
        task_set: String,
        results: Vec<String>,
        options: wtc::CommitOptions,
    ) -> Result<wtc::CompactReport, wt::Error> {
        report_panics();
        let set = TaskSet::from_json(&task_set).map_err(to_wit_error)?;
        let results = parse_results(&results)?;
        let commit = api::CommitOptions {
            rewrite_ms: options.rewrite_ms,
            all_or_nothing: options.all_or_nothing,
        };
        let job = api::commit_tasks(storage(), &set, &results, &self.job, &commit)
            .map_err(to_wit_error)?;
        compact_report(&job)
    }

    fn abort_tasks(&self, task_set: String, results: Vec<String>) -> Result<String, wt::Error> {
        report_panics();
        let set = TaskSet::from_json(&task_set).map_err(to_wit_error)?;
        let results = parse_results(&results)?;
        json(&api::abort_tasks(storage(), &set, &results).map_err(to_wit_error)?)
    }

    fn renew_leases(
        &self,
        task_set: String,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<String, wt::Error> {
        report_panics();
        let set = TaskSet::from_json(&task_set).map_err(to_wit_error)?;
        json(&api::renew_leases(storage(), &set, now_ms, ttl_ms).map_err(to_wit_error)?)
    }

    fn release_leases(&self) -> Result<Vec<String>, wt::Error> {
        report_panics();
        api::release_job_leases(storage().as_ref(), &self.table_path, &self.job.job_id)
            .map_err(to_wit_error)
    }
}

fn compact_report(
    job: &crate::maintenance::maintain::JobReport,
) -> Result<wtc::CompactReport, wt::Error> {
    let r = &job.compaction;
    Ok(wtc::CompactReport {
        snapshot_before: r.snapshot_before,
        snapshot_after: r.snapshot_after,
        files_removed: r.totals.files_removed as u64,
        files_added: r.totals.files_added as u64,
        json: json(job)?,
    })
}

fn parse_results(results: &[String]) -> Result<Vec<TaskResult>, wt::Error> {
    results
        .iter()
        .map(|r| TaskResult::from_json(r).map_err(to_wit_error))
        .collect()
}

impl wtc::Guest for Component {
    type CompactionJob = CompactionJob;

    fn write_demo_tables(root: String, now_ms: i64, seed: u64) -> Result<Vec<String>, wt::Error> {
        report_panics();
        api::write_demo_tables(storage(), &root, now_ms, seed).map_err(to_wit_error)
    }
}

// ---------------------------------------------------------------------------------------------
// Table maintenance

use exports::paimon::compact::table_maintenance as wtm;

impl wtm::Guest for Component {
    fn run(
        table_path: String,
        task: wtm::MaintenanceTask,
        settings: wtm::MaintenanceSettings,
    ) -> Result<String, wt::Error> {
        report_panics();
        let task = match task {
            wtm::MaintenanceTask::AfterCommit => MaintenanceTask::AfterCommit,
            wtm::MaintenanceTask::ExpireSnapshots => MaintenanceTask::ExpireSnapshots,
            wtm::MaintenanceTask::ExpireChangelogs => MaintenanceTask::ExpireChangelogs,
            wtm::MaintenanceTask::ExpirePartitions => MaintenanceTask::ExpirePartitions,
            wtm::MaintenanceTask::ExpireTags => MaintenanceTask::ExpireTags,
            wtm::MaintenanceTask::ExpireConsumers => MaintenanceTask::ExpireConsumers,
            wtm::MaintenanceTask::RemoveOrphanFiles => MaintenanceTask::RemoveOrphanFiles,
        };
        let request = api::MaintenanceRequest {
            now_ms: settings.now_ms,
            utc_offset_ms: settings.utc_offset_ms,
            dry_run: settings.dry_run,
            job_id: settings.job_id,
            options: settings.options,
            older_than_ms: settings.older_than_ms,
        };
        let report =
            api::run_maintenance(storage(), &table_path, task, &request).map_err(to_wit_error)?;
        json(&report)
    }
}
