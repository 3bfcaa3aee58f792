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
    Append,
    Compact,
    Overwrite,
    Analyze,
}

/// One snapshot, with the fields Paimon writes (unknown ones are kept in `extra`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    pub version: i32,
    pub id: i64,
    pub schema_id: i64,
    pub base_manifest_list: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub base_manifest_list_size: Option<i64>,
    pub delta_manifest_list: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub delta_manifest_list_size: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub changelog_manifest_list: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub changelog_manifest_list_size: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub index_manifest: Option<String>,
    pub commit_user: String,
    pub commit_identifier: i64,
    pub commit_kind: CommitKind,
    pub time_millis: i64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub total_record_count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub delta_record_count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub changelog_record_count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub watermark: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub statistics: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub properties: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub next_row_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub uuid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub writer_version: Option<String>,
    /// Fields this version does not know; ignored, as Paimon's readers do.
    #[serde(flatten, skip_serializing)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl Snapshot {
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

    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }
}

/// Reads one snapshot.
pub fn read_snapshot(storage: &dyn Storage, paths: &TablePaths, id: i64) -> Result<Snapshot> {
    let path = paths.snapshot(id);
    let bytes = storage.read_all(&path)?;
    Snapshot::from_json(&bytes, &path)
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
