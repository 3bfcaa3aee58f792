//! One API over the two ways of running the core: natively (compiled into this binary) or as
//! the WebAssembly component in wasmtime. Both give the same answers; the tests hold them to it.
//!
//! Both engines run the same code: the `Native` arm of each method calls
//! [`paimon_compact::api`], and the component's exports call the same functions inside the
//! guest. Requests and results are the API's types ([`TableJob`], [`AppendRequest`],
//! [`Decision`], ...); the `Wasm` arms only map them to and from the WIT types. Defaults, the
//! clock, the sleep and progress are wired in the API, once, so nothing here can make the
//! engines differ. What the host adds is what the core must not have: the wall clock and the
//! randomness of job ids ([`Now`]).
//!
//! `Compactor` stays an enum rather than a trait with two implementations: the native arm of
//! every method is one call into the API, so a trait would add a third copy of each signature
//! (trait, native impl, wasm impl) for a dispatch that a `match` does in two lines, and callers
//! keep a concrete type to hold (`Compactor::Native`, `Compactor::Wasm(runtime)`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use paimon_compact::api::{self, Services};
use paimon_compact::maintenance::maintain::{JobReport, MaintenanceReport, MaintenanceTask};
use paimon_compact::meta::CompactionFile;
use paimon_compact::options::{Flavor, TableKind};
use paimon_compact::plan::conformance::{CaseFailure, ConformanceReport};
use paimon_compact::plan::{self, BucketPlanRequest, WriteStall};
use paimon_compact::storage::{MemoryStorage, Storage, StorageErrorKind};
use paimon_compact::table::fanout::{AbortReport, Task, TaskResult, TaskSet};
use paimon_compact::table::TablePlan;
use paimon_compact::{Error as CoreError, ErrorKind, NotCompactable};

use crate::error::HostError;
use crate::storage::{Progress, ProgressFn};
use wasmtime::component::ResourceAny;
use wasmtime::Store;

use crate::wasm::HostState;
use crate::wasm::{
    wit_compactor as wc, wit_maintenance as wm, wit_planner as wp, wit_table as wtc,
    wit_types as wt, WasmRuntime,
};

pub use paimon_compact::api::{
    AppendInputFile, AppendRequest, AppendResult, Decision, MaintenanceRequest, OutputFile,
    TableJob,
};

/// The engine a command runs on.
pub enum Compactor {
    /// The core linked into this binary, called through [`paimon_compact::api`] directly.
    Native,
    /// The WebAssembly component in wasmtime, bounded in memory and time by its
    /// [`crate::wasm::Limits`]; same API, same results.
    Wasm(Box<WasmRuntime>),
}

/// Requests stamped with this host's clock and randomness. The request types are the core's
/// ([`paimon_compact::api`]); these constructors are the host's, because the core reads no
/// wall clock and draws no random numbers.
pub trait Now {
    /// A request for a run starting now, with a fresh random job id.
    fn now() -> Self;
}

impl Now for TableJob {
    /// The automatic pick (not `full`), the whole table, a lease of 10 minutes, 10 commit
    /// retries, maintenance after the commit.
    fn now() -> Self {
        let (now_ms, local_hour) = crate::clock::now();
        TableJob {
            full: false,
            now_ms,
            local_hour,
            job_id: crate::clock::random_id().to_vec(),
            owner: format!("paimon-compact@{}", std::process::id()),
            lease_ttl_ms: Some(10 * 60 * 1000),
            max_commit_retries: 10,
            scope: Default::default(),
            skip_maintenance: false,
            utc_offset_ms: crate::clock::utc_offset_ms(),
        }
    }
}

impl Now for MaintenanceRequest {
    /// No option overrides, not a dry run, orphan removal's default threshold.
    fn now() -> Self {
        MaintenanceRequest {
            now_ms: crate::clock::now().0,
            utc_offset_ms: crate::clock::utc_offset_ms(),
            dry_run: false,
            job_id: crate::clock::random_id().to_vec(),
            options: Vec::new(),
            older_than_ms: None,
        }
    }
}

