//! Replaying unsorted key-value files into sorted runs of several buckets: the first half of
//! a postpone-bucket compaction (compaction.md §11.2).
//!
//! A postpone bucket's files hold records in arrival order, unsorted, with sequence numbers
//! that mean nothing outside their writer. Paimon's compaction replays them, file by file in
//! the caller's order, into the writers of the real buckets: each record gets the next
//! sequence number of its bucket (after the bucket's existing files), and each writer's
//! sort buffer turns what it holds into a sorted level-0 run when it fills. This module does
//! the same with a memory budget: records are read batch by batch, given a bucket by the
//! caller's function and a fresh sequence number, and held per bucket; when the held rows
//! pass the budget (and at the end) each bucket's rows are sorted by key and sequence and
//! written as one temporary Parquet file, a sorted run that may repeat a key (as `run_spill`'s
//! runs do). The caller merges each bucket's runs into its level-0 files with the merge
//! rewriter, which applies the merge engine, and deletes the temporary files.
//!
//! Inputs are Parquet, Avro or ORC (by their extension: [`crate::rewrite::foreign_data`]), of
//! the latest schema version or of an older one, read through its column map as the merge
//! reads such files ([`crate::rewrite::schema_evolution`]).
//! Nothing here knows Paimon's hash or table layout: the bucket of a row comes from the
//! caller.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch};
use arrow_row::{RowConverter, SortField};
use arrow_schema::SchemaRef;

use super::kv_format::{KvLayout, SEQUENCE_NUMBER};
use super::reader::{check_columns, check_row_count, file_schema};
use crate::error::{Error, Result};
use crate::parquet_io::footer::{read_footer, FooterPolicy};
use crate::parquet_io::read::{self, BatchStream, IoCounters};
use crate::rewrite::foreign_data::{read_batches, write_temporary_parquet, DataFormat};
use crate::rewrite::schema_evolution::{ColumnSource, Evolution};
use crate::rewrite::RewriteInput;
use crate::storage::Storage;

/// One file to replay.
#[derive(Clone, Debug)]
pub struct ReplayInput {
    /// The file (its path and row count; its `columns` are not read: see `evolution`).
    pub file: RewriteInput,
    /// For a file of an older schema version with other fields: how it becomes rows of the
    /// replay's schema. `None` for a file with the replay's columns (a nested type spelled as
    /// another writer spells it is rebuilt in the replay's spelling).
    pub evolution: Option<Evolved>,
}

/// A file of an older schema version: what it was written as, and the map onto the latest.
#[derive(Clone, Debug)]
pub struct Evolved {
    /// The data-file row type of the file's schema version: how an Avro or ORC file, which
    /// carries no Arrow schema, is decoded (a Parquet file's own schema is read instead).
    pub row_type: SchemaRef,
    /// Where each column of the replay's schema comes from in the file
    /// ([`crate::rewrite::schema_evolution`]).
    pub columns: Vec<Option<ColumnSource>>,
}

/// What to replay and where its runs go.
pub struct Redistribution<'a> {
    /// The files in replay order (Paimon: by creation time); each is read whole.
    pub inputs: Vec<ReplayInput>,
    /// The data-file schema every input must have and the runs are written in.
    pub schema: SchemaRef,
    /// The bucket of each row of a batch (`< first_sequence.len()`); the path names the file.
    pub bucket_of: &'a dyn Fn(&RecordBatch, &str) -> Result<Vec<u32>>,
    /// The first sequence number each bucket hands out.
    pub first_sequence: Vec<i64>,
    /// Where each bucket's runs go: its directory (no trailing `/`) and a unique file prefix.
    pub outputs: Vec<(String, String)>,
    /// Decoded bytes held before a flush (`paimon-compact.postpone.replay-buffer`).
    pub buffer_bytes: usize,
}

/// The replay's result: each bucket's sorted runs (one file each, level 0), oldest first.
#[derive(Debug, Default)]
pub struct Redistributed {
    pub runs: Vec<Vec<RewriteInput>>,
    /// Records read from the inputs.
    pub rows: u64,
    /// Every temporary file written, for the caller to delete.
    pub temps: Vec<String>,
}

