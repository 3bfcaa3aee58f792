//! A table's history as a timeline for the simulator page (`plan --json`): the state at the
//! first snapshot kept, then each later snapshot's file changes per partition and bucket. The
//! page replays it and lets the planner continue from the last snapshot.
//!
//! It lives in the CLI, its only user, because it joins two layers of the core that do not
//! depend on each other: the table layer's snapshots and manifests, and the simulator's replay
//! format.

use std::collections::BTreeMap;
use std::sync::Arc;

use paimon_compact::error::Result;
use paimon_compact::simulator::replay::{BucketChange, ReplaySnapshot, TableReplay, FORMAT};
use paimon_compact::storage::Storage;
use paimon_compact::table::manifest::FileKind;
use paimon_compact::table::scan::{
    planner_meta, read_manifest, read_manifest_list, scan_at, LiveFile, Table,
};
use paimon_compact::table::snapshot::{latest_snapshot_id, read_snapshot};

/// The last `max_snapshots` snapshots of the table (the first one as a full state).
pub fn export_timeline(
    storage: &dyn Storage,
    table_path: &str,
    max_snapshots: usize,
) -> Result<TableReplay> {
    let table = Table::load(storage, table_path)?;
    let latest = latest_snapshot_id(storage, &table.paths)?;
    let mut replay = TableReplay {
        format: FORMAT.into(),
        version: 1,
        table: Some(table_path.to_string()),
        table_kind: Some(table.options.table_kind),
        options: table.schema.options.clone(),
        snapshots: Vec::new(),
    };
    let Some(latest) = latest else {
        return Ok(replay);
    };
    // The earliest snapshot still on storage within the window (older ones may be expired).
    let mut first = latest
        .saturating_sub(max_snapshots.max(1) as i64 - 1)
        .max(1);
    while first < latest && read_snapshot(storage, &table.paths, first).is_err() {
        first += 1;
    }
    let state = scan_at(storage, table.clone(), Some(first))?;
    let mut start = ReplaySnapshot {
        id: first,
        commit_kind: "RESTORE".into(),
        time_ms: state.snapshot.as_ref().map_or(0, |s| s.time_millis),
        changes: Vec::new(),
    };
    for b in state.buckets.values() {
        start.changes.push(BucketChange {
            partition: b.partition_path.clone(),
            bucket: b.bucket,
            added: b
                .planner_files(&table)?
                .into_iter()
                .map(Arc::unwrap_or_clone)
                .collect(),
            deleted: Vec::new(),
        });
    }
    replay.snapshots.push(start);
    for id in first + 1..=latest {
        let snapshot = read_snapshot(storage, &table.paths, id)?;
        let source = table.paths.snapshot(id);
        let mut changes: BTreeMap<(String, i32), BucketChange> = BTreeMap::new();
        for meta in read_manifest_list(
            storage,
            &table.paths,
            &snapshot.delta_manifest_list,
            &source,
        )? {
            let (path, entries) = read_manifest(storage, &table.paths, &meta, &source)?;
            for entry in entries {
                let partition = table.partition_path(&entry.partition, &path)?;
                let change = changes
                    .entry((partition.clone(), entry.bucket))
                    .or_insert_with(|| BucketChange {
                        partition,
                        bucket: entry.bucket,
                        added: Vec::new(),
                        deleted: Vec::new(),
                    });
                match entry.kind {
                    FileKind::Delete => change.deleted.push(entry.file.file_name.clone()),
                    FileKind::Add => {
                        let live = LiveFile {
                            entry,
                            source: path.clone(),
                            deletion_vector: None,
                        };
                        change.added.push(planner_meta(&table, &live)?);
                    }
                }
            }
        }
        replay.snapshots.push(ReplaySnapshot {
            id,
            commit_kind: serde_json::to_value(snapshot.commit_kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            time_ms: snapshot.time_millis,
            changes: changes.into_values().collect(),
        });
    }
    Ok(replay)
}
