//! Reading a table: its latest schema, its latest snapshot, and the live files of every
//! partition and bucket with their deletion vectors (format.md §1–§6, §10).
//!
//! The live set of a snapshot is the fold of its base and delta manifest lists: an ADD puts a
//! file, a DELETE removes it. Adding a file that is already live is corrupt metadata. Every
//! file name read from metadata is validated before it becomes a path.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::binary_row::{order_key, BinaryRow, Datum};
use super::index::{self, DeletionVectorMeta, IndexManifestEntry, DELETION_VECTORS_INDEX};
use super::manifest::{self, FileIdentifier, FileKind, ManifestEntry, ManifestFileMeta};
use super::path::{partition_path, TablePaths, DEFAULT_PARTITION_NAME};
use super::schema::{DataType, SchemaVersions, TableSchema};
use super::snapshot::{latest_snapshot_id, read_snapshot, Snapshot};
use crate::error::{Error, Result};
use crate::meta::{CompactionFile, FileSource, Key, Level, SequenceNumber};
use crate::options::CoreOptions;
use crate::storage::Storage;

/// A table's static description: where it is, its latest schema, its options.
#[derive(Clone, Debug)]
pub struct Table {
    /// The table's directory layout, with `data-file.path-directory` and
    /// `data-file.external-paths` applied (`format.md` §1).
    pub paths: TablePaths,
    /// The latest schema, with a job's dynamic options applied when loaded by
    /// [`Table::load_for_job`].
    pub schema: TableSchema,
    /// Path of the schema file it was read from (`schema/schema-<id>`), for error messages.
    pub schema_file: String,
    /// The schema's options, parsed (`compaction.md` §2).
    pub options: CoreOptions,
    /// Types of the partition columns, in partition-key order; the layout of every
    /// partition BinaryRow.
    pub partition_types: Vec<DataType>,
    /// Types of the trimmed primary key (empty for append tables).
    pub key_types: Vec<DataType>,
    /// `partition.default-name`: the directory value of a null or blank partition value
    /// (default `__DEFAULT_PARTITION__`).
    pub default_partition_name: String,
    /// The schema versions of the table's files, read once each and compared with the latest:
    /// whether a file needs schema evolution is decided there, for every caller.
    pub schema_versions: SchemaVersions,
}

impl Table {
    /// Loads the latest schema of the table at `table_path` (relative to the storage root).
    pub fn load(storage: &dyn Storage, table_path: &str) -> Result<Self> {
        let paths = TablePaths::new(table_path);
        let prefix = format!("{}/schema-", paths.schema_dir());
        let latest = storage
            .list(&prefix)?
            .iter()
            .filter_map(|o| o.path.strip_prefix(&prefix)?.parse::<i64>().ok())
            .max()
            .ok_or_else(|| {
                Error::corrupt(
                    Some(&paths.schema_dir()),
                    "no schema file: this is not a Paimon table",
                )
            })?;
        Self::with_schema(storage, paths, latest)
    }

    /// Loads a table with a given schema version.
    pub fn with_schema(storage: &dyn Storage, paths: TablePaths, schema_id: i64) -> Result<Self> {
        let schema_file = paths.schema(schema_id);
        let schema = TableSchema::from_json(&storage.read_all(&schema_file)?, &schema_file)?;
        Self::from_schema(paths, schema, schema_file)
    }

    /// Loads the latest schema as a dedicated compaction job sees it: the job's dynamic
    /// options applied on top of the schema's and `write-only` forced off (in memory only; the
    /// schema file is never rewritten). Returns the table and warnings about ignored overrides.
    pub fn load_for_job(
        storage: &dyn Storage,
        table_path: &str,
        overrides: &[(String, String)],
    ) -> Result<(Self, Vec<String>)> {
        let stored = Self::load(storage, table_path)?;
        let (options, warnings) = super::scope::job_options(&stored.schema.options, overrides)?;
        if options == stored.schema.options {
            return Ok((stored, warnings));
        }
        let mut schema = stored.schema;
        schema.options = options;
        let paths = TablePaths::new(stored.paths.root());
        Ok((
            Self::from_schema(paths, schema, stored.schema_file)?,
            warnings,
        ))
    }

