//! Append tables: the bucketed append picks and the unaware-bucket coordinator.

use std::sync::Arc;

use serde_json::{json, Value};

use super::json::{array_of, bool_of, file, i64_of, opt_u64, str_of, u64_of};
use super::StepRunner;
use crate::meta::CompactionFile;
use crate::options::{CoreOptions, Flavor, TableKind};
use crate::plan::{
    full_compact_task, should_requeue_last, AppendCompactCoordinator, BucketedAppendCompactManager,
    CoordinatorFile, DeletionFileRef, Idle, Reason,
};

pub(super) fn append_options(
    options: &Value,
    flavor: Flavor,
) -> std::result::Result<CoreOptions, String> {
    let mut o = CoreOptions::from_pairs(TableKind::Append, flavor, [("bucket", "1")])
        .map_err(|e| e.to_string())?;
    if let Some(n) = opt_u64(options, "min_file_num") {
        o.min_file_num = n as usize;
    }
    if let Some(n) = opt_u64(options, "target_file_size") {
        o.target_file_size = n;
    }
    if let Some(n) = opt_u64(options, "compaction_file_size") {
        o.compaction_file_size = n;
    }
    if let Some(n) = opt_u64(options, "open_file_cost") {
        o.open_file_cost = n;
    }
    if let Some(x) = options
        .get("delete_ratio_threshold")
        .and_then(Value::as_f64)
    {
        o.delete_ratio_threshold = x;
    }
    o.deletion_vectors_enabled = bool_of(options, "dv_enabled");
    o.force_rewrite_all_files = bool_of(options, "force_rewrite_all_files");
    Ok(o)
}

pub(super) fn names(files: &[Arc<CompactionFile>]) -> Value {
    json!(files
        .iter()
        .map(|f| f.file_name.clone())
        .collect::<Vec<_>>())
}

pub(super) fn append_pick_step(
    options: &Value,
    input: &Value,
    flavor: Flavor,
) -> std::result::Result<Value, String> {
    let o = append_options(options, flavor)?;
    let mut files = Vec::new();
    for q in array_of(input, "queue")? {
        let a = q
            .as_array()
            .filter(|a| a.len() == 3)
            .ok_or("queue entry must be [min_seq, max_seq, size]")?;
        let (min, max, size) = (
            a[0].as_i64().ok_or("bad min_seq")?,
            a[1].as_i64().ok_or("bad max_seq")?,
            a[2].as_u64().ok_or("bad size")?,
        );
        files.push(Arc::new(file(
            &format!("{min}-{max}"),
            0,
            size,
            0,
            0,
            min,
            max,
        )));
    }
    let mut m = BucketedAppendCompactManager::new(&o, files);
    let d = m.pick_auto();
    let queue: Vec<_> = m.queue().cloned().collect();
    Ok(json!({
        "picked": if d.files.is_empty() { Value::Null } else { names(&d.files) },
        "queue_after": names(&queue),
    }))
}

pub(super) fn append_full_step(
    options: &Value,
    input: &Value,
    flavor: Flavor,
) -> std::result::Result<Value, String> {
    let o = append_options(options, flavor)?;
    let mut files = Vec::new();
    for f in array_of(input, "files")? {
        let mut meta = file(
            str_of(f, "name")?,
            0,
            u64_of(f, "size")?,
            0,
            0,
            i64_of(f, "min_seq")?,
            i64_of(f, "max_seq")?,
        );
        meta.has_deletion_vector = bool_of(f, "has_dv");
        files.push(Arc::new(meta));
    }
    match str_of(input, "entry")? {
        "task" => {
            let d = full_compact_task(
                files,
                o.compaction_file_size,
                o.deletion_vectors_enabled,
                o.force_rewrite_all_files,
            );
            Ok(json!({ "compact_before": names(&d.files) }))
        }
        "trigger" => {
            let mut m = BucketedAppendCompactManager::new(&o, files);
            let d = m.trigger_full().map_err(|e| e.to_string())?;
            let submitted = !matches!(d.reason, Reason::Idle(Idle::AppendFullTooFew { .. }));
            Ok(json!({
                "submitted": submitted,
                "compact_before": if submitted { names(&d.files) } else { Value::Null },
            }))
        }
        other => Err(format!("unknown entry '{other}'")),
    }
}

pub(super) fn append_requeue_step(
    options: &Value,
    input: &Value,
    _: Flavor,
) -> std::result::Result<Value, String> {
    let cfs = u64_of(options, "compaction_file_size")?;
    let sizes = array_of(input, "after_sizes")?;
    let last = sizes.last().and_then(Value::as_u64);
    Ok(json!({ "requeue_last": last.is_some_and(|s| should_requeue_last(s, cfs)) }))
}

pub(super) struct CoordinatorRunner {
    coordinator: AppendCompactCoordinator,
    next_file: usize,
}

pub(super) const PARTITION: &str = "p";

impl CoordinatorRunner {
    pub(super) fn new(options: &Value, flavor: Flavor) -> std::result::Result<Self, String> {
        let mut o = append_options(options, flavor)?;
        o.bucket = -1;
        Ok(CoordinatorRunner {
            coordinator: AppendCompactCoordinator::new(&o).map_err(|e| e.to_string())?,
            next_file: 0,
        })
    }
}

impl StepRunner for CoordinatorRunner {
    fn step(&mut self, input: &Value, _flavor: Flavor) -> std::result::Result<Value, String> {
        match str_of(input, "action")? {
            "notify" => {
                let mut batch = Vec::new();
                for group in array_of(input, "files")? {
                    for _ in 0..u64_of(group, "count")? {
                        let name = format!("data-{}", self.next_file);
                        self.next_file += 1;
                        let mut meta = file(&name, 0, u64_of(group, "size")?, 0, 0, 0, 0);
                        meta.row_count = u64_of(group, "row_count")?;
                        let deletion_file = match group.get("dv") {
                            Some(dv) => {
                                let idx = str_of(dv, "index_file")?;
                                Some(DeletionFileRef {
                                    index_file: if idx == "<unique>" {
                                        format!("index-{name}")
                                    } else {
                                        idx.to_string()
                                    },
                                    cardinality: opt_u64(dv, "cardinality"),
                                })
                            }
                            None => None,
                        };
                        batch.push(CoordinatorFile {
                            file: Arc::new(meta),
                            deletion_file,
                        });
                    }
                }
                self.coordinator.notify(PARTITION, batch);
                Ok(Value::Null)
            }
            "plan" => {
                let tasks = self.coordinator.plan();
                let mut out = json!({
                    "tasks": tasks.len(),
                    "task_file_counts": tasks.iter().map(|t| t.files.len()).collect::<Vec<_>>(),
                });
                self.state_into(&mut out);
                Ok(out)
            }
            "check" => {
                let mut out = json!({});
                self.state_into(&mut out);
                Ok(out)
            }
            other => Err(format!("unknown action '{other}'")),
        }
    }

    /// Only the keys the case lists are compared; the C++ flavor has no ageing state.
    fn matches(&self, actual: &Value, expected: &Value, flavor: Flavor) -> bool {
        let Some(exp) = expected.as_object() else {
            return actual == expected;
        };
        exp.iter().all(|(k, v)| {
            if flavor == Flavor::Cpp && (k == "present" || k == "age") {
                return true;
            }
            actual.get(k) == Some(v)
        })
    }
}

impl CoordinatorRunner {
    fn state_into(&self, out: &mut Value) {
        let state = self.coordinator.partition_state(PARTITION);
        out["present"] = json!(state.is_some());
        if let Some((_, age)) = state {
            out["age"] = json!(age);
        }
    }
}
