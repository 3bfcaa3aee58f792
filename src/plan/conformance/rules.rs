//! The stateless rules: off-peak hours, level-0 order, the full-compaction pick, drop-delete,
//! write stalls, lookup upgrade strategy and option parsing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{json, Value};

use super::json::{array_of, bool_of, file, i64_of, level_of, opt_u64, str_of, u64_of};
use crate::meta::{CompactionFile, Level, LevelSortedRun, Levels};
use crate::options::{CoreOptions, Flavor, MergeEngine, TableKind};
use crate::plan::{
    self, lookup_upgrade_strategy, pick_full_compaction, LookupUpgradeFacts, OffPeakHours,
};

pub(super) fn off_peak_step(
    options: &Value,
    input: &Value,
    _: Flavor,
) -> std::result::Result<Value, String> {
    let o = OffPeakHours::create(
        i64_of(options, "start_hour")? as i32,
        i64_of(options, "end_hour")? as i32,
        u64_of(options, "ratio")? as u32,
    );
    let hour = u64_of(input, "hour")? as u8;
    Ok(o.map_or(Value::Null, |o| json!(o.current_ratio(hour))))
}

pub(super) fn level0_order_step(
    _: &Value,
    input: &Value,
    _: Flavor,
) -> std::result::Result<Value, String> {
    let mut files = Vec::new();
    for f in array_of(input, "files")? {
        let mut meta = file(
            str_of(f, "name")?,
            0,
            1,
            0,
            0,
            i64_of(f, "min_seq")?,
            i64_of(f, "max_seq")?,
        );
        meta.creation_time_ms = i64_of(f, "creation_ms")?;
        files.push(Arc::new(meta));
    }
    let levels = Levels::new(2, files).map_err(|e| e.to_string())?;
    Ok(json!(levels
        .level0()
        .map(|f| f.file_name.clone())
        .collect::<Vec<_>>()))
}

pub(super) fn pick_full_step(
    options: &Value,
    input: &Value,
    _: Flavor,
) -> std::result::Result<Value, String> {
    let num_levels = u64_of(input, "num_levels")? as u32;
    let mut expired = BTreeSet::new();
    let mut run_files: Vec<(Level, Vec<Arc<CompactionFile>>)> = Vec::new();
    for run in array_of(input, "runs")? {
        let level = level_of(run, "level")?;
        let mut files = Vec::new();
        for (i, f) in array_of(run, "files")?.iter().enumerate() {
            let name = str_of(f, "name")?;
            let mut meta = file(
                name,
                level.get(),
                u64_of(f, "size")?,
                2 * i as i64,
                2 * i as i64 + 1,
                0,
                0,
            );
            meta.has_deletion_vector = bool_of(f, "has_dv");
            if bool_of(f, "expired") {
                expired.insert(name.to_string());
            }
            files.push(Arc::new(meta));
        }
        run_files.push((level, files));
    }
    let runs: Vec<LevelSortedRun<'_>> = run_files
        .iter()
        .map(|(level, files)| LevelSortedRun {
            level: *level,
            files,
            size: files.iter().map(|f| f.file_size).sum(),
        })
        .collect();
    let (unit, _) = pick_full_compaction(
        num_levels,
        &runs,
        bool_of(options, "force_rewrite_all_files"),
        &|f| expired.contains(&f.file_name),
    );
    Ok(unit.map_or(Value::Null, |u| {
        json!({
            "output_level": u.output_level.get(),
            "files": u.files.iter().map(|f| f.file_name.clone()).collect::<Vec<_>>(),
            "file_rewrite": u.file_rewrite,
        })
    }))
}

pub(super) fn drop_delete_step(
    options: &Value,
    input: &Value,
    _: Flavor,
) -> std::result::Result<Value, String> {
    let highest = i64_of(input, "non_empty_highest_level")?;
    let highest = (highest >= 0).then(|| Level::new(highest as u32));
    Ok(json!(plan::drop_delete(
        level_of(input, "output_level")?,
        highest,
        bool_of(options, "dv_enabled"),
        bool_of(options, "force_keep_delete"),
    )))
}

pub(super) fn write_stall_step(
    options: &Value,
    input: &Value,
    _: Flavor,
) -> std::result::Result<Value, String> {
    let s = plan::write_stall(
        u64_of(input, "sorted_runs")? as usize,
        u64_of(options, "num_sorted_run_stop_trigger")? as usize,
    );
    Ok(json!({
        "wait_for_latest_compaction": s.wait_for_latest_compaction,
        "wait_for_preparing_checkpoint": s.wait_for_preparing_checkpoint,
    }))
}

pub(super) fn compact_not_completed_step(
    _: &Value,
    input: &Value,
    _: Flavor,
) -> std::result::Result<Value, String> {
    Ok(json!(plan::compact_not_completed(
        bool_of(input, "need_lookup"),
        u64_of(input, "level0_files")? as usize,
        bool_of(input, "task_running"),
    )))
}

pub(super) fn lookup_upgrade_step(
    _: &Value,
    input: &Value,
    _: Flavor,
) -> std::result::Result<Value, String> {
    let engine = match str_of(input, "merge_engine")? {
        "deduplicate" => MergeEngine::Deduplicate,
        "partial-update" | "partial_update" => MergeEngine::PartialUpdate,
        "aggregation" | "aggregate" => MergeEngine::Aggregation,
        "first-row" | "first_row" => MergeEngine::FirstRow,
        other => return Err(format!("unknown merge engine '{other}'")),
    };
    let facts = LookupUpgradeFacts {
        file_level: level_of(input, "file_level")?,
        output_level: level_of(input, "output_level")?,
        max_level: level_of(input, "max_level")?,
        dv_enabled: bool_of(input, "dv_enabled"),
        delete_row_count: opt_u64(input, "delete_row_count"),
        merge_engine: engine,
        has_sequence_field: bool_of(input, "has_sequence_field"),
        level0_format: str_of(input, "level0_format")?,
        output_format: str_of(input, "output_format")?,
        vector_index: bool_of(input, "vector_index"),
    };
    serde_json::to_value(lookup_upgrade_strategy(&facts)).map_err(|e| e.to_string())
}

pub(super) fn options_step(
    _: &Value,
    input: &Value,
    flavor: Flavor,
) -> std::result::Result<Value, String> {
    let kind = match str_of(input, "table")? {
        "pk" => TableKind::PrimaryKey,
        "append" => TableKind::Append,
        other => return Err(format!("unknown table kind '{other}'")),
    };
    let raw: BTreeMap<String, String> = input
        .get("options")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_string),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let o = CoreOptions::parse_with(kind, flavor, &raw).map_err(|e| e.to_string())?;
    // Every derived value the planner uses; the vectors compare the keys they name.
    Ok(crate::plan::explain_options(&o))
}
