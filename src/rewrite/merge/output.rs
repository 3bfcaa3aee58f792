//! Rolling output of the merge: Parquet or ORC files written through storage, a new file once the
//! current one reaches `target-file-size`, and each file's metadata computed from the rows
//! that went into it (never from the inputs').

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::Schema;

use super::kv_format::{datum_at, key_datums, kinds_of, planner_key, KEY_PREFIX};
use super::{KeyColumnStats, MergeOutputFile};
use crate::error::{Error, Result};
use crate::meta::{CompactionFile, FileSource, Level, SequenceNumber};
use crate::parquet_io::writer::ParquetFileWriter;
use crate::rewrite::file_index::{FileIndex, FileIndexBuilder};
use crate::rewrite::rolling::{FinishedFile, OutputFormat, Recorder, RollingWriter};
use crate::storage::Storage;
use crate::value::Datum;

/// Rows written into a new file before its size estimate is trusted: a target smaller than one
/// batch of results still rolls.
const FIRST_STEP_ROWS: usize = 256;

/// Settings shared by the data and changelog outputs.
pub(crate) struct OutputSettings {
    /// What the files are written with: Parquet (key columns mirrored, dictionary arrays
    /// taken as they are) or ORC.
    pub format: OutputFormat,
    pub target_file_size: u64,
    pub level: Level,
    pub creation_time_ms: i64,
    pub key_cols: Vec<usize>,
    pub seq_col: usize,
    pub kind_col: usize,
    /// Of the files' names ([`crate::options::CoreOptions::file_extension`]).
    pub extension: String,
    /// The file index each file gets (`file-index.*`), `None` for none.
    pub file_index: Option<Arc<crate::rewrite::file_index::FileIndexSpec>>,
}

/// `(value field, key field)` for each `_KEY_<name>` column whose value column `<name>` the
/// file also stores: Paimon writes a primary key column twice, and the two hold the same
/// values row for row, so the writer encodes them once (it checks that they agree).
pub(crate) fn key_mirrors(schema: &Schema, key_cols: &[usize]) -> Vec<(usize, usize)> {
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

/// What is known of the open file from its rows.
struct FileKeys {
    min_seq: i64,
    max_seq: i64,
    retracts: u64,
    first_key: Option<Vec<Datum>>,
    last_key: Option<Vec<Datum>>,
    stats: KeyStats,
    index: Option<FileIndexBuilder>,
}

/// What the merge records about each output file: its metadata, computed from the rows that
/// went into it.
struct MergeFiles {
    settings: Arc<OutputSettings>,
    /// One single-column row converter per key column (byte-comparable min/max).
    converters: Vec<RowConverter>,
    mirrored_chunks: u64,
    /// An empty file index, cloned for each new file.
    index: Option<FileIndexBuilder>,
    storage: Arc<dyn Storage>,
}

impl Recorder for MergeFiles {
    type File = FileKeys;
    type Done = MergeOutputFile;

    fn start(&mut self) -> FileKeys {
        let n = self.settings.key_cols.len();
        FileKeys {
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
            index: self.index.clone(),
        }
    }

    fn record(&mut self, file: &mut FileKeys, part: &RecordBatch) -> Result<()> {
        if let Some(index) = &mut file.index {
            index.add(part)?;
        }
        update_stats(file, part, &self.settings, &self.converters)
    }

    fn flushed(&mut self, writer: &ParquetFileWriter) {
        // Counted before `finish` takes the writer (its last row group is flushed).
        self.mirrored_chunks += writer.mirrored_chunks;
    }

    fn finish(&mut self, file: FinishedFile<FileKeys>) -> Result<MergeOutputFile> {
        let FileKeys {
            min_seq,
            max_seq,
            retracts,
            first_key,
            last_key,
            stats,
            index,
        } = file.state;
        let file_index = index
            .map(|i| i.finish(self.storage.as_ref(), &file.path, &file.name))
            .transpose()?;
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
        let meta = CompactionFile {
            file_name: file.name,
            file_size: file.size,
            row_count: file.rows,
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
        Ok(MergeOutputFile {
            path: file.path,
            meta,
            min_key,
            max_key,
            key_stats,
            column_stats: file.column_stats,
            file_index,
        })
    }

    fn path(done: &MergeOutputFile) -> &str {
        &done.path
    }

    fn extra_paths(done: &MergeOutputFile) -> Vec<&str> {
        FileIndex::written_file(done.file_index.as_ref())
    }
}

/// One stream of output files (data, or changelog).
pub(crate) struct RollingOutput<'s>(RollingWriter<'s, MergeFiles>);

/// What one stream of output files wrote, for the merge's metrics.
pub(crate) struct OutputTotals {
    pub files: Vec<MergeOutputFile>,
    pub storage_writes: u64,
    pub spilled_bytes: u64,
    pub mirrored_chunks: u64,
}

impl<'s> RollingOutput<'s> {
    pub(crate) fn new(
        storage: &'s Arc<dyn Storage>,
        settings: Arc<OutputSettings>,
        dir: &str,
        prefix: &str,
    ) -> Result<Self> {
        let schema = settings.format.schema();
        let converters = settings
            .key_cols
            .iter()
            .map(|&c| {
                RowConverter::new(vec![SortField::new(schema.field(c).data_type().clone())])
                    .map_err(|e| Error::unsupported(format!("key column type: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        let index = settings
            .file_index
            .as_ref()
            .map(|spec| spec.builder(schema))
            .transpose()?
            .flatten();
        let files = MergeFiles {
            settings: settings.clone(),
            converters,
            mirrored_chunks: 0,
            index,
            storage: storage.clone(),
        };
        Ok(RollingOutput(
            RollingWriter::new(
                storage,
                settings.format.clone(),
                dir,
                prefix,
                settings.target_file_size,
                files,
            )
            .with_extension(settings.extension.clone())
            .with_first_step(FIRST_STEP_ROWS),
        ))
    }

    /// Writes merged rows, rolling to a new file at the target size.
    pub(crate) fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.0.write(batch, &|e| e)
    }

    /// Finishes the open file (if it has rows) and records its metadata.
    pub(crate) fn roll(&mut self) -> Result<()> {
        self.0.roll()
    }

    /// Aborts the open file and deletes the finished ones; a note on what could not be undone.
    pub(crate) fn abort(&mut self) -> Vec<String> {
        self.0.abort()
    }

    /// The finished files and what writing them took.
    pub(crate) fn finish(self) -> OutputTotals {
        let RollingWriter {
            done,
            recorder,
            storage_writes,
            spilled_bytes,
            ..
        } = self.0;
        OutputTotals {
            files: done,
            storage_writes,
            spilled_bytes,
            mirrored_chunks: recorder.mirrored_chunks,
        }
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
    open: &mut FileKeys,
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
        .as_primitive::<arrow_array::types::Int64Type>();
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
                &arrow_select::concat::concat(&[
                    col.slice(0, 1).as_ref(),
                    col.slice(n - 1, 1).as_ref(),
                ])
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
