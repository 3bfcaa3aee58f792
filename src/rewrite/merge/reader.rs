//! Reading the merge's inputs: footers, the check that each file has the merge's columns (or
//! the column map of its older schema version), batches in the merge's schema, and their
//! conversion to arena slots.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch};
use arrow_row::RowConverter;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_reader::RowSelection;
use parquet::arrow::parquet_to_arrow_schema;

use super::arena::Slot;
use super::dictionary_reads::DictionaryReads;
use super::kv_format::{kinds_of, KvLayout, KEY_PREFIX};
use super::record_expiry::RecordExpiry;
use crate::error::{Error, Result};
use crate::parquet_io::footer::{read_footer, FooterPolicy, InputFile};
use crate::parquet_io::read::{self, BatchStream, IoCounters};
use crate::rewrite::schema_evolution::{same_but_spelling, ColumnSource, Evolution};
use crate::rewrite::RewriteInput;
use crate::storage::Storage;

/// Reads input files: footers, schema checks, batches, and their conversion to slots.
pub(crate) struct Reader<'s> {
    pub(super) storage: &'s Arc<dyn Storage>,
    pub(super) io: IoCounters,
    pub(super) layout: KvLayout,
    pub(super) schema: SchemaRef,
    pub(super) key_converter: RowConverter,
    pub(super) seq_converter: Option<RowConverter>,
    /// Files written under an older schema version, by path: how their batches become rows of
    /// the merge's schema.
    pub(super) evolutions: std::collections::HashMap<String, Evolution>,
    /// STRING columns read as dictionary arrays, and the schema of the batches that result.
    pub(super) dicts: DictionaryReads,
    /// Record-level expiry of the inputs being merged (not of the files lookups read).
    pub(super) expiry: Option<RecordExpiry>,
}

/// The file's Arrow schema with dictionary types replaced by their value types.
fn plain(schema: &Schema) -> Schema {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Dictionary(_, v) => f.as_ref().clone().with_data_type(v.as_ref().clone()),
            _ => f.as_ref().clone(),
        })
        .collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

/// Checks that each `_KEY_k` column of `batch` equals its value column `k` row by row: a file
/// where they differ is corrupt input naming the column (the merge orders by the key and
/// writes the values, so merging it would change rows silently). Columns read as dictionaries
/// are compared by value.
fn check_keys_agree(batch: &RecordBatch, layout: &KvLayout, path: &str) -> Result<()> {
    for (&k, v) in layout.key_cols.iter().zip(&layout.key_value_cols) {
        let Some(v) = *v else { continue };
        let (key, value) = (batch.column(k), batch.column(v));
        let same = if key.data_type() == value.data_type() {
            key.as_ref() == value.as_ref()
        } else {
            let value = arrow_cast::cast(value, key.data_type()).map_err(|e| {
                Error::corrupt(
                    Some(path),
                    format!(
                        "column '{}' cannot be read as its key's type: {e}",
                        batch.schema().field(v).name()
                    ),
                )
            })?;
            key.as_ref() == value.as_ref()
        };
        if !same {
            let name = batch.schema().field(v).name().clone();
            return Err(Error::corrupt(
                Some(path),
                format!("the key column {KEY_PREFIX}{name} and the column '{name}' hold different values"),
            ));
        }
    }
    Ok(())
}

/// Refuses a file whose footer counts other rows than its metadata records: deletion vectors
/// and delete counts address rows by position in the recorded count, so a file with another
/// count is not the file the table lists.
pub(super) fn check_row_count(file: &InputFile, input: &RewriteInput) -> Result<()> {
    let rows = file.metadata.file_metadata().num_rows();
    if u64::try_from(rows).ok() != Some(input.meta.row_count) {
        return Err(Error::corrupt(
            Some(&input.path),
            format!(
                "the file holds {rows} rows where its metadata records {}",
                input.meta.row_count
            ),
        ));
    }
    Ok(())
}

pub(super) fn file_schema(input: &InputFile) -> Result<Schema> {
    let fm = input.metadata.file_metadata();
    parquet_to_arrow_schema(fm.schema_descr(), fm.key_value_metadata())
        .map(|s| plain(&s))
        .map_err(|e| read::corrupt(&input.path, e))
}

impl<'s> Reader<'s> {
    /// Opens an input and checks it holds the rows its metadata records and has the columns
    /// (names and types) of the merge, or, for a file of an older schema version (its
    /// `columns`), that its column map applies. The schema returned is the one to decode the
    /// file with.
    pub(super) fn open(&mut self, input: &RewriteInput) -> Result<(InputFile, Schema)> {
        let (path, columns) = (input.path.as_str(), input.columns.as_deref());
        let file = read_footer(
            self.storage.as_ref(),
            path,
            FooterPolicy::PAGES,
            &mut self.io,
        )?;
        check_row_count(&file, input)?;
        let schema = file_schema(&file)?;
        let respelled = match columns {
            Some(_) => None,
            None => check_columns(path, &schema, &self.schema)?,
        };
        if let Some(map) = columns.or(respelled.as_deref()) {
            let evolution = Evolution::new(path, &schema, &self.schema, map)?;
            let sources: Vec<usize> = self
                .dicts
                .columns()
                .iter()
                .filter_map(|&c| evolution.source(c))
                .collect();
            let schema = self.dicts.decode_schema(schema, &file.metadata, &sources);
            self.evolutions.insert(path.to_string(), evolution);
            return Ok((file, schema));
        }
        let schema = self
            .dicts
            .decode_schema(schema, &file.metadata, self.dicts.columns());
        Ok((file, schema))
    }