    fn from_schema(paths: TablePaths, schema: TableSchema, schema_file: String) -> Result<Self> {
        let options = schema.core_options()?;
        let paths = paths
            .with_data_dir(schema.options.get("data-file.path-directory").cloned())
            .with_external_paths(&schema.options, &schema_file)?;
        let partition_types = schema
            .partition_fields()
            .iter()
            .map(|f| f.data_type.clone())
            .collect();
        let key_types = schema
            .trimmed_primary_keys()
            .iter()
            .map(|f| f.data_type.clone())
            .collect();
        let default_partition_name = schema
            .options
            .get("partition.default-name")
            .cloned()
            .unwrap_or_else(|| DEFAULT_PARTITION_NAME.to_string());
        Ok(Table {
            paths,
            schema,
            schema_file,
            options,
            partition_types,
            key_types,
            default_partition_name,
            schema_versions: SchemaVersions::default(),
        })
    }

    /// The typed values of a partition row.
    pub fn partition_values(&self, partition: &BinaryRow, source: &str) -> Result<Vec<Datum>> {
        partition.decode(&self.partition_types, source, "partition")
    }

    /// The directory path of a partition (`k=v/...`).
    pub fn partition_path(&self, partition: &BinaryRow, source: &str) -> Result<String> {
        let values = self.partition_values(partition, source)?;
        Ok(partition_path(
            &values,
            &self.schema.partition_fields(),
            &self.default_partition_name,
        ))
    }

    /// The order-preserving planner key of a serialized min/max key.
    pub fn key(&self, row: &BinaryRow, source: &str, what: &str) -> Result<Key> {
        if self.key_types.is_empty() {
            return Ok(Key::default());
        }
        Ok(order_key(&row.decode(&self.key_types, source, what)?))
    }
}

/// A live data file and, if it has one, where its deletion vector is.
#[derive(Clone, Debug)]
pub struct LiveFile {
    /// The ADD entry that made the file live, every field as read (a DELETE repeats it
    /// verbatim, `format.md` §6).
    pub entry: ManifestEntry,
    /// The manifest the ADD came from (for error messages).
    pub source: String,
    /// Index file name and the vector's location in it.
    pub deletion_vector: Option<(String, DeletionVectorMeta)>,
}

/// The live files of one partition and bucket.
#[derive(Clone, Debug)]
pub struct BucketState {
    /// The partition as serialized in the manifests.
    pub partition: BinaryRow,
    /// The partition's typed values, in partition-key order.
    pub partition_values: Vec<Datum>,
    /// The partition's directory, `k1=v1/k2=v2` (empty for an unpartitioned table).
    pub partition_path: String,
    /// Bucket id.
    pub bucket: i32,
    /// `_TOTAL_BUCKETS` of the bucket's first live entry: the partition's bucket count (-1
    /// for bucket-unaware tables).
    pub total_buckets: i32,
    /// The live data files, in the order their ADD entries appear in the manifests.
    pub files: Vec<LiveFile>,
}

impl BucketState {
    /// The files as the planner sees them, in the same order as `files`.
    pub fn planner_files(&self, table: &Table) -> Result<Vec<Arc<CompactionFile>>> {
        self.files
            .iter()
            .map(|f| planner_meta(table, f).map(Arc::new))
            .collect()
    }

    /// Sum of the live files' sizes in bytes (a negative recorded size counts as 0).
    pub fn total_size(&self) -> u64 {
        self.files
            .iter()
            .map(|f| f.entry.file.file_size.max(0) as u64)
            .sum()
    }
}

