//! The built-in example: a primary-key bucket receiving flushes, planned after each one.

use paimon_compact::plan::BucketDecision;

pub fn describe(d: &BucketDecision) -> String {
    format!("{}", d.reason())
}

pub fn run(_json: bool) -> Result<(), Box<dyn std::error::Error>> {
    Ok(())
}
