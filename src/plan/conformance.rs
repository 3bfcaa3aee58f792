//! The conformance runner: executes the cases of a vectors file (schema: appendix A of the
//! compaction spec) through the planner and reports which disagree.
//!
//! Each case builds one strategy or manager from its options and feeds it the steps in order,
//! so state (clocks, counters, queues) carries over between steps exactly as in Paimon's own
//! tests. `expected` is Java HEAD; with the C++ flavor, `expected_cpp` wins where present and
//! Java-only cases are skipped (and C++-only ones in Java mode).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::meta::{DataFileMeta, Key, Level, LevelSortedRun, Levels, RunStat};
use crate::options::{CoreOptions, Flavor, MergeEngine, TableKind};
use crate::plan::{self, *};

/// One failing case.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CaseFailure {
    pub name: String,
    pub message: String,
}

/// The outcome of a vectors file.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConformanceReport {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub failures: Vec<CaseFailure>,
}

impl ConformanceReport {
    pub fn ok(&self) -> bool {
        self.failed == 0
    }
}

/// One line per failing case, then `N passed, M failed` (`, K skipped` when any were).
impl fmt::Display for ConformanceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in &self.failures {
            writeln!(f, "FAIL {}: {}", c.name, c.message)?;
        }
        write!(f, "{} passed, {} failed", self.passed, self.failed)?;
        if self.skipped > 0 {
            write!(f, ", {} skipped", self.skipped)?;
        }
        Ok(())
    }
}

/// Runs every case of a vectors file.
pub fn run_vectors(json_text: &str, flavor: Flavor) -> Result<ConformanceReport> {
    let doc: Value = serde_json::from_str(json_text)
        .map_err(|e| Error::corrupt(None, format!("vectors file is not JSON: {e}")))?;
    if doc.get("format").and_then(Value::as_str) != Some("paimon-compaction-vectors") {
        return Err(Error::corrupt(None, "not a paimon-compaction-vectors file"));
    }
    let cases = doc
        .get("cases")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::corrupt(None, "vectors file has no 'cases' array"))?;
    let mut report = ConformanceReport::default();
    for case in cases {
        let name = case
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("<unnamed>")
            .to_string();
        let applies = case
            .get("applies_to")
            .and_then(Value::as_str)
            .unwrap_or("both");
        let skip = match flavor {
            Flavor::Java => applies == "cpp",
            Flavor::Cpp => applies == "java",
        };
        if skip {
            report.skipped += 1;
            continue;
        }
        match run_case(case, flavor) {
            Ok(()) => report.passed += 1,
            Err(message) => {
                report.failed += 1;
                report.failures.push(CaseFailure { name, message });
            }
        }
    }
    Ok(report)
}

type CaseResult = std::result::Result<(), String>;

fn run_case(case: &Value, flavor: Flavor) -> CaseResult {
    let strategy = str_of(case, "strategy")?;
    let options = case.get("options").cloned().unwrap_or(json!({}));
    let steps = case
        .get("steps")
        .and_then(Value::as_array)
        .ok_or("case has no steps")?;
    let mut runner: Box<dyn StepRunner> = match strategy {
        "universal" => Box::new(UniversalRunner::new(&options, flavor)?),
        "force_up_level0" => Box::new(ForceUpLevel0Runner::new(&options, flavor)?),
        "early_full_compaction" => Box::new(EarlyFullRunner::new(&options, flavor)?),
        "off_peak" => Box::new(FnRunner(off_peak_step, options, Compare::Exact)),
        "level0_order" => Box::new(FnRunner(level0_order_step, options, Compare::Exact)),
        "pick_full_compaction" => Box::new(FnRunner(pick_full_step, options, Compare::Exact)),
        "drop_delete" => Box::new(FnRunner(drop_delete_step, options, Compare::Exact)),
        "merge_tree_compaction" => Box::new(FnRunner(
            merge_tree_step,
            options,
            Compare::ActionSectionsAsMultiset,
        )),
        "interval_partition" => Box::new(FnRunner(
            interval_partition_step,
            options,
            Compare::SectionRunsAsMultiset,
        )),
        "bucketed_append_pick" => Box::new(FnRunner(append_pick_step, options, Compare::Exact)),
        "bucketed_append_full" => Box::new(FnRunner(append_full_step, options, Compare::Exact)),
        "bucketed_append_requeue" => {
            Box::new(FnRunner(append_requeue_step, options, Compare::Exact))
        }
        "append_coordinator" => Box::new(CoordinatorRunner::new(&options, flavor)?),
        "options" => Box::new(FnRunner(options_step, options, Compare::Subset)),
        "lookup_upgrade_strategy" => {
            Box::new(FnRunner(lookup_upgrade_step, options, Compare::Exact))
        }
        "write_stall" => Box::new(FnRunner(write_stall_step, options, Compare::Exact)),
        "compact_not_completed" => Box::new(FnRunner(
            compact_not_completed_step,
            options,
            Compare::Exact,
        )),
        other => return Err(format!("unknown strategy '{other}'")),
    };
    for (i, step) in steps.iter().enumerate() {
        let expected = match flavor {
            Flavor::Cpp => step.get("expected_cpp").or_else(|| step.get("expected")),
            Flavor::Java => step.get("expected"),
        };
        let input = step.get("input").unwrap_or(step);
        let actual = runner
            .step(input, flavor)
            .map_err(|e| format!("step {}: {e}", i + 1))?;
        let Some(expected) = expected else { continue };
        if !runner.matches(&actual, expected, flavor) {
            return Err(format!(
                "step {}: expected {}, got {}",
                i + 1,
                compact(expected),
                compact(&actual)
            ));
        }
    }
    Ok(())
}

fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

trait StepRunner {
    fn step(&mut self, input: &Value, flavor: Flavor) -> std::result::Result<Value, String>;
    fn matches(&self, actual: &Value, expected: &Value, _flavor: Flavor) -> bool {
        actual == expected
    }
}

type StepFn = fn(&Value, &Value, Flavor) -> std::result::Result<Value, String>;

/// How a step's result is compared with the expectation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Compare {
    Exact,
    /// Runs inside a section compare as a multiset (spec §8: Java's run order is unspecified).
    SectionRunsAsMultiset,
    /// The same, inside each rewrite action's sections.
    ActionSectionsAsMultiset,
    /// Only the keys the expectation lists.
    Subset,
}

/// A stateless strategy: each step is a pure function of the options and the input.
struct FnRunner(StepFn, Value, Compare);

impl StepRunner for FnRunner {
    fn step(&mut self, input: &Value, flavor: Flavor) -> std::result::Result<Value, String> {
        (self.0)(&self.1, input, flavor)
    }
    fn matches(&self, actual: &Value, expected: &Value, flavor: Flavor) -> bool {
        if actual == expected {
            return true;
        }
        match self.2 {
            Compare::Exact => false,
            Compare::SectionRunsAsMultiset => {
                flavor == Flavor::Java && normalize_sections(actual) == normalize_sections(expected)
            }
            Compare::ActionSectionsAsMultiset => {
                normalize_actions(actual) == normalize_actions(expected)
            }
            Compare::Subset => expected
                .as_object()
                .is_some_and(|exp| exp.iter().all(|(k, v)| actual.get(k) == Some(v))),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// JSON helpers

fn str_of<'a>(v: &'a Value, key: &str) -> std::result::Result<&'a str, String> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("missing string '{key}'"))
}
fn u64_of(v: &Value, key: &str) -> std::result::Result<u64, String> {
    v.get(key)
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("missing number '{key}'"))
}
fn i64_of(v: &Value, key: &str) -> std::result::Result<i64, String> {
    v.get(key)
        .and_then(Value::as_i64)
        .ok_or_else(|| format!("missing integer '{key}'"))
}
fn opt_u64(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}
fn opt_i64(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}
fn bool_of(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}
fn level_of(v: &Value, key: &str) -> std::result::Result<Level, String> {
    let n = u64_of(v, key)?;
    u32::try_from(n)
        .map(Level::new)
        .map_err(|_| format!("'{key}' out of range"))
}
fn array_of<'a>(v: &'a Value, key: &str) -> std::result::Result<&'a Vec<Value>, String> {
    v.get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| format!("missing array '{key}'"))
}

