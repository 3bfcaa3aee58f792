//! The versioned directories expiration walks: `snapshot/` and `changelog/` (numbered files
//! with `EARLIEST` / `LATEST` hints), the tags and the consumers' positions that bound what
//! may expire. Shared by snapshot and changelog expiration.

use crate::error::Result;
use crate::storage::{Storage, StorageErrorKind};
use crate::table::scan::Table;
use crate::table::snapshot::Snapshot;

/// `root/rel`, or `rel` for a table at the storage root.
pub(crate) fn join(root: &str, rel: &str) -> String {
    if root.is_empty() {
        rel.to_string()
    } else {
        format!("{root}/{rel}")
    }
}

pub(crate) fn exists(storage: &dyn Storage, path: &str) -> Result<bool> {
    match storage.size(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind == StorageErrorKind::NotFound => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Reads a hint file; anything unreadable counts as no hint (hints are advisory).
fn read_hint(storage: &dyn Storage, path: &str) -> Option<i64> {
    let bytes = storage.read_all(path).ok()?;
    std::str::from_utf8(&bytes).ok()?.trim().parse().ok()
}

/// Overwrites a hint with the decimal id; a failure is returned as a warning.
pub(crate) fn write_hint(
    storage: &dyn Storage,
    path: &str,
    id: i64,
) -> std::result::Result<(), String> {
    storage
        .write_all(path, id.to_string().as_bytes())
        .map(|_| ())
        .map_err(|e| format!("could not write the hint '{path}': {e}"))
}

/// A directory of numbered JSON files with `EARLIEST` / `LATEST` hints: `snapshot/` or
/// `changelog/` (Paimon's `HintFileUtils` and `listVersionedFiles`).
pub(crate) struct Versioned {
    dir: String,
    prefix: &'static str,
}

impl Versioned {
    pub(crate) fn snapshots(root: &str) -> Self {
        Versioned {
            dir: join(root, "snapshot"),
            prefix: "snapshot-",
        }
    }

    pub(crate) fn changelogs(root: &str) -> Self {
        Versioned {
            dir: join(root, "changelog"),
            prefix: "changelog-",
        }
    }

    pub(crate) fn file(&self, id: i64) -> String {
        format!("{}/{}{id}", self.dir, self.prefix)
    }

    pub(crate) fn earliest_hint(&self) -> String {
        format!("{}/EARLIEST", self.dir)
    }

    pub(crate) fn latest_hint(&self) -> String {
        format!("{}/LATEST", self.dir)
    }

    /// The ids present, ascending (names whose rest is not a number are ignored).
    fn ids(&self, storage: &dyn Storage) -> Result<Vec<i64>> {
        let prefix = format!("{}/{}", self.dir, self.prefix);
        let mut ids: Vec<i64> = storage
            .list(&prefix)?
            .iter()
            .filter_map(|o| o.path.strip_prefix(&prefix)?.parse().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// The `EARLIEST` hint when its file exists, else the smallest id present.
    pub(crate) fn earliest(&self, storage: &dyn Storage) -> Result<Option<i64>> {
        if let Some(hint) = read_hint(storage, &self.earliest_hint()) {
            if exists(storage, &self.file(hint))? {
                return Ok(Some(hint));
            }
        }
        Ok(self.ids(storage)?.first().copied())
    }

    /// The `LATEST` hint when it is positive and no file follows it, else the largest id.
    pub(crate) fn latest(&self, storage: &dyn Storage) -> Result<Option<i64>> {
        if let Some(hint) = read_hint(storage, &self.latest_hint()) {
            if hint > 0 && !exists(storage, &self.file(hint + 1))? {
                return Ok(Some(hint));
            }
        }
        Ok(self.ids(storage)?.last().copied())
    }

    /// File `id`, `None` when it does not exist.
    pub(crate) fn read(&self, storage: &dyn Storage, id: i64) -> Result<Option<Snapshot>> {
        let path = self.file(id);
        match storage.read_all(&path) {
            Ok(bytes) => Snapshot::from_json(&bytes, &path).map(Some),
            Err(e) if e.kind == StorageErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

/// The snapshots the main branch's tags (`tag/tag-<name>`) point at, ascending by id, one per
/// id (several tags may name one snapshot). A tag file deleted while listing is skipped.
pub(crate) fn read_tags(storage: &dyn Storage, table: &Table) -> Result<Vec<Snapshot>> {
    let mut tags: Vec<Snapshot> = super::tags::list_tags(storage, &table.paths)?
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    tags.sort_by_key(|t| t.id);
    tags.dedup_by_key(|t| t.id);
    Ok(tags)
}

/// The smallest `nextSnapshot` of the main branch's consumers (`consumer/consumer-<id>`); a
/// file deleted while listing is skipped, one that does not parse is an error.
pub(crate) fn min_consumer_next_snapshot(
    storage: &dyn Storage,
    table: &Table,
) -> Result<Option<i64>> {
    super::consumers::min_next_snapshot(storage, &table.paths)
}

/// The tags whose metadata may be shared with snapshots in `[begin, end)`: from the last tag at
/// or before `begin` (or the first tag) to the last tag before `end`.
pub(crate) fn find_skipping_tags(tags: &[Snapshot], begin: i64, end: i64) -> &[Snapshot] {
    let Some(right) = tags.iter().rposition(|t| t.id < end) else {
        return &[];
    };
    let left = tags.iter().rposition(|t| t.id <= begin).unwrap_or(0);
    &tags[left..=right]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStorage;

    #[test]
    fn hints_are_checked_against_the_files() {
        let st = MemoryStorage::new();
        let v = Versioned::changelogs("t");
        assert_eq!(v.earliest(&st).unwrap(), None);
        assert_eq!(v.latest(&st).unwrap(), None);
        for id in [3, 4, 5] {
            st.put(&v.file(id), b"{}".to_vec());
        }
        st.put("t/changelog/changelog-x.tmp", b"".to_vec());
        assert_eq!(v.earliest(&st).unwrap(), Some(3));
        assert_eq!(v.latest(&st).unwrap(), Some(5));
        st.put(&v.earliest_hint(), b"1".to_vec()); // file gone: listed minimum
        st.put(&v.latest_hint(), b"4".to_vec()); // 5 exists: listed maximum
        assert_eq!(v.earliest(&st).unwrap(), Some(3));
        assert_eq!(v.latest(&st).unwrap(), Some(5));
        st.put(&v.earliest_hint(), b"4".to_vec());
        st.put(&v.latest_hint(), b"5".to_vec());
        assert_eq!(v.earliest(&st).unwrap(), Some(4));
        assert_eq!(v.latest(&st).unwrap(), Some(5));
        st.put(&v.earliest_hint(), b"junk".to_vec());
        assert_eq!(v.earliest(&st).unwrap(), Some(3));
    }

    #[test]
    fn skipping_tags() {
        let tag = |id: i64| {
            let json = format!(
                r#"{{"version":3,"id":{id},"schemaId":0,"baseManifestList":"b","deltaManifestList":"d",
                   "commitUser":"u","commitIdentifier":1,"commitKind":"APPEND","timeMillis":0}}"#
            );
            Snapshot::from_json(json.as_bytes(), "tag").unwrap()
        };
        let tags: Vec<Snapshot> = [2, 5, 8, 12].into_iter().map(tag).collect();
        let ids = |s: &[Snapshot]| s.iter().map(|t| t.id).collect::<Vec<_>>();
        assert_eq!(ids(find_skipping_tags(&tags, 6, 10)), [5, 8]);
        assert_eq!(ids(find_skipping_tags(&tags, 1, 6)), [2, 5]);
        assert_eq!(ids(find_skipping_tags(&tags, 5, 6)), [5]);
        assert!(find_skipping_tags(&tags, 0, 2).is_empty());
        assert_eq!(ids(find_skipping_tags(&tags, 13, 20)), [12]);
    }
}
