//! The CLI's table commands: open a table directory, print plans and reports, compact with a
//! progress bar, wait for leases.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use paimon_compact::plan::{human_bytes, UpgradeStrategy};
use std::process::ExitCode;

use paimon_compact::maintenance::maintain::{JobReport, MaintenanceReport};
use paimon_compact::storage::Storage;
use paimon_compact::table::{CompactReport, JobScope, JobStatus, PlannedAction, TablePlan};
use paimon_compact_host::local_storage::LocalDirStorage;
use paimon_compact_host::location::{Location, ObjectTable};
use paimon_compact_host::object_storage::ObjectStorage;
use paimon_compact_host::storage::ProgressFn;
use paimon_compact_host::{Compactor, HostError, Now, TableJob};

/// Storage rooted at the table's parent directory, and the table's path inside it. `file:`
/// URIs are served under `allow_external` and under every local directory the table's schemas
/// name in `data-file.external-paths` (where Paimon writers put external data files).
///
/// An object-store URI (`s3://bucket/warehouse/d.db/t`, `gs://`, `az://`, `abfss://`) opens
/// storage rooted at the table's parent in that store; see [`open_table`].
pub fn open(dir: &Path, allow_external: &[PathBuf]) -> Result<(Arc<dyn Storage>, String), String> {
    let opened = open_table(dir, allow_external)?;
    Ok((opened.storage, opened.table_path))
}

/// An opened table: its storage, its path inside it, and, for an object store, the handle that
/// counts the requests made.
pub struct OpenedTable {
    /// The storage, rooted at the table's parent.
    pub storage: Arc<dyn Storage>,
    /// The table's path inside the storage (its name).
    pub table_path: String,
    /// The object store behind `storage`, if the table is in one.
    pub object_store: Option<ObjectStorage>,
}

/// Opens a table given as a local path, a `file:` URI or an object-store URI.
pub fn open_table(dir: &Path, allow_external: &[PathBuf]) -> Result<OpenedTable, String> {
    let arg = dir.to_string_lossy();
    let dir = match Location::parse(&arg) {
        Location::Object(uri) => {
            let t = ObjectTable::open(&uri)?;
            return Ok(OpenedTable {
                storage: t.shared(),
                table_path: t.table_path,
                object_store: Some(t.storage),
            });
        }
        Location::Local(p) => p,
    };
    let (storage, table_path) = open_local(&dir, allow_external)?;
    Ok(OpenedTable {
        storage,
        table_path,
        object_store: None,
    })
}

fn open_local(
    dir: &Path,
    allow_external: &[PathBuf],
) -> Result<(Arc<dyn Storage>, String), String> {
    let dir: PathBuf = dir
        .canonicalize()
        .map_err(|e| format!("cannot open table {}: {e}", dir.display()))?;
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| format!("{} is not a table directory", dir.display()))?;
    let parent = dir
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    let mut roots = Vec::new();
    for d in allow_external
        .iter()
        .cloned()
        .chain(schema_external_dirs(&dir))
    {
        // Only existing directories: a root is compared by its canonical path.
        if let Ok(c) = d.canonicalize() {
            roots.push(c);
        }
    }
    let storage = LocalDirStorage::new(parent).with_external_roots(roots);
    Ok((Arc::new(storage), name))
}

/// Local directories named by `data-file.external-paths` in any schema file of the table.
fn schema_external_dirs(table_dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(table_dir.join("schema")) else {
        return out;
    };
    for e in entries.flatten() {
        if !e.file_name().to_string_lossy().starts_with("schema-") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        if let Some(paths) = doc["options"]["data-file.external-paths"].as_str() {
            for p in paths.split(',') {
                let uri = paimon_compact::table::path::normalize_uri(p);
                if let Some(local) = uri.strip_prefix("file:") {
                    out.push(PathBuf::from(local));
                }
            }
        }
    }
    out
}

