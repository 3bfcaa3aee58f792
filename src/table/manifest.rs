//! Manifest lists (`ManifestFileMeta`, format.md §5) and manifests (`ManifestEntry` +
//! `DataFileMeta`, format.md §6).
//!
//! Entries are kept with every field Paimon wrote, because a compaction's DELETE entry must
//! repeat the removed file's metadata verbatim (same level, same stats) for Paimon to cancel
//! the ADD it matches. Written files use Java's Avro schemas exactly.

use apache_avro::types::Value;

use super::avro::{self, put, Rec};
use super::binary_row::BinaryRow;
use crate::error::{Error, Result};

/// `_VERSION` of manifest entries and manifest file metas.
pub const MANIFEST_VERSION: i32 = 2;

/// ADD or DELETE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileKind {
    /// `_KIND = 0`: the file becomes live.
    Add,
    /// `_KIND = 1`: cancels the ADD with the same [`FileIdentifier`].
    Delete,
}

impl FileKind {
    fn from_i32(v: i32, file: &str) -> Result<Self> {
        match v {
            0 => Ok(FileKind::Add),
            1 => Ok(FileKind::Delete),
            _ => Err(Error::corrupt(
                Some(file),
                format!("unknown entry kind {v}"),
            )),
        }
    }
    fn to_i32(self) -> i32 {
        match self {
            FileKind::Add => 0,
            FileKind::Delete => 1,
        }
    }
}

/// `SimpleStats`: min/max rows and null counts.
#[derive(Clone, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct SimpleStats {
    /// `_MIN_VALUES`: serialized BinaryRow (`format.md` §7) of the smallest value per column;
    /// a 0-arity row when there are no statistics.
    pub min_values: BinaryRow,
    /// `_MAX_VALUES`: serialized BinaryRow of the largest value per column, laid out like
    /// `min_values`.
    pub max_values: BinaryRow,
    /// `_NULL_COUNTS`: nulls per column, in the columns' order; `None` when the field is null,
    /// an inner `None` when one column's count is unknown.
    pub null_counts: Option<Vec<Option<i64>>>,
}

impl SimpleStats {
    /// "No statistics": two 0-arity rows and no null counts.
    pub fn empty() -> Self {
        SimpleStats {
            min_values: BinaryRow::empty(),
            max_values: BinaryRow::empty(),
            null_counts: Some(Vec::new()),
        }
    }

    fn read(r: &Rec<'_>) -> Result<Self> {
        Ok(SimpleStats {
            min_values: BinaryRow(r.bytes("_MIN_VALUES")?),
            max_values: BinaryRow(r.bytes("_MAX_VALUES")?),
            null_counts: r.opt_longs("_NULL_COUNTS")?,
        })
    }

    fn value(&self) -> Value {
        put::record(vec![
            ("_MIN_VALUES", Value::Bytes(self.min_values.0.clone())),
            ("_MAX_VALUES", Value::Bytes(self.max_values.0.clone())),
            (
                "_NULL_COUNTS",
                put::opt(self.null_counts.as_ref(), |v| {
                    Value::Array(v.iter().map(|c| put::opt(*c, Value::Long)).collect())
                }),
            ),
        ])
    }
}

