//! One API over the two ways of running the core: natively (compiled into this binary) or as
//! the WebAssembly component in wasmtime. Both give the same answers; the tests hold them to it.

use std::sync::Arc;

use paimon_compact::conformance::{CaseFailure, ConformanceReport};
use paimon_compact::meta::{DataFileMeta, Level};
use paimon_compact::options::{Flavor, TableKind};
use paimon_compact::plan::{self, BucketDecision, BucketPlanRequest, TaskAction};
use paimon_compact::storage::{Storage, StorageErrorKind};
use paimon_compact::{Error as CoreError, ErrorKind};

use crate::error::HostError;
use crate::storage::ProgressFn;
use crate::wasm::{
    wit_compactor as wc, wit_planner as wp, wit_table as wtc, wit_types as wt, WasmRuntime,
};
use paimon_compact::maintenance::maintain::{
    JobReport, MaintenanceReport, MaintenanceSettings, MaintenanceTask,
};
use paimon_compact::maintenance::MaintenanceContext;
use paimon_compact::table::TablePlan;

/// A standalone maintenance run: option overrides (what the procedures' arguments set), a
/// dry run, and orphan removal's threshold.
#[derive(Clone, Debug, Default)]
pub struct MaintenanceRequest {
    pub options: Vec<(String, String)>,
    pub dry_run: bool,
    pub older_than_ms: Option<i64>,
}

/// A bucket decision, in the same shape whichever engine produced it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PlanSummary {
    pub files: Vec<String>,
    pub output_level: Option<u32>,
    pub drop_delete: bool,
    /// `upgrade <file> -> L<n>` or `rewrite -> L<n> <sections>`.
    pub actions: Vec<String>,
    pub released: Vec<String>,
    pub rule: String,
    pub reason: String,
    /// `(sorted runs, stop trigger, wait for compaction, wait at checkpoint)`.
    pub write_stall: Option<(u32, u32, bool, bool)>,
}

/// One file to rewrite in an append bucket.
#[derive(Clone, Debug)]
pub struct AppendInputFile {
    pub path: String,
    pub row_count: u64,
    pub min_sequence_number: i64,
    pub max_sequence_number: i64,
    pub deleted_rows: Option<Vec<u64>>,
}

/// An append rewrite request.
#[derive(Clone, Debug)]
pub struct AppendJob {
    pub inputs: Vec<AppendInputFile>,
    pub output_dir: String,
    pub file_prefix: String,
    pub options: Vec<(String, String)>,
    pub creation_time_ms: i64,
}

/// What an append rewrite wrote.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AppendSummary {
    /// `(path, size, rows, min seq, max seq)` of each output.
    pub outputs: Vec<(String, u64, u64, i64, i64)>,
    pub requeue_last: bool,
    pub metrics_json: String,
}

/// The engine a command runs on.
pub enum Compactor {
    Native,
    Wasm(Box<WasmRuntime>),
}

fn action_text(level: u32, sections: &[Vec<Vec<String>>]) -> String {
    let secs: Vec<String> = sections
        .iter()
        .map(|sec| {
            sec.iter()
                .map(|run| format!("[{}]", run.join(",")))
                .collect::<Vec<_>>()
                .join("")
        })
        .collect();
    format!("rewrite -> L{level} {}", secs.join(" | "))
}

