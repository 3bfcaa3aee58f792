//! Snapshots (`snapshot/snapshot-N`, format.md §3) and finding the latest one (format.md §11 step
//! 1).
//!
//! A snapshot names the manifest lists that together list the table's files. The `LATEST`
//! file is only a hint (written after the snapshot, best effort), so the latest snapshot is
//! found by reading the hint and probing forward; a missing or unreadable hint falls back to
//! listing the directory.

use std::collections::BTreeMap;

use super::path::TablePaths;
use crate::error::{Error, Result};
use crate::storage::{Storage, StorageErrorKind};

/// `commitKind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CommitKind {
    /// New data written by a writer (`APPEND`).
    Append,
    /// Files rewritten or moved between levels without changing the table's contents
    /// (`COMPACT`); every snapshot this project commits is of this kind.
    Compact,
    /// Partitions or the whole table replaced (`OVERWRITE`).
    Overwrite,
    /// Statistics only (`ANALYZE`); no data files change.
    Analyze,
}

/// One snapshot, with the fields Paimon writes (unknown ones are kept in `extra`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// Format version of the snapshot file; 3 is written, versions above 3 are refused as
    /// `Unsupported` on read.
    pub version: i32,
    /// Snapshot id, the `N` of `snapshot/snapshot-N`; ids start at 1.
    pub id: i64,
    /// The schema version (`schema/schema-<id>`) in force at this snapshot.
    pub schema_id: i64,
    /// Manifest list (name under `manifest/`) holding every manifest of the previous
    /// snapshot, possibly merged (`format.md` §3).
    pub base_manifest_list: String,
    /// Size of the base manifest list in bytes; `None` when the writer recorded none.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub base_manifest_list_size: Option<i64>,
    /// Manifest list holding this snapshot's own changes.
    pub delta_manifest_list: String,
    /// Size of the delta manifest list in bytes; `None` when not recorded.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub delta_manifest_list_size: Option<i64>,
    /// Manifest list of the changelog files this commit produced; `None` when it produced
    /// none.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub changelog_manifest_list: Option<String>,
    /// Size of the changelog manifest list in bytes; `None` without one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub changelog_manifest_list_size: Option<i64>,
    /// Index manifest listing every live index file (`format.md` §10); `None` when the
    /// table has none.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub index_manifest: Option<String>,
    /// The committer's identity; Paimon's writers use it to find their own commits.
    pub commit_user: String,
    /// The committer's checkpoint or commit number; `i64::MAX` for a batch commit such as
    /// ours (`format.md` §11).
    pub commit_identifier: i64,
    /// What kind of change this snapshot records.
    pub commit_kind: CommitKind,
    /// Commit time, epoch milliseconds (the job's `now` for our snapshots).
    pub time_millis: i64,
    /// Live records of the table after this snapshot; `None` when not recorded.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub total_record_count: Option<i64>,
    /// Records added minus records deleted by this snapshot's delta; `None` when not
    /// recorded.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub delta_record_count: Option<i64>,
    /// Records in this snapshot's changelog files; `None` without changelog.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub changelog_record_count: Option<i64>,
    /// The writers' watermark, epoch milliseconds; carried over by a compaction.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub watermark: Option<i64>,
    /// Name of the table-statistics file under `statistics/`; carried over, never written
    /// here.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub statistics: Option<String>,
    /// Free-form properties of the commit; `None` on our snapshots.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub properties: Option<BTreeMap<String, String>>,
    /// Row tracking's next row id; carried over by a compaction.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub next_row_id: Option<i64>,
    /// A unique id of this commit attempt; an unknown commit outcome is resolved by reading
    /// the snapshot back and comparing it (`format.md` §11).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub uuid: Option<String>,
    /// The writing software, e.g. `paimon-compact-<version>` for our snapshots.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub writer_version: Option<String>,
    /// Fields this version does not know; ignored, as Paimon's readers do (and not written
    /// back).
    #[serde(flatten, skip_serializing)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl Snapshot {
    /// Parses a snapshot file's JSON; `file` names it in errors. Not JSON of a snapshot is
    /// `CorruptInput`, a version above 3 `Unsupported`.
    pub fn from_json(bytes: &[u8], file: &str) -> Result<Self> {
        let s: Snapshot = serde_json::from_slice(bytes).map_err(|e| {
            Error::corrupt(Some(file), format!("not a snapshot JSON document: {e}"))
        })?;
        if s.version > 3 {
            return Err(Error::unsupported(format!(
                "snapshot '{file}' has version {}; this build reads versions up to 3",
                s.version
            )));
        }
        Ok(s)
    }

    /// The snapshot as pretty-printed JSON, null fields and `extra` left out.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }
}

