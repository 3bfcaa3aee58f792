//! The built-in example: a primary-key bucket receiving flushes, planned after each one, then
//! the conformance vectors. It shows what the planner decides and why, with no input needed.

use std::sync::Arc;

use paimon_compact::meta::{DataFileMeta, Key, Level, Levels};
use paimon_compact::options::{CoreOptions, Flavor, TableKind};
use paimon_compact::plan::{
    human_bytes, BucketDecision, MergeTreeCompactManager, PlanContext, Reason,
};

use paimon_compact_host::PlanSummary;

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

/// One line for a decision from either engine.
pub fn describe_summary(s: &PlanSummary) -> String {
    let mut out = s.reason.clone();
    if let Some(level) = s.output_level {
        out.push_str(&format!(
            " → output level {level} ({})",
            count(s.files.len(), "file")
        ));
    }
    for a in &s.actions {
        out.push_str(&format!("\n  {a}"));
    }
    if let Some((runs, stop, true, _)) = s.write_stall {
        out.push_str(&format!(
            "\nWRITE STALL: {runs} sorted runs > stop trigger {stop}"
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

pub fn run(json: bool) -> Result<(), Box<dyn std::error::Error>> {
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
        let flushed = Arc::new(DataFileMeta::new(
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
        println!("== Conformance vectors (Java HEAD, then paimon-cpp)");
        println!(
            "{}",
            paimon_compact::conformance::run_vectors(VECTORS, Flavor::Java)?
        );
        println!(
            "{}",
            paimon_compact::conformance::run_vectors(VECTORS, Flavor::Cpp)?
        );
    }
    Ok(())
}