fn native_summary(d: BucketDecision) -> PlanSummary {
    let reason = d.reason().clone();
    match d {
        BucketDecision::MergeTree {
            decision,
            write_stall,
            ..
        } => PlanSummary {
            files: decision.unit.as_ref().map_or(vec![], |u| {
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
                        format!("upgrade {} -> L{}", file.file_name, to_level)
                    }
                    TaskAction::Rewrite {
                        output_level,
                        sections,
                        ..
                    } => action_text(
                        output_level.get(),
                        &sections
                            .iter()
                            .map(|s| {
                                s.iter()
                                    .map(|r| {
                                        r.files().iter().map(|f| f.file_name.clone()).collect()
                                    })
                                    .collect()
                            })
                            .collect::<Vec<_>>(),
                    ),
                })
                .collect(),
            released: vec![],
            rule: reason.rule().to_string(),
            reason: reason.to_string(),
            write_stall: Some((
                write_stall.sorted_runs as u32,
                write_stall.stop_trigger as u32,
                write_stall.wait_for_latest_compaction,
                write_stall.wait_for_preparing_checkpoint,
            )),
        },
        BucketDecision::Append { decision } => PlanSummary {
            files: decision.files.iter().map(|f| f.file_name.clone()).collect(),
            output_level: (!decision.files.is_empty()).then_some(0),
            drop_delete: false,
            actions: vec![],
            released: decision
                .released
                .iter()
                .map(|f| f.file_name.clone())
                .collect(),
            rule: reason.rule().to_string(),
            reason: reason.to_string(),
            write_stall: None,
        },
    }
}

fn wit_summary(d: wp::Decision) -> PlanSummary {
    PlanSummary {
        files: d.files,
        output_level: d.output_level,
        drop_delete: d.drop_delete,
        actions: d
            .actions
            .into_iter()
            .map(|a| match a {
                wp::TaskAction::Upgrade((file, level)) => format!("upgrade {file} -> L{level}"),
                wp::TaskAction::Rewrite(r) => action_text(r.output_level, &r.sections),
            })
            .collect(),
        released: d.released,
        rule: d.reason.rule,
        reason: d.reason.text,
        write_stall: d.write_stall.map(|w| {
            (
                w.sorted_runs,
                w.stop_trigger,
                w.wait_for_latest_compaction,
                w.wait_for_preparing_checkpoint,
            )
        }),
    }
}

/// The component's error, back into the core's type: a host sees one error type whichever
/// engine ran.
pub fn from_wit_error(e: wt::Error) -> CoreError {
    let storage_kind = |k: &wt::StorageError| match k {
        wt::StorageError::NotFound(_) => StorageErrorKind::NotFound,
        wt::StorageError::AlreadyExists(_) => StorageErrorKind::AlreadyExists,
        wt::StorageError::Permission(_) => StorageErrorKind::Permission,
        wt::StorageError::Io(_) => StorageErrorKind::Io,
    };
    let (kind, message) = match e {
        wt::Error::InvalidOption(o) => (
            ErrorKind::InvalidOption {
                key: o.key,
                value: o.value,
            },
            o.message,
        ),
        wt::Error::NotCompactable(n) => {
            match serde_json::from_str::<plan::NotCompactable>(&n.reason_json) {
                Ok(reason) => (ErrorKind::NotCompactable { reason }, n.message),
                Err(_) => (ErrorKind::Unsupported, n.message),
            }
        }
        wt::Error::CorruptInput(c) => (ErrorKind::CorruptInput { file: c.file }, c.message),
        wt::Error::Io(io) => (
            ErrorKind::Io {
                storage: storage_kind(&io.kind),
                path: io.path,
            },
            io.message,
        ),
        wt::Error::Conflict(m) => (ErrorKind::Conflict, m),
        wt::Error::Unsupported(m) => (ErrorKind::Unsupported, m),
        wt::Error::IllegalState(m) => (ErrorKind::IllegalState, m),
    };
    CoreError { kind, message }
}

fn wit_flavor(f: Flavor) -> wt::Flavor {
    match f {
        Flavor::Java => wt::Flavor::Java,
        Flavor::Cpp => wt::Flavor::Cpp,
    }
}

fn wit_file(f: &DataFileMeta) -> wp::DataFile {
    wp::DataFile {
        name: f.file_name.clone(),
        size: f.file_size,
        row_count: f.row_count,
        min_key: f.min_key.as_bytes().to_vec(),
        max_key: f.max_key.as_bytes().to_vec(),
        min_sequence_number: f.min_sequence_number.0,
        max_sequence_number: f.max_sequence_number.0,
        level: f.level.get(),
        delete_row_count: f.delete_row_count,
        creation_time_ms: f.creation_time_ms,
        has_deletion_vector: f.has_deletion_vector,
    }
}

