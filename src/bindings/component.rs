//! The WASI 0.2 component: wit-bindgen exports over the core, and the host's `storage` import
//! adapted to the core's [`Storage`] trait. Conversions only; no logic.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::ErrorKind;
use crate::io::Io;
use crate::meta::{DataFileMeta, Key, Level, SequenceNumber};
use crate::options::{CoreOptions, Flavor, TableKind};
use crate::plan::{self, BucketDecision, BucketPlanRequest, StrategyState, TaskAction};
use crate::storage::{
    ObjectMeta, Storage, StorageError, StorageErrorKind, StorageResult, StorageWriter,
};

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

fn storage_error_kind(e: &StorageError) -> wt::StorageError {
    let m = e.message.clone();
    match e.kind {
        StorageErrorKind::NotFound => wt::StorageError::NotFound(m),
        StorageErrorKind::AlreadyExists => wt::StorageError::AlreadyExists(m),
        StorageErrorKind::Permission => wt::StorageError::Permission(m),
        StorageErrorKind::Io => wt::StorageError::Io(m),
    }
}

fn to_wit_error(e: crate::Error) -> wt::Error {
    let message = e.message;
    match e.kind {
        ErrorKind::InvalidOption { key, value } => wt::Error::InvalidOption(wt::OptionError {
            key,
            value,
            message,
        }),
        ErrorKind::NotCompactable { reason } => {
            wt::Error::NotCompactable(wt::NotCompactableError {
                reason_json: serde_json::to_string(&reason).unwrap_or_default(),
                message,
            })
        }
        ErrorKind::CorruptInput { file } => {
            wt::Error::CorruptInput(wt::CorruptError { file, message })
        }
        ErrorKind::Io { storage, path } => {
            let err = StorageError {
                kind: storage,
                path: path.clone(),
                message: message.clone(),
            };
            wt::Error::Io(wt::IoError {
                kind: storage_error_kind(&err),
                path,
                message,
            })
        }
        ErrorKind::Conflict => wt::Error::Conflict(message),
        ErrorKind::Unsupported => wt::Error::Unsupported(message),
        ErrorKind::IllegalState => wt::Error::IllegalState(message),
    }
}

