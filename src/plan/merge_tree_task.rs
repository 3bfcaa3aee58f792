//! The merge-tree compaction task plan (compaction.md §9): which files of a unit are merged and
//! which are only moved up a level ("upgraded", metadata only).
//!
//! Sections with overlapping files must be merged. A section that is a single run is already
//! sorted: its large files are upgraded, its small files are gathered with neighbouring
//! candidates and merged, so a level does not fill up with small files. A rewrite never spans a
//! large file in between (that would break the key order of the output run).

use std::sync::Arc;

use super::{interval_partition, UpgradeRule, UpgradeStrategy};
use crate::meta::{CompactionFile, Level, SortedRun};

/// Why a file that could have been upgraded is rewritten on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RewriteAlone {
    /// Going to the max level while it may hold deletes: they must be dropped there.
    DeletesAtMaxLevel,
    /// `compaction.force-rewrite-all-files`.
    ForceRewriteAll,
    /// Record-level expiry found expired rows (Java only).
    ExpiredRecords,
}

/// One step of a task, in execution order.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum TaskAction {
    /// Record the file at a higher level. `strategy` says what else the move involves for the
    /// table's changelog rewriter (compaction.md §10.2): nothing (metadata only), a changelog and
    /// deletion-vector lookup over the file, or a rewrite of the file with the looked-up values.
    Upgrade {
        /// The file as it is now, on its current (lower) level.
        file: Arc<CompactionFile>,
        /// The unit's output level, where the file is recorded afterwards.
        to_level: Level,
        /// What the move costs under the table's rewriter ([`UpgradeRule`]).
        strategy: UpgradeStrategy,
    },
    /// Merge the sections (each a list of sorted runs, sections in key order) into new files
    /// at `output_level`.
    Rewrite {
        /// The unit's output level, where the new files go.
        output_level: Level,
        /// Key-disjoint sections in key order, each a list of sorted runs (compaction.md §8);
        /// every input file appears once.
        #[serde(with = "sections_serde")]
        sections: Vec<Vec<SortedRun>>,
        /// Set when a single file that could have been upgraded is rewritten instead
        /// (compaction.md §9). `None` for merges and for the per-file rewrites of a forced full
        /// compaction of a max-level run (compaction.md §6).
        alone: Option<RewriteAlone>,
    },
}

impl TaskAction {
    /// Files this action replaces.
    pub fn inputs(&self) -> Vec<Arc<CompactionFile>> {
        match self {
            TaskAction::Upgrade { file, .. } => vec![file.clone()],
            TaskAction::Rewrite { sections, .. } => sections
                .iter()
                .flatten()
                .flat_map(|r| r.files().iter().cloned())
                .collect(),
        }
    }
}

/// The actions of one task.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TaskPlan {
    /// The actions in execution order; each input file appears in at most one. Empty when
    /// there is nothing to do.
    pub actions: Vec<TaskAction>,
}

/// What a task replaced and what replaced it, for applying to `Levels`.
pub type TaskResult = (Vec<Arc<CompactionFile>>, Vec<Arc<CompactionFile>>);

impl TaskPlan {
    /// The result this plan would have if every rewrite produced exactly one file spanning its
    /// inputs' keys (sizes summed, sequence range the union) and upgrades moved files up. This
    /// is what the conformance vectors' stub rewriter does, and what the demo and property
    /// tests use to advance the LSM tree without touching data. `name_of(i)` names the output
    /// of action `i`.
    pub fn stand_in_result(&self, mut name_of: impl FnMut(usize) -> String) -> TaskResult {
        let (mut before, mut after) = (Vec::new(), Vec::new());
        for (i, action) in self.actions.iter().enumerate() {
            match action {
                TaskAction::Upgrade { file, to_level, .. } => {
                    before.push(file.clone());
                    after.push(Arc::new(file.upgrade(*to_level)));
                }
                TaskAction::Rewrite { output_level, .. } => {
                    let inputs = action.inputs();
                    let mut out = CompactionFile::new(
                        name_of(i),
                        *output_level,
                        inputs.iter().map(|f| f.file_size).sum(),
                        inputs
                            .iter()
                            .map(|f| f.min_key.clone())
                            .min()
                            .unwrap_or_default(),
                        inputs
                            .iter()
                            .map(|f| f.max_key.clone())
                            .max()
                            .unwrap_or_default(),
                        inputs
                            .iter()
                            .map(|f| f.min_sequence_number.0)
                            .min()
                            .unwrap_or(0),
                        inputs
                            .iter()
                            .map(|f| f.max_sequence_number.0)
                            .max()
                            .unwrap_or(0),
                    );
                    out.row_count = inputs.iter().map(|f| f.row_count).sum();
                    out.file_source = crate::meta::FileSource::Compact;
                    after.push(Arc::new(out));
                    before.extend(inputs);
                }
            }
        }
        (before, after)
    }

    /// Number of [`TaskAction::Rewrite`] actions.
    pub fn rewrites(&self) -> usize {
        self.actions
            .iter()
            .filter(|a| matches!(a, TaskAction::Rewrite { .. }))
            .count()
    }
    /// Number of [`TaskAction::Upgrade`] actions.
    pub fn upgrades(&self) -> usize {
        self.actions.len() - self.rewrites()
    }
}