/// The planner's view of one live file.
pub fn planner_meta(table: &Table, f: &LiveFile) -> Result<CompactionFile> {
    let d = &f.entry.file;
    let level = u32::try_from(d.level)
        .ok()
        .filter(|l| *l < Level::LIMIT)
        .ok_or_else(|| {
            Error::corrupt(
                Some(&f.source),
                format!("file '{}' has level {}", d.file_name, d.level),
            )
        })?;
    let nonneg = |v: i64, what: &str| -> Result<u64> {
        u64::try_from(v).map_err(|_| {
            Error::corrupt(
                Some(&f.source),
                format!("file '{}' has {what} {v}", d.file_name),
            )
        })
    };
    Ok(CompactionFile {
        file_name: d.file_name.clone(),
        file_size: nonneg(d.file_size, "size")?,
        row_count: nonneg(d.row_count, "row count")?,
        min_key: table.key(&d.min_key, &f.source, "min key")?,
        max_key: table.key(&d.max_key, &f.source, "max key")?,
        min_sequence_number: SequenceNumber(d.min_sequence_number),
        max_sequence_number: SequenceNumber(d.max_sequence_number),
        level: Level::new(level),
        delete_row_count: d.delete_row_count.map(|c| c.max(0) as u64),
        creation_time_ms: d.creation_time.unwrap_or(0),
        file_source: if d.file_source == Some(1) {
            FileSource::Compact
        } else {
            FileSource::Append
        },
        has_deletion_vector: f.deletion_vector.is_some(),
    })
}

/// A table at one snapshot.
#[derive(Clone, Debug)]
pub struct TableState {
    /// The table as loaded (latest schema and options).
    pub table: Table,
    /// `None` for a table that has no snapshot yet.
    pub snapshot: Option<Snapshot>,
    /// Every manifest of the snapshot (base, then delta), in order.
    pub manifests: Vec<ManifestFileMeta>,
    /// The live files by serialized partition and bucket; only buckets with at least one
    /// live file appear.
    pub buckets: BTreeMap<(BinaryRow, i32), BucketState>,
    /// The live index files (the snapshot's index manifest).
    pub index_entries: Vec<IndexManifestEntry>,
}

impl TableState {
    /// Id of the snapshot read; `None` for a table without snapshots.
    pub fn snapshot_id(&self) -> Option<i64> {
        self.snapshot.as_ref().map(|s| s.id)
    }

    /// Live data files over every bucket.
    pub fn file_count(&self) -> usize {
        self.buckets.values().map(|b| b.files.len()).sum()
    }
}

/// Reads a manifest list by name.
pub fn read_manifest_list(
    storage: &dyn Storage,
    paths: &TablePaths,
    name: &str,
    source: &str,
) -> Result<Vec<ManifestFileMeta>> {
    let path = paths.manifest(name, source)?;
    manifest::decode_manifest_list(&storage.read_all(&path)?, &path)
}

/// The manifests of a snapshot: base then delta.
pub fn snapshot_manifests(
    storage: &dyn Storage,
    paths: &TablePaths,
    snapshot: &Snapshot,
) -> Result<Vec<ManifestFileMeta>> {
    let source = paths.snapshot(snapshot.id);
    let mut all = read_manifest_list(storage, paths, &snapshot.base_manifest_list, &source)?;
    all.extend(read_manifest_list(
        storage,
        paths,
        &snapshot.delta_manifest_list,
        &source,
    )?);
    Ok(all)
}

/// Reads a manifest's entries.
pub fn read_manifest(
    storage: &dyn Storage,
    paths: &TablePaths,
    meta: &ManifestFileMeta,
    source: &str,
) -> Result<(String, Vec<ManifestEntry>)> {
    let path = paths.manifest(&meta.file_name, source)?;
    let entries = manifest::decode_manifest(&storage.read_all(&path)?, &path)?;
    Ok((path, entries))
}

/// Folds manifests into the live files (ADD puts, DELETE removes), remembering each file's
/// manifest. Only partitions accepted by `keep` are kept.
pub fn live_entries(
    storage: &dyn Storage,
    paths: &TablePaths,
    manifests: &[ManifestFileMeta],
    source: &str,
    keep: &dyn Fn(&BinaryRow) -> bool,
) -> Result<Vec<(ManifestEntry, String)>> {
    let mut live: HashMap<FileIdentifier, (usize, ManifestEntry, String)> = HashMap::new();
    let mut order = 0usize;
    for meta in manifests {
        let (path, entries) = read_manifest(storage, paths, meta, source)?;
        for e in entries {
            if !keep(&e.partition) {
                continue;
            }
            let id = e.identifier();
            match e.kind {
                FileKind::Add => {
                    if live.contains_key(&id) {
                        return Err(Error::corrupt(
                            Some(&path),
                            format!(
                                "file '{}' (bucket {}, level {}) is added while already live",
                                e.file.file_name, e.bucket, e.file.level
                            ),
                        ));
                    }
                    order += 1;
                    live.insert(id, (order, e, path.clone()));
                }
                FileKind::Delete => {
                    live.remove(&id);
                }
            }
        }
    }
    let mut out: Vec<_> = live.into_values().collect();
    out.sort_by_key(|(o, _, _)| *o);
    Ok(out.into_iter().map(|(_, e, p)| (e, p)).collect())
}

