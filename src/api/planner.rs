//! The `planner` interface: one bucket's decision, the options as the planner reads them, and
//! the conformance vectors. Pure: no storage, no clock.

use std::collections::BTreeMap;
use std::fmt;

use super::{to_json, Options};
use crate::meta::CompactionFile;
use crate::options::{CoreOptions, Flavor, TableKind};
use crate::plan::conformance::ConformanceReport;
use crate::plan::{
    self, BucketDecision, BucketPlanRequest, PlanContext, PlannerRole, RewriteAlone, StrategyState,
    WriteStall,
};
use crate::Result;

/// One bucket to plan (the WIT `bucket-request`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BucketRequest {
    /// Whether the bucket is an LSM tree (primary key) or a queue of files (append): picks
    /// the strategy (compaction.md §3, §13).
    pub table_kind: TableKind,
    /// Which implementation's decisions to reproduce where Java and C++ differ
    /// (compaction.md §16).
    pub flavor: Flavor,
    /// The table's options, by Paimon key (compaction.md §2); a malformed one fails the call.
    pub options: Options,
    /// The bucket's files. The planner reads neither `file_source` nor anything the WIT
    /// `data-file` leaves out.
    pub files: Vec<CompactionFile>,
    /// A forced full compaction instead of the automatic pick.
    pub full: bool,
    /// The decision's clock: epoch milliseconds and local hour (0-23), from the caller.
    pub now_ms: i64,
    /// Hour of the caller's local wall clock (0–23), for the off-peak window
    /// (compaction.md §4.7).
    pub local_hour: u8,
    /// What the last decision returned; `None` for a freshly opened bucket.
    pub state: Option<StrategyState>,
    /// Whose decision to model.
    pub role: PlannerRole,
}

impl From<&BucketPlanRequest> for BucketRequest {
    /// The planner's own request as the WIT carries it. `has_blob_column` is not part of it:
    /// both engines plan a bucket as one without a blob column (the table layer, which reads
    /// the schema, refuses blob tables).
    fn from(r: &BucketPlanRequest) -> Self {
        BucketRequest {
            table_kind: r.table_kind,
            flavor: r.flavor,
            options: r
                .options
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            files: r.files.clone(),
            full: r.full,
            now_ms: r.context.now_ms,
            local_hour: r.context.local_hour,
            state: r.state,
            role: r.role,
        }
    }
}

/// Why the planner decided what it did (the WIT `reason`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Reason {
    /// The rule: `size-amplification`, `size-ratio`, `nothing-to-do`, ...
    pub rule: String,
    /// The rule and its numbers in one sentence.
    pub text: String,
    /// The same numbers as a JSON object, for programs.
    pub details_json: String,
}

/// Merge files into new files at `output_level` (the WIT `rewrite-action`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RewriteAction {
    /// LSM level the merged files are written at.
    pub output_level: u32,
    /// Sections in key order, each a list of sorted runs, each a list of file names.
    pub sections: Vec<Vec<Vec<String>>>,
    /// Why one file is rewritten alone: `deletes-at-max-level`, `force-rewrite-all`,
    /// `expired-records`.
    pub alone: Option<String>,
}

/// One step of a compaction task (the WIT `task-action`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum TaskAction {
    /// Record the file at a higher level; no data moves.
    Upgrade {
        /// Name of the file, as in the request's `files`.
        file: String,
        /// Level the file is recorded at afterwards (higher than its current one).
        to_level: u32,
    },
    /// Merge the listed runs into new files (compaction.md §9).
    Rewrite(RewriteAction),
}

impl fmt::Display for TaskAction {
    /// `upgrade <file> -> L<n>`, or `rewrite -> L<n> [a,b][c] | [d]` (runs in brackets,
    /// sections separated by `|`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskAction::Upgrade { file, to_level } => write!(f, "upgrade {file} -> L{to_level}"),
            TaskAction::Rewrite(r) => {
                let sections: Vec<String> = r
                    .sections
                    .iter()
                    .map(|sec| {
                        sec.iter()
                            .map(|run| format!("[{}]", run.join(",")))
                            .collect::<String>()
                    })
                    .collect();
                write!(f, "rewrite -> L{} {}", r.output_level, sections.join(" | "))
            }
        }
    }
}

/// The decision for one bucket (the WIT `decision`), the same whichever engine made it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Decision {
    /// Files to compact (empty: nothing to do).
    pub files: Vec<String>,
    /// Their output level.
    pub output_level: Option<u32>,
    /// Retract records may be dropped in the output.
    pub drop_delete: bool,
    /// What the task does, in order (primary-key tables).
    pub actions: Vec<TaskAction>,
    /// Files an append bucket stops considering (large enough already).
    pub released: Vec<String>,
    /// Which rule decided, in words and numbers; set for "nothing to do" as well.
    pub reason: Reason,
    /// Primary-key tables only.
    pub write_stall: Option<WriteStall>,
    /// Primary-key tables only: pass it back with the next request.
    pub state: Option<StrategyState>,
}

