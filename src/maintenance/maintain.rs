//! One entry point for every maintenance task: the post-commit hook of the dedicated job, in
//! Paimon's order, and each standalone procedure. Hosts (the CLI, the component, Node) call
//! [`run`] with a [`MaintenanceTask`]; the table's options, with the run's overrides laid on
//! top, configure every step, as a procedure's arguments do in Paimon.
//!
//! Order after a commit (`docs/maintenance.md`, "After every job"): tag auto-creation (even
//! when nothing else runs), tag expiry, partition expiration (which may commit OVERWRITE
//! snapshots), consumer expiry, snapshot expiration, changelog expiration. Consumers go before
//! snapshots so that a stale consumer does not pin snapshots in the same round; snapshot
//! expiration goes last because it also reclaims the files partition expiration dropped.

use std::collections::BTreeMap;

use super::consumers::{self, ConsumerReport};
use super::expire_changelogs::{self, ChangelogExpireReport};
use super::expire_snapshots::{self, ExpireConfig, ExpireReport};
use super::orphans::{self, OrphanReport};
use super::partition_expire::{
    self, DropCommit, PartitionExpireConfig, PartitionExpireReport, PartitionExpirer,
};
use super::tags::{self, TagReport};
use super::MaintenanceContext;
use crate::error::Result;
use crate::storage::Storage;
use crate::table::scan::Table;

/// What to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MaintenanceTask {
    /// Everything a dedicated job's commit runs, in Paimon's order.
    AfterCommit,
    /// Snapshot expiration alone (procedure `expire_snapshots`, maintenance-rules.md §4).
    ExpireSnapshots,
    /// Changelog expiration alone, whether or not changelogs are decoupled (procedure
    /// `expire_changelogs`, maintenance-rules.md §5).
    ExpireChangelogs,
    /// Partition expiration alone, checked now regardless of
    /// `partition.expiration-check-interval` (procedure `expire_partitions`,
    /// maintenance-rules.md §7); an error without `partition.expiration-time`.
    ExpirePartitions,
    /// Tag expiry by age alone, without auto-creation (procedure `expire_tags`,
    /// maintenance-rules.md §8.3).
    ExpireTags,
    /// Consumer expiry alone; does nothing without `consumer.expiration-time`
    /// (maintenance-rules.md §6).
    ExpireConsumers,
    /// Orphan file removal (procedure `remove_orphan_files`, maintenance-rules.md §9); the
    /// only task that does not load the table's schema and options.
    RemoveOrphanFiles,
}

/// How to run it.
pub struct MaintenanceSettings<'a> {
    /// The run's time, the host's UTC offset, and whether it is a dry run.
    pub ctx: MaintenanceContext,
    /// Random bytes from the host: names of what partition expiration commits.
    pub job_id: [u8; 16],
    /// Table options for this run only (e.g. `snapshot.num-retained.max`), on top of the
    /// schema's; the schema is never changed.
    pub options: Vec<(String, String)>,
    /// Orphan removal: files modified before this (epoch ms) may go; default one day ago.
    pub older_than_ms: Option<i64>,
    /// Partition expiration's commits: the user and identifier of the commit that triggered
    /// them (Paimon reuses them); `None` for a procedure.
    pub commit_user: Option<String>,
    /// Waits between commit attempts, supplied by the host.
    pub sleep: Option<&'a dyn Fn(u64)>,
}

impl MaintenanceSettings<'_> {
    /// Settings at `ctx` with no option overrides, the default orphan age, an empty commit
    /// user and no sleep between commit retries.
    pub fn new(ctx: MaintenanceContext, job_id: [u8; 16]) -> Self {
        MaintenanceSettings {
            ctx,
            job_id,
            options: Vec::new(),
            older_than_ms: None,
            commit_user: None,
            sleep: None,
        }
    }
}

/// What a run did (or, in a dry run, would do), step by step; steps that did not run are
/// absent.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MaintenanceReport {
    /// The run only reported ([`MaintenanceContext::dry_run`]); every step's report says what
    /// it would have done.
    pub dry_run: bool,
    /// Tag auto-creation (maintenance-rules.md §8.2); only after a commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags_created: Option<TagReport>,
    /// Tag expiry by age (maintenance-rules.md §8.3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags_expired: Option<TagReport>,
    /// Partition expiration (maintenance-rules.md §7); absent without
    /// `partition.expiration-time`, and after a commit for an unpartitioned table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partitions: Option<PartitionExpireReport>,
    /// Consumer expiry (maintenance-rules.md §6); absent without `consumer.expiration-time`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumers: Option<ConsumerReport>,
    /// Snapshot expiration (maintenance-rules.md §4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshots: Option<ExpireReport>,
    /// Changelog expiration (maintenance-rules.md §5); after a commit only when changelogs are
    /// decoupled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changelogs: Option<ChangelogExpireReport>,
    /// Orphan file removal (maintenance-rules.md §9); only for
    /// [`MaintenanceTask::RemoveOrphanFiles`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orphans: Option<OrphanReport>,
}

