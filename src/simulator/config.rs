//! What to simulate: the table, its Paimon options, the workload and the cost model. Plain data
//! (serde), so the page can keep it in the URL and a test can write it inline.

use std::collections::BTreeMap;

use super::keys::KeyDistribution;
use super::replay::TableReplay;
use crate::error::{Error, Result};
use crate::options::{CoreOptions, Flavor, TableKind};

/// The three ways Paimon compacts a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SimTable {
    /// A primary-key table: one LSM tree per bucket.
    PrimaryKey,
    /// An append table with fixed buckets: a file queue per bucket.
    AppendBucketed,
    /// An append table with `bucket = -1`: writers only write, a coordinator compacts.
    AppendUnaware,
}

impl SimTable {
    /// The planner's table kind: both append variants are [`TableKind::Append`]; they differ only
    /// in the `bucket` option that [`SimConfig::core_options`] derives.
    pub fn kind(self) -> TableKind {
        match self {
            SimTable::PrimaryKey => TableKind::PrimaryKey,
            SimTable::AppendBucketed | SimTable::AppendUnaware => TableKind::Append,
        }
    }
}

/// The writers' workload. Rates are per bucket (per writer for unaware-bucket tables).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Workload {
    /// Incoming data, MB/s per bucket.
    pub write_mb_per_s: f64,
    /// Write buffer size: a flush happens when this much has arrived (or at a commit).
    pub flush_mb: f64,
    /// Bytes per row on disk (the simulation counts rows, sizes follow).
    pub row_bytes: u32,
    /// Distinct keys of the table (uniform and zipf draw from it).
    pub key_space: u64,
    /// How inserted keys are drawn from the key space (updates and deletes of a `Sequential`
    /// workload hit existing keys uniformly). Primary-key tables only: append files carry no keys.
    pub distribution: KeyDistribution,
    /// Fraction of rows that update an existing key (drawn by `distribution`).
    pub update_ratio: f64,
    /// Fraction of rows that delete an existing key.
    pub delete_ratio: f64,
    /// Flush sizes and intervals vary by ± this fraction (seeded).
    pub jitter: f64,
    /// Commit (checkpoint) interval in seconds; 0 = never commit (a batch writer). A commit
    /// flushes the partial buffer, may wait for compaction, and drives the unaware coordinator.
    pub commit_interval_s: f64,
    /// Virtual clock start, epoch milliseconds: when the writers start, and what elapsed time
    /// counts from. A replay instead starts the clock at its first snapshot and the writers one
    /// second after its last. The planner sees this clock (early full compaction's interval,
    /// compaction.md §4.2).
    pub start_ms: i64,
    /// Offset of the local time zone from UTC, whole hours: gives the local hour the planner
    /// compares with off-peak hours (compaction.md §4.7) and the page's clock.
    pub utc_offset_hours: i32,
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            write_mb_per_s: 16.0,
            flush_mb: 64.0,
            row_bytes: 128,
            key_space: 20_000_000,
            distribution: KeyDistribution::Uniform,
            update_ratio: 0.0,
            delete_ratio: 0.0,
            jitter: 0.2,
            commit_interval_s: 0.0,
            start_ms: 1_767_225_600_000, // 2026-01-01T00:00:00Z
            utc_offset_hours: 0,
        }
    }
}

/// How long compaction work takes: it is what makes compaction fall behind and writes stall.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct CostModel {
    /// Merge rewrite (decode, merge, encode), MB of input per second.
    pub rewrite_mb_per_s: f64,
    /// Copy-like work: append concatenation and lookup reads, MB/s.
    pub copy_mb_per_s: f64,
    /// A metadata-only upgrade.
    pub upgrade_ms: f64,
    /// Fixed cost of any task (open files, commit the result).
    pub task_overhead_ms: f64,
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel {
            rewrite_mb_per_s: 60.0,
            copy_mb_per_s: 300.0,
            upgrade_ms: 1.0,
            task_overhead_ms: 200.0,
        }
    }
}

