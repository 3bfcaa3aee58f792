//! Rolling output of the merge: Parquet files written through storage, a new file once the
//! current one reaches `target-file-size`, and each file's metadata computed from the rows
//! that went into it (never from the inputs').

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{Schema, SchemaRef};
use arrow::row::{RowConverter, Rows, SortField};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::SchemaDescriptor;

use super::kv_format::{datum_at, key_datums, kinds_of, planner_key, KEY_PREFIX};
use super::{KeyColumnStats, MergeOutputFile};
use crate::error::{Error, Result};
use crate::meta::{DataFileMeta, FileSource, Level, SequenceNumber};
use crate::rewrite::dictionary_writer::DictWriterConfig;
use crate::rewrite::page_spill::PageSpill;
use crate::rewrite::writer::{discard_outputs, ParquetFileWriter};
use crate::storage::{Storage, StorageWriter};
use crate::value::Datum;

/// Near the target size, rows go in steps of this many so a file stops close to it (Paimon's
/// rolling writer checks every 1000 records).
const ROLL_CHECK_ROWS: usize = 1024;

/// Rows written into a new file before its size estimate is trusted.
const FIRST_STEP_ROWS: usize = 256;

/// Settings shared by the data and changelog outputs.
pub(crate) struct OutputSettings {
    pub schema: SchemaRef,
    pub descr: Arc<SchemaDescriptor>,
    pub props: WriterProperties,
    pub dict_cfg: Arc<DictWriterConfig>,
    pub target_file_size: u64,
    pub level: Level,
    pub creation_time_ms: i64,
    pub key_cols: Vec<usize>,
    pub seq_col: usize,
    pub kind_col: usize,
    /// Encoded pages held in memory per output file before the rest spills (`None`: never).
    pub spill_threshold: Option<usize>,
}

/// `(value field, key field)` for each `_KEY_<name>` column whose value column `<name>` the
/// file also stores: Paimon writes a primary key column twice, and the two hold the same
/// values row for row, so the writer encodes them once (it checks that they agree).
fn key_mirrors(schema: &Schema, key_cols: &[usize]) -> Vec<(usize, usize)> {
    key_cols
        .iter()
        .filter_map(|&k| {
            let name = schema.field(k).name().strip_prefix(KEY_PREFIX)?;
            let value = schema.index_of(name).ok()?;
            Some((value, k))
        })
        .collect()
}

/// Key statistics of the rows of one file so far.
struct KeyStats {
    min: Vec<Option<(Vec<u8>, Datum)>>,
    max: Vec<Option<(Vec<u8>, Datum)>>,
    nulls: Vec<u64>,
}

struct Open {
    path: String,
    name: String,
    sink: Box<dyn StorageWriter>,
    writer: ParquetFileWriter,
    rows: u64,
    min_seq: i64,
    max_seq: i64,
    retracts: u64,
    first_key: Option<Vec<Datum>>,
    last_key: Option<Vec<Datum>>,
    stats: KeyStats,
}

/// One stream of output files (data, or changelog).
pub(crate) struct RollingOutput<'s> {
    storage: &'s Arc<dyn Storage>,
    settings: Arc<OutputSettings>,
    dir: String,
    prefix: String,
    next_index: u64,
    open: Option<Open>,
    pub(crate) done: Vec<MergeOutputFile>,
    /// One single-column row converter per key column (byte-comparable min/max).
    converters: Vec<RowConverter>,
    pub(crate) storage_writes: u64,
    pub(crate) spilled_bytes: u64,
    pub(crate) mirrored_chunks: u64,
}

fn to_storage<'a>(
    sink: &'a mut Box<dyn StorageWriter>,
    writes: &'a mut u64,
) -> impl FnMut(&[u8]) -> Result<()> + Send + use<'a> {
    move |piece| {
        *writes += 1;
        sink.write(piece).map_err(Error::from)
    }
}