/// Paimon's `DataFileMeta`: every field of a data file's manifest record (`_FILE`). Its JSON
/// form (fan-out tasks and results) names the fields as here, rows in hex.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DataFileMeta {
    /// `_FILE_NAME`: one path component, resolved against the bucket directory unless
    /// `external_path` is set (`format.md` §1).
    pub file_name: String,
    /// `_FILE_SIZE`: the file's size in bytes.
    pub file_size: i64,
    /// `_ROW_COUNT`: physical rows in the file, retracts included.
    pub row_count: i64,
    /// `_MIN_KEY`: BinaryRow of the smallest trimmed primary key; a 0-arity row for append
    /// tables.
    pub min_key: BinaryRow,
    /// `_MAX_KEY`: BinaryRow of the largest trimmed primary key; a 0-arity row for append
    /// tables.
    pub max_key: BinaryRow,
    /// `_KEY_STATS`: statistics of the key columns ([`SimpleStats::empty`] when none).
    pub key_stats: SimpleStats,
    /// `_VALUE_STATS`: statistics of the columns named by `value_stats_cols`; readers skip
    /// files with them, so only certain bounds are written (`format.md` §6).
    pub value_stats: SimpleStats,
    /// `_MIN_SEQUENCE_NUMBER`: smallest `_SEQUENCE_NUMBER` of the file's records.
    pub min_sequence_number: i64,
    /// `_MAX_SEQUENCE_NUMBER`: largest `_SEQUENCE_NUMBER` of the file's records.
    pub max_sequence_number: i64,
    /// `_SCHEMA_ID`: the schema version the file was written with (`format.md` §2).
    pub schema_id: i64,
    /// `_LEVEL`: the LSM level; always 0 in append tables.
    pub level: i32,
    /// `_EXTRA_FILES`: names of files that belong to this one (Paimon's extra index files);
    /// part of the file's identity, never written by us.
    pub extra_files: Vec<String>,
    /// `_CREATION_TIME`, epoch milliseconds; `None` when the writer recorded none. Our
    /// outputs carry the job's `now`.
    pub creation_time: Option<i64>,
    /// `_DELETE_ROW_COUNT`: retract (`-U`/`-D`) rows in the file; `None` means unknown, and
    /// readers must then merge. A claimed zero is verified before it is trusted
    /// (`format.md` §6).
    pub delete_row_count: Option<i64>,
    /// `_EMBEDDED_FILE_INDEX`: a file index embedded in the manifest; part of the file's
    /// identity, `None` on our outputs.
    pub embedded_file_index: Option<Vec<u8>>,
    /// 0 APPEND, 1 COMPACT.
    pub file_source: Option<i32>,
    /// `_VALUE_STATS_COLS`: the columns `value_stats` covers, in its order; `None` means every
    /// column of the file's schema, `Some(empty)` none.
    pub value_stats_cols: Option<Vec<String>>,
    /// `_EXTERNAL_PATH`: the file's absolute URI when it lives outside the table directory
    /// (`data-file.external-paths`); `None` for files under the bucket directory.
    pub external_path: Option<String>,
    /// `_FIRST_ROW_ID`: row tracking's id of the file's first row; kept as read, `None` on
    /// our outputs (row-tracking tables are refused).
    pub first_row_id: Option<i64>,
    /// `_WRITE_COLS`: the columns a data-evolution writer wrote into the file (`None` = all);
    /// kept as read, `None` on our outputs.
    pub write_cols: Option<Vec<String>>,
    /// `_WRITE_COLS_SEQUENCES`: per column of `write_cols`, a sequence of its writer; kept as
    /// read (a null element reads as 0), `None` on our outputs.
    pub write_cols_sequences: Option<Vec<i64>>,
}

impl DataFileMeta {
    fn read(r: &Rec<'_>) -> Result<Self> {
        Ok(DataFileMeta {
            file_name: r.string("_FILE_NAME")?,
            file_size: r.long("_FILE_SIZE")?,
            row_count: r.long("_ROW_COUNT")?,
            min_key: BinaryRow(r.bytes("_MIN_KEY")?),
            max_key: BinaryRow(r.bytes("_MAX_KEY")?),
            key_stats: SimpleStats::read(&r.record("_KEY_STATS")?)?,
            value_stats: SimpleStats::read(&r.record("_VALUE_STATS")?)?,
            min_sequence_number: r.long("_MIN_SEQUENCE_NUMBER")?,
            max_sequence_number: r.long("_MAX_SEQUENCE_NUMBER")?,
            schema_id: r.long("_SCHEMA_ID")?,
            level: r.int("_LEVEL")?,
            extra_files: r.opt_strings("_EXTRA_FILES")?.unwrap_or_default(),
            creation_time: r.opt_long("_CREATION_TIME")?,
            delete_row_count: r.opt_long("_DELETE_ROW_COUNT")?,
            embedded_file_index: r.opt_bytes("_EMBEDDED_FILE_INDEX")?,
            file_source: r.opt_int("_FILE_SOURCE")?,
            value_stats_cols: r.opt_strings("_VALUE_STATS_COLS")?,
            external_path: r.opt_string("_EXTERNAL_PATH")?,
            first_row_id: r.opt_long("_FIRST_ROW_ID")?,
            write_cols: r.opt_strings("_WRITE_COLS")?,
            write_cols_sequences: r
                .opt_longs("_WRITE_COLS_SEQUENCES")?
                .map(|v| v.into_iter().map(|x| x.unwrap_or(0)).collect()),
        })
    }

