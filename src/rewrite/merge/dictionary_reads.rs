//! STRING value columns the merge reads as dictionary arrays
//! (`paimon-compact.merge.read-dictionaries`, on by default).
//!
//! A low-cardinality STRING column is stored dictionary-encoded by every Paimon writer. Read as
//! plain strings, each row's bytes are copied out of the dictionary, copied again into the
//! merged batch, and hashed and compared once more by the output's dictionary writer: three
//! passes over the bytes of every row, to rebuild a dictionary the input already had. Read as a
//! `Dictionary(Int32, Utf8)` array instead, the merge moves 4-byte keys, and the output writer
//! maps each input dictionary's entries to output ids once (the same mapping dictionary
//! passthrough uses for append compaction), in the order rows first use them, so the output
//! file is the one the plain path writes, byte for byte.
//!
//! Which columns: decided once per merge from the file that fixes the merge's schema (its
//! footer is read first anyway). A column qualifies when it is a top-level STRING value
//! column, not a key, not a `sequence.field`, written with a dictionary by the output, every
//! data page of it in that file is dictionary-encoded, and the merge engine takes whole rows
//! (deduplicate, first-row): engines that compute values per field see plain arrays. Later
//! files whose pages of the column are not all dictionary-encoded (a writer fell back to PLAIN)
//! are read plain and their batches converted, so every batch of the merge has one type per
//! column; the result is the same, only slower for those files.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_cast::cast;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use super::kv_format::KvLayout;
use crate::error::{Error, Result};
use crate::options::CoreOptions;
use crate::parquet_io::dictionary::DictConfig;
use crate::parquet_io::writer::field_leaves;
use crate::rewrite::dictionary_passthrough::fully_dictionary_encoded;

/// The type a chosen column is read and merged as.
fn dictionary_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// `schema` with the columns `dictionary` picks typed as dictionaries.
fn with_dictionaries(schema: &Schema, dictionary: impl Fn(usize, &Field) -> bool) -> Schema {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let f = f.as_ref().clone();
            if dictionary(i, &f) {
                f.with_data_type(dictionary_type())
            } else {
                f
            }
        })
        .collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

/// What the merge needs to know to decide the columns.
pub(crate) struct Candidates<'a> {
    pub options: &'a CoreOptions,
    pub schema: &'a Schema,
    pub layout: &'a KvLayout,
    pub whole_rows: bool,
    pub props: &'a WriterProperties,
    pub dict_cfg: &'a DictConfig,
}

/// The columns read as dictionaries, and the schema of the batches the merge then handles.
#[derive(Clone, Debug)]
pub(crate) struct DictionaryReads {
    /// Merge-schema column indices, ascending.
    cols: Vec<usize>,
    batch_schema: SchemaRef,
}

impl DictionaryReads {
    /// No column read as a dictionary.
    pub(crate) fn none(schema: SchemaRef) -> Self {
        DictionaryReads {
            cols: Vec::new(),
            batch_schema: schema,
        }
    }

    /// Chooses the columns from `first`, the file whose schema is the merge's (`None` when no
    /// input has that schema: nothing is chosen). Fails only on an invalid option value.
    pub(crate) fn plan(c: &Candidates<'_>, first: Option<&ParquetMetaData>) -> Result<Self> {
        let schema = Arc::new(c.schema.clone());
        let enabled = c.options.engine.read_dictionaries.get()?;
        let Some(first) = first.filter(|_| enabled && c.whole_rows && c.dict_cfg.writers.strings)
        else {
            return Ok(Self::none(schema));
        };
        let descr = first.file_metadata().schema_descr();
        let leaves = field_leaves(descr);
        let cols: Vec<usize> = c
            .layout
            .value_cols
            .iter()
            .copied()
            .filter(|&col| {
                let field = c.schema.field(col);
                let Some(leaf) = leaves.get(col).filter(|r| r.len() == 1).map(|r| r.start) else {
                    return false;
                };
                *field.data_type() == DataType::Utf8
                    && !c.layout.key_cols.contains(&col)
                    && !c.layout.user_seq_cols.contains(&col)
                    && c.props
                        .dictionary_enabled(&ColumnPath::from(field.name().as_str()))
                    && fully_dictionary_encoded(first, leaf).is_ok()
            })
            .collect();
        if cols.is_empty() {
            return Ok(Self::none(schema));
        }
        let batch_schema = Arc::new(with_dictionaries(c.schema, |i, _| cols.contains(&i)));
        Ok(DictionaryReads { cols, batch_schema })
    }

    /// How many columns are read as dictionaries.
    pub(crate) fn len(&self) -> usize {
        self.cols.len()
    }

    /// The schema of every batch the merge assembles.
    pub(crate) fn batch_schema(&self) -> &SchemaRef {
        &self.batch_schema
    }

    /// The merge-schema columns read as dictionaries, ascending.
    pub(crate) fn columns(&self) -> &[usize] {
        &self.cols
    }

    /// The schema to decode a file with: `plain` (its own columns, value types) with those of
    /// `file_cols` (the file's columns holding the chosen ones) whose pages are all
    /// dictionary-encoded in this file as dictionary types. The others are converted after
    /// decoding ([`Self::apply`], or the schema evolution into [`Self::batch_schema`]).
    pub(crate) fn decode_schema(
        &self,
        plain: Schema,
        metadata: &ParquetMetaData,
        file_cols: &[usize],
    ) -> Schema {
        if file_cols.is_empty() {
            return plain;
        }
        let leaves = field_leaves(metadata.file_metadata().schema_descr());
        with_dictionaries(&plain, |i, f| {
            file_cols.contains(&i)
                && *f.data_type() == DataType::Utf8
                && leaves
                    .get(i)
                    .filter(|r| r.len() == 1)
                    .is_some_and(|r| fully_dictionary_encoded(metadata, r.start).is_ok())
        })
    }

    /// A decoded (and evolved) batch of the merge's schema as a batch of [`Self::batch_schema`]:
    /// chosen columns that arrived as plain strings are converted.
    pub(crate) fn apply(&self, batch: RecordBatch, path: &str) -> Result<RecordBatch> {
        if self.cols.is_empty() {
            return Ok(batch);
        }
        let target = dictionary_type();
        let mut columns = batch.columns().to_vec();
        for &c in &self.cols {
            let column = columns
                .get_mut(c)
                .ok_or_else(|| Error::internal(format!("'{path}': a batch without column {c}")))?;
            if *column.data_type() != target {
                *column = cast(column, &target).map_err(|e| {
                    Error::internal(format!("'{path}': reading column {c} as a dictionary: {e}"))
                })?;
            }
        }
        RecordBatch::try_new(self.batch_schema.clone(), columns)
            .map_err(|e| Error::internal(format!("'{path}': dictionary columns: {e}")))
    }
}
