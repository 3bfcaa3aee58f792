//! A small Paimon table writer and the demo tables the README's main command compacts.
//!
//! [`TableWriter`] writes tables in Paimon's format with the project's own code: schema file,
//! Parquet data files (append layout, or the primary-key layout with `_KEY_*`,
//! `_SEQUENCE_NUMBER` and `_VALUE_KIND`), manifests and APPEND snapshots through the same
//! commit path compaction uses. Rows are bucketed with Paimon's Murmur hash of the bucket key,
//! sequence numbers continue from the bucket's live files, and primary-key files are sorted
//! by key with one row per key and an exact retract count. It writes only level 0, like a
//! writer that never compacts, which is what gives compaction something to do.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Date32Builder, Float32Builder, Float64Builder, Int16Builder,
    Int32Builder, Int64Builder, Int8Builder, StringBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

use super::binary_row::{order_key, BinaryRow, Datum};
use super::commit::{self, CommitDelta, CommitSettings, WrittenFiles};
use super::ids::IdGen;
use super::manifest::{DataFileMeta, FileKind, ManifestEntry, SimpleStats};
use super::path::TablePaths;
use super::scan::{scan, Table};
use super::schema::{DataField, DataType, TableSchema, TypeRoot};
use super::snapshot::CommitKind;
use crate::error::{Error, Result};
use crate::storage::Storage;

use crate::rewrite::merge::kv_format;
/// Row kinds of primary-key tables (the `_VALUE_KIND` byte): the merge rewriter's type.
pub use crate::rewrite::merge::kv_format::RowKind;

pub use super::bucket_function::{bucket_of, murmur_hash};

/// Creates a table: writes `schema/schema-0`.
pub fn create_table(storage: &dyn Storage, table_path: &str, schema: &TableSchema) -> Result<()> {
    let paths = TablePaths::new(table_path);
    storage.create_if_absent(&paths.schema(0), &schema.to_json())?;
    Ok(())
}

/// A field of a new schema.
pub fn field(id: i32, name: &str, data_type: &str) -> Result<DataField> {
    Ok(DataField {
        id,
        name: name.to_string(),
        data_type: DataType::parse(data_type, "schema")?,
        description: None,
    })
}

/// A new schema (id 0).
pub fn new_schema(
    fields: Vec<DataField>,
    partition_keys: &[&str],
    primary_keys: &[&str],
    options: &[(&str, &str)],
    now_ms: i64,
) -> TableSchema {
    TableSchema {
        id: 0,
        highest_field_id: fields.iter().map(|f| f.id).max().unwrap_or(-1),
        fields,
        partition_keys: partition_keys.iter().map(|s| s.to_string()).collect(),
        primary_keys: primary_keys.iter().map(|s| s.to_string()).collect(),
        options: options
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        comment: None,
        time_millis: now_ms,
    }
}

/// The Arrow type of a column the demo writer writes ([`DataType::to_arrow`]), for the types
/// [`column`] builds.
fn arrow_type(t: &DataType) -> Result<ArrowType> {
    match &t.root {
        TypeRoot::Boolean
        | TypeRoot::TinyInt
        | TypeRoot::SmallInt
        | TypeRoot::Int
        | TypeRoot::BigInt
        | TypeRoot::Float
        | TypeRoot::Double
        | TypeRoot::Char { .. }
        | TypeRoot::VarChar { .. }
        | TypeRoot::Binary { .. }
        | TypeRoot::VarBinary { .. }
        | TypeRoot::Date
        | TypeRoot::Decimal { .. }
        | TypeRoot::Time { .. }
        | TypeRoot::Timestamp { .. }
        | TypeRoot::LocalZonedTimestamp { .. } => t.to_arrow(),
        other => Err(Error::unsupported(format!(
            "the demo writer does not write {other:?} columns"
        ))),
    }
}

