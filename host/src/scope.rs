//! The scope flags of `plan`, `compact` and `compact-database`: Paimon's compact-action
//! arguments. They reach the core as text; the core parses and checks them against the table
//! (one parser for the CLI, the component and Node), so only the flags' own shapes are
//! checked here.

use clap::{Args, ValueEnum};
use paimon_compact::table::JobScope;

/// `full` rewrites every file of every bucket in scope; `minor` takes the planner's automatic
/// pick (what a writer's compaction would do).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Strategy {
    Full,
    Minor,
}

#[derive(Args, Clone, Debug, Default)]
pub struct ScopeArgs {
    /// Only this partition (`k1=v1,k2=v2`; some or all partition columns); repeatable.
    #[arg(long = "partition", value_name = "SPEC")]
    pub partitions: Vec<String>,
    /// Only partitions matching this predicate over partition columns (`=`, `<>`, `<`, `<=`,
    /// `>`, `>=`, `IN`, `IS [NOT] NULL`, `AND`, `OR`); not with --partition.
    #[arg(long = "where", value_name = "PREDICATE")]
    pub where_clause: Option<String>,
    /// Only partitions whose newest file is at least this old (`1 d`, `12h`).
    #[arg(long, value_name = "DURATION")]
    pub partition_idle_time: Option<String>,
    /// Only these buckets (`0-3,7`; fixed-bucket tables).
    #[arg(long, value_name = "RANGES")]
    pub buckets: Option<String>,
    /// A table option for this job only (`key=value`); repeatable. The schema is not changed.
    #[arg(long = "option", value_name = "KEY=VALUE")]
    pub options: Vec<String>,
    /// `full` or `minor` (the default: the planner's automatic pick).
    #[arg(long, value_enum)]
    pub strategy: Option<Strategy>,
    /// Same as `--strategy full`.
    #[arg(long)]
    pub full: bool,
}

impl ScopeArgs {
    /// Whether the job is a full compaction.
    pub fn full(&self) -> Result<bool, String> {
        match (self.full, self.strategy) {
            (true, Some(Strategy::Minor)) => {
                Err("--full and --strategy minor contradict each other".into())
            }
            (true, _) | (false, Some(Strategy::Full)) => Ok(true),
            (false, _) => Ok(false),
        }
    }

    /// Whether any flag narrows or overrides anything.
    pub fn is_empty(&self) -> bool {
        self.partitions.is_empty()
            && self.where_clause.is_none()
            && self.partition_idle_time.is_none()
            && self.buckets.is_none()
            && self.options.is_empty()
            && self.strategy.is_none()
            && !self.full
    }

    /// The core's scope; `--option` values must be `key=value`.
    pub fn to_scope(&self) -> Result<JobScope, String> {
        let options = self
            .options
            .iter()
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) if !k.trim().is_empty() => {
                    Ok((k.trim().to_string(), v.trim().to_string()))
                }
                _ => Err(format!("--option '{kv}': expected key=value")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(JobScope {
            partitions: self.partitions.clone(),
            where_clause: self.where_clause.clone(),
            partition_idle_time: self.partition_idle_time.clone(),
            buckets: self.buckets.clone(),
            options,
        })
    }
}

/// How a compaction job runs (beside its scope), for `compact` and `compact-database`.
#[derive(Args, Clone, Debug, Default)]
pub struct RunArgs {
    /// Wait for partitions another job holds instead of skipping them: retries every 2 s for
    /// up to an hour (a crashed job's leases expire within one `--lease-ttl`).
    #[arg(long)]
    pub wait: bool,
    /// How long the job's partition leases last unless renewed. `compact` renews them every
    /// third of it while it runs (default `1 min`), so a job that dies blocks its partitions
    /// for at most this; `tasks` leaves renewing to the driver (`renew-leases`; default
    /// `10 min`).
    #[arg(long, value_parser = parse_lease_ttl)]
    pub lease_ttl: Option<i64>,
    /// Do not take partition leases (only when no other compactor can run).
    #[arg(long)]
    pub no_lease: bool,
    /// Leave out the maintenance after the commit (tag creation and expiry, partition,
    /// consumer, snapshot and changelog expiration).
    #[arg(long)]
    pub skip_maintenance: bool,
    /// Buckets compacted at once, each in its own thread (and component instance); the
    /// commit is still one snapshot. Default: the available cores.
    #[arg(long)]
    pub parallelism: Option<usize>,
}

/// A lease time to live: a duration of at least one second (renewals are a third of it).
fn parse_lease_ttl(text: &str) -> Result<i64, String> {
    let ms = paimon_compact::options::parse_duration_ms(text)?;
    match i64::try_from(ms) {
        Ok(ms) if ms >= 1000 => Ok(ms),
        _ => Err(format!("'{text}': a lease lasts from 1 s to i64::MAX ms")),
    }
}

impl RunArgs {
    /// The job's arguments with its scope; `default_lease_ttl_ms` unless `--lease-ttl` says.
    pub fn job_args(
        &self,
        scope: &ScopeArgs,
        default_lease_ttl_ms: i64,
    ) -> Result<crate::table::JobArgs, String> {
        Ok(crate::table::JobArgs {
            full: scope.full()?,
            scope: scope.to_scope()?,
            wait: self.wait,
            no_lease: self.no_lease,
            lease_ttl_ms: self.lease_ttl.unwrap_or(default_lease_ttl_ms),
            skip_maintenance: self.skip_maintenance,
            parallelism: self
                .parallelism
                .unwrap_or_else(paimon_compact_host::parallel::default_parallelism)
                .max(1),
        })
    }
}
