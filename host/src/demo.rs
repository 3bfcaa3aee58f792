//! The built-in example: a primary-key bucket receiving flushes, planned after each one, then
//! the conformance vectors. It shows what the planner decides and why, with no input needed.

use std::sync::Arc;

use paimon_compact::meta::{CompactionFile, Key, Level, Levels};
use paimon_compact::options::{CoreOptions, Flavor, TableKind};
use paimon_compact::plan::{
    human_bytes, BucketDecision, MergeTreeCompactManager, PlanContext, Reason, WriteStall,
};

use paimon_compact::storage::Storage;
use paimon_compact_host::local_storage::LocalDirStorage;
use paimon_compact_host::{clock, Compactor, Decision, Now, TableJob};
use std::path::PathBuf;

const VECTORS: &str = include_str!("../../tests/vectors/compaction-vectors.json");

/// One line for a decision.
pub fn describe(d: &BucketDecision) -> String {
    match d {
        BucketDecision::MergeTree {
            decision,
            write_stall,
            ..
        } => {
            let mut s = decision.reason.to_string();
            if let Some(unit) = &decision.unit {
                s.push_str(&format!(
                    " → output level {} ({}: {}, {}{})",
                    unit.output_level,
                    count(unit.files.len(), "file"),
                    count(decision.task.rewrites(), "rewrite"),
                    count(decision.task.upgrades(), "upgrade"),
                    if decision.drop_delete {
                        ", drop deletes"
                    } else {
                        ""
                    }
                ));
            }
            if write_stall.wait_for_latest_compaction {
                s.push_str(&format!(
                    "; WRITE STALL: {} sorted runs > stop trigger {}",
                    write_stall.sorted_runs, write_stall.stop_trigger
                ));
            }
            s
        }
        BucketDecision::Append { decision } => {
            let mut s = decision.reason.to_string();
            if !decision.files.is_empty() {
                s.push_str(&format!(" → rewrite {} files", decision.files.len()));
            }
            s
        }
    }
}

/// A bucket decision as `plan <request> --json` prints it: the actions and the reason as
/// text, the rule beside them (a CLI format; the Node tests compare against it).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DecisionSummary {
    pub files: Vec<String>,
    pub output_level: Option<u32>,
    pub drop_delete: bool,
    /// `upgrade <file> -> L<n>` or `rewrite -> L<n> <sections>`.
    pub actions: Vec<String>,
    pub released: Vec<String>,
    pub rule: String,
    pub reason: String,
    pub write_stall: Option<WriteStall>,
}

impl From<&Decision> for DecisionSummary {
    fn from(d: &Decision) -> Self {
        DecisionSummary {
            files: d.files.clone(),
            output_level: d.output_level,
            drop_delete: d.drop_delete,
            actions: d.actions.iter().map(ToString::to_string).collect(),
            released: d.released.clone(),
            rule: d.reason.rule.clone(),
            reason: d.reason.text.clone(),
            write_stall: d.write_stall,
        }
    }
}

/// One line for a decision from either engine.
pub fn describe_summary(s: &Decision) -> String {
    let mut out = s.reason.text.clone();
    if let Some(level) = s.output_level {
        out.push_str(&format!(
            " → output level {level} ({})",
            count(s.files.len(), "file")
        ));
    }
    for a in &s.actions {
        out.push_str(&format!("\n  {a}"));
    }
    if let Some(w) = s.write_stall.filter(|w| w.wait_for_latest_compaction) {
        out.push_str(&format!(
            "\nWRITE STALL: {} sorted runs > stop trigger {}",
            w.sorted_runs, w.stop_trigger
        ));
    }
    out
}

fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn levels_line(levels: &Levels) -> String {
    levels
        .level_sorted_runs()
        .iter()
        .map(|r| format!("L{}:{}", r.level, human_bytes(r.size)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The README's main job: demo tables written, planned, compacted and planned again through
/// the chosen engine; then the planner walk-through and the conformance vectors.
pub fn run(
    compactor: &Compactor,
    dir: Option<PathBuf>,
    compact: bool,
    json: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = match dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!(
            "paimon-compact-demo-{}-{}",
            std::process::id(),
            clock::now().0
        )),
    };
    std::fs::create_dir_all(&dir)?;
    let storage: Arc<dyn Storage> = Arc::new(LocalDirStorage::new(&dir));
    let tables = compactor.write_demo_tables(storage.clone(), "", clock::now().0, 42)?;
    if !compact {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "dir": dir, "tables": tables }))?
        );
        return Ok(());
    }
    if !json {
        println!(
            "== Demo tables written by paimon-compact in Paimon's format under {}",
            dir.display()
        );
        println!(
            "   (engine: {}; inspect them with pypaimon, or run `paimon-compact plan <table>`)\n",
            compactor.name()
        );
    }
    let mut results = Vec::new();
    for table in &tables {
        let before = compactor.plan_table(storage.clone(), table, &TableJob::now())?;
        let report = compactor.compact_table(storage.clone(), table, &TableJob::now(), None)?;
        let after = compactor.plan_table(storage.clone(), table, &TableJob::now())?;
        if json {
            results.push(serde_json::json!({ "table": table, "plan": before, "report": report, "plan_after": after }));
        } else {
            println!("-- plan\n{}", crate::table::describe_plan(&before));
            println!("-- compact\n{}", crate::table::describe_job(&report));
            println!("-- plan after\n{}", crate::table::describe_plan(&after));
        }
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "dir": dir, "tables": results }))?
        );
        return Ok(());
    }
    planner_walkthrough(false)?;
    println!(
        "== Conformance vectors through the {} engine (Java HEAD, then paimon-cpp)",
        compactor.name()
    );
    println!("{}", compactor.run_conformance(VECTORS, Flavor::Java)?);
    println!("{}", compactor.run_conformance(VECTORS, Flavor::Cpp)?);
    Ok(())
}

/// The planner alone: a primary-key bucket receiving flushes, planned after each one.
fn planner_walkthrough(json: bool) -> Result<(), Box<dyn std::error::Error>> {
    let options = CoreOptions::from_pairs(
        TableKind::PrimaryKey,
        Flavor::Java,
        [
            ("num-sorted-run.compaction-trigger", "4"),
            ("target-file-size", "64 mb"),
        ],
    )?;
    println!("== A primary-key bucket: 16 flushes of ~8 MB, planned after each (trigger 4, stop trigger 7)");
    let mut manager = MergeTreeCompactManager::new(&options, Vec::new())?;
    let ctx = PlanContext::default();
    let mut decisions = Vec::new();
    for i in 0..16i64 {
        let size = (8 << 20) + (i as u64 % 3) * (512 << 10);
        let flushed = Arc::new(CompactionFile::new(
            format!("data-flush-{i}.parquet"),
            Level::ZERO,
            size,
            Key::from_i64(i * 10),
            Key::from_i64(i * 10 + 5_000),
            i * 1000,
            i * 1000 + 999,
        ));
        manager.add_new_file(flushed)?;
        let before = levels_line(manager.levels());
        let decision = manager.trigger(false, &ctx)?;
        let shown = BucketDecision::MergeTree {
            decision: decision.clone(),
            write_stall: manager.write_stall(),
            runs: manager.levels().run_stats(),
            state: Default::default(),
        };
        if !json {
            println!(
                "flush {:>2}: [{before}]\n          {}",
                i + 1,
                describe(&shown)
            );
        }
        // Execute the plan with a stand-in rewriter: each rewrite becomes one file.
        let (old, new) = decision
            .task
            .stand_in_result(|n| format!("data-compact-{i}-{n}.parquet"));
        manager.apply(&old, &new)?;
        decisions.push(shown);
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&decisions)?);
    } else {
        println!("after:    [{}]", levels_line(manager.levels()));
        let fired = decisions
            .iter()
            .filter(|d| !matches!(d.reason(), Reason::Idle(_)))
            .count();
        println!("{fired} of 16 flushes triggered a compaction.\n");
    }
    Ok(())
}