fn column(t: &ArrowType, values: &[&Datum]) -> Result<ArrayRef> {
    macro_rules! build {
        ($b:ty, $variant:ident) => {{
            let mut b = <$b>::new();
            for v in values {
                match v {
                    Datum::$variant(x) => b.append_value(x.clone()),
                    Datum::Null => b.append_null(),
                    other => {
                        return Err(Error::internal(format!("value {other:?} in a {t} column")))
                    }
                }
            }
            Arc::new(b.finish()) as ArrayRef
        }};
    }
    Ok(match t {
        ArrowType::Boolean => build!(BooleanBuilder, Boolean),
        ArrowType::Int8 => build!(Int8Builder, TinyInt),
        ArrowType::Int16 => build!(Int16Builder, SmallInt),
        ArrowType::Int32 => build!(Int32Builder, Int),
        ArrowType::Int64 => build!(Int64Builder, BigInt),
        ArrowType::Float32 => build!(Float32Builder, Float),
        ArrowType::Float64 => build!(Float64Builder, Double),
        ArrowType::Utf8 => build!(StringBuilder, String),
        ArrowType::Binary => build!(BinaryBuilder, Bytes),
        ArrowType::Date32 => build!(Date32Builder, Date),
        ArrowType::Decimal128(..) | ArrowType::Timestamp(..) | ArrowType::Time32(_) => {
            let owned: Vec<Datum> = values.iter().map(|v| (*v).clone()).collect();
            crate::rewrite::merge::kv_format::array_of(&owned, t)?
        }
        other => return Err(Error::unsupported(format!("column type {other}"))),
    })
}

/// Writes rows of a table, one APPEND snapshot per [`TableWriter::commit`].
pub struct TableWriter<'s> {
    storage: &'s dyn Storage,
    table_path: String,
    ids: IdGen,
}

impl<'s> TableWriter<'s> {
    /// A writer for the table at `table_path` (relative to the storage root, which must
    /// already hold its schema); `seed` plays the job id's part for [`IdGen`], so the same
    /// seed writes the same file names.
    pub fn new(storage: &'s dyn Storage, table_path: &str, seed: [u8; 16]) -> Self {
        TableWriter {
            storage,
            table_path: table_path.to_string(),
            ids: IdGen::new(seed),
        }
    }

    /// Writes `rows` (full table rows, in schema order, with their kind) as level-0 files, one
    /// per partition and bucket, and commits them. Returns the new snapshot id.
    pub fn commit(&mut self, rows: &[(RowKind, Vec<Datum>)], now_ms: i64) -> Result<i64> {
        self.commit_rolled(rows, now_ms, usize::MAX)
    }

    /// [`TableWriter::commit`], rolling to a new level-0 file every `rows_per_file` rows of a
    /// partition and bucket (primary-key rows in key order, so the files of one commit do not
    /// overlap), as a writer with a small target file size does. One snapshot for all: how
    /// tests build buckets of thousands of files without thousands of commits.
    pub fn commit_rolled(
        &mut self,
        rows: &[(RowKind, Vec<Datum>)],
        now_ms: i64,
        rows_per_file: usize,
    ) -> Result<i64> {
        let rows_per_file = rows_per_file.max(1);
        let state = scan(self.storage, &self.table_path)?;
        let table = &state.table;
        let schema = &table.schema;
        let pk = !schema.primary_keys.is_empty();
        let num_buckets = table.options.bucket;
        if num_buckets == 0 || num_buckets < -2 || (num_buckets == -2 && !pk) {
            return Err(Error::unsupported(
                "the demo writer writes fixed buckets, bucket = -1, or the postpone bucket of \
                 a primary-key table",
            ));
        }
        let index_of = |name: &str| schema.fields.iter().position(|f| f.name == name);
        let part_idx: Vec<usize> = schema
            .partition_keys
            .iter()
            .filter_map(|k| index_of(k))
            .collect();
        let key_idx: Vec<usize> = schema
            .trimmed_primary_keys()
            .iter()
            .filter_map(|f| index_of(&f.name))
            .collect();
        let bucket_key_idx: Vec<usize> = match schema.options.get("bucket-key") {
            Some(k) => k.split(',').filter_map(|c| index_of(c.trim())).collect(),
            None => key_idx.clone(),
        };
        let bucket_key_types: Vec<DataType> = bucket_key_idx
            .iter()
            .map(|&i| schema.fields[i].data_type.clone())
            .collect();

        // Group rows by partition and bucket.
        type Group<'r> = Vec<(RowKind, &'r Vec<Datum>)>;
        let mut groups: BTreeMap<(BinaryRow, i32), Group<'_>> = BTreeMap::new();
        for (kind, row) in rows {
            if row.len() != schema.fields.len() {
                return Err(Error::internal(format!(
                    "a row of {} values for {} columns",
                    row.len(),
                    schema.fields.len()
                )));
            }
            let part: Vec<Datum> = part_idx.iter().map(|&i| row[i].clone()).collect();
            let partition = BinaryRow::encode(&part, &table.partition_types)?;
            let bucket = if num_buckets == -1 {
                0
            } else if num_buckets == -2 {
                super::manifest::POSTPONE_BUCKET
            } else {
                let key: Vec<Datum> = bucket_key_idx.iter().map(|&i| row[i].clone()).collect();
                bucket_of(&BinaryRow::encode(&key, &bucket_key_types)?, num_buckets)
            };
            groups
                .entry((partition, bucket))
                .or_default()
                .push((*kind, row));
        }