/// Replays `r.inputs`; on failure the temporary files written so far are deleted first.
pub fn redistribute(storage: &Arc<dyn Storage>, r: &Redistribution<'_>) -> Result<Redistributed> {
    let buckets = r.first_sequence.len();
    if r.outputs.len() != buckets {
        return Err(Error::internal(format!(
            "{} output directories for {buckets} buckets",
            r.outputs.len()
        )));
    }
    let mut state = Replay {
        storage,
        r,
        layout: KvLayout::of(&r.schema, "the postpone compaction", &[])?,
        next_sequence: r.first_sequence.clone(),
        held: vec![Vec::new(); buckets],
        held_bytes: 0,
        written_runs: vec![0; buckets],
        out: Redistributed {
            runs: vec![Vec::new(); buckets],
            ..Redistributed::default()
        },
        io: IoCounters::default(),
    };
    match state.run() {
        Ok(()) => Ok(state.out),
        Err(e) => {
            for p in &state.out.temps {
                let _ = storage.delete(p);
            }
            Err(e)
        }
    }
}

struct Replay<'a, 'r> {
    storage: &'a Arc<dyn Storage>,
    r: &'a Redistribution<'r>,
    layout: KvLayout,
    next_sequence: Vec<i64>,
    /// Rows of each bucket not yet written, with their new sequence numbers.
    held: Vec<Vec<RecordBatch>>,
    held_bytes: usize,
    written_runs: Vec<usize>,
    out: Redistributed,
    io: IoCounters,
}

impl Replay<'_, '_> {
    fn run(&mut self) -> Result<()> {
        for input in &self.r.inputs {
            self.replay_file(input)?;
        }
        self.flush()
    }

    fn replay_file(&mut self, input: &ReplayInput) -> Result<()> {
        let path = input.file.path.as_str();
        let ours = self.r.schema.clone();
        if DataFormat::is_foreign(path) {
            // Paimon's Java writers write postpone files as Avro; an Avro or ORC file is
            // decoded as the row type of its schema version.
            let (read_as, evolution) = match &input.evolution {
                None => (ours.clone(), None),
                Some(e) => (
                    e.row_type.clone(),
                    Some(Evolution::new(path, &e.row_type, &ours, &e.columns)?),
                ),
            };
            let storage = self.storage;
            return read_batches(
                storage.as_ref(),
                path,
                &read_as,
                input.file.meta.row_count,
                |batch| {
                    let batch = match &evolution {
                        Some(e) => e.apply(&batch, &ours, path)?,
                        None => batch,
                    };
                    self.take_and_maybe_flush(batch, path)
                },
            );
        }
        let storage = self.storage.as_ref();
        let file = read_footer(storage, path, FooterPolicy::ROWS, &mut self.io)?;
        check_row_count(&file, &input.file)?;
        let theirs = file_schema(&file)?;
        let map = match &input.evolution {
            Some(e) => Some(e.columns.clone()),
            None => check_columns(path, &theirs, &ours)?,
        };
        let evolution = match &map {
            Some(map) => Some(Evolution::new(path, &theirs, &ours, map)?),
            None => None,
        };
        let decode_as = if evolution.is_some() {
            Arc::new(theirs)
        } else {
            ours.clone()
        };
        let meta = read::reader_metadata(&file, decode_as)?;
        let mut stream = BatchStream::new(&file, meta, None)?;
        while let Some(batch) = stream.next(storage, path, &mut self.io)? {
            let batch = match &evolution {
                Some(e) => e.apply(&batch, &ours, path)?,
                None => batch,
            };
            self.take_and_maybe_flush(batch, path)?;
        }
        Ok(())
    }

    fn take_and_maybe_flush(&mut self, batch: RecordBatch, path: &str) -> Result<()> {
        self.take_batch(batch, path)?;
        if self.held_bytes >= self.r.buffer_bytes {
            self.flush()?;
        }
        Ok(())
    }

