//! Where a table's files are (format.md §1).
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

/// Checks a data file's `_EXTERNAL_PATH` (Paimon's `data-file.external-paths`): an absolute URI
/// such as `file:/mnt/ext/bucket-0/data-1.parquet` or `s3://bucket/t/bucket-0/data-1.parquet`,
/// free of `.`/`..` segments and naming the file itself. It is handed to storage as-is: a host
/// serves the URIs it knows (the CLI: `file:` URIs under directories it was allowed) and
/// refuses the others with a typed error, so metadata cannot steer reads anywhere else.
pub fn validate_external_path(uri: &str, name: &str, source: &str) -> Result<()> {
    validate_name(name, source)?;
    let bad = |why: &str| {
        Err(Error::corrupt(
            Some(source),
            format!("external path '{uri}' of file '{name}' {why}; refusing to follow it"),
        ))
    };
    let Some((scheme, rest)) = uri.split_once(':') else {
        return bad("is not a URI");
    };
    let scheme_ok = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok || !rest.starts_with('/') {
        return bad("is not an absolute URI");
    }
    if uri.contains('\\') || uri.contains('\0') {
        return bad("contains a backslash or NUL");
    }
    let path = rest.trim_start_matches('/');
    if path.split('/').any(|seg| seg == ".." || seg == ".") {
        return bad("has a '.' or '..' segment");
    }
    if path.rsplit('/').next() != Some(name) {
        return bad("does not end with the file's name");
    }
    Ok(())
}

/// Paimon's `Path` spelling of a local URI: `file:///a/b` and `file://localhost/a/b` become
/// `file:/a/b`; other URIs are kept, without a trailing `/`.
pub fn normalize_uri(uri: &str) -> String {
    let uri = uri.trim().trim_end_matches('/');
    if let Some(rest) = uri.strip_prefix("file://") {
        let rest = rest.strip_prefix("localhost").unwrap_or(rest);
        return format!("file:{rest}");
    }
    uri.to_string()
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
    /// `data-file.external-paths` (filtered by its strategy): new data files go under these
    /// URIs instead of the table directory, rotating over them.
    external: Vec<String>,
    /// `weight-robin` with `data-file.external-paths.weights`: the running sums of the
    /// weights, one per external path (empty: rotate in turn).
    cumulative_weights: Vec<u64>,
}

impl TablePaths {
    /// The paths of the table directory `root` (relative to the storage root; a trailing
    /// `/` is dropped), with data files in the table directory and no external paths.
    pub fn new(root: &str) -> Self {
        TablePaths {
            root: root.trim_end_matches('/').to_string(),
            data_dir: None,
            external: Vec::new(),
            cumulative_weights: Vec::new(),
        }
    }