        let mut written = WrittenFiles::default();
        let result = (|| -> Result<i64> {
            let mut delta = CommitDelta::default();
            for ((partition, bucket), mut group) in groups {
                let next_seq = state
                    .buckets
                    .get(&(partition.clone(), bucket))
                    .and_then(|b| {
                        b.files
                            .iter()
                            .map(|f| f.entry.file.max_sequence_number)
                            .max()
                    })
                    .map_or(0, |m| m + 1);
                if pk {
                    // Sort by key; the last row of a key in this commit wins (one per file).
                    let mut by_key: BTreeMap<crate::meta::Key, (RowKind, &Vec<Datum>)> =
                        BTreeMap::new();
                    for (kind, row) in group {
                        let key: Vec<Datum> = key_idx.iter().map(|&i| row[i].clone()).collect();
                        by_key.insert(order_key(&key), (kind, row));
                    }
                    group = by_key.into_values().collect();
                }
                let mut first_seq = next_seq;
                for rows in group.chunks(rows_per_file) {
                    let entry = self.write_file(
                        table,
                        &partition,
                        bucket,
                        rows,
                        first_seq,
                        &key_idx,
                        now_ms,
                        &mut written,
                    )?;
                    first_seq += rows.len() as i64;
                    delta.entries.push(entry);
                }
            }
            let settings = CommitSettings {
                kind: CommitKind::Append,
                commit_user: "paimon-compact-demo".into(),
                now_ms,
                max_retries: 3,
                jitter_seed: 0,
                merge_manifests: false,
                commit_identifier: i64::MAX,
            };
            let outcome = commit::commit(
                self.storage,
                table,
                state.snapshot_id(),
                &delta,
                &settings,
                &mut self.ids,
                &mut written,
            )?;
            Ok(outcome.snapshot_id)
        })();
        if result.is_err() {
            written.delete_all(self.storage);
        }
        result
    }

    #[allow(
        clippy::too_many_arguments,
        reason = "one data file: where it goes, its rows and the sequence and time it is stamped with"
    )]
    fn write_file(
        &mut self,
        table: &Table,
        partition: &BinaryRow,
        bucket: i32,
        rows: &[(RowKind, &Vec<Datum>)],
        first_seq: i64,
        key_idx: &[usize],
        now_ms: i64,
        written: &mut WrittenFiles,
    ) -> Result<ManifestEntry> {
        let schema = &table.schema;
        let pk = !schema.primary_keys.is_empty();
        let mut fields: Vec<Field> = Vec::new();
        let mut columns: Vec<ArrayRef> = Vec::new();
        if pk {
            for &i in key_idx {
                let f = &schema.fields[i];
                let t = arrow_type(&f.data_type)?;
                let vals: Vec<&Datum> = rows.iter().map(|(_, r)| &r[i]).collect();
                columns.push(column(&t, &vals)?);
                fields.push(Field::new(
                    kv_format::key_column(&f.name),
                    t,
                    f.data_type.nullable,
                ));
            }
            let [seq_field, kind_field] = kv_format::system_fields();
            let seqs: Vec<Datum> = (0..rows.len())
                .map(|i| Datum::BigInt(first_seq + i as i64))
                .collect();
            columns.push(column(
                seq_field.data_type(),
                &seqs.iter().collect::<Vec<_>>(),
            )?);
            fields.push(seq_field);
            let kinds: Vec<Datum> = rows.iter().map(|(k, _)| Datum::TinyInt(*k as i8)).collect();
            columns.push(column(
                kind_field.data_type(),
                &kinds.iter().collect::<Vec<_>>(),
            )?);
            fields.push(kind_field);
        }
        for (i, f) in schema.fields.iter().enumerate() {
            let t = arrow_type(&f.data_type)?;
            let vals: Vec<&Datum> = rows.iter().map(|(_, r)| &r[i]).collect();
            columns.push(column(&t, &vals)?);
            fields.push(Field::new(&f.name, t, f.data_type.nullable));
        }
        let arrow_schema = Arc::new(Schema::new(fields));
        let batch = RecordBatch::try_new(arrow_schema.clone(), columns)
            .map_err(|e| Error::internal(format!("demo batch: {e}")))?;
        // The table's `file.compression`, as a writer of the table would use.
        let props = WriterProperties::builder()
            .set_compression(crate::rewrite::writer_settings::compression(
                &table.options,
            )?)
            .build();
        let mut buf = Vec::new();
        {
            let mut w = ArrowWriter::try_new(&mut buf, arrow_schema, Some(props))
                .map_err(|e| Error::internal(format!("demo writer: {e}")))?;
            w.write(&batch)
                .map_err(|e| Error::internal(format!("demo writer: {e}")))?;
            w.close()
                .map_err(|e| Error::internal(format!("demo writer: {e}")))?;
        }
        let partition_path = table.partition_path(partition, "demo")?;
        let name = format!("data-{}-0.parquet", self.ids.next_uuid());
        let path = table
            .paths
            .data_file(&partition_path, bucket, &name, "demo")?;
        let size = commit::write_tracked(self.storage, written, &path, &buf)?;

        let (min_key, max_key, key_stats) = if pk {
            let key_types: Vec<DataType> = key_idx
                .iter()
                .map(|&i| schema.fields[i].data_type.clone())
                .collect();
            let key = |r: &Vec<Datum>| -> Result<BinaryRow> {
                let k: Vec<Datum> = key_idx.iter().map(|&i| r[i].clone()).collect();
                BinaryRow::encode(&k, &key_types)
            };
            let (first, last) = match (rows.first(), rows.last()) {
                (Some(a), Some(b)) => (key(a.1)?, key(b.1)?),
                _ => (BinaryRow::empty(), BinaryRow::empty()),
            };
            let stats = SimpleStats {
                min_values: first.clone(),
                max_values: last.clone(),
                null_counts: Some(vec![Some(0); key_idx.len()]),
            };
            (first, last, stats)
        } else {
            (BinaryRow::empty(), BinaryRow::empty(), SimpleStats::empty())
        };
        let retracts = rows.iter().filter(|(k, _)| k.is_retract()).count() as i64;
        Ok(ManifestEntry {
            kind: FileKind::Add,
            partition: partition.clone(),
            bucket,
            total_buckets: table.options.bucket,
            file: DataFileMeta {
                file_name: name,
                file_size: size as i64,
                row_count: rows.len() as i64,
                min_key,
                max_key,
                key_stats,
                value_stats: SimpleStats::empty(),
                min_sequence_number: first_seq,
                max_sequence_number: first_seq + rows.len() as i64 - 1,
                schema_id: schema.id,
                level: 0,
                extra_files: Vec::new(),
                creation_time: Some(now_ms),
                delete_row_count: Some(retracts),
                embedded_file_index: None,
                file_source: Some(0),
                value_stats_cols: Some(Vec::new()),
                external_path: None,
                first_row_id: None,
                write_cols: None,
                write_cols_sequences: None,
            },
        })
    }
}

