//! Interval partition and the merge-tree task plan (with its result applied to the levels).

use std::sync::Arc;

use serde_json::{json, Value};

use super::compact;
use super::json::{array_of, bool_of, file, i64_of, level_of, opt_u64, str_of, u64_of};
use crate::meta::{CompactionFile, Levels};
use crate::options::{CoreOptions, Flavor, TableKind};
use crate::plan::{
    interval_partition, CompactUnit, Idle, MergeTreeCompactManager, Reason, TaskAction,
};

pub(super) fn interval_partition_step(
    _: &Value,
    input: &Value,
    _: Flavor,
) -> std::result::Result<Value, String> {
    let files: Vec<Arc<CompactionFile>> = array_of(input, "intervals")?
        .iter()
        .enumerate()
        .map(|(i, iv)| {
            let a = iv
                .as_array()
                .filter(|a| a.len() == 2)
                .ok_or("interval must be [min, max]")?;
            let (min, max) = (
                a[0].as_i64().ok_or("bad min")?,
                a[1].as_i64().ok_or("bad max")?,
            );
            Ok(Arc::new(file(&format!("f{i}"), 0, 1, min, max, 0, 0)))
        })
        .collect::<std::result::Result<_, String>>()?;
    let sections = interval_partition(&files);
    Ok(json!(sections
        .iter()
        .map(|sec| sec
            .iter()
            .map(|run| run
                .files()
                .iter()
                .map(|f| json!([f.min_key.as_i64(), f.max_key.as_i64()]))
                .collect::<Vec<_>>())
            .collect::<Vec<_>>())
        .collect::<Vec<_>>()))
}

/// Sorts the runs inside each section (multiset comparison).
pub(super) fn normalize_sections(v: &Value) -> Value {
    match v.as_array() {
        Some(sections) => Value::Array(
            sections
                .iter()
                .map(|sec| {
                    let mut runs: Vec<String> = sec
                        .as_array()
                        .map_or(vec![], |r| r.iter().map(compact).collect());
                    runs.sort();
                    json!(runs)
                })
                .collect(),
        ),
        None => v.clone(),
    }
}

pub(super) fn normalize_actions(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(actions) = v.get_mut("actions").and_then(Value::as_array_mut) {
        for a in actions {
            if let Some(s) = a.get_mut("sections") {
                *s = normalize_sections(s);
            }
        }
    }
    v
}

pub(super) fn merge_tree_step(
    options: &Value,
    input: &Value,
    flavor: Flavor,
) -> std::result::Result<Value, String> {
    let mut files = Vec::new();
    for f in array_of(input, "files")? {
        let mut meta = file(
            str_of(f, "name")?,
            u64_of(f, "level")? as u32,
            u64_of(f, "size")?,
            i64_of(f, "min_key")?,
            i64_of(f, "max_key")?,
            i64_of(f, "min_seq")?,
            i64_of(f, "max_seq")?,
        );
        meta.delete_row_count = opt_u64(f, "delete_row_count");
        files.push(Arc::new(meta));
    }
    let mut o =
        CoreOptions::from_pairs(TableKind::PrimaryKey, flavor, []).map_err(|e| e.to_string())?;
    o.num_levels = u64_of(options, "num_levels")? as u32;
    o.compaction_file_size = u64_of(options, "compaction_file_size")?;
    o.force_rewrite_all_files = bool_of(options, "force_rewrite_all_files");
    o.deletion_vectors_enabled = bool_of(options, "dv_enabled");
    let mut manager = MergeTreeCompactManager::new(&o, files).map_err(|e| e.to_string())?;

    let unit_spec = input.get("unit").ok_or("missing 'unit'")?;
    let runs = manager.levels().level_sorted_runs();
    let unit = if bool_of(unit_spec, "full_to_max_level") {
        CompactUnit::from_runs(manager.levels().max_level(), &runs)
    } else {
        let n = (u64_of(unit_spec, "first_runs")? as usize).min(runs.len());
        CompactUnit::from_runs(level_of(unit_spec, "output_level")?, &runs[..n])
    };
    if MergeTreeCompactManager::filter_pointless(&unit).is_some() {
        return Ok(json!({ "submitted": false, "levels_after": levels_json(manager.levels()) }));
    }
    let decision = manager.submit(unit, Reason::Idle(Idle::Empty));
    let actions: Vec<Value> = decision
        .task
        .actions
        .iter()
        .map(|action| match action {
            TaskAction::Upgrade { file, to_level, .. } => {
                json!({"op": "upgrade", "file": file.file_name, "to_level": to_level.get()})
            }
            TaskAction::Rewrite { output_level, sections, .. } => json!({
                "op": "rewrite",
                "output_level": output_level.get(),
                "sections": sections.iter().map(|sec| sec.iter().map(|run| run.files().iter().map(|f| f.file_name.clone()).collect::<Vec<_>>()).collect::<Vec<_>>()).collect::<Vec<_>>(),
            }),
        })
        .collect();
    let (before, after) = decision.task.stand_in_result(|i| format!("compact-{i}"));
    manager.apply(&before, &after).map_err(|e| e.to_string())?;
    Ok(json!({
        "submitted": true,
        "drop_delete": decision.drop_delete,
        "actions": actions,
        "levels_after": levels_json(manager.levels()),
    }))
}

pub(super) fn levels_json(levels: &Levels) -> Value {
    json!(levels
        .level_sorted_runs()
        .iter()
        .flat_map(|r| r.files.iter().map(move |f| json!([
            r.level.get(),
            f.min_key.as_i64(),
            f.max_key.as_i64()
        ])))
        .collect::<Vec<_>>())
}