/// Reads the index manifest of a snapshot.
pub fn read_index_manifest(
    storage: &dyn Storage,
    paths: &TablePaths,
    snapshot: &Snapshot,
) -> Result<Vec<IndexManifestEntry>> {
    let Some(name) = &snapshot.index_manifest else {
        return Ok(Vec::new());
    };
    let path = paths.manifest(name, &paths.snapshot(snapshot.id))?;
    let entries = index::decode_index_manifest(&storage.read_all(&path)?, &path)?;
    for e in &entries {
        paths.index_file(&e.file_name, &path)?;
    }
    Ok(entries)
}

/// Reads the table at its latest snapshot.
pub fn scan(storage: &dyn Storage, table_path: &str) -> Result<TableState> {
    let table = Table::load(storage, table_path)?;
    let id = latest_snapshot_id(storage, &table.paths)?;
    scan_at(storage, table, id)
}

/// Reads the table at snapshot `id` (`None`: empty table).
pub fn scan_at(storage: &dyn Storage, table: Table, id: Option<i64>) -> Result<TableState> {
    let Some(id) = id else {
        return Ok(TableState {
            table,
            snapshot: None,
            manifests: Vec::new(),
            buckets: BTreeMap::new(),
            index_entries: Vec::new(),
        });
    };
    let snapshot = read_snapshot(storage, &table.paths, id)?;
    let manifests = snapshot_manifests(storage, &table.paths, &snapshot)?;
    let source = table.paths.snapshot(id);
    let entries = live_entries(storage, &table.paths, &manifests, &source, &|_| true)?;
    let index_entries = read_index_manifest(storage, &table.paths, &snapshot)?;

    // Deletion vectors by (partition, bucket, data file).
    let mut dvs: HashMap<(BinaryRow, i32, String), (String, DeletionVectorMeta)> = HashMap::new();
    for e in &index_entries {
        if e.index_type != DELETION_VECTORS_INDEX {
            continue;
        }
        for r in e.dv_ranges.iter().flatten() {
            dvs.insert(
                (e.partition.clone(), e.bucket, r.data_file.clone()),
                (e.file_name.clone(), r.clone()),
            );
        }
    }

    let mut buckets: BTreeMap<(BinaryRow, i32), BucketState> = BTreeMap::new();
    let mut paths_of: HashMap<BinaryRow, (Vec<Datum>, String)> = HashMap::new();
    for (entry, source) in entries {
        // Names (and external URIs) are checked once here, before anything is planned.
        table.paths.live_data_file("", 0, &entry.file, &source)?;
        for extra in &entry.file.extra_files {
            super::path::validate_name(extra, &source)?;
        }
        if !paths_of.contains_key(&entry.partition) {
            let values = table.partition_values(&entry.partition, &source)?;
            let p = partition_path(
                &values,
                &table.schema.partition_fields(),
                &table.default_partition_name,
            );
            paths_of.insert(entry.partition.clone(), (values, p));
        }
        let (values, ppath) = &paths_of[&entry.partition];
        let key = (entry.partition.clone(), entry.bucket);
        let state = buckets.entry(key).or_insert_with(|| BucketState {
            partition: entry.partition.clone(),
            partition_values: values.clone(),
            partition_path: ppath.clone(),
            bucket: entry.bucket,
            total_buckets: entry.total_buckets,
            files: Vec::new(),
        });
        let deletion_vector = dvs
            .get(&(
                entry.partition.clone(),
                entry.bucket,
                entry.file.file_name.clone(),
            ))
            .cloned();
        state.files.push(LiveFile {
            entry,
            source,
            deletion_vector,
        });
    }
    Ok(TableState {
        table,
        snapshot: Some(snapshot),
        manifests,
        buckets,
        index_entries,
    })
}
