//! The compaction planner: pure functions from bucket state, options and an injected clock to a
//! decision with its reason. Nothing here reads files, clocks or the network.
//!
//! [`conformance`] runs the shared conformance vectors through it.

mod append_bucketed;
mod append_coordinator;
mod bucket;
pub mod conformance;
mod context;
mod early_full;
mod explain;
mod force_up_level0;
mod full_compaction;
mod interval_partition;
mod merge_tree_manager;
mod merge_tree_task;
mod reason;
mod routing;
mod strategy;
mod unit;
mod universal;
mod upgrade_strategy;

pub use crate::error::NotCompactable;
/// A parsed option value (`compaction.offpeak.*`); the planner applies it.
pub use crate::options::OffPeakHours;
pub use append_bucketed::{
    full_compact_task, should_requeue_last, AppendDecision, BucketedAppendCompactManager,
};
pub use append_coordinator::{
    AppendCompactCoordinator, AppendCompactTask, CoordinatorFile, DeletionFileRef, COMPACT_AGE,
    REMOVE_AGE,
};
pub use bucket::{plan_bucket, BucketDecision, BucketPlanRequest, PlannerRole, StrategyState};
pub use context::PlanContext;
pub use early_full::EarlyFullCompaction;
pub use explain::explain_options;
pub use force_up_level0::ForceUpLevel0Compaction;
pub use full_compaction::pick_full_compaction;
pub use interval_partition::interval_partition;
pub use merge_tree_manager::{
    compact_not_completed, drop_delete, write_stall, ExpiryCheck, MergeTreeCompactManager,
    MergeTreeDecision, WriteStall,
};
pub use merge_tree_task::{
    plan_file_rewrite_task, plan_merge_tree_task, RewriteAlone, TaskAction, TaskPlan, TaskResult,
    TaskSettings,
};
pub use reason::{human_bytes, Idle, RatioStop, RatioWalk, Reason};
pub use routing::{route, route_job, CompactionMode, Route};
pub use strategy::CompactStrategy;
pub use unit::{CompactUnit, Pick};
pub use universal::UniversalCompaction;
pub use upgrade_strategy::{
    full_changelog_upgrade_strategy, lookup_upgrade_strategy, upgrade_strategy_for,
    LookupUpgradeFacts, UpgradeRule, UpgradeStrategy,
};