/// Runs `f` with the host's progress callback as the API's progress sink (the native engine;
/// the component reaches the same callback through its `progress` import).
fn with_progress<R>(progress: Option<ProgressFn>, f: impl FnOnce(&Services<'_>) -> R) -> R {
    let Some(progress) = progress else {
        return f(&Services::none());
    };
    let sink = Mutex::new(progress);
    let report = |e: api::ProgressEvent| {
        if let Ok(mut p) = sink.lock() {
            p(Progress {
                phase: e.phase,
                done: e.done,
                total: e.total,
                unit: e.unit,
                message: e.message,
            });
        }
    };
    f(&Services {
        progress: Some(&report),
        ..Services::default()
    })
}

/// Storage for the calls that touch none (the planner's).
fn no_storage() -> Arc<dyn Storage> {
    Arc::new(MemoryStorage::new())
}

fn from_json<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, HostError> {
    serde_json::from_str(json)
        .map_err(|e| HostError::Trap(format!("the component returned malformed JSON: {e}")))
}

impl Compactor {
    /// `native` or `wasm`, as reports and logs name the engine.
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
        options: &BTreeMap<String, String>,
    ) -> Result<serde_json::Value, HostError> {
        let pairs: Vec<(String, String)> = options
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        match self {
            Compactor::Native => native(|| api::explain_options(kind, flavor, &pairs)),
            Compactor::Wasm(rt) => {
                let text = rt
                    .call(no_storage(), None, |c, store| {
                        c.paimon_compact_planner().call_explain_options(
                            store,
                            wit_table_kind(kind),
                            wit_flavor(flavor),
                            &pairs,
                        )
                    })?
                    .map_err(from_wit_error)?;
                from_json(&text)
            }
        }
    }

    /// Runs a conformance vectors file (JSON text) through the planner with `flavor`'s rules
    /// and reports each case (the WIT `planner.run-conformance`).
    pub fn run_conformance(
        &self,
        vectors_json: &str,
        flavor: Flavor,
    ) -> Result<ConformanceReport, HostError> {
        match self {
            Compactor::Native => native(|| api::run_conformance(vectors_json, flavor)),
            Compactor::Wasm(rt) => {
                let r = rt
                    .call(no_storage(), None, |c, store| {
                        c.paimon_compact_planner().call_run_conformance(
                            store,
                            vectors_json,
                            wit_flavor(flavor),
                        )
                    })?
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

    /// Plans one bucket. The request is the planner's own; both engines take it as the WIT's
    /// `bucket-request` ([`api::BucketRequest`]), which has no blob-column flag.
    pub fn plan_bucket(&self, req: &BucketPlanRequest) -> Result<Decision, HostError> {
        let request = api::BucketRequest::from(req);
        match self {
            Compactor::Native => native(|| api::plan_bucket(&request)),
            Compactor::Wasm(rt) => {
                let request = wit_bucket_request(request);
                let d = rt
                    .call(no_storage(), None, |c, store| {
                        c.paimon_compact_planner().call_plan_bucket(store, &request)
                    })?
                    .map_err(from_wit_error)?;
                Ok(decision(d))
            }
        }
    }

    /// Rewrites an append bucket's files (`compact-append-files`).
    pub fn compact_append(
        &self,
        storage: Arc<dyn Storage>,
        request: &AppendRequest,
        progress: Option<ProgressFn>,
    ) -> Result<AppendResult, HostError> {
        match self {
            Compactor::Native => native(|| {
                with_progress(progress, |services| {
                    api::compact_append_files(storage, request, services)
                })
            }),
            Compactor::Wasm(rt) => {
                let request = wit_append_request(request);
                let r = rt
                    .call(storage, progress, |c, store| {
                        c.paimon_compact_compactor()
                            .call_compact_append_files(store, &request)
                    })?
                    .map_err(from_wit_error)?;
                Ok(append_result(r))
            }
        }
    }

    /// Plans a whole table (reads only).
    pub fn plan_table(
        &self,
        storage: Arc<dyn Storage>,
        table_path: &str,
        job: &TableJob,
    ) -> Result<TablePlan, HostError> {
        match self {
            Compactor::Native => native(|| api::plan_table(storage, table_path, job)),
            Compactor::Wasm(rt) => {
                let settings = wit_job_settings(job);
                let p = call_job(
                    rt,
                    storage,
                    None,
                    table_path,
                    &settings,
                    |api, store, job| api.call_plan(store, job),
                )?;
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
            Compactor::Native => native(|| {
                with_progress(progress, |services| {
                    api::compact_table(storage, table_path, job, services)
                })
            }),
            Compactor::Wasm(rt) => {
                let settings = wit_job_settings(job);
                let r = call_job(
                    rt,
                    storage.clone(),
                    progress,
                    table_path,
                    &settings,
                    |api, store, job| api.call_run(store, job),
                )
                .inspect_err(|_| {
                    // A component stopped half-way leaves its leases (crate::cleanup).
                    let _ = crate::cleanup::release_job_leases(&*storage, table_path, &job.job_id);
                })?;
                from_json(&r.json)
            }
        }
    }

    /// Fan-out, step 1: plans the job and takes its leases; one task per bucket with work
    /// (`docs/fanout.md`).
    pub fn plan_tasks(
        &self,
        storage: Arc<dyn Storage>,
        table_path: &str,
        job: &TableJob,
    ) -> Result<TaskSet, HostError> {
        match self {
            Compactor::Native => native(|| api::plan_tasks(storage, table_path, job)),
            Compactor::Wasm(rt) => {
                let settings = wit_job_settings(job);
                let set = call_job(
                    rt,
                    storage,
                    None,
                    table_path,
                    &settings,
                    |api, store, job| api.call_plan_tasks(store, job),
                )?;
                Ok(TaskSet::from_json(&set.json)?)
            }
        }
    }

    /// Fan-out, step 2: runs one task as attempt `attempt` (16 random bytes). In the
    /// component, each call is an instance of its own, so threads may call this at once.
    pub fn run_task(
        &self,
        storage: Arc<dyn Storage>,
        task: &Task,
        attempt: [u8; 16],
        progress: Option<ProgressFn>,
    ) -> Result<TaskResult, HostError> {
        match self {
            Compactor::Native => native(|| {
                with_progress(progress, |services| {
                    api::run_task(storage, task, &attempt, services)
                })
            }),
            Compactor::Wasm(rt) => {
                let json = api::to_json(task)?;
                let settings = wit_job_settings(&TableJob::now());
                let r = call_job(
                    rt,
                    storage,
                    progress,
                    &task.table_path,
                    &settings,
                    |api, store, job| api.call_run_task(store, job, &json, &attempt),
                )?;
                Ok(TaskResult::from_json(&r)?)
            }
        }
    }

    /// Fan-out, step 3: commits one result per task as one COMPACT snapshot, then the job's
    /// maintenance (unless `job.skip_maintenance`).
    pub fn commit_tasks(
        &self,
        storage: Arc<dyn Storage>,
        set: &TaskSet,
        results: &[TaskResult],
        job: &TableJob,
        options: &api::CommitOptions,
    ) -> Result<JobReport, HostError> {
        match self {
            Compactor::Native => native(|| api::commit_tasks(storage, set, results, job, options)),
            Compactor::Wasm(rt) => {
                let settings = wit_job_settings(job);
                let (set_json, results) = wit_task_json(set, results)?;
                let commit = wtc::CommitOptions {
                    rewrite_ms: options.rewrite_ms,
                    all_or_nothing: options.all_or_nothing,
                };
                let r = call_job(
                    rt,
                    storage,
                    None,
                    &set.table_path,
                    &settings,
                    |api, store, job| {
                        api.call_commit_tasks(store, job, &set_json, &results, commit)
                    },
                )?;
                from_json(&r.json)
            }
        }
    }

    /// Fan-out, step 4: aborts the job, deleting everything its tasks wrote.
    pub fn abort_tasks(
        &self,
        storage: Arc<dyn Storage>,
        set: &TaskSet,
        results: &[TaskResult],
    ) -> Result<AbortReport, HostError> {
        match self {
            Compactor::Native => native(|| api::abort_tasks(storage, set, results)),
            Compactor::Wasm(rt) => {
                let settings = wit_job_settings(&TableJob::now());
                let (set_json, results) = wit_task_json(set, results)?;
                let r = call_job(
                    rt,
                    storage,
                    None,
                    &set.table_path,
                    &settings,
                    |api, store, job| api.call_abort_tasks(store, job, &set_json, &results),
                )?;
                from_json(&r)
            }
        }
    }

    /// Renews the job's leases until `now_ms + ttl_ms`; returns the set with the new ones.
    pub fn renew_leases(
        &self,
        storage: Arc<dyn Storage>,
        set: &TaskSet,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<TaskSet, HostError> {
        match self {
            Compactor::Native => native(|| api::renew_leases(storage, set, now_ms, ttl_ms)),
            Compactor::Wasm(rt) => {
                let settings = wit_job_settings(&TableJob::now());
                let set_json = api::to_json(set)?;
                let r = call_job(
                    rt,
                    storage,
                    None,
                    &set.table_path,
                    &settings,
                    |api, store, job| api.call_renew_leases(store, job, &set_json, now_ms, ttl_ms),
                )?;
                Ok(TaskSet::from_json(&r)?)
            }
        }
    }

    /// Releases every lease of `table_path` that names the job of `job` (its `job_id`);
    /// returns the lease objects deleted (WIT `compaction-job.release-leases`). The CLI's own
    /// clean-up after a stopped job runs natively ([`crate::cleanup`]); this is the call a host
    /// without a native core (Node) makes on a fresh instance.
    pub fn release_job_leases(
        &self,
        storage: Arc<dyn Storage>,
        table_path: &str,
        job: &TableJob,
    ) -> Result<Vec<String>, HostError> {
        match self {
            Compactor::Native => {
                native(|| api::release_job_leases(storage.as_ref(), table_path, &job.job_id))
            }
            Compactor::Wasm(rt) => {
                let settings = wit_job_settings(job);
                call_job(
                    rt,
                    storage,
                    None,
                    table_path,
                    &settings,
                    |api, store, job| api.call_release_leases(store, job),
                )
            }
        }
    }

    /// Runs one maintenance task on a table (`request.dry_run`: report only).
    pub fn maintain(
        &self,
        storage: Arc<dyn Storage>,
        table_path: &str,
        task: MaintenanceTask,
        request: &MaintenanceRequest,
    ) -> Result<MaintenanceReport, HostError> {
        match self {
            Compactor::Native => {
                native(|| api::run_maintenance(storage, table_path, task, request))
            }
            Compactor::Wasm(rt) => {
                let task = wit_maintenance_task(task);
                let settings = wit_maintenance_settings(request);
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
            Compactor::Native => native(|| api::write_demo_tables(storage, root, now_ms, seed)),
            Compactor::Wasm(rt) => Ok(rt
                .call(storage, None, |c, store| {
                    c.paimon_compact_table_compactor()
                        .call_write_demo_tables(store, root, now_ms, seed)
                })?
                .map_err(from_wit_error)?),
        }
    }
}

/// Runs a call on the native engine. A panic in it (a bug, or a library's assertion on input
/// the core failed to validate) becomes the `internal` error carrying its message, as a
/// panic in the component does, instead of unwinding through the host.
fn native<R>(f: impl FnOnce() -> Result<R, CoreError>) -> Result<R, HostError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => Ok(result?),
        Err(payload) => Err(HostError::Core(CoreError::internal(format!(
            "the native engine panicked: {}",
            crate::panics::message(payload.as_ref())
        )))),
    }
}

/// A task set and its results as the JSON texts `commit-tasks` and `abort-tasks` take.
fn wit_task_json(
    set: &TaskSet,
    results: &[TaskResult],
) -> Result<(String, Vec<String>), HostError> {
    let results = results
        .iter()
        .map(api::to_json)
        .collect::<Result<Vec<_>, _>>()?;
    Ok((api::to_json(set)?, results))
}

/// One call on a `compaction-job` resource in an instance of its own: constructs the job for
/// `table_path` with `settings`, runs `f` on it, drops it, and maps the component's error.
fn call_job<R>(
    rt: &WasmRuntime,
    storage: Arc<dyn Storage>,
    progress: Option<ProgressFn>,
    table_path: &str,
    settings: &wtc::JobSettings,
    f: impl for<'a> FnOnce(
        &wtc::GuestCompactionJob<'a>,
        &mut Store<HostState>,
        ResourceAny,
    ) -> wasmtime::Result<Result<R, wt::Error>>,
) -> Result<R, HostError> {
    rt.call(storage, progress, |c, store| {
        let api = c.paimon_compact_table_compactor().compaction_job();
        let job = api.call_constructor(&mut *store, table_path, settings)?;
        let result = f(&api, &mut *store, job);
        // After a trap the instance is dead and the job still borrowed: dropping it would fail
        // with wasmtime's resource-table error and hide the trap (a timeout, a panic) that
        // says what happened. The instance is thrown away either way.
        if result.is_ok() {
            job.resource_drop(&mut *store)?;
        }
        result
    })?
    .map_err(from_wit_error)
    .map_err(HostError::from)
}

// ---------------------------------------------------------------------------------------------
// Type mapping between the API and the WIT (the `Wasm` arms)

/// The component's error, back into the core's type: a host sees one error type whichever
/// engine ran. Every WIT case maps onto one kind; the component's cause stays behind.
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
        wt::Error::NotCompactable(n) => (
            ErrorKind::NotCompactable {
                reason: not_compactable_reason(n.reason),
            },
            n.message,
        ),
        wt::Error::CorruptInput(c) => (ErrorKind::CorruptInput { file: c.file }, c.message),
        wt::Error::Io(io) => (
            ErrorKind::Io {
                storage: storage_kind(&io.kind),
                path: io.path,
            },
            io.message,
        ),
        wt::Error::CommitUnknown(io) => (
            ErrorKind::CommitUnknown {
                storage: storage_kind(&io.kind),
                path: io.path,
            },
            io.message,
        ),
        wt::Error::Conflict(m) => (ErrorKind::Conflict, m),
        wt::Error::Unsupported(m) => (ErrorKind::Unsupported, m),
        wt::Error::IllegalState(m) => (ErrorKind::IllegalState, m),
        wt::Error::Internal(m) => (ErrorKind::Internal, m),
    };
    CoreError::new(kind, message)
}

fn not_compactable_reason(r: wt::NotCompactableReason) -> NotCompactable {
    use wt::NotCompactableReason as W;
    match r {
        W::WriteOnly => NotCompactable::WriteOnly,
        W::TableOption(t) => NotCompactable::TableOption {
            key: t.key,
            value: t.value,
            because: t.because,
        },
        W::UnawareBucketAutoCompaction => NotCompactable::UnawareBucketAutoCompaction,
        W::DataEvolution(deletion_vectors) => NotCompactable::DataEvolution { deletion_vectors },
        W::BlobTable => NotCompactable::BlobTable,
        W::PostponeBucket => NotCompactable::PostponeBucket,
        W::CoordinatorNeedsUnawareAppend => NotCompactable::CoordinatorNeedsUnawareAppend,
    }
}

fn wit_flavor(f: Flavor) -> wt::Flavor {
    match f {
        Flavor::Java => wt::Flavor::Java,
        Flavor::Cpp => wt::Flavor::Cpp,
    }
}

fn wit_table_kind(k: TableKind) -> wt::TableKind {
    match k {
        TableKind::PrimaryKey => wt::TableKind::PrimaryKey,
        TableKind::Append => wt::TableKind::Append,
    }
}

fn wit_file(f: &CompactionFile) -> wp::DataFile {
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

fn wit_bucket_request(r: api::BucketRequest) -> wp::BucketRequest {
    wp::BucketRequest {
        table_kind: wit_table_kind(r.table_kind),
        flavor: wit_flavor(r.flavor),
        options: r.options,
        files: r.files.iter().map(wit_file).collect(),
        full: r.full,
        now_ms: r.now_ms,
        local_hour: r.local_hour,
        state: r.state.map(|s| wp::StrategyState {
            last_full_compaction_ms: s.last_full_compaction_ms,
            gentle_counter: s.gentle_counter as u32,
        }),
        role: match r.role {
            plan::PlannerRole::DedicatedJob => wp::PlannerRole::DedicatedJob,
            plan::PlannerRole::Writer => wp::PlannerRole::Writer,
        },
    }
}

fn decision(d: wp::Decision) -> Decision {
    Decision {
        files: d.files,
        output_level: d.output_level,
        drop_delete: d.drop_delete,
        actions: d
            .actions
            .into_iter()
            .map(|a| match a {
                wp::TaskAction::Upgrade((file, to_level)) => {
                    api::TaskAction::Upgrade { file, to_level }
                }
                wp::TaskAction::Rewrite(r) => api::TaskAction::Rewrite(api::RewriteAction {
                    output_level: r.output_level,
                    sections: r.sections,
                    alone: r.alone,
                }),
            })
            .collect(),
        released: d.released,
        reason: api::Reason {
            rule: d.reason.rule,
            text: d.reason.text,
            details_json: d.reason.details_json,
        },
        write_stall: d.write_stall.map(|w| WriteStall {
            sorted_runs: w.sorted_runs as usize,
            stop_trigger: w.stop_trigger as usize,
            wait_for_latest_compaction: w.wait_for_latest_compaction,
            wait_for_preparing_checkpoint: w.wait_for_preparing_checkpoint,
        }),
        state: d.state.map(|s| plan::StrategyState {
            last_full_compaction_ms: s.last_full_compaction_ms,
            gentle_counter: s.gentle_counter as usize,
        }),
    }
}

fn wit_append_request(r: &AppendRequest) -> wc::AppendRequest {
    wc::AppendRequest {
        inputs: r
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
        output_dir: r.output_dir.clone(),
        file_prefix: r.file_prefix.clone(),
        options: r.options.clone(),
        creation_time_ms: r.creation_time_ms,
    }
}

fn append_result(r: wc::AppendResult) -> AppendResult {
    AppendResult {
        outputs: r
            .outputs
            .into_iter()
            .map(|o| OutputFile {
                path: o.path,
                size: o.size,
                row_count: o.row_count,
                min_sequence_number: o.min_sequence_number,
                max_sequence_number: o.max_sequence_number,
                level: o.level,
            })
            .collect(),
        requeue_last: r.requeue_last,
        metrics_json: r.metrics,
    }
}

fn wit_job_settings(job: &TableJob) -> wtc::JobSettings {
    wtc::JobSettings {
        full: job.full,
        now_ms: job.now_ms,
        local_hour: job.local_hour,
        job_id: job.job_id.clone(),
        owner: job.owner.clone(),
        lease_ttl_ms: job.lease_ttl_ms,
        max_commit_retries: job.max_commit_retries,
        scope: wtc::JobScope {
            partitions: job.scope.partitions.clone(),
            where_clause: job.scope.where_clause.clone(),
            partition_idle_time: job.scope.partition_idle_time.clone(),
            buckets: job.scope.buckets.clone(),
            options: job.scope.options.clone(),
        },
        skip_maintenance: job.skip_maintenance,
        utc_offset_ms: job.utc_offset_ms,
    }
}

fn wit_maintenance_task(task: MaintenanceTask) -> wm::MaintenanceTask {
    match task {
        MaintenanceTask::AfterCommit => wm::MaintenanceTask::AfterCommit,
        MaintenanceTask::ExpireSnapshots => wm::MaintenanceTask::ExpireSnapshots,
        MaintenanceTask::ExpireChangelogs => wm::MaintenanceTask::ExpireChangelogs,
        MaintenanceTask::ExpirePartitions => wm::MaintenanceTask::ExpirePartitions,
        MaintenanceTask::ExpireTags => wm::MaintenanceTask::ExpireTags,
        MaintenanceTask::ExpireConsumers => wm::MaintenanceTask::ExpireConsumers,
        MaintenanceTask::RemoveOrphanFiles => wm::MaintenanceTask::RemoveOrphanFiles,
    }
}

fn wit_maintenance_settings(r: &MaintenanceRequest) -> wm::MaintenanceSettings {
    wm::MaintenanceSettings {
        now_ms: r.now_ms,
        utc_offset_ms: r.utc_offset_ms,
        dry_run: r.dry_run,
        job_id: r.job_id.clone(),
        options: r.options.clone(),
        older_than_ms: r.older_than_ms,
    }
}
