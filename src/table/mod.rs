//! Real Paimon tables (feature `rewrite`): read the latest snapshot, plan every partition and
//! bucket with the planner, run the rewriters, and commit a COMPACT snapshot that Paimon's
//! readers accept.
//!
//! One Paimon concept per file:
//! * [`schema`], [`snapshot`], [`manifest`] (with [`avro`]), [`index`] (index manifests),
//!   [`binary_row`], [`path`] — the on-disk format;
//! * [`bucket_function`] — which bucket a key belongs to, as Paimon hashes it;
//! * `postpone` — the compaction of a `bucket = -2` table's postpone files into real buckets;
//! * [`scan`] — the live files of a snapshot, per partition and bucket;
//! * [`commit`] — snapshot `N+1` with conflict check and bounded rebase;
//! * [`manifest_merge`] — the commit's merging of small manifests;
//! * [`lease`] — one job per partition;
//! * [`job_state`] — planner state kept between one-shot runs;
//! * [`scope`] — which partitions and buckets a job covers, and its dynamic options;
//! * [`guards`] — the tables a job refuses, with the reason;
//! * [`fanout`] — a job as steps that may run in different processes: plan tasks, run each
//!   task anywhere, commit all results once (or abort);
//! * [`job`] — [`compact_table`], the API hosts call: the fan-out steps in one process;
//! * [`plan`] — [`plan_table`]: every partition and bucket planned, with why a bucket's work
//!   cannot run here, if it cannot;
//! * `run` — the plan run through the rewriters, and `merge`, what a primary-key merge needs
//!   from the table and the manifest records of its output files;
//! * [`report`] — what a job is asked ([`CompactOptions`]) and what it reports
//!   ([`CompactReport`]);
//! * [`demo`] — writes a small demo table in Paimon's format.
//!
//! Like the rest of the core, nothing here reads a clock, draws random numbers or touches a
//! file system: the caller passes `now`, a job id and a [`crate::storage::Storage`].

pub mod avro;
pub mod binary_row;
pub mod bucket_function;
pub mod commit;
pub mod delete_count;
pub mod demo;
pub mod fanout;
pub mod guards;
pub mod ids;
pub mod index;
pub mod job;
pub mod job_state;
pub mod lease;
pub mod manifest;
pub mod manifest_merge;
mod merge;
pub mod path;
pub mod plan;
mod postpone;
mod record_expiry;
pub mod report;
mod run;
pub mod scan;
pub mod schema;
pub mod scope;
pub mod snapshot;
pub mod value_stats;

pub use job::compact_table;
pub use plan::{
    plan_table, BucketPlan, ExpiredPartitionTest, LevelStat, PlanRequest, PlanSummary,
    PlannedAction, ScopeSummary, TablePlan,
};
pub use report::{
    BucketMetrics, CompactOptions, CompactReport, JobStatus, PhaseTimes, SkippedBucket, Totals,
    REPORT_SCHEMA_VERSION,
};
pub use scope::JobScope;
