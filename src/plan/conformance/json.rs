//! Reading the vectors' JSON: typed fields with the case's error text, and the planner's
//! inputs (run statistics, levels, contexts) built from them.

use serde_json::{json, Value};

use crate::meta::{CompactionFile, Key, Level, RunStat};
use crate::plan::PlanContext;

pub(super) fn str_of<'a>(v: &'a Value, key: &str) -> std::result::Result<&'a str, String> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("missing string '{key}'"))
}
pub(super) fn u64_of(v: &Value, key: &str) -> std::result::Result<u64, String> {
    v.get(key)
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("missing number '{key}'"))
}
pub(super) fn i64_of(v: &Value, key: &str) -> std::result::Result<i64, String> {
    v.get(key)
        .and_then(Value::as_i64)
        .ok_or_else(|| format!("missing integer '{key}'"))
}
pub(super) fn opt_u64(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}
pub(super) fn opt_i64(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}
pub(super) fn bool_of(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}
pub(super) fn level_of(v: &Value, key: &str) -> std::result::Result<Level, String> {
    let n = u64_of(v, key)?;
    u32::try_from(n)
        .map(Level::new)
        .map_err(|_| format!("'{key}' out of range"))
}
pub(super) fn array_of<'a>(v: &'a Value, key: &str) -> std::result::Result<&'a Vec<Value>, String> {
    v.get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| format!("missing array '{key}'"))
}

/// Runs given as `[level, size]` pairs.
pub(super) fn run_stats(input: &Value) -> std::result::Result<Vec<RunStat>, String> {
    array_of(input, "runs")?
        .iter()
        .map(|r| {
            let pair = r
                .as_array()
                .filter(|a| a.len() == 2)
                .ok_or("a run must be [level, size]")?;
            let level = pair[0]
                .as_u64()
                .and_then(|l| u32::try_from(l).ok())
                .ok_or("bad run level")?;
            let size = pair[1].as_u64().ok_or("bad run size")?;
            Ok(RunStat {
                level: Level::new(level),
                size,
            })
        })
        .collect()
}

/// `num_levels`, or `max_level + 1`.
pub(super) fn num_levels_of(input: &Value) -> std::result::Result<u32, String> {
    if let Some(n) = opt_u64(input, "num_levels") {
        return u32::try_from(n).map_err(|_| "num_levels out of range".to_string());
    }
    Ok(level_of(input, "max_level")?.get() + 1)
}

pub(super) fn pick_json(pick: Option<(Level, usize)>, runs: &[RunStat]) -> Value {
    match pick {
        None => Value::Null,
        Some((level, count)) => json!({
            "output_level": level.get(),
            "run_count": count,
            "file_sizes": runs[..count.min(runs.len())].iter().map(|r| r.size).collect::<Vec<_>>(),
        }),
    }
}

pub(super) fn ctx_of(input: &Value, hour: u8) -> PlanContext {
    PlanContext::at(opt_i64(input, "now_ms").unwrap_or(0), hour)
}

pub(super) fn file(
    name: &str,
    level: u32,
    size: u64,
    min_key: i64,
    max_key: i64,
    min_seq: i64,
    max_seq: i64,
) -> CompactionFile {
    CompactionFile::new(
        name,
        Level::new(level),
        size,
        Key::from_i64(min_key),
        Key::from_i64(max_key),
        min_seq,
        max_seq,
    )
}