    fn value(&self) -> Value {
        put::record(vec![
            ("_FILE_NAME", Value::String(self.file_name.clone())),
            ("_FILE_SIZE", Value::Long(self.file_size)),
            ("_ROW_COUNT", Value::Long(self.row_count)),
            ("_MIN_KEY", Value::Bytes(self.min_key.0.clone())),
            ("_MAX_KEY", Value::Bytes(self.max_key.0.clone())),
            ("_KEY_STATS", self.key_stats.value()),
            ("_VALUE_STATS", self.value_stats.value()),
            (
                "_MIN_SEQUENCE_NUMBER",
                Value::Long(self.min_sequence_number),
            ),
            (
                "_MAX_SEQUENCE_NUMBER",
                Value::Long(self.max_sequence_number),
            ),
            ("_SCHEMA_ID", Value::Long(self.schema_id)),
            ("_LEVEL", Value::Int(self.level)),
            ("_EXTRA_FILES", put::strings(&self.extra_files)),
            (
                "_CREATION_TIME",
                put::opt(self.creation_time, Value::TimestampMillis),
            ),
            (
                "_DELETE_ROW_COUNT",
                put::opt(self.delete_row_count, Value::Long),
            ),
            (
                "_EMBEDDED_FILE_INDEX",
                put::opt(self.embedded_file_index.clone(), Value::Bytes),
            ),
            ("_FILE_SOURCE", put::opt(self.file_source, Value::Int)),
            (
                "_VALUE_STATS_COLS",
                put::opt(self.value_stats_cols.as_deref(), put::strings),
            ),
            (
                "_EXTERNAL_PATH",
                put::opt(self.external_path.clone(), Value::String),
            ),
            ("_FIRST_ROW_ID", put::opt(self.first_row_id, Value::Long)),
            (
                "_WRITE_COLS",
                put::opt(self.write_cols.as_deref(), put::strings),
            ),
            (
                "_WRITE_COLS_SEQUENCES",
                put::opt(self.write_cols_sequences.as_ref(), |v| {
                    Value::Array(v.iter().map(|x| Value::Long(*x)).collect())
                }),
            ),
        ])
    }

    /// The same file recorded at another level (an upgrade).
    pub fn with_level(&self, level: i32) -> Self {
        DataFileMeta {
            level,
            ..self.clone()
        }
    }
}

/// What identifies a file across ADD and DELETE entries (`FileEntry.Identifier`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileIdentifier {
    /// Serialized partition row of the entry.
    pub partition: BinaryRow,
    /// Bucket of the entry.
    pub bucket: i32,
    /// [`DataFileMeta::level`]: the same file at another level is another identity (an
    /// upgrade is a DELETE and an ADD).
    pub level: i32,
    /// [`DataFileMeta::file_name`].
    pub file_name: String,
    /// [`DataFileMeta::extra_files`].
    pub extra_files: Vec<String>,
    /// [`DataFileMeta::embedded_file_index`].
    pub embedded_index: Option<Vec<u8>>,
    /// [`DataFileMeta::external_path`].
    pub external_path: Option<String>,
}

/// One manifest entry.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ManifestEntry {
    /// `_KIND`: ADD or DELETE.
    pub kind: FileKind,
    /// `_PARTITION`: the partition's values as a serialized BinaryRow (`format.md` §7); a
    /// 0-arity row for an unpartitioned table.
    pub partition: BinaryRow,
    /// `_BUCKET`: the bucket id (`format.md` §12).
    pub bucket: i32,
    /// `_TOTAL_BUCKETS`: the partition's bucket count when the entry was written; -1 for
    /// bucket-unaware tables. A change between plan and commit is a rescale the commit
    /// refuses (`format.md` §11).
    pub total_buckets: i32,
    /// `_FILE`: the data file's record, every field as read.
    pub file: DataFileMeta,
}

