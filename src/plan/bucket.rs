//! The stateless entry point: one bucket's files and options in, one decision out.
//!
//! This is what the component and the web bindings export. The strategy's only state (the
//! early-full clock and the gentle counter) travels in and out as [`StrategyState`], so a host
//! can persist it between calls.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{
    route, route_job, AppendDecision, BucketedAppendCompactManager, CompactStrategy,
    CompactionMode, MergeTreeCompactManager, MergeTreeDecision, NotCompactable, PlanContext,
    WriteStall,
};
use crate::error::{Error, Result};
use crate::meta::{CompactionFile, RunStat};
use crate::options::{CoreOptions, Flavor, TableKind};

/// The strategy state that survives between decisions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StrategyState {
    /// Epoch ms of the last full compaction (early full compaction's clock).
    pub last_full_compaction_ms: Option<i64>,
    /// Checks since the last forced level-0 pick (gentle lookup compaction).
    pub gentle_counter: usize,
}

impl StrategyState {
    /// Captures the state of `strategy`: its early-full clock (`None` when early full
    /// compaction is not configured) and its gentle counter (0 unless force-up-level-0).
    pub fn of(strategy: &CompactStrategy) -> Self {
        StrategyState {
            last_full_compaction_ms: strategy
                .universal()
                .early_full
                .as_ref()
                .and_then(|e| e.last_full_ms),
            gentle_counter: match strategy {
                CompactStrategy::ForceUpLevel0(f) => f.counter,
                CompactStrategy::Universal(_) => 0,
            },
        }
    }

    /// Puts this state back into a freshly built `strategy`. The clock is only restored when
    /// the strategy has early full compaction configured, the counter only into
    /// force-up-level-0; otherwise that part is ignored.
    pub fn restore_into(&self, strategy: &mut CompactStrategy) {
        if let Some(early) = strategy.universal_mut().early_full.as_mut() {
            early.last_full_ms = self.last_full_compaction_ms;
        }
        if let CompactStrategy::ForceUpLevel0(f) = strategy {
            f.counter = self.gentle_counter;
        }
    }
}

/// One bucket to plan.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct BucketPlanRequest {
    /// Primary-key or append table; with `bucket` from the options it selects the machinery
    /// (compaction.md §15).
    pub table_kind: TableKind,
    /// Whose decisions to reproduce where Java and C++ differ (compaction.md §16); Java when
    /// absent.
    #[serde(default)]
    pub flavor: Flavor,
    /// The table's options as Paimon stores them (key to raw string value), parsed with the
    /// defaults and derivations of compaction.md §2; empty when absent.
    #[serde(default)]
    pub options: BTreeMap<String, String>,
    /// The bucket's live data files, each at the level its metadata records.
    pub files: Vec<CompactionFile>,
    /// A forced full compaction instead of the automatic pick.
    #[serde(default)]
    pub full: bool,
    /// The injected clock and local hour; epoch 0 at hour 0 when absent.
    #[serde(default)]
    pub context: PlanContext,
    /// `None`: a fresh writer (Java seeds the early-full clock from the max level).
    #[serde(default)]
    pub state: Option<StrategyState>,
    /// Whether the table has a BLOB column; such tables are refused (compaction.md §15).
    #[serde(default)]
    pub has_blob_column: bool,
    /// Whose decision to model: the dedicated compaction job (the default; it ignores
    /// `write-only`) or a table writer (which skips compaction of a `write-only` table).
    #[serde(default)]
    pub role: PlannerRole,
}

/// Who runs the compaction being planned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlannerRole {
    /// Paimon's dedicated compaction job, which runs with `write-only` off.
    #[default]
    DedicatedJob,
    /// A table writer: with `write-only = true` (or a postpone bucket) it does not compact.
    Writer,
}

/// What to do with the bucket.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum BucketDecision {
    /// A primary-key bucket (compaction.md §7).
    MergeTree {
        /// The manager's decision: unit, drop-delete flag, task plan and reason.
        decision: MergeTreeDecision,
        /// Write-stall signals of the bucket as given (the decision does not change the
        /// levels; compaction.md §7.5).
        write_stall: WriteStall,
        /// The sorted runs the decision was made on, newest first.
        runs: Vec<RunStat>,
        /// The strategy state after this decision, to pass back as
        /// [`BucketPlanRequest::state`] next time.
        state: StrategyState,
    },
    /// A fixed bucket of an append table (compaction.md §13).
    Append {
        /// The automatic pick, or the full compaction when the request asked for one.
        decision: AppendDecision,
    },
}

impl BucketDecision {
    /// The reason of the decision, whichever kind it is.
    pub fn reason(&self) -> &super::Reason {
        match self {
            BucketDecision::MergeTree { decision, .. } => &decision.reason,
            BucketDecision::Append { decision } => &decision.reason,
        }
    }
}

/// Plans one bucket.
pub fn plan_bucket(req: &BucketPlanRequest) -> Result<BucketDecision> {
    let options = CoreOptions::parse_with(req.table_kind, req.flavor, &req.options)?;
    let files: Vec<Arc<CompactionFile>> = req.files.iter().cloned().map(Arc::new).collect();
    let mode = match req.role {
        PlannerRole::DedicatedJob => route_job(&options, req.has_blob_column).into_result()?,
        PlannerRole::Writer => route(&options, req.has_blob_column).into_result()?,
    };
    match mode {
        CompactionMode::MergeTree => {
            let mut manager = MergeTreeCompactManager::new(&options, files)?;
            if let Some(state) = &req.state {
                let mut strategy = manager.strategy().clone();
                state.restore_into(&mut strategy);
                manager = manager.with_strategy(strategy);
            }
            let runs = manager.levels().run_stats();
            let decision = manager.trigger(req.full, &req.context)?;
            Ok(BucketDecision::MergeTree {
                decision,
                write_stall: manager.write_stall(),
                runs,
                state: StrategyState::of(manager.strategy()),
            })
        }
        CompactionMode::BucketedAppend => {
            let mut manager = BucketedAppendCompactManager::new(&options, files);
            let decision = if req.full {
                manager.trigger_full()?
            } else {
                manager.pick_auto()
            };
            Ok(BucketDecision::Append { decision })
        }
        CompactionMode::UnawareBucketCoordinator => Err(Error::not_compactable(
            NotCompactable::UnawareBucketAutoCompaction,
        )),
    }
}