/// Reads one snapshot.
pub fn read_snapshot(storage: &dyn Storage, paths: &TablePaths, id: i64) -> Result<Snapshot> {
    let path = paths.snapshot(id);
    let bytes = storage.read_all(&path)?;
    let snapshot = Snapshot::from_json(&bytes, &path)?;
    // Commits find snapshots by file name and number the next one from it: a file whose id is
    // not its name's would make the job commit over, or beside, the wrong snapshot.
    if snapshot.id != id {
        return Err(Error::corrupt(
            Some(&path),
            format!("the snapshot file holds id {}, not {id}", snapshot.id),
        ));
    }
    Ok(snapshot)
}

fn exists(storage: &dyn Storage, path: &str) -> Result<bool> {
    match storage.size(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind == StorageErrorKind::NotFound => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The id of the latest snapshot, `None` for a table without snapshots.
pub fn latest_snapshot_id(storage: &dyn Storage, paths: &TablePaths) -> Result<Option<i64>> {
    let hint = match storage.read_all(&paths.latest_hint()) {
        Ok(b) => std::str::from_utf8(&b)
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
            .filter(|id| *id > 0),
        Err(e) if e.kind == StorageErrorKind::NotFound => None,
        Err(e) => return Err(e.into()),
    };
    if let Some(id) = hint {
        let successor = match id.checked_add(1) {
            Some(next) => exists(storage, &paths.snapshot(next))?,
            None => false,
        };
        if exists(storage, &paths.snapshot(id))? && !successor {
            return Ok(Some(id));
        }
    }
    // No usable hint, or newer snapshots exist: list and take the highest id.
    let prefix = format!("{}/snapshot-", paths.snapshot_dir());
    let mut max = None;
    for o in storage.list(&prefix)? {
        if let Some(id) = o
            .path
            .strip_prefix(&prefix)
            .and_then(|s| s.parse::<i64>().ok())
        {
            max = max.max(Some(id));
        }
    }
    Ok(max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStorage;

    const PYPAIMON: &str = r#"{"version":3,"id":3,"schemaId":0,
      "baseManifestList":"manifest-list-a-0","deltaManifestList":"manifest-list-a-1",
      "totalRecordCount":15,"deltaRecordCount":5,"commitUser":"u","commitIdentifier":9223372036854775807,
      "commitKind":"APPEND","timeMillis":1,"baseManifestListSize":1369,"deltaManifestListSize":1338,
      "uuid":"x","writerVersion":"python-2.1.0","somethingNew":[1]}"#;

    #[test]
    fn reads_pypaimon_snapshot_and_finds_latest() {
        let s = Snapshot::from_json(PYPAIMON.as_bytes(), "snapshot-3").unwrap();
        assert_eq!(s.commit_identifier, i64::MAX);
        assert_eq!(s.commit_kind, CommitKind::Append);
        assert!(s.extra.contains_key("somethingNew"));
        let back = Snapshot::from_json(&s.to_json(), "x").unwrap();
        assert_eq!(back.id, 3);

        let st = MemoryStorage::new();
        let p = TablePaths::new("t");
        assert_eq!(latest_snapshot_id(&st, &p).unwrap(), None);
        for id in 1..=4 {
            st.put(&p.snapshot(id), b"{}".to_vec());
        }
        st.put(&p.latest_hint(), b"2".to_vec());
        assert_eq!(latest_snapshot_id(&st, &p).unwrap(), Some(4));
        st.put(&p.latest_hint(), b"garbage".to_vec());
        assert_eq!(latest_snapshot_id(&st, &p).unwrap(), Some(4));
        st.put(&p.latest_hint(), b"4".to_vec());
        assert_eq!(latest_snapshot_id(&st, &p).unwrap(), Some(4));
        let e = Snapshot::from_json(b"{\"version\":3", "t/snapshot/snapshot-9").unwrap_err();
        assert!(e.message.contains("snapshot-9"));
    }
}