fn options_map(options: Vec<(String, String)>) -> BTreeMap<String, String> {
    options.into_iter().collect()
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
/// import is global), so clones are the same storage and it can be shared ([`host_io`]).
#[derive(Clone, Copy)]
struct HostStorage;

fn from_host(e: ws::StorageError, path: &str) -> StorageError {
    let (kind, message) = match e {
        ws::StorageError::NotFound(m) => (StorageErrorKind::NotFound, m),
        ws::StorageError::AlreadyExists(m) => (StorageErrorKind::AlreadyExists, m),
        ws::StorageError::Permission(m) => (StorageErrorKind::Permission, m),
        ws::StorageError::Io(m) => (StorageErrorKind::Io, m),
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

/// The host's storage and, beside it, its zstd when it offers one (asked once per call that
/// may rewrite; a host without zstd keeps the component's own).
fn host_io() -> Io {
    let codec = wcodec::offers(wcodec::Algorithm::Zstd)
        .then(|| Arc::new(HostZstd) as Arc<dyn crate::host_codec::HostCodec>);
    Io::new(Arc::new(HostStorage)).with_host_codec(codec)
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
// Planner

fn data_file(f: wp::DataFile) -> DataFileMeta {
    DataFileMeta {
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
        file_source: crate::meta::FileSource::Append,
        has_deletion_vector: f.has_deletion_vector,
    }
}

fn reason(r: &plan::Reason) -> wp::Reason {
    wp::Reason {
        rule: r.rule().to_string(),
        text: r.to_string(),
        details_json: serde_json::to_string(r).unwrap_or_default(),
    }
}

fn state(s: StrategyState) -> wp::StrategyState {
    wp::StrategyState {
        last_full_compaction_ms: s.last_full_compaction_ms,
        gentle_counter: s.gentle_counter as u32,
    }
}

fn decision(d: BucketDecision) -> wp::Decision {
    match d {
        BucketDecision::MergeTree {
            decision,
            write_stall,
            state: st,
            ..
        } => wp::Decision {
            files: decision.unit.as_ref().map_or(Vec::new(), |u| {
                u.files.iter().map(|f| f.file_name.clone()).collect()
            }),
            output_level: decision.unit.as_ref().map(|u| u.output_level.get()),
            drop_delete: decision.drop_delete,
            actions: decision
                .task
                .actions
                .iter()
                .map(|a| match a {
                    TaskAction::Upgrade { file, to_level } => {
                        wp::TaskAction::Upgrade((file.file_name.clone(), to_level.get()))
                    }
                    TaskAction::Rewrite {
                        output_level,
                        sections,
                        alone,
                    } => wp::TaskAction::Rewrite(wp::RewriteAction {
                        output_level: output_level.get(),
                        sections: sections
                            .iter()
                            .map(|sec| {
                                sec.iter()
                                    .map(|run| {
                                        run.files().iter().map(|f| f.file_name.clone()).collect()
                                    })
                                    .collect()
                            })
                            .collect(),
                        alone: alone
                            .and_then(|a| serde_json::to_value(a).ok())
                            .and_then(|v| v.as_str().map(str::to_string)),
                    }),
                })
                .collect(),
            released: Vec::new(),
            reason: reason(&decision.reason),
            write_stall: Some(wp::WriteStall {
                sorted_runs: write_stall.sorted_runs as u32,
                stop_trigger: write_stall.stop_trigger as u32,
                wait_for_latest_compaction: write_stall.wait_for_latest_compaction,
                wait_for_preparing_checkpoint: write_stall.wait_for_preparing_checkpoint,
            }),
            state: Some(state(st)),
        },
        BucketDecision::Append { decision } => wp::Decision {
            files: decision.files.iter().map(|f| f.file_name.clone()).collect(),
            output_level: (!decision.files.is_empty()).then_some(0),
            drop_delete: false,
            actions: Vec::new(),
            released: decision
                .released
                .iter()
                .map(|f| f.file_name.clone())
                .collect(),
            reason: reason(&decision.reason),
            write_stall: None,
            state: None,
        },
    }
}

impl wp::Guest for Component {
    fn plan_bucket(request: wp::BucketRequest) -> Result<wp::Decision, wt::Error> {
        let req = BucketPlanRequest {
            table_kind: table_kind(request.table_kind),
            flavor: flavor(request.flavor),
            options: options_map(request.options),
            files: request.files.into_iter().map(data_file).collect(),
            full: request.full,
            context: plan::PlanContext::at(request.now_ms, request.local_hour),
            state: request.state.map(|s| StrategyState {
                last_full_compaction_ms: s.last_full_compaction_ms,
                gentle_counter: s.gentle_counter as usize,
            }),
            has_blob_column: false,
            role: match request.role {
                wp::PlannerRole::DedicatedJob => plan::PlannerRole::DedicatedJob,
                wp::PlannerRole::Writer => plan::PlannerRole::Writer,
            },
        };
        plan::plan_bucket(&req).map(decision).map_err(to_wit_error)
    }

    fn explain_options(
        kind: wt::TableKind,
        fl: wt::Flavor,
        options: Vec<(String, String)>,
    ) -> Result<String, wt::Error> {
        let o = CoreOptions::parse_with(table_kind(kind), flavor(fl), &options_map(options))
            .map_err(to_wit_error)?;
        Ok(plan::explain_options(&o).to_string())
    }

    fn run_conformance(
        vectors_json: String,
        fl: wt::Flavor,
    ) -> Result<wp::ConformanceReport, wt::Error> {
        let r = crate::conformance::run_vectors(&vectors_json, flavor(fl)).map_err(to_wit_error)?;
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

impl wc::Guest for Component {
    fn compact_append_files(request: wc::AppendRequest) -> Result<wc::AppendResult, wt::Error> {
        use crate::rewrite::{rewrite_append, AppendInput, AppendRewrite};
        let options = CoreOptions::parse(TableKind::Append, &options_map(request.options))
            .map_err(to_wit_error)?;
        let inputs = request
            .inputs
            .into_iter()
            .map(|f| {
                AppendInput::from_parts(
                    f.path,
                    f.row_count,
                    f.min_sequence_number,
                    f.max_sequence_number,
                    f.deleted_rows,
                )
            })
            .collect();
        let req = AppendRewrite {
            inputs,
            table_schema: None,
            output_dir: request.output_dir,
            file_prefix: request.file_prefix,
            output_level: Level::ZERO,
            creation_time_ms: request.creation_time_ms,
            collect_value_stats: false,
        };
        let total = req.inputs.len() as u64;
        wpr::report(&wpr::ProgressEvent {
            phase: "rewrite".into(),
            done: 0,
            total,
            unit: "files".into(),
            message: format!("rewriting {total} files into {}", req.output_dir),
        });
        let result = rewrite_append(&host_io(), &req, &options).map_err(to_wit_error)?;
        wpr::report(&wpr::ProgressEvent {
            phase: "rewrite".into(),
            done: total,
            total,
            unit: "files".into(),
            message: format!(
                "wrote {} files ({} bytes)",
                result.outputs.len(),
                result.outputs.iter().map(|o| o.meta.file_size).sum::<u64>()
            ),
        });
        Ok(wc::AppendResult {
            outputs: result
                .outputs
                .iter()
                .map(|o| wc::OutputFile {
                    path: o.path.clone(),
                    size: o.meta.file_size,
                    row_count: o.meta.row_count,
                    min_sequence_number: o.meta.min_sequence_number.0,
                    max_sequence_number: o.meta.max_sequence_number.0,
                    level: o.meta.level.get(),
                })
                .collect(),
            requeue_last: result.requeue_last,
            metrics: serde_json::to_string(&result.metrics).unwrap_or_default(),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Table compactor

use exports::paimon::compact::table_compactor as wtc;

/// A table job: the path and settings; each call reads the table afresh.
pub struct TableJob {
    table_path: String,
    settings: wtc::JobSettings,
}

impl TableJob {
    fn context(&self) -> plan::PlanContext {
        plan::PlanContext::at(self.settings.now_ms, self.settings.local_hour)
    }

    fn scope(&self) -> crate::table::JobScope {
        let s = &self.settings.scope;
        crate::table::JobScope {
            partitions: s.partitions.clone(),
            where_clause: s.where_clause.clone(),
            partition_idle_time: s.partition_idle_time.clone(),
            buckets: s.buckets.clone(),
            options: s.options.clone(),
        }
    }

    fn job_id(&self) -> Result<[u8; 16], wt::Error> {
        self.settings.job_id.as_slice().try_into().map_err(|_| {
            wt::Error::InvalidOption(wt::OptionError {
                key: "job-id".into(),
                value: format!("{} bytes", self.settings.job_id.len()),
                message: "job-id must be 16 random bytes".into(),
            })
        })
    }
}

fn progress(phase: &str, done: u64, total: u64, message: String) {
    wpr::report(&wpr::ProgressEvent {
        phase: phase.into(),
        done,
        total,
        unit: "steps".into(),
        message,
    });
}

impl wtc::GuestCompactionJob for TableJob {
    fn new(table_path: String, settings: wtc::JobSettings) -> Self {
        TableJob {
            table_path,
            settings,
        }
    }

    fn plan(&self) -> Result<wtc::TablePlan, wt::Error> {
        let req = crate::table::PlanRequest {
            full: self.settings.full,
            context: self.context(),
            merge_rewriter: true,
            scope: self.scope(),
        };
        let p =
            crate::table::plan_table(&HostStorage, &self.table_path, &req).map_err(to_wit_error)?;
        Ok(wtc::TablePlan {
            snapshot_id: p.snapshot_id,
            buckets_with_work: p.summary.buckets_with_work as u32,
            files_removed: p.summary.files_removed as u32,
            json: serde_json::to_string(&p).unwrap_or_default(),
        })
    }

    fn run(&self) -> Result<wtc::CompactReport, wt::Error> {
        let mut opts = crate::table::CompactOptions::new(self.context(), self.job_id()?);
        opts.full = self.settings.full;
        opts.owner = self.settings.owner.clone();
        opts.lease_ttl_ms = self.settings.lease_ttl_ms;
        opts.max_commit_retries = self.settings.max_commit_retries as usize;
        opts.scope = self.scope();
        // The back-off between commit attempts waits on the host's WASI monotonic clock.
        let sleep = |ms: u64| std::thread::sleep(std::time::Duration::from_millis(ms));
        opts.sleep = Some(&sleep);
        progress("compact", 0, 1, format!("compacting {}", self.table_path));
        let maintain = crate::maintenance::maintain::MaintenanceSettings {
            sleep: Some(&sleep),
            ..crate::maintenance::maintain::MaintenanceSettings::new(
                crate::maintenance::MaintenanceContext {
                    now_ms: self.settings.now_ms,
                    utc_offset_ms: self.settings.utc_offset_ms,
                    dry_run: false,
                },
                opts.job_id,
            )
        };
        let job = crate::maintenance::maintain::compact_and_maintain(
            &host_io(),
            &self.table_path,
            &opts,
            &maintain,
            !self.settings.skip_maintenance,
        )
        .map_err(to_wit_error)?;
        let json = serde_json::to_string(&job).unwrap_or_default();
        let r = job.compaction;
        progress(
            "compact",
            1,
            1,
            match r.snapshot_after {
                Some(id) => format!(
                    "committed snapshot {id}: {} files replaced by {}",
                    r.totals.files_removed, r.totals.files_added
                ),
                None => "nothing committed".to_string(),
            },
        );
        Ok(wtc::CompactReport {
            snapshot_before: r.snapshot_before,
            snapshot_after: r.snapshot_after,
            files_removed: r.totals.files_removed as u64,
            files_added: r.totals.files_added as u64,
            json,
        })
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
        use crate::maintenance::maintain::{self, MaintenanceTask as T};
        let task = match task {
            wtm::MaintenanceTask::AfterCommit => T::AfterCommit,
            wtm::MaintenanceTask::ExpireSnapshots => T::ExpireSnapshots,
            wtm::MaintenanceTask::ExpireChangelogs => T::ExpireChangelogs,
            wtm::MaintenanceTask::ExpirePartitions => T::ExpirePartitions,
            wtm::MaintenanceTask::ExpireTags => T::ExpireTags,
            wtm::MaintenanceTask::ExpireConsumers => T::ExpireConsumers,
            wtm::MaintenanceTask::RemoveOrphanFiles => T::RemoveOrphanFiles,
        };
        let job_id: [u8; 16] = settings.job_id.as_slice().try_into().map_err(|_| {
            wt::Error::InvalidOption(wt::OptionError {
                key: "job-id".into(),
                value: format!("{} bytes", settings.job_id.len()),
                message: "job-id must be 16 random bytes".into(),
            })
        })?;
        let sleep = |ms: u64| std::thread::sleep(std::time::Duration::from_millis(ms));
        let s = maintain::MaintenanceSettings {
            options: settings.options,
            older_than_ms: settings.older_than_ms,
            sleep: Some(&sleep),
            ..maintain::MaintenanceSettings::new(
                crate::maintenance::MaintenanceContext {
                    now_ms: settings.now_ms,
                    utc_offset_ms: settings.utc_offset_ms,
                    dry_run: settings.dry_run,
                },
                job_id,
            )
        };
        let report = maintain::run(&HostStorage, &table_path, task, &s).map_err(to_wit_error)?;
        Ok(serde_json::to_string(&report).unwrap_or_default())
    }
}

impl wtc::Guest for Component {
    type CompactionJob = TableJob;

    fn write_demo_tables(root: String, now_ms: i64, seed: u64) -> Result<Vec<String>, wt::Error> {
        let seed = crate::table::demo::seed_from_u64(seed);
        crate::table::demo::write_demo(&HostStorage, &root, now_ms, seed).map_err(to_wit_error)
    }
}