impl ManifestEntry {
    /// The identity a DELETE must match to cancel an ADD (`format.md` §6): partition,
    /// bucket, level, name, extra files, embedded index and external path.
    pub fn identifier(&self) -> FileIdentifier {
        FileIdentifier {
            partition: self.partition.clone(),
            bucket: self.bucket,
            level: self.file.level,
            file_name: self.file.file_name.clone(),
            extra_files: self.file.extra_files.clone(),
            embedded_index: self.file.embedded_file_index.clone(),
            external_path: self.file.external_path.clone(),
        }
    }

    fn read(v: &Value, file: &str) -> Result<Self> {
        let r = Rec::new(v, file, "manifest entry")?;
        let version = r.int("_VERSION")?;
        if version != MANIFEST_VERSION {
            return Err(Error::corrupt(
                Some(file),
                format!("manifest entry version {version}, expected {MANIFEST_VERSION}"),
            ));
        }
        let entry = ManifestEntry {
            kind: FileKind::from_i32(r.int("_KIND")?, file)?,
            partition: BinaryRow(r.bytes("_PARTITION")?),
            bucket: r.int("_BUCKET")?,
            total_buckets: r.int("_TOTAL_BUCKETS")?,
            file: DataFileMeta::read(&r.record("_FILE")?)?,
        };
        // A bucket is its directory (`bucket-<n>`): a negative one other than the postpone
        // bucket, or one beyond the bucket count recorded beside it, names a directory no
        // writer of the table uses.
        let in_range = if entry.bucket == POSTPONE_BUCKET {
            true
        } else if entry.total_buckets > 0 {
            (0..entry.total_buckets).contains(&entry.bucket)
        } else {
            entry.bucket >= 0
        };
        if !in_range {
            return Err(Error::corrupt(
                Some(file),
                format!(
                    "file '{}' is in bucket {} of {} buckets",
                    entry.file.file_name, entry.bucket, entry.total_buckets
                ),
            ));
        }
        Ok(entry)
    }

    fn value(&self) -> Value {
        put::record(vec![
            ("_VERSION", Value::Int(MANIFEST_VERSION)),
            ("_KIND", Value::Int(self.kind.to_i32())),
            ("_PARTITION", Value::Bytes(self.partition.0.clone())),
            ("_BUCKET", Value::Int(self.bucket)),
            ("_TOTAL_BUCKETS", Value::Int(self.total_buckets)),
            ("_FILE", self.file.value()),
        ])
    }
}

/// The bucket id Paimon gives files of a postpone-bucket table (`bucket = -2`) before a
/// rescale assigns them to real buckets.
pub const POSTPONE_BUCKET: i32 = -2;

/// One entry of a manifest list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestFileMeta {
    /// `_FILE_NAME`: the manifest's name under `manifest/`.
    pub file_name: String,
    /// `_FILE_SIZE`: the manifest's size in bytes.
    pub file_size: i64,
    /// `_NUM_ADDED_FILES`: ADD entries in the manifest.
    pub num_added_files: i64,
    /// `_NUM_DELETED_FILES`: DELETE entries in the manifest.
    pub num_deleted_files: i64,
    /// `_PARTITION_STATS`: smallest and largest partition values among the entries; readers
    /// prune manifests with it, so it must be exact (`format.md` §5).
    pub partition_stats: SimpleStats,
    /// `_SCHEMA_ID`: the schema version the manifest was written under.
    pub schema_id: i64,
    /// `_MIN_BUCKET`: smallest bucket among the entries; `None` when the writer recorded no
    /// range.
    pub min_bucket: Option<i32>,
    /// `_MAX_BUCKET`: largest bucket among the entries; `None` when not recorded.
    pub max_bucket: Option<i32>,
    /// `_MIN_LEVEL`: lowest level among the entries; `None` when not recorded.
    pub min_level: Option<i32>,
    /// `_MAX_LEVEL`: highest level among the entries; `None` when not recorded.
    pub max_level: Option<i32>,
    /// `_MIN_ROW_ID`: row tracking's smallest row id; `None` on manifests we write.
    pub min_row_id: Option<i64>,
    /// `_MAX_ROW_ID`: row tracking's largest row id; `None` on manifests we write.
    pub max_row_id: Option<i64>,
}