/// Runs given as `[level, size]` pairs.
fn run_stats(input: &Value) -> std::result::Result<Vec<RunStat>, String> {
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
fn num_levels_of(input: &Value) -> std::result::Result<u32, String> {
    if let Some(n) = opt_u64(input, "num_levels") {
        return u32::try_from(n).map_err(|_| "num_levels out of range".to_string());
    }
    Ok(level_of(input, "max_level")?.get() + 1)
}

fn pick_json(pick: Option<(Level, usize)>, runs: &[RunStat]) -> Value {
    match pick {
        None => Value::Null,
        Some((level, count)) => json!({
            "output_level": level.get(),
            "run_count": count,
            "file_sizes": runs[..count.min(runs.len())].iter().map(|r| r.size).collect::<Vec<_>>(),
        }),
    }
}

fn ctx_of(input: &Value, hour: u8) -> PlanContext {
    PlanContext::at(opt_i64(input, "now_ms").unwrap_or(0), hour)
}

// ---------------------------------------------------------------------------------------------
// Universal, force-up-level-0, early full

fn early_full_from(v: &Value, flavor: Flavor) -> EarlyFullCompaction {
    EarlyFullCompaction {
        interval_ms: opt_u64(v, "interval_ms"),
        total_size_threshold: opt_u64(v, "total_size_threshold"),
        incremental_size_threshold: opt_u64(v, "incremental_size_threshold"),
        last_full_ms: opt_i64(v, "initial_last_full_ms"),
        flavor,
    }
}

/// Off-peak ratio "now": a window that contains hour 0, evaluated at hour 0.
fn universal_from(v: &Value, flavor: Flavor) -> std::result::Result<UniversalCompaction, String> {
    let off_peak = opt_u64(v, "offpeak_ratio_now")
        .map(|r| OffPeakHours::create(0, 1, r as u32))
        .unwrap_or(None);
    Ok(UniversalCompaction {
        max_size_amp: u64_of(v, "max_size_amp")?,
        size_ratio: u64_of(v, "size_ratio")? as u32,
        trigger: u64_of(v, "num_run_trigger")? as usize,
        early_full: v.get("early_full").map(|e| early_full_from(e, flavor)),
        off_peak,
        flavor,
    })
}

struct UniversalRunner(UniversalCompaction);

impl UniversalRunner {
    fn new(options: &Value, flavor: Flavor) -> std::result::Result<Self, String> {
        Ok(UniversalRunner(universal_from(options, flavor)?))
    }
}

impl StepRunner for UniversalRunner {
    fn step(&mut self, input: &Value, _flavor: Flavor) -> std::result::Result<Value, String> {
        let runs = run_stats(input)?;
        let ctx = ctx_of(input, 0);
        let num_levels = num_levels_of(input)?;
        let max_level = Level::new(num_levels - 1);
        let u = &mut self.0;
        let pick = match str_of(input, "entry")? {
            "pick" => u.pick(num_levels, &runs, &ctx),
            "pick_for_size_amp" => u.pick_for_size_amp(max_level, &runs, &ctx),
            "pick_for_size_ratio" => u.pick_for_size_ratio(max_level, &runs, &ctx),
            "force_pick_l0" => u.force_pick_l0(num_levels, &runs, &ctx, None),
            "create_unit" => {
                let count = u64_of(input, "run_count")? as usize;
                if count > runs.len() {
                    return Err("run_count exceeds runs".into());
                }
                let (level, count) = u.create_unit(&runs, max_level, count, &ctx);
                return Ok(pick_json(Some((level, count)), &runs));
            }
            other => return Err(format!("unknown entry '{other}'")),
        };
        Ok(pick_json(
            pick.map(|p| (p.output_level, p.run_count)),
            &runs,
        ))
    }
}

struct ForceUpLevel0Runner(ForceUpLevel0Compaction);

impl ForceUpLevel0Runner {
    fn new(options: &Value, flavor: Flavor) -> std::result::Result<Self, String> {
        let universal = universal_from(
            options.get("universal").ok_or("missing 'universal'")?,
            flavor,
        )?;
        let interval = opt_u64(options, "max_compact_interval").map(|n| n as usize);
        Ok(ForceUpLevel0Runner(ForceUpLevel0Compaction::new(
            universal, interval,
        )))
    }
}

impl StepRunner for ForceUpLevel0Runner {
    fn step(&mut self, input: &Value, _flavor: Flavor) -> std::result::Result<Value, String> {
        let runs = run_stats(input)?;
        let pick = self.0.pick(num_levels_of(input)?, &runs, &ctx_of(input, 0));
        Ok(pick_json(
            pick.map(|p| (p.output_level, p.run_count)),
            &runs,
        ))
    }
}

struct EarlyFullRunner(EarlyFullCompaction);

impl EarlyFullRunner {
    fn new(options: &Value, flavor: Flavor) -> std::result::Result<Self, String> {
        Ok(EarlyFullRunner(early_full_from(options, flavor)))
    }
}

impl StepRunner for EarlyFullRunner {
    fn step(&mut self, input: &Value, _flavor: Flavor) -> std::result::Result<Value, String> {
        let runs = run_stats(input)?;
        let pick = self
            .0
            .try_full(num_levels_of(input)?, &runs, &ctx_of(input, 0));
        Ok(pick_json(
            pick.map(|p| (p.output_level, p.run_count)),
            &runs,
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// Stateless rules

fn off_peak_step(options: &Value, input: &Value, _: Flavor) -> std::result::Result<Value, String> {
    let o = OffPeakHours::create(
        i64_of(options, "start_hour")? as i32,
        i64_of(options, "end_hour")? as i32,
        u64_of(options, "ratio")? as u32,
    );
    let hour = u64_of(input, "hour")? as u8;
    Ok(o.map_or(Value::Null, |o| json!(o.current_ratio(hour))))
}

fn file(
    name: &str,
    level: u32,
    size: u64,
    min_key: i64,
    max_key: i64,
    min_seq: i64,
    max_seq: i64,
) -> DataFileMeta {
    DataFileMeta::new(
        name,
        Level::new(level),
        size,
        Key::from_i64(min_key),
        Key::from_i64(max_key),
        min_seq,
        max_seq,
    )
}

fn level0_order_step(_: &Value, input: &Value, _: Flavor) -> std::result::Result<Value, String> {
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

fn pick_full_step(options: &Value, input: &Value, _: Flavor) -> std::result::Result<Value, String> {
    let num_levels = u64_of(input, "num_levels")? as u32;
    let mut expired = BTreeSet::new();
    let mut run_files: Vec<(Level, Vec<Arc<DataFileMeta>>)> = Vec::new();
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

fn drop_delete_step(
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

fn write_stall_step(
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

fn compact_not_completed_step(
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

fn lookup_upgrade_step(_: &Value, input: &Value, _: Flavor) -> std::result::Result<Value, String> {
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

fn options_step(_: &Value, input: &Value, flavor: Flavor) -> std::result::Result<Value, String> {
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

// ---------------------------------------------------------------------------------------------
// Interval partition and the merge-tree task

fn interval_partition_step(
    _: &Value,
    input: &Value,
    _: Flavor,
) -> std::result::Result<Value, String> {
    let files: Vec<Arc<DataFileMeta>> = array_of(input, "intervals")?
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
fn normalize_sections(v: &Value) -> Value {
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

fn normalize_actions(v: &Value) -> Value {
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

fn merge_tree_step(
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

fn levels_json(levels: &Levels) -> Value {
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

// ---------------------------------------------------------------------------------------------
// Append tables

fn append_options(options: &Value, flavor: Flavor) -> std::result::Result<CoreOptions, String> {
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

fn names(files: &[Arc<DataFileMeta>]) -> Value {
    json!(files
        .iter()
        .map(|f| f.file_name.clone())
        .collect::<Vec<_>>())
}

fn append_pick_step(
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

fn append_full_step(
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

fn append_requeue_step(
    options: &Value,
    input: &Value,
    _: Flavor,
) -> std::result::Result<Value, String> {
    let cfs = u64_of(options, "compaction_file_size")?;
    let sizes = array_of(input, "after_sizes")?;
    let last = sizes.last().and_then(Value::as_u64);
    Ok(json!({ "requeue_last": last.is_some_and(|s| should_requeue_last(s, cfs)) }))
}

struct CoordinatorRunner {
    coordinator: AppendCompactCoordinator,
    next_file: usize,
}

const PARTITION: &str = "p";

impl CoordinatorRunner {
    fn new(options: &Value, flavor: Flavor) -> std::result::Result<Self, String> {
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
