//! The shared conformance vectors (copied into tests/vectors) through the planner, both flavors.

use paimon_compact::options::Flavor;
use paimon_compact::plan::conformance::run_vectors;

const VECTORS: &str = include_str!("../vectors/compaction-vectors.json");

#[test]
fn java_head_vectors_all_pass() {
    let report = run_vectors(VECTORS, Flavor::Java).unwrap();
    assert!(report.ok(), "{report}");
    assert!(report.passed >= 100, "{report}");
}

#[test]
fn cpp_vectors_all_pass() {
    let report = run_vectors(VECTORS, Flavor::Cpp).unwrap();
    assert!(report.ok(), "{report}");
    assert_eq!(report.skipped, 14, "{report}");
    assert!(report.passed >= 100, "{report}");
}

#[test]
fn a_wrong_expectation_is_reported_by_name() {
    let broken = VECTORS.replacen(
        r#""expected":{"output_level":2,"run_count":4,"file_sizes":[1,2,3,3]}"#,
        r#""expected":{"output_level":1,"run_count":4,"file_sizes":[1,2,3,3]}"#,
        1,
    );
    // The vectors file is pretty-printed or compact; patch whichever form is present.
    let broken = if broken == VECTORS {
        let mut doc: serde_json::Value = serde_json::from_str(VECTORS).unwrap();
        let case = doc["cases"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|c| c["name"] == "universal_pick_by_size_amp")
            .unwrap();
        case["steps"][0]["expected"]["output_level"] = 1.into();
        doc.to_string()
    } else {
        broken
    };
    let report = run_vectors(&broken, Flavor::Java).unwrap();
    assert_eq!(report.failed, 1, "{report}");
    assert_eq!(report.failures[0].name, "universal_pick_by_size_amp");
    let text = report.to_string();
    assert!(
        text.starts_with("FAIL universal_pick_by_size_amp: step 1: expected"),
        "{text}"
    );
    assert!(
        text.ends_with(&format!("\n{} passed, 1 failed", report.passed)),
        "{text}"
    );
}