impl ManifestFileMeta {
    fn read(v: &Value, file: &str) -> Result<Self> {
        let r = Rec::new(v, file, "manifest list entry")?;
        let version = r.int("_VERSION")?;
        if version != MANIFEST_VERSION {
            return Err(Error::corrupt(
                Some(file),
                format!("manifest file meta version {version}, expected {MANIFEST_VERSION}"),
            ));
        }
        Ok(ManifestFileMeta {
            file_name: r.string("_FILE_NAME")?,
            file_size: r.long("_FILE_SIZE")?,
            num_added_files: r.long("_NUM_ADDED_FILES")?,
            num_deleted_files: r.long("_NUM_DELETED_FILES")?,
            partition_stats: SimpleStats::read(&r.record("_PARTITION_STATS")?)?,
            schema_id: r.long("_SCHEMA_ID")?,
            min_bucket: r.opt_int("_MIN_BUCKET")?,
            max_bucket: r.opt_int("_MAX_BUCKET")?,
            min_level: r.opt_int("_MIN_LEVEL")?,
            max_level: r.opt_int("_MAX_LEVEL")?,
            min_row_id: r.opt_long("_MIN_ROW_ID")?,
            max_row_id: r.opt_long("_MAX_ROW_ID")?,
        })
    }

    fn value(&self) -> Value {
        put::record(vec![
            ("_VERSION", Value::Int(MANIFEST_VERSION)),
            ("_FILE_NAME", Value::String(self.file_name.clone())),
            ("_FILE_SIZE", Value::Long(self.file_size)),
            ("_NUM_ADDED_FILES", Value::Long(self.num_added_files)),
            ("_NUM_DELETED_FILES", Value::Long(self.num_deleted_files)),
            ("_PARTITION_STATS", self.partition_stats.value()),
            ("_SCHEMA_ID", Value::Long(self.schema_id)),
            ("_MIN_BUCKET", put::opt(self.min_bucket, Value::Int)),
            ("_MAX_BUCKET", put::opt(self.max_bucket, Value::Int)),
            ("_MIN_LEVEL", put::opt(self.min_level, Value::Int)),
            ("_MAX_LEVEL", put::opt(self.max_level, Value::Int)),
            ("_MIN_ROW_ID", put::opt(self.min_row_id, Value::Long)),
            ("_MAX_ROW_ID", put::opt(self.max_row_id, Value::Long)),
        ])
    }
}

fn stats_schema(name: &str) -> String {
    format!(
        r#"{{"type":"record","name":"{name}","fields":[
          {{"name":"_MIN_VALUES","type":"bytes"}},
          {{"name":"_MAX_VALUES","type":"bytes"}},
          {{"name":"_NULL_COUNTS","type":["null",{{"type":"array","items":["null","long"]}}],"default":null}}]}}"#
    )
}