impl Compactor {
    pub fn name(&self) -> &'static str {
        match self {
            Compactor::Native => "native",
            Compactor::Wasm(_) => "wasm",
        }
    }

    /// The planner's view of a table's options (`explain-options`): every derived value a
    /// decision depends on, as JSON.
    pub fn explain_options(
        &self,
        kind: TableKind,
        flavor: Flavor,
        options: &std::collections::BTreeMap<String, String>,
    ) -> Result<serde_json::Value, HostError> {
        match self {
            Compactor::Native => {
                let o = paimon_compact::options::CoreOptions::parse_with(kind, flavor, options)?;
                Ok(plan::explain_options(&o))
            }
            Compactor::Wasm(rt) => {
                let pairs: Vec<(String, String)> = options
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let kind = match kind {
                    TableKind::PrimaryKey => wt::TableKind::PrimaryKey,
                    TableKind::Append => wt::TableKind::Append,
                };
                let text = rt
                    .call(
                        Arc::new(paimon_compact::storage::MemoryStorage::new()),
                        None,
                        |c, store| {
                            c.paimon_compact_planner().call_explain_options(
                                store,
                                kind,
                                wit_flavor(flavor),
                                &pairs,
                            )
                        },
                    )?
                    .map_err(from_wit_error)?;
                from_json(&text)
            }
        }
    }

    pub fn run_conformance(
        &self,
        vectors_json: &str,
        flavor: Flavor,
    ) -> Result<ConformanceReport, HostError> {
        match self {
            Compactor::Native => Ok(paimon_compact::conformance::run_vectors(
                vectors_json,
                flavor,
            )?),
            Compactor::Wasm(rt) => {
                let r = rt
                    .call(
                        Arc::new(paimon_compact::storage::MemoryStorage::new()),
                        None,
                        |c, store| {
                            c.paimon_compact_planner().call_run_conformance(
                                store,
                                vectors_json,
                                wit_flavor(flavor),
                            )
                        },
                    )?
                    .map_err(from_wit_error)?;
                Ok(ConformanceReport {
                    passed: r.passed as usize,
                    failed: r.failed as usize,
                    skipped: r.skipped as usize,
                    failures: r
                        .failures
                        .into_iter()
                        .map(|f| CaseFailure {
                            name: f.name,
                            message: f.message,
                        })
                        .collect(),
                })
            }
        }
    }

    pub fn plan_bucket(&self, req: &BucketPlanRequest) -> Result<PlanSummary, HostError> {
        match self {
            Compactor::Native => Ok(native_summary(plan::plan_bucket(req)?)),
            Compactor::Wasm(rt) => {
                let request = wp::BucketRequest {
                    table_kind: match req.table_kind {
                        TableKind::PrimaryKey => wt::TableKind::PrimaryKey,
                        TableKind::Append => wt::TableKind::Append,
                    },
                    flavor: wit_flavor(req.flavor),
                    options: req
                        .options
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                    files: req.files.iter().map(wit_file).collect(),
                    full: req.full,
                    now_ms: req.context.now_ms,
                    local_hour: req.context.local_hour,
                    state: req.state.map(|s| wp::StrategyState {
                        last_full_compaction_ms: s.last_full_compaction_ms,
                        gentle_counter: s.gentle_counter as u32,
                    }),
                    role: match req.role {
                        plan::PlannerRole::DedicatedJob => wp::PlannerRole::DedicatedJob,
                        plan::PlannerRole::Writer => wp::PlannerRole::Writer,
                    },
                };
                let d = rt
                    .call(
                        Arc::new(paimon_compact::storage::MemoryStorage::new()),
                        None,
                        |c, store| c.paimon_compact_planner().call_plan_bucket(store, &request),
                    )?
                    .map_err(from_wit_error)?;
                Ok(wit_summary(d))
            }
        }
    }

    pub fn compact_append(
        &self,
        storage: Arc<dyn Storage>,
        job: &AppendJob,
        progress: Option<ProgressFn>,
    ) -> Result<AppendSummary, HostError> {
        match self {
            Compactor::Native => {
                use paimon_compact::rewrite::{rewrite_append, AppendInput, AppendRewrite};
                let raw = job.options.iter().cloned().collect();
                let options = paimon_compact::options::CoreOptions::parse(TableKind::Append, &raw)?;
                let inputs = job
                    .inputs
                    .iter()
                    .map(|f| {
                        AppendInput::from_parts(
                            f.path.clone(),
                            f.row_count,
                            f.min_sequence_number,
                            f.max_sequence_number,
                            f.deleted_rows.clone(),
                        )
                    })
                    .collect();
                let req = AppendRewrite {
                    inputs,
                    table_schema: None,
                    output_dir: job.output_dir.clone(),
                    file_prefix: job.file_prefix.clone(),
                    output_level: Level::ZERO,
                    creation_time_ms: job.creation_time_ms,
                    collect_value_stats: false,
                };
                let r = rewrite_append(&storage, &req, &options)?;
                Ok(AppendSummary {
                    outputs: r
                        .outputs
                        .iter()
                        .map(|o| {
                            (
                                o.path.clone(),
                                o.meta.file_size,
                                o.meta.row_count,
                                o.meta.min_sequence_number.0,
                                o.meta.max_sequence_number.0,
                            )
                        })
                        .collect(),
                    requeue_last: r.requeue_last,
                    metrics_json: serde_json::to_string(&r.metrics).unwrap_or_default(),
                })
            }
            Compactor::Wasm(rt) => {
                let request = wc::AppendRequest {
                    inputs: job
                        .inputs
                        .iter()
                        .map(|f| wc::InputFile {
                            path: f.path.clone(),
                            row_count: f.row_count,
                            min_sequence_number: f.min_sequence_number,
                            max_sequence_number: f.max_sequence_number,
                            deleted_rows: f.deleted_rows.clone(),
                        })
                        .collect(),
                    output_dir: job.output_dir.clone(),
                    file_prefix: job.file_prefix.clone(),
                    options: job.options.clone(),
                    creation_time_ms: job.creation_time_ms,
                };
                let r = rt
                    .call(storage, progress, |c, store| {
                        c.paimon_compact_compactor()
                            .call_compact_append_files(store, &request)
                    })?
                    .map_err(from_wit_error)?;
                Ok(AppendSummary {
                    outputs: r
                        .outputs
                        .into_iter()
                        .map(|o| {
                            (
                                o.path,
                                o.size,
                                o.row_count,
                                o.min_sequence_number,
                                o.max_sequence_number,
                            )
                        })
                        .collect(),
                    requeue_last: r.requeue_last,
                    metrics_json: r.metrics,
                })
            }
        }
    }
}