    /// Where new data files go, from the table options `data-file.external-paths`,
    /// `.strategy` (`none`, the default, keeps them in the table directory; `round-robin`
    /// rotates over every path; `weight-robin` picks a path with the probability of its share
    /// of `.weights`, as Paimon's weighted provider does, or rotates when there are no weights
    /// or fewer than two paths; `specific-fs` uses the paths of the scheme named by
    /// `.specific-fs`).
    pub fn with_external_paths(
        mut self,
        options: &std::collections::BTreeMap<String, String>,
        source: &str,
    ) -> Result<Self> {
        let strategy = options
            .get("data-file.external-paths.strategy")
            .map(|s| s.trim().to_ascii_lowercase())
            .unwrap_or_else(|| "none".to_string());
        let paths: Vec<String> = options
            .get("data-file.external-paths")
            .map(|s| {
                s.split(',')
                    .map(normalize_uri)
                    .filter(|p| !p.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        self.external = match strategy.as_str() {
            "none" => Vec::new(),
            "round-robin" | "weight-robin" => paths,
            "specific-fs" => {
                let fs = options
                    .get("data-file.external-paths.specific-fs")
                    .map(|s| s.trim().to_ascii_lowercase())
                    .unwrap_or_default();
                paths
                    .into_iter()
                    .filter(|p| {
                        p.split(':')
                            .next()
                            .is_some_and(|s| s.eq_ignore_ascii_case(&fs))
                    })
                    .collect()
            }
            other => {
                return Err(Error::invalid_option(
                    "data-file.external-paths.strategy",
                    other,
                    format!(
                        "one of none, round-robin, weight-robin, specific-fs (schema {source})"
                    ),
                ))
            }
        };
        for p in &self.external {
            validate_external_path(&format!("{p}/x"), "x", source)?;
        }
        self.cumulative_weights = Vec::new();
        if strategy == "weight-robin" && self.external.len() >= 2 {
            if let Some(text) = options.get("data-file.external-paths.weights") {
                let bad = |why: String| {
                    Error::invalid_option("data-file.external-paths.weights", text, why)
                };
                let weights = text
                    .split(',')
                    .map(|w| match w.trim().parse::<u32>() {
                        Ok(w) if w > 0 => Ok(u64::from(w)),
                        _ => Err(bad(format!("'{}' is not a positive weight", w.trim()))),
                    })
                    .collect::<Result<Vec<u64>>>()?;
                if weights.len() != self.external.len() {
                    return Err(bad(format!(
                        "{} weights for {} external paths (schema {source})",
                        weights.len(),
                        self.external.len()
                    )));
                }
                self.cumulative_weights = weights
                    .iter()
                    .scan(0u64, |sum, w| {
                        *sum += w;
                        Some(*sum)
                    })
                    .collect();
            }
        }
        if strategy != "none" && self.external.is_empty() {
            return Err(Error::invalid_option(
                "data-file.external-paths",
                options
                    .get("data-file.external-paths")
                    .map_or("", String::as_str),
                format!("strategy '{strategy}' selects no external path"),
            ));
        }
        Ok(self)
    }

    /// The external roots new data files rotate over (empty: the table directory).
    pub fn external_paths(&self) -> &[String] {
        &self.external
    }

    /// Puts the bucket directories under `data-file.path-directory` (`None` or empty: directly
    /// under the table directory).
    pub fn with_data_dir(mut self, dir: Option<String>) -> Self {
        self.data_dir = dir.filter(|d| !d.is_empty());
        self
    }

    /// The table directory, relative to the storage root, without a trailing `/`.
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

    /// `<table>/schema`: the directory of the schema versions (`format.md` §2).
    pub fn schema_dir(&self) -> String {
        self.join("schema")
    }
    /// `<table>/schema/schema-<id>`: schema version `id`.
    pub fn schema(&self, id: i64) -> String {
        self.join(&format!("schema/schema-{id}"))
    }
    /// `<table>/snapshot`: snapshots and their hint files (`format.md` §3).
    pub fn snapshot_dir(&self) -> String {
        self.join("snapshot")
    }
    /// `<table>/snapshot/snapshot-<id>`: snapshot `id`.
    pub fn snapshot(&self, id: i64) -> String {
        self.join(&format!("snapshot/snapshot-{id}"))
    }
    /// `<table>/snapshot/LATEST`: the hint holding the latest snapshot id, written after the
    /// snapshot and only trusted after checking (`format.md` §3).
    pub fn latest_hint(&self) -> String {
        self.join("snapshot/LATEST")
    }
    /// `<table>/snapshot/EARLIEST`: the hint holding the earliest retained snapshot id,
    /// maintained by snapshot expiration (`maintenance-rules.md` §1.2).
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

    /// The directory of a partition's bucket (`bucket-postpone` for the postpone bucket).
    pub fn bucket_dir(&self, partition_path: &str, bucket: i32) -> String {
        let mut parts: Vec<&str> = Vec::new();
        if let Some(d) = &self.data_dir {
            parts.push(d);
        }
        if !partition_path.is_empty() {
            parts.push(partition_path);
        }
        let b = bucket_dir_name(bucket);
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

    /// Where the file a manifest entry names is: its `_EXTERNAL_PATH` when set, else the
    /// bucket directory.
    pub fn live_data_file(
        &self,
        partition_path: &str,
        bucket: i32,
        file: &super::manifest::DataFileMeta,
        source: &str,
    ) -> Result<String> {
        match &file.external_path {
            Some(uri) => {
                validate_external_path(uri, &file.file_name, source)?;
                Ok(uri.clone())
            }
            None => self.data_file(partition_path, bucket, &file.file_name, source),
        }
    }

    /// The directory new files of a bucket go to when the table has external paths (else the
    /// bucket directory; the flag says which): external root `pick` (modulo their number), or
    /// with weights the root whose share of the total weight holds `draw` (a uniformly random
    /// number from the caller: the core draws none itself).
    pub fn output_bucket_dir(
        &self,
        partition_path: &str,
        bucket: i32,
        pick: usize,
        draw: u64,
    ) -> (String, bool) {
        if self.external.is_empty() {
            return (self.bucket_dir(partition_path, bucket), false);
        }
        let index = match self.cumulative_weights.last() {
            Some(&total) => {
                let point = draw % total;
                self.cumulative_weights.partition_point(|&c| c <= point)
            }
            None => pick % self.external.len(),
        };
        let root = &self.external[index.min(self.external.len() - 1)];
        let dir = if partition_path.is_empty() {
            format!("{root}/bucket-{bucket}")
        } else {
            format!("{root}/{partition_path}/bucket-{bucket}")
        };
        (dir, true)
    }

    /// Every directory [`TablePaths::output_bucket_dir`] may pick for the bucket (the bucket
    /// directory first, then one per external root): where a fan-out job looks for what its
    /// tasks wrote.
    pub fn output_bucket_dirs(&self, partition_path: &str, bucket: i32) -> Vec<String> {
        let mut dirs = vec![self.bucket_dir(partition_path, bucket)];
        for root in &self.external {
            dirs.push(if partition_path.is_empty() {
                format!("{root}/{}", bucket_dir_name(bucket))
            } else {
                format!("{root}/{partition_path}/{}", bucket_dir_name(bucket))
            });
        }
        dirs
    }

    /// Where compaction leases live (Paimon readers ignore this directory).
    pub fn lease_dir(&self) -> String {
        self.join("compaction-lease")
    }
}

/// A bucket's directory name: `bucket-<n>`, or `bucket-postpone` for the postpone bucket of a
/// `bucket = -2` table (Paimon's `FileStorePathFactory.relativeBucketPath`).
fn bucket_dir_name(bucket: i32) -> String {
    if bucket == super::manifest::POSTPONE_BUCKET {
        "bucket-postpone".to_string()
    } else {
        format!("bucket-{bucket}")
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
    fn external_paths_are_absolute_uris_naming_the_file() {
        let name = "data-a-0.parquet";
        for good in [
            "file:/mnt/ext/bucket-0/data-a-0.parquet",
            "s3://bucket/t/dt=1/bucket-0/data-a-0.parquet",
        ] {
            validate_external_path(good, name, "m").unwrap();
        }
        for bad in [
            "/mnt/ext/data-a-0.parquet",
            "file:relative/data-a-0.parquet",
            "file:/mnt/../etc/data-a-0.parquet",
            "file:/mnt/./data-a-0.parquet",
            "file:/mnt/ext/other.parquet",
            "1x:/a/data-a-0.parquet",
            "file:/a\\b/data-a-0.parquet",
        ] {
            let e = validate_external_path(bad, name, "manifest-9").unwrap_err();
            assert!(
                matches!(e.kind, crate::ErrorKind::CorruptInput { .. }),
                "{bad}"
            );
            assert!(e.message.contains("manifest-9"), "{bad}");
        }
        assert_eq!(normalize_uri("file:///tmp/x/"), "file:/tmp/x");
        assert_eq!(normalize_uri("s3://b/p"), "s3://b/p");
    }

    #[test]
    fn new_files_rotate_over_the_external_paths_the_strategy_selects() {
        let opts = |pairs: &[(&str, &str)]| -> std::collections::BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let paths = "file:///e1, s3://b/e2";
        let p = TablePaths::new("t")
            .with_external_paths(&opts(&[("data-file.external-paths", paths)]), "s")
            .unwrap();
        assert!(
            p.external_paths().is_empty(),
            "strategy none keeps the table dir"
        );
        assert_eq!(
            p.output_bucket_dir("", 0, 0, 0),
            ("t/bucket-0".into(), false)
        );
        let p = TablePaths::new("t")
            .with_external_paths(
                &opts(&[
                    ("data-file.external-paths", paths),
                    ("data-file.external-paths.strategy", "round-robin"),
                ]),
                "s",
            )
            .unwrap();
        assert_eq!(
            p.output_bucket_dir("dt=1", 2, 0, 7),
            ("file:/e1/dt=1/bucket-2".into(), true)
        );
        assert_eq!(
            p.output_bucket_dir("", 2, 1, 7),
            ("s3://b/e2/bucket-2".into(), true)
        );
        let p = TablePaths::new("t")
            .with_external_paths(
                &opts(&[
                    ("data-file.external-paths", paths),
                    ("data-file.external-paths.strategy", "specific-fs"),
                    ("data-file.external-paths.specific-fs", "s3"),
                ]),
                "s",
            )
            .unwrap();
        assert_eq!(p.external_paths(), ["s3://b/e2".to_string()]);
        // weight-robin with weights 1 and 3: draws 0 and 4 land on the first path, 1..=3 and
        // 5 on the second; without weights it rotates.
        let weighted = |weights: Option<&str>| {
            let mut o = vec![
                ("data-file.external-paths", paths),
                ("data-file.external-paths.strategy", "weight-robin"),
            ];
            if let Some(w) = weights {
                o.push(("data-file.external-paths.weights", w));
            }
            TablePaths::new("t").with_external_paths(&opts(&o), "s")
        };
        let p = weighted(Some("1, 3")).unwrap();
        let roots: Vec<bool> = (0..6u64)
            .map(|d| p.output_bucket_dir("", 0, 0, d).0.starts_with("file:"))
            .collect();
        assert_eq!(roots, [true, false, false, false, true, false]);
        let p = weighted(None).unwrap();
        assert!(p.output_bucket_dir("", 0, 0, 1).0.starts_with("file:"));
        assert!(p.output_bucket_dir("", 0, 1, 1).0.starts_with("s3:"));
        for bad in ["1", "1,0", "1,x", "1,2,3"] {
            let e = weighted(Some(bad)).unwrap_err();
            assert!(e.to_string().contains("weights"), "{bad}: {e}");
        }
        let e = TablePaths::new("t")
            .with_external_paths(
                &opts(&[
                    ("data-file.external-paths", paths),
                    ("data-file.external-paths.strategy", "fastest"),
                ]),
                "s",
            )
            .unwrap_err();
        assert!(matches!(e.kind, crate::ErrorKind::InvalidOption { .. }));
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