impl<'s> RollingOutput<'s> {
    pub(crate) fn new(
        storage: &'s Arc<dyn Storage>,
        settings: Arc<OutputSettings>,
        dir: &str,
        prefix: &str,
    ) -> Result<Self> {
        let converters = settings
            .key_cols
            .iter()
            .map(|&c| {
                RowConverter::new(vec![SortField::new(
                    settings.schema.field(c).data_type().clone(),
                )])
                .map_err(|e| Error::unsupported(format!("key column type: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RollingOutput {
            storage,
            settings,
            dir: dir.to_string(),
            prefix: prefix.to_string(),
            next_index: 0,
            open: None,
            done: Vec::new(),
            converters,
            storage_writes: 0,
            spilled_bytes: 0,
            mirrored_chunks: 0,
        })
    }

    fn ensure_open(&mut self) -> Result<()> {
        if self.open.is_some() {
            return Ok(());
        }
        let name = format!("{}{}.parquet", self.prefix, self.next_index);
        self.next_index += 1;
        let path = if self.dir.is_empty() {
            name.clone()
        } else {
            format!("{}/{}", self.dir, name)
        };
        let s = &self.settings;
        let n = s.key_cols.len();
        let spill = s
            .spill_threshold
            .map(|budget| PageSpill::new(self.storage.clone(), format!("{path}.spill"), budget));
        let writer = ParquetFileWriter::new(
            s.schema.clone(),
            &s.descr,
            &s.props,
            vec![false; s.schema.fields().len()],
            vec![false; s.schema.fields().len()],
            s.dict_cfg.clone(),
            spill,
        )?
        .with_dictionary_inputs()
        .with_mirrored_fields(&key_mirrors(&s.schema, &s.key_cols));
        let sink = self.storage.create_writer(&path)?;
        self.open = Some(Open {
            path,
            name,
            sink,
            writer,
            rows: 0,
            min_seq: i64::MAX,
            max_seq: i64::MIN,
            retracts: 0,
            first_key: None,
            last_key: None,
            stats: KeyStats {
                min: vec![None; n],
                max: vec![None; n],
                nulls: vec![0; n],
            },
        });
        Ok(())
    }

    /// Writes merged rows, rolling to a new file at the target size.
    pub(crate) fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let target = self.settings.target_file_size;
        let mut offset = 0;
        while offset < batch.num_rows() {
            self.ensure_open()?;
            let open = self
                .open
                .as_mut()
                .ok_or_else(|| Error::internal("no open output"))?;
            let rest = batch.num_rows() - offset;
            let estimated = open.writer.estimated_size();
            // A new file starts with a small step, so a target smaller than one batch of
            // results still rolls; then the average row size decides.
            let step = match estimated.checked_div(open.rows) {
                None => rest.min(FIRST_STEP_ROWS),
                Some(per_row) if estimated + per_row * rest as u64 >= target => {
                    rest.min(ROLL_CHECK_ROWS)
                }
                _ => rest,
            };
            let part = batch.slice(offset, step);
            update_stats(open, &part, &self.settings, &self.converters)?;
            let sink = &mut open.sink;
            open.writer
                .write(&part, &mut to_storage(sink, &mut self.storage_writes))?;
            open.rows += step as u64;
            offset += step;
            if open.writer.estimated_size() >= target {
                self.roll()?;
            }
        }
        Ok(())
    }

    /// Finishes the open file (if it has rows) and records its metadata.
    pub(crate) fn roll(&mut self) -> Result<()> {
        let Some(open) = self.open.take() else {
            return Ok(());
        };
        let Open {
            path,
            name,
            mut sink,
            mut writer,
            rows,
            min_seq,
            max_seq,
            retracts,
            first_key,
            last_key,
            stats,
        } = open;
        if rows == 0 {
            sink.abort()?;
            return Ok(());
        }
        let finished = {
            let mut out = to_storage(&mut sink, &mut self.storage_writes);
            writer.flush_row_group(&mut out).and_then(|()| {
                // Counted before `finish` takes the writer (its last row group is flushed).
                self.mirrored_chunks += writer.mirrored_chunks;
                writer.finish(&mut out)
            })
        };
        let column_stats = match finished {
            Ok((metadata, spilled)) => {
                self.spilled_bytes += spilled;
                crate::rewrite::stats::collect(&metadata)
            }
            Err(e) => {
                let _ = sink.abort();
                return Err(e);
            }
        };
        let size = sink.finish()?;
        let (min_key, max_key) = match (first_key, last_key) {
            (Some(a), Some(b)) => (a, b),
            _ => return Err(Error::internal("an output file without keys")),
        };
        let key_stats = stats
            .min
            .into_iter()
            .zip(stats.max)
            .zip(stats.nulls)
            .map(|((min, max), null_count)| KeyColumnStats {
                min: min.map_or(Datum::Null, |m| m.1),
                max: max.map_or(Datum::Null, |m| m.1),
                null_count,
            })
            .collect();
        let meta = DataFileMeta {
            file_name: name,
            file_size: size,
            row_count: rows,
            min_key: planner_key(&min_key),
            max_key: planner_key(&max_key),
            min_sequence_number: SequenceNumber(min_seq),
            max_sequence_number: SequenceNumber(max_seq),
            level: self.settings.level,
            delete_row_count: Some(retracts),
            creation_time_ms: self.settings.creation_time_ms,
            file_source: FileSource::Compact,
            has_deletion_vector: false,
        };
        self.done.push(MergeOutputFile {
            path,
            meta,
            min_key,
            max_key,
            key_stats,
            column_stats,
        });
        Ok(())
    }

    /// Aborts the open file and deletes the finished ones; a note on what could not be undone.
    pub(crate) fn abort(&mut self) -> Vec<String> {
        discard_outputs(
            self.storage.as_ref(),
            self.open.take().map(|o| (o.path, o.sink)),
            self.done.drain(..).map(|f| f.path),
        )
    }
}

/// The rows holding the smallest and the largest non-null value of `col` (its row-format
/// encoding `rows`), the first of equals.
fn extremes(rows: &Rows, col: &dyn Array) -> (Option<usize>, Option<usize>) {
    let (mut lo, mut hi): (Option<usize>, Option<usize>) = (None, None);
    for r in 0..rows.num_rows() {
        if col.is_null(r) {
            continue;
        }
        let b = rows.row(r);
        if lo.is_none_or(|l| b < rows.row(l)) {
            lo = Some(r);
        }
        if hi.is_none_or(|h| b > rows.row(h)) {
            hi = Some(r);
        }
    }
    (lo, hi)
}

/// Folds the rows of `part` into the open file's metadata.
fn update_stats(
    open: &mut Open,
    part: &RecordBatch,
    s: &OutputSettings,
    converters: &[RowConverter],
) -> Result<()> {
    let n = part.num_rows();
    if n == 0 {
        return Ok(());
    }
    let seqs = part
        .column(s.seq_col)
        .as_primitive::<arrow::datatypes::Int64Type>();
    for &v in seqs.values().iter() {
        open.min_seq = open.min_seq.min(v);
        open.max_seq = open.max_seq.max(v);
    }
    let kinds = kinds_of(part.column(s.kind_col), "merge output")?;
    open.retracts += kinds.iter().filter(|k| k.is_retract()).count() as u64;
    let keys: Vec<&dyn Array> = s
        .key_cols
        .iter()
        .map(|&c| part.column(c).as_ref())
        .collect();
    if open.first_key.is_none() {
        open.first_key = Some(key_datums(&keys, 0)?);
    }
    open.last_key = Some(key_datums(&keys, n - 1)?);
    for (i, (&c, conv)) in s.key_cols.iter().zip(converters).enumerate() {
        let col: &ArrayRef = part.column(c);
        open.stats.nulls[i] += col.null_count() as u64;
        let encode = |a: &ArrayRef| {
            conv.convert_columns(std::slice::from_ref(a))
                .map_err(|e| Error::internal(format!("key statistics: {e}")))
        };
        // The extreme rows and their row-format bytes (what the file's bounds compare).
        let (lo, hi) = if i == 0 && col.null_count() == 0 {
            // Rows arrive in key order, so the leading key column never decreases: its
            // extremes are the first and last rows, encoded alone instead of every row.
            let ends = encode(
                &arrow::compute::concat(&[col.slice(0, 1).as_ref(), col.slice(n - 1, 1).as_ref()])
                    .map_err(|e| Error::internal(format!("key statistics: {e}")))?,
            )?;
            let bytes = |r: usize| ends.row(r).as_ref().to_vec();
            (Some((0, bytes(0))), Some((n - 1, bytes(1))))
        } else {
            let rows = encode(col)?;
            let (lo, hi) = extremes(&rows, col.as_ref());
            let bytes = |r: usize| (r, rows.row(r).as_ref().to_vec());
            (lo.map(bytes), hi.map(bytes))
        };
        if let Some((l, bytes)) = lo {
            if open.stats.min[i].as_ref().is_none_or(|(m, _)| bytes < *m) {
                open.stats.min[i] = Some((bytes, datum_at(col.as_ref(), l)?));
            }
        }
        if let Some((h, bytes)) = hi {
            if open.stats.max[i].as_ref().is_none_or(|(m, _)| bytes > *m) {
                open.stats.max[i] = Some((bytes, datum_at(col.as_ref(), h)?));
            }
        }
    }
    Ok(())
}