/// A table compaction job's settings (the host supplies the clock and the randomness).
#[derive(Clone, Debug)]
pub struct TableJob {
    pub full: bool,
    pub now_ms: i64,
    pub local_hour: u8,
    pub job_id: [u8; 16],
    pub owner: String,
    pub lease_ttl_ms: Option<i64>,
    pub max_commit_retries: usize,
    /// Which partitions and buckets, and with which dynamic options (default: all).
    pub scope: paimon_compact::table::JobScope,
    /// Leave out the maintenance after the commit.
    pub skip_maintenance: bool,
    /// The local zone's offset from UTC.
    pub utc_offset_ms: i64,
}

impl TableJob {
    /// A job now, with a fresh random id and the default lease (10 minutes).
    pub fn now(full: bool) -> Self {
        let (now_ms, local_hour) = crate::clock::now();
        TableJob {
            full,
            now_ms,
            local_hour,
            job_id: crate::clock::random_id(),
            owner: format!("paimon-compact@{}", std::process::id()),
            lease_ttl_ms: Some(10 * 60 * 1000),
            max_commit_retries: 10,
            scope: Default::default(),
            skip_maintenance: false,
            utc_offset_ms: crate::clock::utc_offset_ms(),
        }
    }

    fn settings(&self) -> wtc::JobSettings {
        wtc::JobSettings {
            full: self.full,
            now_ms: self.now_ms,
            local_hour: self.local_hour,
            job_id: self.job_id.to_vec(),
            owner: self.owner.clone(),
            lease_ttl_ms: self.lease_ttl_ms,
            max_commit_retries: self.max_commit_retries as u32,
            scope: wtc::JobScope {
                partitions: self.scope.partitions.clone(),
                where_clause: self.scope.where_clause.clone(),
                partition_idle_time: self.scope.partition_idle_time.clone(),
                buckets: self.scope.buckets.clone(),
                options: self.scope.options.clone(),
            },
            skip_maintenance: self.skip_maintenance,
            utc_offset_ms: self.utc_offset_ms,
        }
    }
}

