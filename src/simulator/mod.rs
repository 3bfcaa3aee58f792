//! A deterministic LSM simulation driven by the planner (in progress).