/// Java's `ManifestEntry` Avro schema (AvroSchemaConverter naming).
pub fn manifest_entry_schema() -> String {
    format!(
        r#"{{"type":"record","name":"record","namespace":"org.apache.paimon.avro.generated","fields":[
      {{"name":"_VERSION","type":"int"}},
      {{"name":"_KIND","type":"int"}},
      {{"name":"_PARTITION","type":"bytes"}},
      {{"name":"_BUCKET","type":"int"}},
      {{"name":"_TOTAL_BUCKETS","type":"int"}},
      {{"name":"_FILE","type":{{"type":"record","name":"record__FILE","fields":[
        {{"name":"_FILE_NAME","type":"string"}},
        {{"name":"_FILE_SIZE","type":"long"}},
        {{"name":"_ROW_COUNT","type":"long"}},
        {{"name":"_MIN_KEY","type":"bytes"}},
        {{"name":"_MAX_KEY","type":"bytes"}},
        {{"name":"_KEY_STATS","type":{key_stats}}},
        {{"name":"_VALUE_STATS","type":{value_stats}}},
        {{"name":"_MIN_SEQUENCE_NUMBER","type":"long"}},
        {{"name":"_MAX_SEQUENCE_NUMBER","type":"long"}},
        {{"name":"_SCHEMA_ID","type":"long"}},
        {{"name":"_LEVEL","type":"int"}},
        {{"name":"_EXTRA_FILES","type":{{"type":"array","items":"string"}}}},
        {{"name":"_CREATION_TIME","type":["null",{{"type":"long","logicalType":"timestamp-millis"}}],"default":null}},
        {{"name":"_DELETE_ROW_COUNT","type":["null","long"],"default":null}},
        {{"name":"_EMBEDDED_FILE_INDEX","type":["null","bytes"],"default":null}},
        {{"name":"_FILE_SOURCE","type":["null","int"],"default":null}},
        {{"name":"_VALUE_STATS_COLS","type":["null",{{"type":"array","items":"string"}}],"default":null}},
        {{"name":"_EXTERNAL_PATH","type":["null","string"],"default":null}},
        {{"name":"_FIRST_ROW_ID","type":["null","long"],"default":null}},
        {{"name":"_WRITE_COLS","type":["null",{{"type":"array","items":"string"}}],"default":null}},
        {{"name":"_WRITE_COLS_SEQUENCES","type":["null",{{"type":"array","items":"long"}}],"default":null}}
      ]}}}}]}}"#,
        key_stats = stats_schema("record__FILE__KEY_STATS"),
        value_stats = stats_schema("record__FILE__VALUE_STATS"),
    )
}

/// Java's `ManifestFileMeta` Avro schema.
pub fn manifest_file_meta_schema() -> String {
    format!(
        r#"{{"type":"record","name":"record","namespace":"org.apache.paimon.avro.generated","fields":[
      {{"name":"_VERSION","type":"int"}},
      {{"name":"_FILE_NAME","type":"string"}},
      {{"name":"_FILE_SIZE","type":"long"}},
      {{"name":"_NUM_ADDED_FILES","type":"long"}},
      {{"name":"_NUM_DELETED_FILES","type":"long"}},
      {{"name":"_PARTITION_STATS","type":{stats}}},
      {{"name":"_SCHEMA_ID","type":"long"}},
      {{"name":"_MIN_BUCKET","type":["null","int"],"default":null}},
      {{"name":"_MAX_BUCKET","type":["null","int"],"default":null}},
      {{"name":"_MIN_LEVEL","type":["null","int"],"default":null}},
      {{"name":"_MAX_LEVEL","type":["null","int"],"default":null}},
      {{"name":"_MIN_ROW_ID","type":["null","long"],"default":null}},
      {{"name":"_MAX_ROW_ID","type":["null","long"],"default":null}}]}}"#,
        stats = stats_schema("record__PARTITION_STATS"),
    )
}

/// Decodes a manifest file.
pub fn decode_manifest(bytes: &[u8], file: &str) -> Result<Vec<ManifestEntry>> {
    avro::read_records(bytes, file, |v| ManifestEntry::read(v, file))
}

/// Decodes a manifest list.
pub fn decode_manifest_list(bytes: &[u8], file: &str) -> Result<Vec<ManifestFileMeta>> {
    avro::read_records(bytes, file, |v| ManifestFileMeta::read(v, file))
}

/// Encodes a manifest file.
pub fn encode_manifest(
    entries: &[ManifestEntry],
    codec: apache_avro::Codec,
    marker: [u8; 16],
) -> Result<Vec<u8>> {
    let schema = avro::parse_schema(&manifest_entry_schema())?;
    avro::write_records(
        &schema,
        entries.iter().map(ManifestEntry::value),
        codec,
        marker,
    )
}