/// Plans one bucket: Paimon's decision, with its reason.
///
/// ```rust
/// use paimon_compact::api::{plan_bucket, BucketRequest};
/// use paimon_compact::meta::{CompactionFile, Key, Level};
/// use paimon_compact::options::{Flavor, TableKind};
///
/// // Five small level-0 files: the default trigger (5 sorted runs) compacts them.
/// let files = (0..5)
///     .map(|i| CompactionFile::new(format!("f{i}"), Level::ZERO, 100, Key::from_i64(i), Key::from_i64(i + 1), i, i))
///     .collect();
/// let decision = plan_bucket(&BucketRequest {
///     table_kind: TableKind::PrimaryKey,
///     flavor: Flavor::Java,
///     options: vec![("bucket".into(), "1".into())],
///     files,
///     full: false,
///     now_ms: 1_700_000_000_000,
///     local_hour: 3,
///     state: None,
///     role: Default::default(),
/// })?;
/// assert_eq!(decision.files.len(), 5);
/// println!("{}: {}", decision.reason.rule, decision.reason.text);
/// # Ok::<(), paimon_compact::Error>(())
/// ```
pub fn plan_bucket(request: &BucketRequest) -> Result<Decision> {
    let req = BucketPlanRequest {
        table_kind: request.table_kind,
        flavor: request.flavor,
        options: options_map(&request.options),
        files: request.files.clone(),
        full: request.full,
        context: PlanContext::at(request.now_ms, request.local_hour),
        state: request.state,
        has_blob_column: false,
        role: request.role,
    };
    decision(plan::plan_bucket(&req)?)
}

/// The options as the planner understands them (defaults and derivations applied); an error
/// names the first bad key.
pub fn explain_options(
    kind: TableKind,
    flavor: Flavor,
    options: &[(String, String)],
) -> Result<serde_json::Value> {
    let parsed = CoreOptions::parse_with(kind, flavor, &options_map(options))?;
    Ok(plan::explain_options(&parsed))
}

/// Runs a conformance vectors file (JSON text) through the planner.
pub fn run_conformance(vectors_json: &str, flavor: Flavor) -> Result<ConformanceReport> {
    crate::plan::conformance::run_vectors(vectors_json, flavor)
}

pub(super) fn options_map(options: &[(String, String)]) -> BTreeMap<String, String> {
    options.iter().cloned().collect()
}

fn names(files: &[std::sync::Arc<CompactionFile>]) -> Vec<String> {
    files.iter().map(|f| f.file_name.clone()).collect()
}

fn reason(r: &plan::Reason) -> Result<Reason> {
    Ok(Reason {
        rule: r.rule().to_string(),
        text: r.to_string(),
        details_json: to_json(r)?,
    })
}

/// The WIT name of a reason to rewrite a file alone (its serde name).
fn alone_name(a: RewriteAlone) -> &'static str {
    match a {
        RewriteAlone::DeletesAtMaxLevel => "deletes-at-max-level",
        RewriteAlone::ForceRewriteAll => "force-rewrite-all",
        RewriteAlone::ExpiredRecords => "expired-records",
    }
}

fn action(a: &plan::TaskAction) -> TaskAction {
    match a {
        plan::TaskAction::Upgrade { file, to_level, .. } => TaskAction::Upgrade {
            file: file.file_name.clone(),
            to_level: to_level.get(),
        },
        plan::TaskAction::Rewrite {
            output_level,
            sections,
            alone,
        } => TaskAction::Rewrite(RewriteAction {
            output_level: output_level.get(),
            sections: sections
                .iter()
                .map(|sec| sec.iter().map(|run| names(run.files())).collect())
                .collect(),
            alone: alone.map(|a| alone_name(a).to_string()),
        }),
    }
}

/// The planner's decision in the WIT's shape: the one conversion both engines use.
fn decision(d: BucketDecision) -> Result<Decision> {
    Ok(match d {
        BucketDecision::MergeTree {
            decision,
            write_stall,
            state,
            ..
        } => Decision {
            files: decision
                .unit
                .as_ref()
                .map_or(Vec::new(), |u| names(&u.files)),
            output_level: decision.unit.as_ref().map(|u| u.output_level.get()),
            drop_delete: decision.drop_delete,
            actions: decision.task.actions.iter().map(action).collect(),
            released: Vec::new(),
            reason: reason(&decision.reason)?,
            write_stall: Some(write_stall),
            state: Some(state),
        },
        BucketDecision::Append { decision } => Decision {
            files: names(&decision.files),
            output_level: (!decision.files.is_empty()).then_some(0),
            drop_delete: false,
            actions: Vec::new(),
            released: names(&decision.released),
            reason: reason(&decision.reason)?,
            write_stall: None,
            state: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alone_names_are_the_serde_names() {
        for a in [
            RewriteAlone::DeletesAtMaxLevel,
            RewriteAlone::ForceRewriteAll,
            RewriteAlone::ExpiredRecords,
        ] {
            assert_eq!(
                serde_json::to_value(a).unwrap(),
                serde_json::Value::from(alone_name(a))
            );
        }
    }

    #[test]
    fn actions_read_as_one_line_each() {
        let upgrade = TaskAction::Upgrade {
            file: "a".into(),
            to_level: 2,
        };
        assert_eq!(upgrade.to_string(), "upgrade a -> L2");
        let rewrite = TaskAction::Rewrite(RewriteAction {
            output_level: 3,
            sections: vec![
                vec![vec!["a".into(), "b".into()], vec!["c".into()]],
                vec![vec!["d".into()]],
            ],
            alone: None,
        });
        assert_eq!(rewrite.to_string(), "rewrite -> L3 [a,b][c] | [d]");
    }
}