/// The table as this run sees it: its latest schema with the run's option overrides.
fn load(storage: &dyn Storage, table_path: &str, options: &[(String, String)]) -> Result<Table> {
    let (table, _) = Table::load_for_job(storage, table_path, options)?;
    Ok(table)
}

/// Runs `task` on the table at `table_path`.
pub fn run(
    storage: &dyn Storage,
    table_path: &str,
    task: MaintenanceTask,
    settings: &MaintenanceSettings<'_>,
) -> Result<MaintenanceReport> {
    let ctx = &settings.ctx;
    let mut report = MaintenanceReport {
        dry_run: ctx.dry_run,
        ..MaintenanceReport::default()
    };
    if task == MaintenanceTask::RemoveOrphanFiles {
        let older_than = settings
            .older_than_ms
            .unwrap_or_else(|| orphans::default_older_than(ctx));
        report.orphans = Some(orphans::remove_orphan_files(
            storage,
            table_path,
            older_than,
            &orphans::times_from_listing,
            ctx,
        )?);
        return Ok(report);
    }
    let table = load(storage, table_path, &settings.options)?;
    let raw: &BTreeMap<String, String> = &table.schema.options;
    let after_commit = task == MaintenanceTask::AfterCommit;
    let drop_commit = DropCommit {
        commit_user: settings.commit_user.clone().unwrap_or_default(),
        identifier: i64::MAX,
        job_id: settings.job_id,
        max_retries: 10,
        sleep: settings.sleep,
    };

    if after_commit {
        report.tags_created = Some(tags::auto_create_tags(storage, &table, ctx)?);
    }
    if after_commit || task == MaintenanceTask::ExpireTags {
        report.tags_expired = Some(tags::expire_tags(storage, &table, ctx)?);
    }
    if let Some(config) = PartitionExpireConfig::from_options(raw)? {
        if after_commit && table.schema.partition_keys.is_empty() {
            // Paimon builds no partition expiration for an unpartitioned table.
        } else if after_commit {
            let mut expirer =
                PartitionExpirer::load(storage, &table.paths, config, ctx, settings.job_id);
            let r = expirer.expire(storage, &table, ctx, &drop_commit)?;
            // Kept on every run, checked or not: a one-shot job's fresh expirer starts its
            // interval at a random point, and only the kept one ever reaches a check.
            if !ctx.dry_run {
                expirer.save(storage, &table.paths)?;
            }
            report.partitions = Some(r);
        } else if task == MaintenanceTask::ExpirePartitions {
            report.partitions = Some(partition_expire::expire_partitions(
                storage,
                &table,
                &config,
                ctx,
                &drop_commit,
            )?);
        }
    } else if task == MaintenanceTask::ExpirePartitions {
        return Err(crate::error::Error::invalid_option(
            partition_expire::EXPIRATION_TIME,
            "",
            "partition expiration needs 'partition.expiration-time' (or --expiration-time)",
        ));
    }
    if after_commit || task == MaintenanceTask::ExpireConsumers {
        if let Some(ms) = consumers::consumer_expiration_ms(raw)? {
            report.consumers = Some(consumers::expire_consumers(
                storage,
                &table.paths,
                ctx.now_ms.saturating_sub(ms),
                ctx,
                &orphans::times_from_listing,
            )?);
        }
    }
    // Partition expiration may have committed: the snapshot steps read the table afresh.
    let table = if report
        .partitions
        .as_ref()
        .is_some_and(|p| !p.snapshots.is_empty())
    {
        load(storage, table_path, &settings.options)?
    } else {
        table
    };
    let expire = ExpireConfig::from_options(&table.schema.options)?;
    if after_commit || task == MaintenanceTask::ExpireSnapshots {
        report.snapshots = Some(expire_snapshots::expire_snapshots(
            storage, &table, &expire, ctx,
        )?);
    }
    let changelogs_due =
        (after_commit && expire.changelog_decoupled()) || task == MaintenanceTask::ExpireChangelogs;
    if changelogs_due {
        report.changelogs = Some(expire_changelogs::expire_changelogs(
            storage, &table, &expire, ctx,
        )?);
    }
    Ok(report)
}

/// A dedicated job's result: its compaction report (the same JSON fields, flattened) and
/// what the maintenance after it did.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JobReport {
    /// The compaction's report; its fields are at the top level of the JSON (see
    /// `docs/report.md`).
    #[serde(flatten)]
    pub compaction: crate::table::CompactReport,
    /// The post-commit maintenance; absent with `skip_maintenance` or for a refused table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintenance: Option<MaintenanceReport>,
    /// Why the maintenance failed after the job's commit (which stands; every maintenance
    /// step is safe to interrupt and the next run finishes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintenance_error: Option<crate::error::Error>,
    /// The requests the job made to an object store, filled in by a host whose storage is
    /// remote; absent for local and in-memory storage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_requests: Option<crate::storage::RequestCounts>,
}