/// Encodes `entries` into manifest files of about `target` bytes each
/// (`manifest.target-file-size`, as Paimon's writer rolls them), each with the next `marker()`.
/// Returns each file's bytes and how many of the entries, in order, it holds.
pub fn encode_manifests_rolling(
    entries: &[ManifestEntry],
    codec: apache_avro::Codec,
    target: u64,
    marker: impl FnMut() -> [u8; 16],
) -> Result<Vec<(Vec<u8>, usize)>> {
    let schema = avro::parse_schema(&manifest_entry_schema())?;
    avro::write_records_rolling(
        &schema,
        entries.iter().map(ManifestEntry::value),
        codec,
        target,
        marker,
    )
}

/// Encodes a manifest list.
pub fn encode_manifest_list(
    metas: &[ManifestFileMeta],
    codec: apache_avro::Codec,
    marker: [u8; 16],
) -> Result<Vec<u8>> {
    let schema = avro::parse_schema(&manifest_file_meta_schema())?;
    avro::write_records(
        &schema,
        metas.iter().map(ManifestFileMeta::value),
        codec,
        marker,
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample_file(name: &str, level: i32) -> DataFileMeta {
        DataFileMeta {
            file_name: name.into(),
            file_size: 100,
            row_count: 3,
            min_key: BinaryRow::empty(),
            max_key: BinaryRow::empty(),
            key_stats: SimpleStats::empty(),
            value_stats: SimpleStats::empty(),
            min_sequence_number: 0,
            max_sequence_number: 2,
            schema_id: 0,
            level,
            extra_files: vec![],
            creation_time: Some(1_700_000_000_000),
            delete_row_count: Some(0),
            embedded_file_index: None,
            file_source: Some(0),
            value_stats_cols: Some(vec![]),
            external_path: None,
            first_row_id: None,
            write_cols: None,
            write_cols_sequences: None,
        }
    }

    #[test]
    fn manifest_round_trips_with_every_codec() {
        let entries = vec![
            ManifestEntry {
                kind: FileKind::Add,
                partition: BinaryRow::empty(),
                bucket: 0,
                total_buckets: -1,
                file: sample_file("data-a-0.parquet", 0),
            },
            ManifestEntry {
                kind: FileKind::Delete,
                partition: BinaryRow::empty(),
                bucket: 3,
                total_buckets: 4,
                file: sample_file("data-b-0.parquet", 2),
            },
        ];
        for codec in ["zstd", "snappy", "deflate", "none"] {
            let bytes =
                encode_manifest(&entries, avro::codec_for(codec).unwrap(), [7; 16]).unwrap();
            assert_eq!(decode_manifest(&bytes, "m").unwrap(), entries, "{codec}");
        }
        let metas = vec![ManifestFileMeta {
            file_name: "manifest-x-0".into(),
            file_size: 10,
            num_added_files: 1,
            num_deleted_files: 1,
            partition_stats: SimpleStats::empty(),
            schema_id: 0,
            min_bucket: Some(0),
            max_bucket: Some(3),
            min_level: Some(0),
            max_level: Some(2),
            min_row_id: None,
            max_row_id: None,
        }];
        let bytes =
            encode_manifest_list(&metas, avro::codec_for("zstd").unwrap(), [1; 16]).unwrap();
        assert_eq!(decode_manifest_list(&bytes, "l").unwrap(), metas);
    }

    #[test]
    fn truncated_manifest_is_corrupt_and_named() {
        let entries = vec![ManifestEntry {
            kind: FileKind::Add,
            partition: BinaryRow::empty(),
            bucket: 0,
            total_buckets: 1,
            file: sample_file("data-a-0.parquet", 0),
        }];
        let bytes = encode_manifest(&entries, avro::codec_for("zstd").unwrap(), [7; 16]).unwrap();
        for cut in [0, 3, 10, bytes.len() / 2, bytes.len() - 1] {
            let e = decode_manifest(&bytes[..cut], "manifest/manifest-t-0").unwrap_err();
            assert!(
                matches!(e.kind, crate::ErrorKind::CorruptInput { .. }),
                "{cut}: {e}"
            );
            assert!(e.message.contains("manifest/manifest-t-0"), "{e}");
        }
    }
}