    /// A batch stream over `input`, skipping the positions of `selection`.
    pub(crate) fn open_stream(
        &mut self,
        input: &RewriteInput,
        selection: Option<RowSelection>,
    ) -> Result<BatchStream> {
        let (file, schema) = self.open(input)?;
        let meta = read::reader_metadata(&file, Arc::new(schema))?;
        BatchStream::new(&file, meta, selection)
    }

    pub(crate) fn next_batch(
        &mut self,
        stream: &mut BatchStream,
        path: &str,
    ) -> Result<Option<RecordBatch>> {
        loop {
            match stream.next(self.storage.as_ref(), path, &mut self.io)? {
                Some(b) if b.num_rows() == 0 => continue,
                Some(b) => return self.evolve(b, path).map(Some),
                None => return Ok(None),
            }
        }
    }

    /// A batch of `path` as the merge's schema (files of older schema versions evolve).
    pub(crate) fn evolve(&self, batch: RecordBatch, path: &str) -> Result<RecordBatch> {
        match self.evolutions.get(path) {
            // Straight into the batch schema: columns decoded as dictionaries stay so, plain
            // ones are converted by the mapping's cast.
            Some(e) => e.apply(&batch, self.dicts.batch_schema(), path),
            None => self.dicts.apply(batch, path),
        }
    }

    /// Converts a batch of `path` into a slot (keys in row format, kinds validated).
    pub(crate) fn slot_of(
        &mut self,
        batch: RecordBatch,
        path: &str,
        file: Option<usize>,
    ) -> Result<Slot> {
        let key_cols: Vec<ArrayRef> = self
            .layout
            .key_cols
            .iter()
            .map(|&c| batch.column(c).clone())
            .collect();
        check_keys_agree(&batch, &self.layout, path)?;
        let keys = self
            .key_converter
            .convert_columns(&key_cols)
            .map_err(|e| Error::corrupt(Some(path), format!("key columns: {e}")))?;
        let user_seq = match &self.seq_converter {
            Some(conv) => {
                let cols: Vec<ArrayRef> = self
                    .layout
                    .user_seq_cols
                    .iter()
                    .map(|&c| batch.column(c).clone())
                    .collect();
                Some(
                    conv.convert_columns(&cols)
                        .map_err(|e| Error::corrupt(Some(path), format!("sequence field: {e}")))?,
                )
            }
            None => None,
        };
        let seq_col = batch.column(self.layout.seq_col);
        if seq_col.null_count() > 0 {
            return Err(Error::corrupt(
                Some(path),
                "_SEQUENCE_NUMBER has nulls".to_string(),
            ));
        }
        let seqs = seq_col
            .as_any()
            .downcast_ref::<Int64Array>()
            .ok_or_else(|| Error::corrupt(Some(path), "_SEQUENCE_NUMBER is not BIGINT"))?
            .values()
            .clone();
        let kinds = kinds_of(batch.column(self.layout.kind_col), path)?;
        // Eight bytes as one load when the row has them (a BIGINT key's prefix), else byte by
        // byte (its one-byte tail): a copy of variable length is a `memcpy` call per row, and
        // reading its result back from the stack stalls on store forwarding.
        let word = |b: &[u8]| -> u64 {
            match b.get(..8).and_then(|e| <[u8; 8]>::try_from(e).ok()) {
                Some(eight) => u64::from_be_bytes(eight),
                None => b
                    .iter()
                    .enumerate()
                    .fold(0, |w, (i, &x)| w | (u64::from(x) << (56 - 8 * i))),
            }
        };
        // One pass over the rows: the first 16 bytes of each, and whether every row has the
        // first row's length of at most 16 bytes.
        let n = keys.num_rows();
        let mut prefixes = Vec::with_capacity(n);
        let mut tails = Vec::with_capacity(n);
        let mut short_len = None;
        for i in 0..n {
            let row = keys.row(i);
            let b = row.as_ref();
            prefixes.push(word(b));
            tails.push(word(b.get(8..).unwrap_or(&[])));
            if i == 0 {
                short_len = (b.len() <= 16).then_some(b.len());
            } else if short_len.is_some_and(|l| l != b.len()) {
                short_len = None;
            }
        }
        Ok(Slot {
            batch,
            keys,
            prefixes,
            tails,
            short_len,
            user_seq,
            seqs,
            kinds,
            file: file.unwrap_or(0),
            level: 0,
        })
    }
}

/// Checks that a file read as it is has the columns (names and types) `ours` (the merge's, or
/// the replay's), as a file of the latest schema version must.
/// When a nested type differs only in spelling (nested field ids, a list item's or map
/// entries' names: another writer's file), returns the identity map that rebuilds the file's
/// arrays in the merge's spelling.
pub(super) fn check_columns(
    path: &str,
    schema: &Schema,
    ours: &Schema,
) -> Result<Option<Vec<Option<ColumnSource>>>> {
    let ours = ours.fields();
    if schema.fields().len() != ours.len() {
        return Err(Error::corrupt(
            Some(path),
            format!(
                "{} columns where the table's data files have {} (a file of an older schema \
                 version is read through its column map, which this file was not given)",
                schema.fields().len(),
                ours.len()
            ),
        ));
    }
    let mut respelled = false;
    for (a, b) in schema.fields().iter().zip(ours) {
        if a.name() == b.name()
            && a.data_type() != b.data_type()
            && same_but_spelling(a.data_type(), b.data_type())
        {
            respelled = true;
        } else if a.name() != b.name() || a.data_type() != b.data_type() {
            return Err(Error::corrupt(
                Some(path),
                format!(
                    "column '{}' ({}) where the table's data files have '{}' ({})",
                    a.name(),
                    a.data_type(),
                    b.name(),
                    b.data_type()
                ),
            ));
        }
    }
    Ok(respelled.then(|| {
        ours.iter()
            .map(|f| Some(ColumnSource::named(f.name())))
            .collect()
    }))
}