fn from_json<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, HostError> {
    serde_json::from_str(json)
        .map_err(|e| HostError::Trap(format!("the component returned malformed JSON: {e}")))
}

impl Compactor {
    /// Plans a whole table (reads only).
    pub fn plan_table(
        &self,
        storage: Arc<dyn Storage>,
        table_path: &str,
        job: &TableJob,
    ) -> Result<TablePlan, HostError> {
        match self {
            Compactor::Native => {
                let req = paimon_compact::table::PlanRequest {
                    full: job.full,
                    context: plan::PlanContext::at(job.now_ms, job.local_hour),
                    merge_rewriter: true,
                    scope: job.scope.clone(),
                };
                Ok(paimon_compact::table::plan_table(
                    storage.as_ref(),
                    table_path,
                    &req,
                )?)
            }
            Compactor::Wasm(rt) => {
                let settings = job.settings();
                let p = rt
                    .call(storage, None, |c, store| {
                        let api = c.paimon_compact_table_compactor().compaction_job();
                        let handle = api.call_constructor(&mut *store, table_path, &settings)?;
                        let result = api.call_plan(&mut *store, handle);
                        handle.resource_drop(&mut *store)?;
                        result
                    })?
                    .map_err(from_wit_error)?;
                from_json(&p.json)
            }
        }
    }

    /// Compacts a whole table and commits a COMPACT snapshot, then runs the table's
    /// maintenance (unless `job.skip_maintenance`).
    pub fn compact_table(
        &self,
        storage: Arc<dyn Storage>,
        table_path: &str,
        job: &TableJob,
        progress: Option<ProgressFn>,
    ) -> Result<JobReport, HostError> {
        match self {
            Compactor::Native => {
                let mut opts = paimon_compact::table::CompactOptions::new(
                    plan::PlanContext::at(job.now_ms, job.local_hour),
                    job.job_id,
                );
                opts.full = job.full;
                opts.owner = job.owner.clone();
                opts.lease_ttl_ms = job.lease_ttl_ms;
                opts.max_commit_retries = job.max_commit_retries;
                opts.scope = job.scope.clone();
                let clock = || crate::clock::now().0;
                opts.clock = Some(&clock);
                let sleep = |ms: u64| std::thread::sleep(std::time::Duration::from_millis(ms));
                opts.sleep = Some(&sleep);
                let maintain = MaintenanceSettings {
                    sleep: Some(&sleep),
                    ..MaintenanceSettings::new(
                        MaintenanceContext {
                            now_ms: job.now_ms,
                            utc_offset_ms: job.utc_offset_ms,
                            dry_run: false,
                        },
                        job.job_id,
                    )
                };
                Ok(paimon_compact::maintenance::maintain::compact_and_maintain(
                    &storage,
                    table_path,
                    &opts,
                    &maintain,
                    !job.skip_maintenance,
                )?)
            }
            Compactor::Wasm(rt) => {
                let settings = job.settings();
                let r = rt
                    .call(storage, progress, |c, store| {
                        let api = c.paimon_compact_table_compactor().compaction_job();
                        let handle = api.call_constructor(&mut *store, table_path, &settings)?;
                        let result = api.call_run(&mut *store, handle);
                        handle.resource_drop(&mut *store)?;
                        result
                    })?
                    .map_err(from_wit_error)?;
                from_json(&r.json)
            }
        }
    }

