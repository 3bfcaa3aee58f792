//! The outside world the planner may depend on, passed in rather than read: the planner never
//! looks at a clock, so the same inputs always give the same decision.

/// When a decision is made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlanContext {
    /// Epoch milliseconds (early full compaction's interval clock).
    pub now_ms: i64,
    /// Local hour of day, 0–23 (off-peak hours).
    pub local_hour: u8,
}

impl PlanContext {
    /// A context at `now_ms` (epoch milliseconds) and `local_hour` (0–23; not checked here).
    pub fn at(now_ms: i64, local_hour: u8) -> Self {
        PlanContext { now_ms, local_hour }
    }
}