fn levels(levels: &[paimon_compact::table::LevelStat]) -> String {
    if levels.is_empty() {
        return "empty".into();
    }
    levels
        .iter()
        .map(|l| {
            format!(
                "L{}: {} file{} {}",
                l.level,
                l.files,
                if l.files == 1 { "" } else { "s" },
                human_bytes(l.bytes)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The plan, one block per bucket.
pub fn describe_plan(plan: &TablePlan) -> String {
    let mut out = format!(
        "table {} at snapshot {} ({:?}{})\n",
        plan.table_path,
        plan.snapshot_id.map_or("-".to_string(), |s| s.to_string()),
        plan.table_kind,
        if plan.full { ", full compaction" } else { "" }
    );
    if let Some(why) = &plan.not_compactable {
        out.push_str(&format!("  refused: {why}\n"));
        return out;
    }
    for w in &plan.warnings {
        out.push_str(&format!("  warning: {w}\n"));
    }
    for b in &plan.buckets {
        let part = if b.partition.is_empty() {
            String::new()
        } else {
            format!("{} ", b.partition)
        };
        out.push_str(&format!(
            "  {part}bucket {}: {}\n    {}\n",
            b.bucket,
            levels(&b.levels),
            b.reason_text
        ));
        for a in &b.actions {
            let line = match a {
                PlannedAction::AppendRewrite { files, bytes } => {
                    format!("rewrite {} files ({})", files.len(), human_bytes(*bytes))
                }
                PlannedAction::Upgrade {
                    file,
                    from_level,
                    to_level,
                    strategy,
                } => {
                    let how = match strategy {
                        UpgradeStrategy::NoChangelogNoRewrite => "",
                        UpgradeStrategy::ChangelogNoRewrite => " (lookup, file kept)",
                        UpgradeStrategy::ChangelogWithRewrite => " (lookup, file rewritten)",
                    };
                    format!("upgrade {file} L{from_level} -> L{to_level}{how}")
                }
                PlannedAction::MergeRewrite {
                    output_level,
                    files,
                    sections,
                    ..
                } => {
                    format!(
                        "merge {} files ({sections} sections) -> L{output_level}",
                        files.len()
                    )
                }
                PlannedAction::Replay { files, buckets } => {
                    format!(
                        "replay {} postpone files into {buckets} buckets, then compact them",
                        files.len()
                    )
                }
            };
            out.push_str(&format!("    - {line}\n"));
        }
        if let Some(blocked) = &b.blocked {
            out.push_str(&format!("    blocked: {blocked}\n"));
        }
    }
    let s = &plan.summary;
    out.push_str(&format!(
        "{} bucket{} with work of {}; {} rewrite{}, {} upgrade{}, {} file{} to replace\n",
        s.buckets_with_work,
        if s.buckets_with_work == 1 { "" } else { "s" },
        s.buckets,
        s.rewrites,
        if s.rewrites == 1 { "" } else { "s" },
        s.upgrades,
        if s.upgrades == 1 { "" } else { "s" },
        s.files_removed,
        if s.files_removed == 1 { "" } else { "s" },
    ));
    out
}

/// Removes the directories a maintenance run reported as left empty
/// (`snapshot.clean-empty-directories`): the core's storage has no directories, a local file
/// system does. Each is removed only if it is still empty (`remove_dir` is not recursive), so a
/// writer that has since put a file there keeps it. Returns the directories removed.
pub fn remove_empty_directories(table_dir: &Path, report: &MaintenanceReport) -> Vec<String> {
    if report.dry_run {
        return Vec::new();
    }
    let Some(root) = table_dir
        .canonicalize()
        .ok()
        .and_then(|d| d.parent().map(Path::to_path_buf))
    else {
        return Vec::new();
    };
    let dirs = report
        .snapshots
        .iter()
        .flat_map(|s| s.empty_directories.iter())
        .chain(
            report
                .changelogs
                .iter()
                .flat_map(|c| c.empty_directories.iter()),
        );
    let mut removed = Vec::new();
    for d in dirs {
        // Relative paths inside the storage root only.
        if d.starts_with('/') || d.contains("..") || d.contains(':') {
            continue;
        }
        if std::fs::remove_dir(root.join(d)).is_ok() {
            removed.push(d.clone());
        }
    }
    removed
}

/// What a job did, its maintenance included.
pub fn describe_job(r: &JobReport) -> String {
    let mut out = describe_report(&r.compaction);
    if let Some(m) = &r.maintenance {
        out.push_str(&describe_maintenance(m));
    }
    if let Some(e) = &r.maintenance_error {
        out.push_str(&format!("  maintenance failed (the commit stands): {e}\n"));
    }
    if let Some(q) = &r.storage_requests {
        out.push_str(&format!(
            "  object-store requests: {} GET, {} HEAD, {} PUT, {} LIST, {} DELETE\n",
            q.get, q.head, q.put, q.list, q.delete
        ));
    }
    out
}

/// One line per maintenance step that did something.
pub fn describe_maintenance(m: &MaintenanceReport) -> String {
    let verb = if m.dry_run { "would delete" } else { "deleted" };
    let mut out = String::new();
    let mut line = |s: String| out.push_str(&format!("  {s}\n"));
    if let Some(t) = &m.tags_created {
        if !t.created.is_empty() {
            line(format!("tags created: {}", t.created.len()));
        }
    }
    if let Some(t) = &m.tags_expired {
        if !t.deleted.is_empty() {
            line(format!("tags expired: {}", t.deleted.len()));
        }
    }
    if let Some(p) = &m.partitions {
        if !p.expired.is_empty() {
            line(format!(
                "partitions expired: {} ({} OVERWRITE snapshot(s))",
                p.rows().join("; "),
                p.snapshots.len()
            ));
        }
    }
    if let Some(c) = &m.consumers {
        if !c.expired.is_empty() {
            line(format!("consumers expired: {}", c.expired.join(", ")));
        }
    }
    if let Some(s) = &m.snapshots {
        if !s.expired_snapshots.is_empty() || !s.deleted.is_empty() {
            line(format!(
                "snapshots expired: {} ({verb} {} file(s))",
                s.expired_snapshots.len(),
                s.deleted.len()
            ));
        }
    }
    if let Some(c) = &m.changelogs {
        line(format!(
            "changelogs: {}",
            serde_json::to_string(c).unwrap_or_default()
        ));
    }
    if let Some(o) = &m.orphans {
        line(format!(
            "orphan files: {verb} {} of {} candidate(s); kept {} too young, {} of unknown age",
            o.deleted.len(),
            o.candidates,
            o.kept_too_young,
            o.kept_unknown_age
        ));
    }
    if out.is_empty() {
        out.push_str("  maintenance: nothing to do\n");
    }
    out
}

/// What a job did.
pub fn describe_report(r: &CompactReport) -> String {
    let mut out = String::new();
    match (r.snapshot_after, &r.not_compactable) {
        (_, Some(why)) => out.push_str(&format!("{}: refused: {why}\n", r.table_path)),
        (Some(after), _) => out.push_str(&format!(
            "{}: committed COMPACT snapshot {after} (was {}): {} files ({}) replaced by {} ({}), {} rewrite{}, {} upgrade{}\n",
            r.table_path,
            r.snapshot_before.map_or("-".to_string(), |s| s.to_string()),
            r.totals.files_removed,
            human_bytes(r.totals.bytes_removed),
            r.totals.files_added,
            human_bytes(r.totals.bytes_added),
            r.totals.rewrites,
            if r.totals.rewrites == 1 { "" } else { "s" },
            r.totals.upgrades,
            if r.totals.upgrades == 1 { "" } else { "s" },
        )),
        (None, _) => out.push_str(&format!("{}: nothing to compact\n", r.table_path)),
    }
    if let Some(m) = r.commit.as_ref().and_then(|c| c.manifest_merge.as_ref()) {
        out.push_str(&format!(
            "  manifests merged ({}): {} in the base list -> {} ({} read, {} written, {} entries cancelled)\n",
            match m.kind {
                paimon_compact::table::manifest_merge::ManifestMergeKind::Minor => "minor",
                paimon_compact::table::manifest_merge::ManifestMergeKind::Full => "full",
            },
            m.manifests_before,
            m.manifests_after,
            m.manifests_merged,
            m.manifests_written,
            m.entries_cancelled,
        ));
    }
    for b in &r.buckets {
        let part = if b.partition.is_empty() {
            String::new()
        } else {
            format!("{} ", b.partition)
        };
        let mut extra = Vec::new();
        if b.deletion_vector_marks > 0 {
            extra.push(format!("{} rows marked deleted", b.deletion_vector_marks));
        }
        if b.changelog_files > 0 {
            extra.push(format!(
                "{} changelog file{}",
                b.changelog_files,
                if b.changelog_files == 1 { "" } else { "s" }
            ));
        }
        let extra = if extra.is_empty() {
            String::new()
        } else {
            format!(" ({})", extra.join(", "))
        };
        out.push_str(&format!(
            "  {part}bucket {}: {} -> {}{extra}\n",
            b.bucket,
            levels(&b.levels_before),
            levels(&b.levels_after)
        ));
    }
    for s in &r.skipped {
        let part = if s.partition.is_empty() {
            String::new()
        } else {
            format!("{} ", s.partition)
        };
        out.push_str(&format!(
            "  skipped {part}bucket {}: {}\n",
            s.bucket, s.reason
        ));
    }
    for l in &r.leases_held_elsewhere {
        out.push_str(&format!(
            "  skipped partition {} (held by {} until {} ms)\n",
            l.partition, l.holder.owner, l.holder.expires_ms
        ));
    }
    let sc = &r.scope;
    let out_of_scope =
        sc.buckets_outside_partitions + sc.buckets_not_idle + sc.buckets_outside_bucket_ranges;
    if out_of_scope > 0 {
        out.push_str(&format!(
            "  out of scope: {} bucket(s) outside the partitions, {} not idle long enough, {} \
             outside the bucket ranges\n",
            sc.buckets_outside_partitions, sc.buckets_not_idle, sc.buckets_outside_bucket_ranges
        ));
    }
    for w in &r.warnings {
        out.push_str(&format!("  warning: {w}\n"));
    }
    if matches!(r.status, JobStatus::Incomplete) {
        out.push_str(&format!(
            "  incomplete: {} bucket(s) left uncompacted (exit status {INCOMPLETE_EXIT})\n",
            r.skipped.len()
        ));
    }
    out
}

fn progress_bar(show: bool) -> (Option<indicatif::ProgressBar>, Option<ProgressFn>) {
    if !show {
        return (None, None);
    }
    let bar = indicatif::ProgressBar::new_spinner();
    bar.enable_steady_tick(Duration::from_millis(120));
    let handle = bar.clone();
    let f: ProgressFn = Box::new(move |e| {
        handle.set_message(format!("[{}] {}", e.phase, e.message));
    });
    (Some(bar), Some(f))
}

/// What one `compact` (or each table of `compact-database`) runs with.
pub struct JobArgs {
    pub full: bool,
    pub scope: JobScope,
    /// Retry while another job holds one of the partitions.
    pub wait: bool,
    pub no_lease: bool,
    /// The leases' time to live (renewed every third of it while the job runs).
    pub lease_ttl_ms: i64,
    /// Leave out the maintenance after the commit.
    pub skip_maintenance: bool,
    /// Buckets compacted at once (`--parallelism`); 1 runs the tasks one after another.
    pub parallelism: usize,
}

impl JobArgs {
    /// A job starting now (fresh id, the host's clock) with these arguments.
    pub fn table_job(&self) -> TableJob {
        let mut job = TableJob {
            full: self.full,
            ..TableJob::now()
        };
        job.scope = self.scope.clone();
        job.skip_maintenance = self.skip_maintenance;
        job.lease_ttl_ms = (!self.no_lease).then_some(self.lease_ttl_ms);
        job
    }
}

/// The documented exit status of a job that ran (errors exit 1 or 2 before this).
pub fn exit_code(status: JobStatus) -> ExitCode {
    match status {
        JobStatus::Complete | JobStatus::NothingToDo => ExitCode::SUCCESS,
        JobStatus::Incomplete | JobStatus::Refused => ExitCode::from(INCOMPLETE_EXIT),
    }
}

/// Exit status of a job that left some bucket (or the whole table) uncompacted.
pub const INCOMPLETE_EXIT: u8 = 3;

/// Compacts a table; with `wait`, retries every [`WAIT_POLL`] (for up to an hour) while another
/// job holds one of its partitions, keeping what earlier rounds committed in the report it
/// returns.
pub fn compact(
    compactor: &Compactor,
    dir: &Path,
    args: &JobArgs,
    show_progress: bool,
    allow_external: &[PathBuf],
) -> Result<JobReport, HostError> {
    let opened = open_table(dir, allow_external).map_err(HostError::Setup)?;
    let (storage, table_path) = (opened.storage, opened.table_path);
    let started = Instant::now();
    let mut committed: Vec<i64> = Vec::new();
    let mut rounds = 0;
    loop {
        rounds += 1;
        let job = args.table_job();
        let (bar, progress) = progress_bar(show_progress);
        // Always the task path, even on one thread: its driver renews the leases while the
        // tasks run, so a long job keeps its partitions and a dead one frees them within a
        // lease's time to live. The files and the snapshot are those of one call.
        let report = paimon_compact_host::parallel::compact_parallel(
            compactor,
            storage.clone(),
            &table_path,
            &job,
            args.parallelism,
            progress,
        );
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        let mut report = report?;
        if let Some(m) = &report.maintenance {
            if opened.object_store.is_none() {
                remove_empty_directories(dir, m);
            }
        }
        report.storage_requests = opened.object_store.as_ref().map(ObjectStorage::requests);
        if let Some(id) = report.compaction.snapshot_after {
            committed.push(id);
        }
        if !args.wait
            || report.compaction.leases_held_elsewhere.is_empty()
            || started.elapsed() > Duration::from_secs(3600)
        {
            if committed.len() > 1
                || (committed.len() == 1 && report.compaction.snapshot_after.is_none())
            {
                report.compaction.warnings.push(format!(
                    "this run committed COMPACT snapshots {} in {rounds} rounds of --wait",
                    committed
                        .iter()
                        .map(i64::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                ));
            }
            return Ok(report);
        }
        eprintln!(
            "waiting: {} partition(s) held by another compaction job",
            report.compaction.leases_held_elsewhere.len()
        );
        std::thread::sleep(WAIT_POLL);
    }
}

/// The lease time to live of `compact`, which renews its own leases every third of it: a job
/// that dies holds its partitions for at most this long.
pub const SELF_RENEWED_LEASE_TTL_MS: i64 = 60 * 1000;

/// How often `--wait` looks again at partitions another job holds.
const WAIT_POLL: Duration = Duration::from_secs(2);