/// Inputs of the task that are not the files themselves.
#[derive(Clone, Copy)]
pub struct TaskSettings<'a> {
    /// The unit's output level.
    pub output_level: Level,
    /// The bucket's max level (`num_levels − 1`): files upgraded there that may hold retracts
    /// are rewritten instead.
    pub max_level: Level,
    /// `compaction file size`: files below it are small.
    pub min_file_size: u64,
    /// `compaction.force-rewrite-all-files`: every file that would be upgraded is rewritten.
    pub force_rewrite_all: bool,
    /// Whether a file holds expired records (record-level expiry, compaction.md §16 D4); such a
    /// file is rewritten rather than upgraded. The manager passes one that is always false for
    /// the C++ flavor or without an expiry predicate.
    pub has_expired_records: &'a dyn Fn(&CompactionFile) -> bool,
    /// Decides each upgrade's [`UpgradeStrategy`].
    pub upgrade_rule: &'a UpgradeRule,
}

/// Plans a normal (merging) task over the unit's files.
pub fn plan_merge_tree_task(files: &[Arc<CompactionFile>], s: &TaskSettings<'_>) -> TaskPlan {
    let mut plan = TaskPlan::default();
    let mut candidate: Vec<Vec<SortedRun>> = Vec::new();
    for section in interval_partition(files) {
        if section.len() > 1 {
            candidate.push(section);
            continue;
        }
        for file in section.into_iter().flat_map(|run| run.files().to_vec()) {
            if file.file_size < s.min_file_size {
                candidate.push(vec![SortedRun::single(file)]);
            } else {
                flush_candidate(&mut candidate, &mut plan, s);
                upgrade(file, &mut plan, s);
            }
        }
    }
    flush_candidate(&mut candidate, &mut plan, s);
    plan
}

/// Plans a file-rewrite task (a forced full compaction of a single max-level run): each file
/// is rewritten alone.
pub fn plan_file_rewrite_task(files: &[Arc<CompactionFile>], output_level: Level) -> TaskPlan {
    TaskPlan {
        actions: files
            .iter()
            .map(|f| TaskAction::Rewrite {
                output_level,
                sections: vec![vec![SortedRun::single(f.clone())]],
                alone: None,
            })
            .collect(),
    }
}

/// A lone small file (one section, one run) is not worth a rewrite: it is upgraded.
fn flush_candidate(candidate: &mut Vec<Vec<SortedRun>>, plan: &mut TaskPlan, s: &TaskSettings<'_>) {
    if candidate.is_empty() {
        return;
    }
    if candidate.len() == 1 && candidate[0].len() == 1 {
        let run = candidate
            .pop()
            .and_then(|mut sec| sec.pop())
            .unwrap_or_default();
        for f in run.files() {
            upgrade(f.clone(), plan, s);
        }
        return;
    }
    plan.actions.push(TaskAction::Rewrite {
        output_level: s.output_level,
        sections: std::mem::take(candidate),
        alone: None,
    });
}

fn upgrade(file: Arc<CompactionFile>, plan: &mut TaskPlan, s: &TaskSettings<'_>) {
    let alone = if s.output_level == s.max_level && file.may_contain_deletes() {
        Some(RewriteAlone::DeletesAtMaxLevel)
    } else if s.force_rewrite_all {
        Some(RewriteAlone::ForceRewriteAll)
    } else if (s.has_expired_records)(&file) {
        Some(RewriteAlone::ExpiredRecords)
    } else {
        None
    };
    if let Some(alone) = alone {
        plan.actions.push(TaskAction::Rewrite {
            output_level: s.output_level,
            sections: vec![vec![SortedRun::single(file)]],
            alone: Some(alone),
        });
    } else if file.level != s.output_level {
        let strategy = s.upgrade_rule.strategy(
            file.level,
            file.delete_row_count,
            s.output_level,
            s.max_level,
        );
        plan.actions.push(TaskAction::Upgrade {
            file,
            to_level: s.output_level,
            strategy,
        });
    }
}

/// Sections serialise as lists (sections) of lists (runs) of file metadata, as
/// `CompactionFile`'s own serde form; deserialising re-checks each run's key order.
mod sections_serde {
    use super::*;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(sections: &[Vec<SortedRun>], s: S) -> Result<S::Ok, S::Error> {
        let files: Vec<Vec<Vec<&CompactionFile>>> = sections
            .iter()
            .map(|sec| {
                sec.iter()
                    .map(|run| run.files().iter().map(|f| f.as_ref()).collect())
                    .collect()
            })
            .collect();
        files.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<SortedRun>>, D::Error> {
        let files: Vec<Vec<Vec<CompactionFile>>> = Vec::deserialize(d)?;
        files
            .into_iter()
            .map(|sec| {
                sec.into_iter()
                    .map(|run| {
                        SortedRun::from_sorted(run.into_iter().map(Arc::new).collect())
                            .map_err(serde::de::Error::custom)
                    })
                    .collect()
            })
            .collect()
    }
}
