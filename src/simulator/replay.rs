//! Replaying a real table's history before the planner takes over.
//!
//! The table layer (or any tool) exports a table's snapshots as JSON in the format below; the
//! page loads it, replays each snapshot's file changes as a timeline, and the simulated writers
//! and the planner continue from the last snapshot.
//!
//! ```json
//! { "format": "paimon-compact-table", "version": 1,
//!   "table": "db.orders", "table_kind": "primary-key",
//!   "options": { "bucket": "2", "num-sorted-run.compaction-trigger": "5" },
//!   "snapshots": [
//!     { "id": 1, "commit_kind": "APPEND", "time_ms": 1767225600000,
//!       "changes": [ { "partition": "dt=2026-01-01", "bucket": 0,
//!                      "added": [ <CompactionFile> ], "deleted": [ "data-0.parquet" ] } ] } ] }
//! ```
//! `<CompactionFile>` is the planner's file JSON: `file_name, file_size, row_count, min_key,
//! max_key` (hex of the order-preserving key encoding), `min_sequence_number,
//! max_sequence_number, level`, and optionally `delete_row_count, creation_time_ms,
//! file_source, has_deletion_vector`. Each `(partition, bucket)` becomes one lane.
//!
//! `paimon-compact plan <table> --json` writes this document under the key `timeline` of the
//! plan, and [`TableReplay::from_json`] accepts that plan as it is. For convenience it also
//! accepts the input of `paimon-compact plan <request.json>` (a `BucketPlanRequest`: one
//! bucket's live files), replayed as a single snapshot.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::meta::CompactionFile;
use crate::options::TableKind;
use crate::plan::BucketPlanRequest;

/// Value of the `format` field that identifies a table replay document.
pub const FORMAT: &str = "paimon-compact-table";

/// A real table's history, in the JSON format above;
/// [`SimConfig::replay`](crate::simulator::SimConfig::replay) starts a run from it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TableReplay {
    /// Must be [`FORMAT`].
    pub format: String,
    /// Format version; only 1 is accepted.
    pub version: u32,
    /// Table name (`db.table`), for display only.
    #[serde(default)]
    pub table: Option<String>,
    /// Kind of the exported table; when present it must match the simulated table's kind (checked
    /// before a run starts).
    #[serde(default)]
    pub table_kind: Option<TableKind>,
    /// The table's options by Paimon key; options set in the simulation config take precedence,
    /// these fill in the rest (`bucket` always follows the simulated table and bucket count).
    #[serde(default)]
    pub options: BTreeMap<String, String>,
    /// The snapshots to replay, each at its `time_ms`; at least one.
    pub snapshots: Vec<ReplaySnapshot>,
}

/// One snapshot: the data-file changes its commit made, per bucket.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReplaySnapshot {
    /// Paimon snapshot id.
    pub id: i64,
    /// `APPEND`, `COMPACT`, `OVERWRITE`...: shown on the timeline.
    #[serde(default)]
    pub commit_kind: String,
    /// Commit time, epoch milliseconds: when the snapshot is replayed on the virtual clock.
    pub time_ms: i64,
    /// File changes, one entry per `(partition, bucket)` touched.
    #[serde(default)]
    pub changes: Vec<BucketChange>,
}

/// The files one snapshot added to and deleted from one bucket of one partition.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BucketChange {
    /// Partition as a display string (`dt=2026-01-01`); empty for an unpartitioned table. With
    /// `bucket`, it names the lane.
    #[serde(default)]
    pub partition: String,
    /// Bucket number within the partition.
    #[serde(default)]
    pub bucket: i32,
    /// Files the snapshot added, as the planner's file metadata; the simulation maps their keys
    /// onto `i64` and spreads their rows evenly over their key range.
    #[serde(default)]
    pub added: Vec<CompactionFile>,
    /// Names of files this snapshot removed from the bucket.
    #[serde(default)]
    pub deleted: Vec<String>,
}

impl TableReplay {
    /// Parses the table format, or a `BucketPlanRequest` (one snapshot of one bucket).
    pub fn from_json(text: &str) -> Result<Self> {
        let mut value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| Error::corrupt(None, format!("replay JSON: {e}")))?;
        // `paimon-compact plan <table> --json` embeds the table's timeline in its plan.
        if let Some(timeline) = value.get_mut("timeline").map(serde_json::Value::take) {
            value = timeline;
        }
        if value.get("snapshots").is_some() {
            let t: TableReplay = serde_json::from_value(value)
                .map_err(|e| Error::corrupt(None, format!("replay JSON ({FORMAT}): {e}")))?;
            t.check()?;
            return Ok(t);
        }
        if value.get("files").is_some() {
            let req: BucketPlanRequest = serde_json::from_value(value)
                .map_err(|e| Error::corrupt(None, format!("replay JSON (plan request): {e}")))?;
            let time_ms = req.context.now_ms;
            return Ok(TableReplay {
                format: FORMAT.into(),
                version: 1,
                table: None,
                table_kind: Some(req.table_kind),
                options: req.options,
                snapshots: vec![ReplaySnapshot {
                    id: 1,
                    commit_kind: "RESTORE".into(),
                    time_ms,
                    changes: vec![BucketChange {
                        partition: String::new(),
                        bucket: 0,
                        added: req.files,
                        deleted: Vec::new(),
                    }],
                }],
            });
        }
        Err(Error::corrupt(
            None,
            format!("replay JSON: expected a '{FORMAT}' document (with \"snapshots\") or a plan request (with \"files\")"),
        ))
    }

    fn check(&self) -> Result<()> {
        if self.format != FORMAT || self.version != 1 {
            return Err(Error::unsupported(format!(
                "replay format '{}' version {} (expected '{FORMAT}' version 1)",
                self.format, self.version
            )));
        }
        if self.snapshots.is_empty() {
            return Err(Error::corrupt(None, "the replay has no snapshots"));
        }
        Ok(())
    }

    /// The lanes, in order of first appearance.
    pub fn lanes(&self) -> Vec<(String, i32)> {
        let mut lanes: Vec<(String, i32)> = Vec::new();
        for s in &self.snapshots {
            for c in &s.changes {
                let k = (c.partition.clone(), c.bucket);
                if !lanes.contains(&k) {
                    lanes.push(k);
                }
            }
        }
        if lanes.is_empty() {
            lanes.push((String::new(), 0));
        }
        lanes
    }
}
