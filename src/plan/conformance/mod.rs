//! The conformance runner: executes the cases of a vectors file (schema: compaction.md
//! appendix A) through the planner and reports which disagree.
//!
//! Each case builds one strategy or manager from its options and feeds it the steps in order,
//! so state (clocks, counters, queues) carries over between steps exactly as in Paimon's own
//! tests. `expected` is Java HEAD; with the C++ flavor, `expected_cpp` wins where present and
//! Java-only cases are skipped (and C++-only ones in Java mode).

use std::fmt;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::options::Flavor;

mod append;
mod json;
mod merge_tree;
mod rules;
mod strategies;

use append::{append_full_step, append_pick_step, append_requeue_step, CoordinatorRunner};
use json::str_of;
use merge_tree::{interval_partition_step, merge_tree_step, normalize_actions, normalize_sections};
use rules::{
    compact_not_completed_step, drop_delete_step, level0_order_step, lookup_upgrade_step,
    off_peak_step, options_step, pick_full_step, write_stall_step,
};
use strategies::{EarlyFullRunner, ForceUpLevel0Runner, UniversalRunner};

/// One failing case.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CaseFailure {
    /// The case's `name`, or `<unnamed>` when it has none.
    pub name: String,
    /// What went wrong: the first step whose result differs (expected and actual JSON), a
    /// step's error, or a malformed case.
    pub message: String,
}

/// The outcome of a vectors file.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConformanceReport {
    /// Cases whose every step matched.
    pub passed: usize,
    /// Cases that failed; each has an entry in `failures`.
    pub failed: usize,
    /// Cases for the other flavor only (`applies_to`), not run.
    pub skipped: usize,
    /// The failing cases, in file order.
    pub failures: Vec<CaseFailure>,
}

impl ConformanceReport {
    /// True when no case failed (skipped cases do not count against it).
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
    /// Runs inside a section compare as a multiset (compaction.md §8: Java's run order is
    /// unspecified).
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