    /// Gives each row of `batch` its bucket and sequence number and holds it.
    fn take_batch(&mut self, batch: RecordBatch, path: &str) -> Result<()> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        self.out.rows += n as u64;
        let buckets = (self.r.bucket_of)(&batch, path)?;
        if buckets.len() != n {
            return Err(Error::internal("a bucket per row was not returned"));
        }
        let mut rows_of: Vec<Vec<(usize, usize)>> = vec![Vec::new(); self.held.len()];
        let mut sequences: Vec<i64> = Vec::with_capacity(n);
        for (row, &b) in buckets.iter().enumerate() {
            let b = b as usize;
            let next = self.next_sequence.get_mut(b).ok_or_else(|| {
                Error::internal(format!("bucket {b} of {} buckets", self.held.len()))
            })?;
            sequences.push(*next);
            *next = next.checked_add(1).ok_or_else(|| {
                Error::unsupported(format!("bucket {b}'s sequence numbers pass i64::MAX"))
            })?;
            rows_of[b].push((0, row));
        }
        let batch = with_sequence(&batch, self.layout.seq_col, sequences)?;
        for (b, rows) in rows_of.into_iter().enumerate() {
            if rows.is_empty() {
                continue;
            }
            let part = pick(&[&batch], &rows)?;
            self.held_bytes += part.get_array_memory_size();
            self.held[b].push(part);
        }
        Ok(())
    }

    /// Writes every bucket's held rows as one sorted run.
    fn flush(&mut self) -> Result<()> {
        for b in 0..self.held.len() {
            let held = std::mem::take(&mut self.held[b]);
            if held.is_empty() {
                continue;
            }
            let sorted = self.sort(&held)?;
            drop(held);
            let (dir, prefix) = &self.r.outputs[b];
            let path = format!("{dir}/{prefix}{}.parquet", self.written_runs[b]);
            self.written_runs[b] += 1;
            self.out.temps.push(path.clone());
            self.write(&path, &sorted)?;
            let seq = sorted
                .column(self.layout.seq_col)
                .as_any()
                .downcast_ref::<Int64Array>()
                .ok_or_else(|| Error::internal("the sequence column is not BIGINT"))?;
            let min = seq.values().iter().copied().min().unwrap_or(0);
            let max = seq.values().iter().copied().max().unwrap_or(0);
            self.out.runs[b].push(RewriteInput::from_parts(
                path,
                sorted.num_rows() as u64,
                min,
                max,
                None,
            ));
        }
        self.held_bytes = 0;
        Ok(())
    }

    /// The rows of `held` in (key, sequence) order, as one batch; a key's records keep their
    /// sequence order, which is arrival order.
    fn sort(&self, held: &[RecordBatch]) -> Result<RecordBatch> {
        let mut cols: Vec<usize> = self.layout.key_cols.clone();
        cols.push(self.layout.seq_col);
        let schema = &self.r.schema;
        let converter = RowConverter::new(
            cols.iter()
                .map(|&c| SortField::new(schema.field(c).data_type().clone()))
                .collect(),
        )
        .map_err(|e| Error::unsupported(format!("primary key type: {e}")))?;
        let mut keys = Vec::with_capacity(held.len());
        for batch in held {
            let arrays: Vec<ArrayRef> = cols.iter().map(|&c| batch.column(c).clone()).collect();
            keys.push(
                converter
                    .convert_columns(&arrays)
                    .map_err(|e| Error::internal(format!("encoding keys: {e}")))?,
            );
        }
        let mut order: Vec<(usize, usize)> = held
            .iter()
            .enumerate()
            .flat_map(|(i, b)| (0..b.num_rows()).map(move |r| (i, r)))
            .collect();
        order.sort_unstable_by(|a, b| keys[a.0].row(a.1).cmp(&keys[b.0].row(b.1)));
        let held: Vec<&RecordBatch> = held.iter().collect();
        pick(&held, &order)
    }

    fn write(&mut self, path: &str, batch: &RecordBatch) -> Result<()> {
        write_temporary_parquet(self.storage.as_ref(), path, &batch.schema(), |write| {
            write(batch)
        })
    }
}

/// The rows `at` (batch, row) of `batches` (one schema) as one batch, in that order.
///
/// Through `interleave`, which the merge's assembly already uses, rather than `take` or
/// `concat`: each Arrow kernel links its code for every data type, and the component's size
/// counts it (compaction.md §11.2).
fn pick(batches: &[&RecordBatch], at: &[(usize, usize)]) -> Result<RecordBatch> {
    let schema = batches
        .first()
        .map(|b| b.schema())
        .ok_or_else(|| Error::internal("rows picked from no batch"))?;
    let mut columns = Vec::with_capacity(schema.fields().len());
    for c in 0..schema.fields().len() {
        let sources: Vec<&dyn Array> = batches.iter().map(|b| b.column(c).as_ref()).collect();
        columns.push(
            arrow_select::interleave::interleave(&sources, at)
                .map_err(|e| Error::internal(format!("picking a bucket's rows: {e}")))?,
        );
    }
    RecordBatch::try_new(schema, columns)
        .map_err(|e| Error::internal(format!("picking a bucket's rows: {e}")))
}

/// `batch` with its sequence column replaced by `sequences`.
fn with_sequence(batch: &RecordBatch, seq_col: usize, sequences: Vec<i64>) -> Result<RecordBatch> {
    let mut columns = batch.columns().to_vec();
    columns[seq_col] = Arc::new(Int64Array::from(sequences));
    RecordBatch::try_new(batch.schema(), columns)
        .map_err(|e| Error::internal(format!("replacing {SEQUENCE_NUMBER}: {e}")))
}

