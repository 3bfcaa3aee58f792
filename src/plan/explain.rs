//! The options as the planner uses them: every value a decision depends on, after Paimon's
//! defaults and derivations, in one JSON document (`explain-options`, and the conformance
//! vectors' `options` steps). The planner reads these same structs, so what this reports is
//! what it decides with, not a second derivation that could drift.

use serde_json::{json, Value};

use super::{CompactStrategy, CompactionMode};
use crate::options::{CoreOptions, TableKind};

/// The planner's view of `options` (see the module documentation).
pub fn explain_options(options: &CoreOptions) -> Value {
    let strategy = CompactStrategy::for_options(options, &[]);
    let universal = strategy.universal();
    let (strategy_name, gentle_interval) = match &strategy {
        CompactStrategy::Universal(_) => ("universal", None),
        CompactStrategy::ForceUpLevel0(f) => match f.max_interval {
            None => ("force-up-level-0 (radical)", None),
            Some(n) => ("force-up-level-0 (gentle)", Some(n)),
        },
    };
    let mode = super::route_job(options, false).mode();
    json!({
        "table_kind": options.table_kind,
        "flavor": options.flavor,
        "routing": {
            "dedicated_job": mode.map(mode_name),
            "writer_skips_compaction": options.write_only,
        },
        "target_file_size": options.target_file_size,
        "compaction_file_size": options.compaction_file_size,
        "compaction_min_file_num": options.min_file_num,
        "compaction_file_num_limit": options.file_num_limit,
        "compaction_delete_ratio_threshold": options.delete_ratio_threshold,
        "open_file_cost": options.open_file_cost,
        "num_levels": options.num_levels,
        "max_level": options.num_levels.saturating_sub(1),
        "num_sorted_run_compaction_trigger": options.num_sorted_run_compaction_trigger,
        "num_sorted_run_stop_trigger": options.num_sorted_run_stop_trigger,
        "lookup_compact_max_interval": options.lookup_compact_max_interval,
        "primary_key": (options.table_kind == TableKind::PrimaryKey).then(|| json!({
            "strategy": strategy_name,
            "gentle_interval": gentle_interval,
            "needs_lookup": options.need_lookup(),
            "universal": {
                "max_size_amplification_percent": universal.max_size_amp,
                "size_ratio_percent": universal.size_ratio,
                "sorted_run_trigger": universal.trigger,
                "off_peak": universal.off_peak,
                "early_full": universal.early_full.as_ref().map(|e| json!({
                    "interval_ms": e.interval_ms,
                    "total_size_threshold": e.total_size_threshold,
                    "incremental_size_threshold": e.incremental_size_threshold,
                })),
            },
            "force_rewrite_all_files": options.force_rewrite_all_files,
            "merge_engine": options.merge_engine,
            "changelog_producer": options.changelog_producer,
            "deletion_vectors": options.deletion_vectors_enabled,
        })),
        "options": options,
    })
}

fn mode_name(m: CompactionMode) -> &'static str {
    match m {
        CompactionMode::MergeTree => "merge-tree",
        CompactionMode::BucketedAppend => "bucketed-append",
        CompactionMode::UnawareBucketCoordinator => "unaware-bucket-coordinator",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Flavor;

    #[test]
    fn universal_values_are_reported_as_the_planner_uses_them() {
        let o = CoreOptions::from_pairs(
            TableKind::PrimaryKey,
            Flavor::Java,
            [
                ("compaction.max-size-amplification-percent", "150"),
                ("compaction.size-ratio", "3"),
                ("num-sorted-run.compaction-trigger", "4"),
                ("write-only", "true"),
            ],
        )
        .unwrap();
        let e = explain_options(&o);
        let u = &e["primary_key"]["universal"];
        assert_eq!(u["max_size_amplification_percent"], 150);
        assert_eq!(u["size_ratio_percent"], 3);
        assert_eq!(u["sorted_run_trigger"], 4);
        assert_eq!(e["num_sorted_run_stop_trigger"], 7);
        assert_eq!(e["num_levels"], 5);
        assert_eq!(e["routing"]["dedicated_job"], "merge-tree");
        assert_eq!(e["routing"]["writer_skips_compaction"], true);
        assert_eq!(e["primary_key"]["strategy"], "universal");
        let lookup = CoreOptions::from_pairs(
            TableKind::PrimaryKey,
            Flavor::Java,
            [
                ("changelog-producer", "lookup"),
                ("lookup-compact", "gentle"),
            ],
        )
        .unwrap();
        let e = explain_options(&lookup);
        assert_eq!(e["primary_key"]["strategy"], "force-up-level-0 (gentle)");
        assert_eq!(e["primary_key"]["gentle_interval"], 10);
    }
}
