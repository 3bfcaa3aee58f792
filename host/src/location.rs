//! Where a table lives: a local directory (a plain path or a `file:` URI) or an object store
//! (`s3://`, `gs://`, `az://`, `abfss://`), and the storage that reaches it.
//!
//! A table is opened as storage rooted at its parent (the database directory) plus the table's
//! name inside it, so the paths the core writes (`t/snapshot/snapshot-3`) are the same in every
//! store.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use paimon_compact::storage::Storage;

use crate::local_storage::LocalDirStorage;
use crate::object_storage::{split_uri, ObjectStorage, RequestCounts};

/// A table's (or a database's) address as the user wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A local directory.
    Local(PathBuf),
    /// An object-store URI without a trailing slash, such as `s3://bucket/warehouse/d.db/t`.
    Object(String),
}

impl Location {
    /// Reads a command-line table argument: `file:/abs`, `file:///abs` and plain paths are local;
    /// `scheme://...` with another scheme is an object store (an unsupported scheme is refused
    /// when the storage is opened, with the schemes that are served).
    pub fn parse(s: &str) -> Location {
        if let Some(local) = LocalDirStorage::file_uri(s) {
            return Location::Local(PathBuf::from(local));
        }
        match split_uri(s) {
            Some(_) => Location::Object(s.trim_end_matches('/').to_string()),
            None => Location::Local(PathBuf::from(s)),
        }
    }

    /// The table's name: its last path segment.
    pub fn name(&self) -> Option<String> {
        match self {
            Location::Local(p) => p.file_name().map(|n| n.to_string_lossy().into_owned()),
            Location::Object(u) => {
                let (_, key) = u.split_once("://")?;
                let (_, name) = key.rsplit_once('/')?;
                (!name.is_empty()).then(|| name.to_string())
            }
        }
    }

    /// A child of this location (a table of a database).
    pub fn join(&self, name: &str) -> Location {
        match self {
            Location::Local(p) => Location::Local(p.join(name)),
            Location::Object(u) => Location::Object(format!("{u}/{name}")),
        }
    }

    /// The local directory, if the table is local.
    pub fn local(&self) -> Option<&Path> {
        match self {
            Location::Local(p) => Some(p),
            Location::Object(_) => None,
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Local(p) => write!(f, "{}", p.display()),
            Location::Object(u) => f.write_str(u),
        }
    }
}

/// An opened object-store table: the storage rooted at the table's parent and the table's name.
pub struct ObjectTable {
    /// The storage; clones share its client and request counts.
    pub storage: ObjectStorage,
    /// The table's path inside the storage (its name).
    pub table_path: String,
}

impl ObjectTable {
    /// Opens `uri` (`s3://bucket/warehouse/d.db/t`) as storage rooted at `s3://bucket/warehouse/d.db`.
    pub fn open(uri: &str) -> Result<ObjectTable, String> {
        let uri = uri.trim_end_matches('/');
        let (parent, name) = uri
            .rsplit_once('/')
            .filter(|(p, n)| {
                !n.is_empty() && p.contains("://") && !p.ends_with(':') && !p.ends_with("//")
            })
            .ok_or_else(|| format!("{uri} does not name a table (scheme://bucket/.../table)"))?;
        let storage = ObjectStorage::open(parent).map_err(|e| format!("cannot open {uri}: {e}"))?;
        Ok(ObjectTable {
            storage,
            table_path: name.to_string(),
        })
    }

    /// The storage as the core takes it.
    pub fn shared(&self) -> Arc<dyn Storage> {
        Arc::new(self.storage.clone())
    }

    /// Requests made so far.
    pub fn requests(&self) -> RequestCounts {
        self.storage.requests()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_arguments_are_local_paths_or_object_store_uris() {
        assert_eq!(
            Location::parse("/tmp/w/d.db/t"),
            Location::Local("/tmp/w/d.db/t".into())
        );
        assert_eq!(Location::parse("rel/t"), Location::Local("rel/t".into()));
        assert_eq!(
            Location::parse("file:///tmp/t"),
            Location::Local("/tmp/t".into())
        );
        assert_eq!(
            Location::parse("file:/tmp/t"),
            Location::Local("/tmp/t".into())
        );
        assert_eq!(
            Location::parse("s3://b/w/d.db/t/"),
            Location::Object("s3://b/w/d.db/t".into())
        );
        assert_eq!(
            Location::parse("s3://b/w/d.db/t").name().as_deref(),
            Some("t")
        );
        assert_eq!(
            Location::parse("s3://b/w/d.db").join("t"),
            Location::Object("s3://b/w/d.db/t".into())
        );
    }

    #[test]
    fn a_bucket_alone_is_not_a_table() {
        assert!(ObjectTable::open("s3://bucket").is_err());
        assert!(ObjectTable::open("s3://bucket/").is_err());
    }
}