impl JobReport {
    /// The report of a job whose maintenance did not run (yet): the compaction's alone.
    pub fn without_maintenance(compaction: crate::table::CompactReport) -> Self {
        JobReport {
            compaction,
            maintenance: None,
            maintenance_error: None,
            storage_requests: None,
        }
    }
}

/// Compacts the table ([`crate::table::compact_table`]) and then, unless `maintain` is
/// `None`, runs the maintenance a dedicated job's commit runs ([`MaintenanceTask::AfterCommit`])
/// — also when the job had nothing to compact, as Paimon's committer expires on empty
/// commits, and never for a table the job refused. A maintenance failure does not undo the
/// commit: it is reported in [`JobReport::maintenance_error`] and the job's status becomes
/// `incomplete`.
///
/// With `compaction.skip-expired-partitions` (and `values-time` partition expiration) the
/// compaction leaves out partitions that have already expired, as Paimon's bucketed compaction
/// does; their files go with the partition's expiration. `settings` supplies the clock for
/// that test even when `run_maintenance` is false.
pub fn compact_and_maintain(
    storage: &dyn crate::io::ToIo,
    table_path: &str,
    opts: &crate::table::CompactOptions<'_>,
    settings: &MaintenanceSettings<'_>,
    run_maintenance: bool,
) -> Result<JobReport> {
    let io = storage.to_io();
    let compaction =
        with_expired_partition_test(io.storage.as_ref(), table_path, opts, settings, |o| {
            crate::table::compact_table(&io, table_path, o)
        })?;
    if !run_maintenance {
        return Ok(JobReport::without_maintenance(compaction));
    }
    Ok(maintain_after_commit(
        io.storage.as_ref(),
        table_path,
        compaction,
        opts,
        settings,
    ))
}

/// Calls `f` with `opts` plus the test that leaves out partitions that have already expired,
/// when the table asks for it (`compaction.skip-expired-partitions` with `values-time`
/// partition expiration, as Paimon's bucketed compaction does; their files go with the
/// partition's expiration). `settings` supplies the clock for that test. What a job's
/// planning ([`crate::table::compact_table`], [`crate::table::fanout::plan_tasks`]) runs in.
pub fn with_expired_partition_test<T>(
    storage: &dyn Storage,
    table_path: &str,
    opts: &crate::table::CompactOptions<'_>,
    settings: &MaintenanceSettings<'_>,
    f: impl FnOnce(&crate::table::CompactOptions<'_>) -> Result<T>,
) -> Result<T> {
    let (table, _) = Table::load_for_job(storage, table_path, &opts.scope.options)?;
    let skip = PartitionExpireConfig::from_options(&table.schema.options)?
        .filter(PartitionExpireConfig::skips_expired_in_compaction);
    let ctx = settings.ctx;
    let test = |t: &Table, values: &[crate::table::binary_row::Datum]| {
        skip.as_ref()
            .is_some_and(|c| c.is_value_expired(t, values, &ctx))
    };
    let mut opts = opts.clone();
    if skip.is_some() {
        opts.skip_expired_partitions = Some(&test);
    }
    f(&opts)
}

/// Runs the maintenance a dedicated job's commit runs ([`MaintenanceTask::AfterCommit`])
/// after `compaction` (also when it had nothing to compact, as Paimon's committer expires on
/// empty commits; never for a table the job refused). A maintenance failure does not undo
/// the commit: it is reported in [`JobReport::maintenance_error`] and the job's status
/// becomes `incomplete`.
pub fn maintain_after_commit(
    storage: &dyn Storage,
    table_path: &str,
    compaction: crate::table::CompactReport,
    opts: &crate::table::CompactOptions<'_>,
    maintain: &MaintenanceSettings<'_>,
) -> JobReport {
    let mut report = JobReport::without_maintenance(compaction);
    if report.compaction.status == crate::table::JobStatus::Refused {
        return report;
    }
    // Partition expiration names what it commits from its job id: derived from the
    // compaction's, but never equal to it, so no name can repeat one the compaction wrote.
    let mut job_id = opts.job_id;
    job_id[0] ^= 0x5a;
    job_id[15] ^= 0xa5;
    let mut settings = MaintenanceSettings {
        ctx: maintain.ctx,
        job_id,
        options: opts.scope.options.clone(),
        older_than_ms: None,
        commit_user: Some(
            opts.commit_user
                .clone()
                .unwrap_or_else(|| format!("paimon-compact-{}", report.compaction.job_id)),
        ),
        sleep: maintain.sleep,
    };
    settings.options.extend(maintain.options.clone());
    match run(storage, table_path, MaintenanceTask::AfterCommit, &settings) {
        Ok(m) => report.maintenance = Some(m),
        Err(e) => {
            report
                .compaction
                .warnings
                .push(format!("maintenance after the commit failed: {e}"));
            report.compaction.status = crate::table::JobStatus::Incomplete;
            report.maintenance_error = Some(e);
        }
    }
    report
}