#[cfg(test)]
mod tests {
    use arrow_array::{Int64Array, Int8Array};
    use arrow_schema::{Field, Schema};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    use super::*;
    use crate::options::{CoreOptions, Flavor, TableKind};
    use crate::rewrite::avro_output::tests::{file_bytes, nested_columns};
    use crate::rewrite::avro_output::AvroSpec;
    use crate::storage::MemoryStorage;

    /// Key-value rows with keys `0..n` (descending, as a postpone file holds them in arrival
    /// order) and every nested column family Paimon writes to Avro.
    fn nested_kv_batch(n: usize) -> RecordBatch {
        let keys: Vec<i64> = (0..n as i64).rev().collect();
        let mut columns: Vec<(&str, ArrayRef)> = vec![
            ("_KEY_k", Arc::new(Int64Array::from(keys.clone()))),
            (SEQUENCE_NUMBER, Arc::new(Int64Array::from(vec![7; n]))),
            ("_VALUE_KIND", Arc::new(Int8Array::from(vec![0; n]))),
            ("k", Arc::new(Int64Array::from(keys))),
        ];
        columns.extend(nested_columns(n));
        let schema = Schema::new(
            columns
                .iter()
                .map(|(name, c)| Field::new(*name, c.data_type().clone(), !name.contains('k')))
                .collect::<Vec<_>>(),
        );
        RecordBatch::try_new(
            Arc::new(schema),
            columns.into_iter().map(|(_, c)| c).collect(),
        )
        .unwrap()
    }

    fn read_parquet(storage: &dyn Storage, path: &str) -> RecordBatch {
        let bytes = bytes::Bytes::from(storage.read_all(path).unwrap());
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .build()
            .unwrap();
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap()
    }

    /// A postpone file in Avro with arrays, maps (both of Paimon's forms) and rows is replayed
    /// into two buckets: each bucket's runs hold exactly its keys' rows, nested values intact,
    /// sorted by key, with the bucket's next sequence numbers in arrival order.
    #[test]
    fn nested_avro_postpone_rows_are_replayed_with_their_values() {
        let n = 60;
        let batch = nested_kv_batch(n);
        let schema = batch.schema();
        let options =
            CoreOptions::from_pairs(TableKind::PrimaryKey, Flavor::Java, std::iter::empty())
                .unwrap();
        let spec = AvroSpec::new(&options, &schema, &[], "zstd", "file.compression").unwrap();
        let memory = Arc::new(MemoryStorage::new());
        let input = "t/bucket-postpone/data-0.avro";
        memory.put(input, file_bytes(Arc::new(spec), &batch, 11));
        let storage: Arc<dyn Storage> = memory;
        let bucket_of = |b: &RecordBatch, _: &str| -> Result<Vec<u32>> {
            let k = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            Ok(k.values().iter().map(|k| (k % 2) as u32).collect())
        };
        // The file replayed once with room for everything, then twice (as two writers' files)
        // with a buffer of one byte: one sorted run per bucket and input file.
        for (buffer_bytes, files) in [(usize::MAX, 1), (1, 2)] {
            let input = ReplayInput {
                file: RewriteInput::from_parts(input.to_string(), n as u64, 7, 7, None),
                evolution: None,
            };
            let r = Redistribution {
                inputs: vec![input; files],
                schema: schema.clone(),
                bucket_of: &bucket_of,
                first_sequence: vec![100, 200],
                outputs: vec![
                    ("t/bucket-0".to_string(), "replay-".to_string()),
                    ("t/bucket-1".to_string(), "replay-".to_string()),
                ],
                buffer_bytes,
            };
            let out = redistribute(&storage, &r).unwrap();
            assert_eq!(out.rows, (n * files) as u64);
            for (b, runs) in out.runs.iter().enumerate() {
                assert_eq!(runs.len(), files, "{runs:?}");
                // The input's rows of this bucket in arrival order (keys descending).
                let arrival: Vec<(usize, usize)> = (0..n)
                    .filter(|r| (n - 1 - r) % 2 == b)
                    .map(|r| (0, r))
                    .collect();
                let rows = pick(&[&batch], &arrival).unwrap();
                let by_key: Vec<(usize, usize)> =
                    (0..arrival.len()).rev().map(|r| (0, r)).collect();
                for (f, run) in runs.iter().enumerate() {
                    let first = (b as i64 + 1) * 100 + (f * arrival.len()) as i64;
                    let seq = (first..first + arrival.len() as i64).collect();
                    let expected = with_sequence(&rows, 1, seq).unwrap();
                    let got = read_parquet(storage.as_ref(), &run.path);
                    assert_eq!(got, pick(&[&expected], &by_key).unwrap(), "bucket {b}");
                }
            }
            for t in &out.temps {
                storage.delete(t).unwrap();
            }
        }
    }
}
