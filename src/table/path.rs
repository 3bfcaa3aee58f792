//! Where a table's files are (spec §1).
//!
//! Readers never list data directories: they rebuild each file's path from its partition,
//! bucket and name. The compactor does the same, both to find its inputs and to put new files
//! where readers will look. A name read from metadata is only ever joined as one path component:
//! a name containing `/`, `\`, `..` or starting like an absolute path is corrupt metadata and is
//! rejected, so a crafted manifest cannot make the compactor read or write outside the table.

use super::binary_row::Datum;
use super::schema::DataField;
use crate::error::{Error, Result};

/// `partition.default-name`'s default: the directory of null or blank partition values.
pub const DEFAULT_PARTITION_NAME: &str = "__DEFAULT_PARTITION__";

/// Characters Paimon's `PartitionPathUtils` escapes as `%XX` (besides control characters).
const ESCAPED: &str = "\"#%'*/:=?\\{}[]^";

/// Checks a file name from metadata; `source` (the manifest or snapshot) is blamed.
pub fn validate_name(name: &str, source: &str) -> Result<()> {
    let bad = name.is_empty()
        || name.contains('/')
        || name.contains('\\')
        || name == "."
        || name.contains("..")
        || name.contains('\0')
        || name.starts_with('~')
        || name.contains(':');
    if bad {
        return Err(Error::corrupt(
            Some(source),
            format!(
                "file name '{name}' is not a plain name inside the table; refusing to follow it"
            ),
        ));
    }
    Ok(())
}

/// Hive-style escaping of one partition value.
pub fn escape_partition_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        if (c as u32) < 32 || c as u32 == 127 || ESCAPED.contains(c) {
            out.push_str(&format!("%{:02X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// `k1=v1/k2=v2` for a partition's values (empty for an unpartitioned table).
pub fn partition_path(values: &[Datum], fields: &[&DataField], default_name: &str) -> String {
    values
        .iter()
        .zip(fields)
        .map(|(v, f)| {
            let text = v
                .to_partition_string(&f.data_type)
                .filter(|s| !s.trim().is_empty())
                .unwrap_or_else(|| default_name.to_string());
            format!(
                "{}={}",
                escape_partition_value(&f.name),
                escape_partition_value(&text)
            )
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The paths of one table, relative to the storage root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TablePaths {
    root: String,
    /// `data-file.path-directory`: data files live under this subdirectory.
    data_dir: Option<String>,
}

impl TablePaths {
    pub fn new(root: &str) -> Self {
        TablePaths {
            root: root.trim_end_matches('/').to_string(),
            data_dir: None,
        }
    }

    pub fn with_data_dir(mut self, dir: Option<String>) -> Self {
        self.data_dir = dir.filter(|d| !d.is_empty());
        self
    }

    pub fn root(&self) -> &str {
        &self.root
    }

    fn join(&self, rel: &str) -> String {
        if self.root.is_empty() {
            rel.to_string()
        } else {
            format!("{}/{rel}", self.root)
        }
    }

    pub fn schema_dir(&self) -> String {
        self.join("schema")
    }
    pub fn schema(&self, id: i64) -> String {
        self.join(&format!("schema/schema-{id}"))
    }
    pub fn snapshot_dir(&self) -> String {
        self.join("snapshot")
    }
    pub fn snapshot(&self, id: i64) -> String {
        self.join(&format!("snapshot/snapshot-{id}"))
    }
    pub fn latest_hint(&self) -> String {
        self.join("snapshot/LATEST")
    }
    pub fn earliest_hint(&self) -> String {
        self.join("snapshot/EARLIEST")
    }

    /// A file in `manifest/` (manifests, manifest lists, index manifests).
    pub fn manifest(&self, name: &str, source: &str) -> Result<String> {
        validate_name(name, source)?;
        Ok(self.join(&format!("manifest/{name}")))
    }

    /// A file in `index/`.
    pub fn index_file(&self, name: &str, source: &str) -> Result<String> {
        validate_name(name, source)?;
        Ok(self.join(&format!("index/{name}")))
    }

    /// The directory of a partition's bucket.
    pub fn bucket_dir(&self, partition_path: &str, bucket: i32) -> String {
        let mut parts: Vec<&str> = Vec::new();
        if let Some(d) = &self.data_dir {
            parts.push(d);
        }
        if !partition_path.is_empty() {
            parts.push(partition_path);
        }
        let b = format!("bucket-{bucket}");
        parts.push(&b);
        self.join(&parts.join("/"))
    }

    /// A data or changelog file of a partition's bucket.
    pub fn data_file(
        &self,
        partition_path: &str,
        bucket: i32,
        name: &str,
        source: &str,
    ) -> Result<String> {
        validate_name(name, source)?;
        Ok(format!(
            "{}/{name}",
            self.bucket_dir(partition_path, bucket)
        ))
    }

    /// Where compaction leases live (Paimon readers ignore this directory).
    pub fn lease_dir(&self) -> String {
        self.join("compaction-lease")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::schema::{DataType, TypeRoot};

    #[test]
    fn names_escaping_the_table_are_rejected() {
        let p = TablePaths::new("wh/db.db/t/");
        for bad in [
            "../x",
            "a/b",
            "/etc/passwd",
            "..",
            "",
            "c:\\x",
            "a\\b",
            "x..y",
        ] {
            let e = p.data_file("", 0, bad, "manifest/manifest-1").unwrap_err();
            assert!(
                matches!(e.kind, crate::ErrorKind::CorruptInput { .. }),
                "{bad}"
            );
            assert!(e.message.contains("manifest/manifest-1"));
        }
        assert_eq!(
            p.data_file("dt=1", 3, "data-a-0.parquet", "m").unwrap(),
            "wh/db.db/t/dt=1/bucket-3/data-a-0.parquet"
        );
        assert_eq!(p.snapshot(4), "wh/db.db/t/snapshot/snapshot-4");
    }

    #[test]
    fn partition_paths_escape_and_default() {
        let f1 = DataField {
            id: 0,
            name: "dt".into(),
            data_type: DataType::new(TypeRoot::VarChar { length: 10 }),
            description: None,
        };
        let f2 = DataField {
            id: 1,
            name: "h".into(),
            data_type: DataType::new(TypeRoot::Int),
            description: None,
        };
        let path = partition_path(
            &[Datum::String("a/b:c".into()), Datum::Null],
            &[&f1, &f2],
            DEFAULT_PARTITION_NAME,
        );
        assert_eq!(path, "dt=a%2Fb%3Ac/h=__DEFAULT_PARTITION__");
    }
}