/// A whole simulation: same config and seed, same run, on every platform.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SimConfig {
    /// Seed of the workload's random stream (flush sizes and intervals, sampled keys); see
    /// [`Rng`](crate::simulator::rng::Rng).
    pub seed: u64,
    /// Which of the three compaction shapes to simulate; with `replay`, it must match the replayed
    /// table's kind.
    pub table: SimTable,
    /// Buckets (writers for an unaware-bucket table); lanes on the page.
    pub buckets: u32,
    /// Whose decisions the planner reproduces where Java and C++ Paimon differ (compaction.md §16).
    pub flavor: Flavor,
    /// Paimon options by their keys (`num-sorted-run.compaction-trigger`, `merge-engine`...).
    /// `bucket` is derived from `table` and `buckets`.
    pub options: BTreeMap<String, String>,
    /// What the writers write, and how often they commit.
    pub workload: Workload,
    /// How long compaction tasks take on the virtual clock.
    pub cost: CostModel,
    /// Flushes to simulate, over all buckets.
    pub flushes: u64,
    /// Start from a real table's history (its snapshots are replayed first).
    pub replay: Option<TableReplay>,
    /// Record every planner call (for the native equality test; costs memory).
    pub record_trace: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 1,
            table: SimTable::PrimaryKey,
            buckets: 1,
            flavor: Flavor::Java,
            options: BTreeMap::new(),
            workload: Workload::default(),
            cost: CostModel::default(),
            flushes: 200,
            replay: None,
            record_trace: false,
        }
    }
}

impl SimConfig {
    /// The Paimon options as the planner parses them (typed errors on bad values).
    pub fn core_options(&self) -> Result<CoreOptions> {
        let mut raw = self.options.clone();
        if let Some(r) = &self.replay {
            for (k, v) in &r.options {
                raw.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        let bucket = match self.table {
            SimTable::AppendUnaware => "-1".to_string(),
            _ => self.buckets.max(1).to_string(),
        };
        raw.insert("bucket".into(), bucket);
        CoreOptions::parse_with(self.table.kind(), self.flavor, &raw)
    }

    /// Rejects workloads the model cannot run (with the field named, like option errors).
    pub fn validate(&self) -> Result<()> {
        let w = &self.workload;
        let positive = [
            ("workload.write_mb_per_s", w.write_mb_per_s),
            ("workload.flush_mb", w.flush_mb),
            ("cost.rewrite_mb_per_s", self.cost.rewrite_mb_per_s),
            ("cost.copy_mb_per_s", self.cost.copy_mb_per_s),
        ];
        for (k, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::invalid_option(
                    k,
                    &v.to_string(),
                    "must be a positive number",
                ));
            }
        }
        for (k, v) in [
            ("workload.update_ratio", w.update_ratio),
            ("workload.delete_ratio", w.delete_ratio),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(Error::invalid_option(
                    k,
                    &v.to_string(),
                    "must be between 0 and 1",
                ));
            }
        }
        if w.update_ratio + w.delete_ratio > 1.0 {
            return Err(Error::invalid_option(
                "workload.delete_ratio",
                &w.delete_ratio.to_string(),
                "update and delete ratios add up to more than 1",
            ));
        }
        if !(0.0..=0.95).contains(&w.jitter) {
            return Err(Error::invalid_option(
                "workload.jitter",
                &w.jitter.to_string(),
                "must be between 0 and 0.95",
            ));
        }
        if w.row_bytes == 0 || w.key_space == 0 {
            return Err(Error::invalid_option(
                "workload.row_bytes",
                &w.row_bytes.to_string(),
                "row size and key space must be positive",
            ));
        }
        if w.commit_interval_s < 0.0 || !w.commit_interval_s.is_finite() {
            return Err(Error::invalid_option(
                "workload.commit_interval_s",
                &w.commit_interval_s.to_string(),
                "must be 0 (no commits) or positive",
            ));
        }
        if self.buckets == 0 || self.buckets > 64 {
            return Err(Error::invalid_option(
                "buckets",
                &self.buckets.to_string(),
                "must be 1 to 64",
            ));
        }
        if let KeyDistribution::Zipf { s } = w.distribution {
            if !(0.0..=4.0).contains(&s) {
                return Err(Error::invalid_option(
                    "workload.distribution.s",
                    &s.to_string(),
                    "zipf exponent must be 0 to 4",
                ));
            }
        }
        self.core_options().map(|_| ())
    }
}