/// The demo tables under `root`: names and what they show.
pub const DEMO_TABLES: &[(&str, &str)] = &[
    (
        "demo.db/events",
        "append table, bucket = -1, partitioned by day: many small files per partition",
    ),
    (
        "demo.db/metrics",
        "append table with 2 fixed buckets: small files queue per bucket",
    ),
    (
        "demo.db/orders",
        "primary-key table (deduplicate), 2 buckets, updates and deletes",
    ),
];

/// A 16-byte demo seed from a number (what the CLI, the component and Node pass).
pub fn seed_from_u64(seed: u64) -> [u8; 16] {
    let mut s = [0u8; 16];
    s[..8].copy_from_slice(&seed.to_le_bytes());
    s[8..].copy_from_slice(&seed.rotate_left(29).to_le_bytes());
    s
}

/// Writes the demo tables (several commits of small files each) under `root`. Deterministic
/// for a given `now_ms` and seed.
pub fn write_demo(
    storage: &dyn Storage,
    root: &str,
    now_ms: i64,
    seed: [u8; 16],
) -> Result<Vec<String>> {
    let join = |t: &str| {
        if root.is_empty() {
            t.to_string()
        } else {
            format!("{}/{t}", root.trim_end_matches('/'))
        }
    };
    let day = |d: i32| Datum::String(format!("2025-01-0{d}"));
    let s = |x: &str| Datum::String(x.to_string());

    let events = join(DEMO_TABLES[0].0);
    create_table(
        storage,
        &events,
        &new_schema(
            vec![
                field(0, "id", "BIGINT NOT NULL")?,
                field(1, "dt", "STRING")?,
                field(2, "kind", "STRING")?,
                field(3, "value", "DOUBLE")?,
            ],
            &["dt"],
            &[],
            &[("bucket", "-1")],
            now_ms,
        ),
    )?;
    let mut w = TableWriter::new(storage, &events, seed);
    for c in 0..6i64 {
        let rows: Vec<(RowKind, Vec<Datum>)> = (0..60i64)
            .map(|i| {
                let id = c * 1000 + i;
                (
                    RowKind::Insert,
                    vec![
                        Datum::BigInt(id),
                        day((i % 3) as i32 + 1),
                        s(["click", "view", "buy"][(i % 3) as usize]),
                        Datum::Double(id as f64 / 10.0),
                    ],
                )
            })
            .collect();
        w.commit(&rows, now_ms + c)?;
    }

    let metrics = join(DEMO_TABLES[1].0);
    create_table(
        storage,
        &metrics,
        &new_schema(
            vec![
                field(0, "host", "STRING NOT NULL")?,
                field(1, "ts", "BIGINT NOT NULL")?,
                field(2, "cpu", "DOUBLE")?,
            ],
            &[],
            &[],
            &[("bucket", "2"), ("bucket-key", "host")],
            now_ms,
        ),
    )?;
    let mut w = TableWriter::new(storage, &metrics, seed);
    for c in 0..6i64 {
        let rows: Vec<(RowKind, Vec<Datum>)> = (0..40i64)
            .map(|i| {
                (
                    RowKind::Insert,
                    vec![
                        s(&format!("host-{}", i % 8)),
                        Datum::BigInt(c * 100 + i),
                        Datum::Double((i * 7 % 100) as f64),
                    ],
                )
            })
            .collect();
        w.commit(&rows, now_ms + c)?;
    }

    let orders = join(DEMO_TABLES[2].0);
    create_table(
        storage,
        &orders,
        &new_schema(
            vec![
                field(0, "order_id", "BIGINT NOT NULL")?,
                field(1, "status", "STRING")?,
                field(2, "amount", "DOUBLE")?,
            ],
            &[],
            &["order_id"],
            &[("bucket", "2")],
            now_ms,
        ),
    )?;
    let mut w = TableWriter::new(storage, &orders, seed);
    for c in 0..6i64 {
        let rows: Vec<(RowKind, Vec<Datum>)> = (0..30i64)
            .map(|i| {
                let id = (c * 17 + i * 3) % 50;
                let kind = if i % 10 == 9 {
                    RowKind::Delete
                } else {
                    RowKind::Insert
                };
                (
                    kind,
                    vec![
                        Datum::BigInt(id),
                        s(["new", "paid", "shipped"][(c % 3) as usize]),
                        Datum::Double((id * 3 + c) as f64),
                    ],
                )
            })
            .collect();
        w.commit(&rows, now_ms + c)?;
    }
    Ok(vec![events, metrics, orders])
}