    /// Runs one maintenance task on a table (`dry_run`: report only).
    pub fn maintain(
        &self,
        storage: Arc<dyn Storage>,
        table_path: &str,
        task: MaintenanceTask,
        request: &MaintenanceRequest,
    ) -> Result<MaintenanceReport, HostError> {
        let (now_ms, _) = crate::clock::now();
        let ctx = MaintenanceContext {
            now_ms,
            utc_offset_ms: crate::clock::utc_offset_ms(),
            dry_run: request.dry_run,
        };
        let job_id = crate::clock::random_id();
        match self {
            Compactor::Native => {
                let sleep = |ms: u64| std::thread::sleep(std::time::Duration::from_millis(ms));
                let settings = MaintenanceSettings {
                    options: request.options.clone(),
                    older_than_ms: request.older_than_ms,
                    sleep: Some(&sleep),
                    ..MaintenanceSettings::new(ctx, job_id)
                };
                Ok(paimon_compact::maintenance::maintain::run(
                    storage.as_ref(),
                    table_path,
                    task,
                    &settings,
                )?)
            }
            Compactor::Wasm(rt) => {
                use crate::wasm::wit_maintenance as wm;
                let task = match task {
                    MaintenanceTask::AfterCommit => wm::MaintenanceTask::AfterCommit,
                    MaintenanceTask::ExpireSnapshots => wm::MaintenanceTask::ExpireSnapshots,
                    MaintenanceTask::ExpireChangelogs => wm::MaintenanceTask::ExpireChangelogs,
                    MaintenanceTask::ExpirePartitions => wm::MaintenanceTask::ExpirePartitions,
                    MaintenanceTask::ExpireTags => wm::MaintenanceTask::ExpireTags,
                    MaintenanceTask::ExpireConsumers => wm::MaintenanceTask::ExpireConsumers,
                    MaintenanceTask::RemoveOrphanFiles => wm::MaintenanceTask::RemoveOrphanFiles,
                };
                let settings = wm::MaintenanceSettings {
                    now_ms: ctx.now_ms,
                    utc_offset_ms: ctx.utc_offset_ms,
                    dry_run: ctx.dry_run,
                    job_id: job_id.to_vec(),
                    options: request.options.clone(),
                    older_than_ms: request.older_than_ms,
                };
                let json = rt
                    .call(storage, None, |c, store| {
                        c.paimon_compact_table_maintenance()
                            .call_run(store, table_path, task, &settings)
                    })?
                    .map_err(from_wit_error)?;
                from_json(&json)
            }
        }
    }

    /// Writes the built-in demo tables under `root`.
    pub fn write_demo_tables(
        &self,
        storage: Arc<dyn Storage>,
        root: &str,
        now_ms: i64,
        seed: u64,
    ) -> Result<Vec<String>, HostError> {
        match self {
            Compactor::Native => {
                let seed = paimon_compact::table::demo::seed_from_u64(seed);
                Ok(paimon_compact::table::demo::write_demo(
                    storage.as_ref(),
                    root,
                    now_ms,
                    seed,
                )?)
            }
            Compactor::Wasm(rt) => Ok(rt
                .call(storage, None, |c, store| {
                    c.paimon_compact_table_compactor()
                        .call_write_demo_tables(store, root, now_ms, seed)
                })?
                .map_err(from_wit_error)?),
        }
    }
}
