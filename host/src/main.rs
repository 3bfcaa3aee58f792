//! `paimon-compact`: the command-line host. Runs the WebAssembly component in wasmtime by
//! default (`--engine native` runs the same core compiled into this binary).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use paimon_compact::maintenance::maintain::MaintenanceTask;
use paimon_compact::options::{parse_duration_ms, Flavor};
use paimon_compact_host::{Compactor, HostError, MaintenanceRequest, Now, TableJob};

mod database;
mod demo;
mod engine_args;
mod scope;
mod table;
mod tasks;
mod timeline;

use engine_args::{compactor, component_bytes, limits, precompiled_dirs, runtime, EngineArgs};
use scope::{RunArgs, ScopeArgs};

#[derive(Parser)]
#[command(
    name = "paimon-compact",
    version,
    about = "Apache Paimon compaction, as a WebAssembly component"
)]
struct Cli {
    #[command(flatten)]
    engine: EngineArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a conformance vectors file through the planner; prints failing cases, then
    /// `N passed, M failed`.
    Conformance {
        /// A file in the schema of compaction-vectors.json.
        vectors: PathBuf,
        /// Reproduce paimon-cpp where it differs from Java (uses `expected_cpp`).
        #[arg(long)]
        cpp: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Plan a table (a table directory: prints each partition and bucket's decision with its
    /// reason, and changes nothing), or one bucket described by a JSON request file
    /// (`BucketPlanRequest`; `-` for stdin).
    Plan {
        target: PathBuf,
        #[command(flatten)]
        scope: ScopeArgs,
        #[arg(long)]
        json: bool,
    },
    /// Compact a table and commit one COMPACT snapshot: Paimon's dedicated compaction job
    /// (runs with `write-only` off, whatever the table says). Exit status: 0 done or nothing
    /// to do, 3 some bucket left uncompacted (refused, unsupported, or leased by another
    /// job; the report lists each), 1 an error (nothing committed), 2 a usage or host error.
    Compact {
        table: PathBuf,
        #[command(flatten)]
        scope: ScopeArgs,
        /// Print the job's report as JSON (schema: docs/report.md).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        run: RunArgs,
        /// Change nothing: print the plan and what the maintenance would delete or commit.
        #[arg(long)]
        dry_run: bool,
    },
    /// Compact every table of a warehouse (or of one database), each with its own commit and
    /// report; a table that fails does not stop the others. Exit status as `compact`, the
    /// worst over the tables (1 when any table failed).
    CompactDatabase {
        /// The warehouse: a directory or an object-store URI (`s3://bucket/warehouse`) holding
        /// `<database>.db/<table>/`.
        warehouse: PathBuf,
        /// Only this database.
        #[arg(long)]
        database: Option<String>,
        /// Only tables whose `database.table` matches this regular expression (whole name).
        #[arg(long)]
        including_tables: Option<String>,
        /// Leave out tables whose `database.table` matches this regular expression (wins
        /// over --including-tables).
        #[arg(long)]
        excluding_tables: Option<String>,
        #[command(flatten)]
        scope: ScopeArgs,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Fan-out, step 1: plan the job, take its leases and write `OUT/job.json` and one
    /// `OUT/task-<n>.json` per bucket with work (docs/fanout.md). Run the tasks anywhere
    /// with `run-task`, then `commit-tasks OUT` (or `abort-tasks OUT`).
    Tasks {
        table: PathBuf,
        #[command(flatten)]
        scope: ScopeArgs,
        /// The task directory to write.
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        run: RunArgs,
        #[arg(long)]
        json: bool,
    },
    /// Fan-out, step 2: run one task as a new attempt and write `result-<n>.json` beside it.
    /// Safe to repeat: every attempt writes files of its own, and the commit takes one.
    RunTask {
        task: PathBuf,
        /// Where to write the result (default: `result-<n>.json` beside the task).
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Fan-out, step 3: commit the results in DIR as one COMPACT snapshot (one result per
    /// task; other attempts' files are deleted), then the job's maintenance. Exit status as
    /// `compact`.
    CommitTasks {
        dir: PathBuf,
        /// Leave out the maintenance after the commit.
        #[arg(long)]
        skip_maintenance: bool,
        #[arg(long)]
        json: bool,
    },
    /// Fan-out: abort the job in DIR, deleting everything its tasks wrote and releasing its
    /// leases. Refused for a job that was committed.
    AbortTasks {
        dir: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Fan-out: extend the leases of the job in DIR (rewrites `DIR/job.json`), for a driver
    /// whose tasks outlive the lease.
    RenewLeases {
        dir: PathBuf,
        /// The new time to live from now, e.g. `10 min`.
        #[arg(long, default_value = "10 min")]
        ttl: String,
        #[arg(long)]
        json: bool,
    },
    /// The built-in demo: writes demo tables (append and primary-key, several commits of
    /// small files), shows their levels and the planner's decisions, compacts them and shows
    /// the result.
    Demo {
        /// Where to write the demo tables (default: a new temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Only write the demo tables (and print their paths).
        #[arg(long)]
        no_compact: bool,
        #[arg(long)]
        json: bool,
    },
    /// Serve the simulator page (`www/`) on localhost.
    Serve {
        #[arg(long, default_value = "8080")]
        port: u16,
        #[arg(long, default_value = "www")]
        dir: PathBuf,
    },
    /// Expire old snapshots (Paimon's expire_snapshots): their data files, manifests and
    /// snapshot files, never what a retained snapshot, a tag or a consumer still needs.
    /// Without flags, the table's `snapshot.*` options decide.
    ExpireSnapshots {
        table: PathBuf,
        /// Keep at least this many snapshots (`snapshot.num-retained.min`).
        #[arg(long)]
        retain_min: Option<u32>,
        /// Keep at most this many snapshots (`snapshot.num-retained.max`).
        #[arg(long)]
        retain_max: Option<u32>,
        /// Expire snapshots older than this (`snapshot.time-retained`, e.g. `1 h`).
        #[arg(long)]
        older_than: Option<String>,
        /// Expire at most this many snapshots in one run (`snapshot.expire.limit`).
        #[arg(long)]
        max_deletes: Option<u32>,
        #[command(flatten)]
        run: MaintenanceArgs,
    },
    /// Expire long-lived changelogs (`changelog.num-retained.*`, `changelog.time-retained`).
    ExpireChangelogs {
        table: PathBuf,
        #[command(flatten)]
        run: MaintenanceArgs,
    },
    /// Drop expired partitions with an OVERWRITE snapshot (Paimon's expire_partitions);
    /// without flags, the table's `partition.*` options decide.
    ExpirePartitions {
        table: PathBuf,
        /// `partition.expiration-time`, e.g. `7 d`.
        #[arg(long)]
        expiration_time: Option<String>,
        /// `partition.timestamp-formatter`, e.g. `yyyyMMdd`.
        #[arg(long)]
        timestamp_formatter: Option<String>,
        /// `partition.timestamp-pattern`, e.g. `$dt $hr:00:00`.
        #[arg(long)]
        timestamp_pattern: Option<String>,
        /// `values-time` or `update-time` (`partition.expiration-strategy`).
        #[arg(long)]
        strategy: Option<String>,
        /// At most this many partitions (`partition.expiration-max-num`).
        #[arg(long)]
        max_num: Option<u32>,
        #[command(flatten)]
        run: MaintenanceArgs,
    },
    /// Delete tags whose retention has passed (`tag.default-time-retained`, per-tag TTL).
    ExpireTags {
        table: PathBuf,
        #[command(flatten)]
        run: MaintenanceArgs,
    },
    /// Delete files no snapshot, tag, branch or changelog references, older than a threshold
    /// so that files a running writer has not committed yet are never taken.
    RemoveOrphanFiles {
        table: PathBuf,
        /// Only files last modified at least this long ago (default `1 d`, as Paimon).
        #[arg(long, default_value = "1 d")]
        older_than: String,
        #[command(flatten)]
        run: MaintenanceArgs,
    },
    /// The planner's view of a table's options as a compaction job runs with them (its
    /// dynamic options applied, `write-only` off): every derived value a decision depends on,
    /// including universal compaction's size amplification, size ratio and run trigger.
    ExplainOptions {
        table: PathBuf,
        /// A table option for this job only (`key=value`); repeatable.
        #[arg(long = "option", value_name = "KEY=VALUE")]
        options: Vec<String>,
    },
    /// Load the component and report its size, start time and where its native code came from
    /// (`precompiled`: an artifact beside this executable; `cache`; `compiled`: a cold start).
    Info,
    /// Compile the component ahead of time into an artifact that every start then loads
    /// instead of compiling (a cold start in milliseconds): for installs and images, beside
    /// this executable (the default) or in `--out`. Follows `--timeout` (an engine with time
    /// checks compiles differently).
    Precompile {
        /// The directory to write the artifact to (default: this executable's).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let json = match &cli.command {
        Command::Conformance { json, .. }
        | Command::Plan { json, .. }
        | Command::Compact { json, .. }
        | Command::CompactDatabase { json, .. }
        | Command::Tasks { json, .. }
        | Command::RunTask { json, .. }
        | Command::CommitTasks { json, .. }
        | Command::AbortTasks { json, .. }
        | Command::RenewLeases { json, .. }
        | Command::Demo { json, .. } => *json,
        Command::ExpireSnapshots { run, .. }
        | Command::ExpireChangelogs { run, .. }
        | Command::ExpirePartitions { run, .. }
        | Command::ExpireTags { run, .. }
        | Command::RemoveOrphanFiles { run, .. } => run.json,
        Command::Serve { .. }
        | Command::Info
        | Command::Precompile { .. }
        | Command::ExplainOptions { .. } => false,
    };
    // Every panic this process can hit is caught (the native engine's calls, and this whole
    // run) and reported as one typed `internal` line.
    paimon_compact_host::panics::install_hook();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(cli)))
        .unwrap_or_else(|payload| {
            Err(HostError::Core(paimon_compact::Error::internal(format!(
                "paimon-compact panicked: {}",
                paimon_compact_host::panics::message(payload.as_ref())
            )))
            .into())
        });
    match outcome {
        Ok(code) => code,
        Err(e) => {
            // The core's typed errors exit 1 (and, with --json, print as JSON on stdout, so
            // scripts can branch on `error.kind`); anything else exits 2.
            let core = e.downcast_ref::<HostError>().and_then(|h| match h {
                HostError::Core(c) => Some(c),
                _ => None,
            });
            if json {
                let error = match core {
                    Some(c) => serde_json::to_value(c).unwrap_or_default(),
                    None => serde_json::json!({ "kind": "host", "message": e.to_string() }),
                };
                println!("{}", serde_json::json!({ "error": error }));
            }
            eprintln!("error: {e}");
            ExitCode::from(if core.is_some() { 1 } else { 2 })
        }
    }
}

/// Flags every maintenance command takes.
#[derive(Args)]
struct MaintenanceArgs {
    /// Report what would be deleted or committed, and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// A table option for this run only (`key=value`); repeatable.
    #[arg(long = "option", value_name = "KEY=VALUE")]
    options: Vec<String>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// `compact --dry-run`: the job's plan and what its maintenance would do, with nothing
/// written (the maintenance runs as a dry run on the table as it is now, before any commit).
fn compact_dry_run(
    engine: &EngineArgs,
    compactor: &Compactor,
    dir: &Path,
    scope: &ScopeArgs,
    skip_maintenance: bool,
    json: bool,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let (storage, table_path) = table::open(dir, &engine.allow_external)?;
    let mut job = TableJob {
        full: scope.full()?,
        ..TableJob::now()
    };
    job.scope = scope.to_scope()?;
    let plan = compactor.plan_table(storage.clone(), &table_path, &job)?;
    let maintenance = if skip_maintenance || plan.not_compactable.is_some() {
        None
    } else {
        let request = MaintenanceRequest {
            options: job.scope.options.clone(),
            dry_run: true,
            ..MaintenanceRequest::now()
        };
        Some(compactor.maintain(storage, &table_path, MaintenanceTask::AfterCommit, &request)?)
    };
    if json {
        let doc = serde_json::json!({ "dry_run": true, "plan": plan, "maintenance": maintenance });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", table::describe_plan(&plan));
        if let Some(m) = &maintenance {
            print!("{}", table::describe_maintenance(m));
        }
        println!("dry run: nothing was written");
    }
    Ok(ExitCode::SUCCESS)
}

/// The (key, value) pairs whose value was given.
fn present(pairs: &[(&str, Option<String>)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .filter_map(|(k, v)| v.clone().map(|v| (k.to_string(), v)))
        .collect()
}

/// Runs one maintenance task and prints its report.
fn maintenance(
    engine: &EngineArgs,
    dir: &Path,
    task: MaintenanceTask,
    mut overrides: Vec<(String, String)>,
    older_than_ms: Option<i64>,
    args: &MaintenanceArgs,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let extra = ScopeArgs {
        options: args.options.clone(),
        ..ScopeArgs::default()
    }
    .to_scope()?;
    overrides.extend(extra.options);
    let compactor = compactor(engine)?;
    let (storage, table_path) = table::open(dir, &engine.allow_external)?;
    let request = MaintenanceRequest {
        options: overrides,
        dry_run: args.dry_run,
        older_than_ms,
        ..MaintenanceRequest::now()
    };
    let report = compactor.maintain(storage, &table_path, task, &request)?;
    let removed = table::remove_empty_directories(dir, &report);
    if !removed.is_empty() && !args.json {
        println!("  removed {} empty director(ies)", removed.len());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", table::describe_maintenance(&report));
    }
    Ok(ExitCode::SUCCESS)
}

fn run(cli: Cli) -> Result<ExitCode, Box<dyn std::error::Error>> {
    match cli.command {
        Command::Conformance { vectors, cpp, json } => {
            let text = std::fs::read_to_string(&vectors)
                .map_err(|e| format!("cannot read {}: {e}", vectors.display()))?;
            let flavor = if cpp { Flavor::Cpp } else { Flavor::Java };
            let report = compactor(&cli.engine)?.run_conformance(&text, flavor)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!("{report}");
            }
            Ok(if report.ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Plan {
            target,
            scope,
            json,
        } => {
            let compactor = compactor(&cli.engine)?;
            if target.is_dir() {
                let (storage, table_path) = table::open(&target, &cli.engine.allow_external)?;
                let mut job = TableJob {
                    full: scope.full()?,
                    ..TableJob::now()
                };
                job.scope = scope.to_scope()?;
                let plan = compactor.plan_table(storage.clone(), &table_path, &job)?;
                if json {
                    // The plan, plus the table's recent history for the simulator page to
                    // replay (the page loads this document as it is).
                    let mut doc = serde_json::to_value(&plan)?;
                    let timeline = timeline::export_timeline(storage.as_ref(), &table_path, 1000)
                        .map_err(HostError::from)?;
                    doc["timeline"] = serde_json::to_value(timeline)?;
                    println!("{}", serde_json::to_string_pretty(&doc)?);
                } else {
                    print!("{}", table::describe_plan(&plan));
                }
                return Ok(ExitCode::SUCCESS);
            }
            if !scope.is_empty() {
                return Err(
                    "scope flags (--partition, --where, --buckets, --option, ...) apply to \
                            a table directory, not to a bucket request"
                        .into(),
                );
            }
            let text = if target.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin())?
            } else {
                std::fs::read_to_string(&target)
                    .map_err(|e| format!("cannot read {}: {e}", target.display()))?
            };
            let req: paimon_compact::plan::BucketPlanRequest = serde_json::from_str(&text)?;
            let decision = compactor.plan_bucket(&req)?;
            if json {
                let summary = demo::DecisionSummary::from(&decision);
                println!("{}", serde_json::to_string_pretty(&summary)?);
            } else {
                println!("{}", demo::describe_summary(&decision));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Compact {
            table: dir,
            scope,
            json,
            run,
            dry_run,
        } => {
            let compactor = compactor(&cli.engine)?;
            if dry_run {
                return compact_dry_run(
                    &cli.engine,
                    &compactor,
                    &dir,
                    &scope,
                    run.skip_maintenance,
                    json,
                );
            }
            let job = run.job_args(&scope, table::SELF_RENEWED_LEASE_TTL_MS)?;
            let report = table::compact(&compactor, &dir, &job, !json, &cli.engine.allow_external)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", table::describe_job(&report));
            }
            Ok(table::exit_code(report.compaction.status))
        }
        Command::CompactDatabase {
            warehouse,
            database,
            including_tables,
            excluding_tables,
            scope,
            json,
            run,
        } => {
            let compactor = compactor(&cli.engine)?;
            let filter = database::TableFilter::new(
                database.as_deref(),
                including_tables.as_deref(),
                excluding_tables.as_deref(),
            )?;
            let job = run.job_args(&scope, table::SELF_RENEWED_LEASE_TTL_MS)?;
            let report = database::compact_database(
                &compactor,
                &warehouse,
                &filter,
                &job,
                &cli.engine.allow_external,
            )?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", database::describe(&report));
            }
            Ok(report.exit_code())
        }
        Command::Tasks {
            table: dir,
            scope,
            out,
            run,
            json,
        } => {
            let compactor = compactor(&cli.engine)?;
            let job = run.job_args(&scope, tasks::DRIVER_RENEWED_LEASE_TTL_MS)?;
            let set = tasks::plan(&compactor, &dir, &job, &out, &cli.engine.allow_external)?;
            if json {
                let doc = serde_json::json!({
                    "job_id": set.job_id,
                    "tasks": set.tasks.len(),
                    "dir": out,
                    "planned_on": set.planned_on,
                    "leases": set.leases.len(),
                    "leases_held_elsewhere": set.leases_held_elsewhere,
                });
                println!("{}", serde_json::to_string_pretty(&doc)?);
            } else {
                println!(
                    "job {}: {} task(s) in {} (planned on snapshot {}; {} lease(s) held)",
                    set.job_id,
                    set.tasks.len(),
                    out.display(),
                    set.planned_on.map_or("none".into(), |i| i.to_string()),
                    set.leases.len()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::RunTask { task, out, json } => {
            let compactor = compactor(&cli.engine)?;
            let r = tasks::run(
                &compactor,
                &task,
                out.as_deref(),
                &cli.engine.allow_external,
            )?;
            if json {
                println!("{}", serde_json::to_string_pretty(&r.metrics)?);
            } else {
                println!(
                    "task {} (attempt {}): {} file(s) replaced by {}, {} written",
                    r.task,
                    &r.attempt[..8],
                    r.metrics.files_removed,
                    r.metrics.files_added,
                    r.written.len()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::CommitTasks {
            dir,
            skip_maintenance,
            json,
        } => {
            let compactor = compactor(&cli.engine)?;
            let report = tasks::commit(
                &compactor,
                &dir,
                skip_maintenance,
                &cli.engine.allow_external,
            )?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", table::describe_job(&report));
            }
            Ok(table::exit_code(report.compaction.status))
        }
        Command::AbortTasks { dir, json } => {
            let compactor = compactor(&cli.engine)?;
            let r = tasks::abort(&compactor, &dir, &cli.engine.allow_external)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                println!(
                    "job {} aborted: {} file(s) deleted, {} lease(s) released",
                    r.job_id,
                    r.deleted.len(),
                    r.leases_released
                );
                for f in &r.failed {
                    println!("  could not delete (an orphan now): {f}");
                }
            }
            Ok(if r.failed.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(table::INCOMPLETE_EXIT)
            })
        }
        Command::RenewLeases { dir, ttl, json } => {
            let compactor = compactor(&cli.engine)?;
            let ttl_ms = i64::try_from(parse_duration_ms(&ttl)?)?;
            let set = tasks::renew(&compactor, &dir, ttl_ms, &cli.engine.allow_external)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&set.leases)?);
            } else {
                println!("{} lease(s) renewed", set.leases.len());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo {
            dir,
            no_compact,
            json,
        } => {
            let compactor = compactor(&cli.engine)?;
            demo::run(&compactor, dir, !no_compact, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve { port, dir } => {
            paimon_compact_host::serve::serve(&dir, port)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::ExpireSnapshots {
            table: dir,
            retain_min,
            retain_max,
            older_than,
            max_deletes,
            run,
        } => {
            let overrides = present(&[
                (
                    "snapshot.num-retained.min",
                    retain_min.map(|n| n.to_string()),
                ),
                (
                    "snapshot.num-retained.max",
                    retain_max.map(|n| n.to_string()),
                ),
                ("snapshot.time-retained", older_than),
                ("snapshot.expire.limit", max_deletes.map(|n| n.to_string())),
            ]);
            let task = MaintenanceTask::ExpireSnapshots;
            maintenance(&cli.engine, &dir, task, overrides, None, &run)
        }
        Command::ExpireChangelogs { table: dir, run } => {
            let task = MaintenanceTask::ExpireChangelogs;
            maintenance(&cli.engine, &dir, task, Vec::new(), None, &run)
        }
        Command::ExpirePartitions {
            table: dir,
            expiration_time,
            timestamp_formatter,
            timestamp_pattern,
            strategy,
            max_num,
            run,
        } => {
            let overrides = present(&[
                ("partition.expiration-time", expiration_time),
                ("partition.timestamp-formatter", timestamp_formatter),
                ("partition.timestamp-pattern", timestamp_pattern),
                ("partition.expiration-strategy", strategy),
                (
                    "partition.expiration-max-num",
                    max_num.map(|n| n.to_string()),
                ),
            ]);
            let task = MaintenanceTask::ExpirePartitions;
            maintenance(&cli.engine, &dir, task, overrides, None, &run)
        }
        Command::ExpireTags { table: dir, run } => {
            let task = MaintenanceTask::ExpireTags;
            maintenance(&cli.engine, &dir, task, Vec::new(), None, &run)
        }
        Command::RemoveOrphanFiles {
            table: dir,
            older_than,
            run,
        } => {
            let ms = parse_duration_ms(&older_than)
                .map_err(|e| format!("--older-than '{older_than}': {e}"))?;
            let (now, _) = paimon_compact_host::clock::now();
            let threshold = now.saturating_sub(i64::try_from(ms).unwrap_or(i64::MAX));
            let task = MaintenanceTask::RemoveOrphanFiles;
            maintenance(&cli.engine, &dir, task, Vec::new(), Some(threshold), &run)
        }
        Command::ExplainOptions {
            table: dir,
            options,
        } => {
            let compactor = compactor(&cli.engine)?;
            let scope = ScopeArgs {
                options,
                ..ScopeArgs::default()
            }
            .to_scope()?;
            let (storage, table_path) = table::open(&dir, &cli.engine.allow_external)?;
            let stored = paimon_compact::table::scan::Table::load(storage.as_ref(), &table_path)
                .map_err(HostError::from)?;
            let (options, warnings) =
                paimon_compact::table::scope::job_options(&stored.schema.options, &scope.options)
                    .map_err(HostError::from)?;
            let mut doc =
                compactor.explain_options(stored.schema.table_kind(), Flavor::Java, &options)?;
            doc["warnings"] = serde_json::to_value(warnings)?;
            println!("{}", serde_json::to_string_pretty(&doc)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Precompile { out } => {
            let bytes = component_bytes(cli.engine.component.as_deref())?;
            let dir = match out {
                Some(d) => d,
                None => precompiled_dirs()
                    .into_iter()
                    .next()
                    .ok_or("cannot locate this executable's directory: pass --out")?,
            };
            let t0 = std::time::Instant::now();
            let file = paimon_compact_host::wasm::precompile(&bytes, &limits(&cli.engine)?, &dir)
                .map_err(HostError::from)?;
            let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
            println!(
                "{} ({} bytes, compiled in {:.1} s)",
                file.display(),
                size,
                t0.elapsed().as_secs_f64()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Info => {
            let bytes = component_bytes(cli.engine.component.as_deref())?;
            let rt = runtime(&cli.engine, &bytes)?;
            let info = serde_json::json!({
                "component_bytes": bytes.len(),
                "cached": rt.load.cached,
                "source": rt.load.source,
                "load_ms": rt.load.load_ms,
                "cache_file": rt.load.cache_file,
                "refused": rt.load.refused,
            });
            println!("{}", serde_json::to_string_pretty(&info)?);
            Ok(ExitCode::SUCCESS)
        }
    }
}
