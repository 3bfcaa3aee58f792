//! Files of about a target size: the output of one rewrite stream, rolled to a new file as the
//! current one reaches the target, in the format the output level asks for ([`OutputFormat`]:
//! Parquet through [`crate::parquet_io`], ORC through [`crate::orc_io`], Avro through
//! [`super::avro_output`]).
//!
//! Files are named `<dir>/<prefix><n><extension>`, `n` counting from 0. Rows go into the open
//! file in steps: a whole batch while the file is far from the target, then
//! [`ROLL_CHECK_ROWS`] at a time so it stops close to it (Paimon's rolling writer checks every
//! 1000 records), and the file is finished once its estimated size reaches the target. What a
//! caller records about each file (sequence numbers, key ranges, metrics) is its [`Recorder`].

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::file::metadata::page_index::RowGroupPageIndex;
use parquet::file::metadata::RowGroupMetaData;
use parquet::file::reader::ChunkReader;

use super::avro_output::{AvroFileWriter, AvroSpec};
use super::stats::{ColumnStats, ValueStatsCollector};
use crate::error::{Error, Result};
use crate::orc_io::write::{OrcFileWriter, OrcWriteSettings};
use crate::parquet_io::page_spill::PageSpill;
use crate::parquet_io::writer::{FileSpec, ParquetFileWriter};
use crate::storage::{Storage, StorageWriter};

/// The format of the files of one stream.
#[derive(Clone)]
pub(crate) enum OutputFormat {
    Parquet(Arc<FileSpec>),
    /// ORC files of `schema`'s columns.
    Orc {
        schema: SchemaRef,
        settings: Arc<OrcWriteSettings>,
    },
    /// Avro files of `schema`'s columns.
    Avro {
        schema: SchemaRef,
        spec: Arc<AvroSpec>,
    },
}

impl OutputFormat {
    /// The Arrow schema of the files.
    pub(crate) fn schema(&self) -> &SchemaRef {
        match self {
            OutputFormat::Parquet(spec) => &spec.schema,
            OutputFormat::Orc { schema, .. } | OutputFormat::Avro { schema, .. } => schema,
        }
    }
}

/// The writer of one open file.
enum FileWriter {
    Parquet(ParquetFileWriter),
    /// The ORC writer and the value statistics gathered from the rows written (the Parquet
    /// writer's come from its footer).
    Orc(OrcFileWriter, ValueStatsCollector),
    /// The Avro writer and the value statistics gathered from the rows written.
    Avro(AvroFileWriter, ValueStatsCollector),
}

impl FileWriter {
    fn estimated_size(&self) -> u64 {
        match self {
            FileWriter::Parquet(w) => w.estimated_size(),
            FileWriter::Orc(w, _) => w.estimated_size(),
            FileWriter::Avro(w, _) => w.estimated_size(),
        }
    }
}

/// Near the target size, rows go in steps of this many so a file stops close to it.
const ROLL_CHECK_ROWS: usize = 1024;

/// What a caller keeps about the files of a [`RollingWriter`].
pub(crate) trait Recorder {
    /// What is kept about the open file.
    type File;
    /// The record of a finished file.
    type Done;

    /// The state of a new file.
    fn start(&mut self) -> Self::File;

    /// `part` is about to be written to the open file.
    fn record(&mut self, _file: &mut Self::File, _part: &RecordBatch) -> Result<()> {
        Ok(())
    }

    /// The last row group of a Parquet file has been flushed; its writer's counters are final
    /// except for the footer.
    fn flushed(&mut self, _writer: &ParquetFileWriter) {}

    /// The file is complete and visible in storage.
    fn finish(&mut self, file: FinishedFile<Self::File>) -> Result<Self::Done>;

    /// Where a finished file is (for clean-up on failure).
    fn path(done: &Self::Done) -> &str;

    /// Files written beside a finished file (its file index), deleted with it on failure.
    fn extra_paths(_done: &Self::Done) -> Vec<&str> {
        Vec::new()
    }
}

/// A complete output file.
pub(crate) struct FinishedFile<F> {
    pub path: String,
    /// The file name (the last part of `path`).
    pub name: String,
    /// Bytes, as storage counted them.
    pub size: u64,
    pub rows: u64,
    /// Value statistics of the top-level columns.
    pub column_stats: Vec<ColumnStats>,
    pub state: F,
}

/// The file being written.
struct OpenFile<F> {
    path: String,
    name: String,
    sink: Box<dyn StorageWriter>,
    writer: FileWriter,
    rows: u64,
    state: F,
}

/// One stream of output files; see the module documentation.
pub(crate) struct RollingWriter<'s, R: Recorder> {
    storage: &'s Arc<dyn Storage>,
    format: OutputFormat,
    dir: String,
    prefix: String,
    /// `.parquet` or `.orc`, or what [`RollingWriter::with_extension`] set.
    extension: String,
    target_file_size: u64,
    /// Rows of a new file's first step, before its size estimate is trusted (`None`: the
    /// first step is the whole batch, like any step far from the target).
    first_step_rows: Option<usize>,
    next_index: u64,
    open: Option<OpenFile<R::File>>,
    /// The finished files, in order.
    pub(crate) done: Vec<R::Done>,
    pub(crate) recorder: R,
    /// Calls that sent bytes to storage writers.
    pub(crate) storage_writes: u64,
    /// Bytes of pages that went through spill objects.
    pub(crate) spilled_bytes: u64,
}

/// Sends output bytes to `sink`, counting the calls.
fn to_storage<'a>(
    sink: &'a mut Box<dyn StorageWriter>,
    writes: &'a mut u64,
) -> impl FnMut(&[u8]) -> Result<()> + Send + use<'a> {
    move |piece| {
        *writes += 1;
        sink.write(piece).map_err(Error::from)
    }
}

impl<'s, R: Recorder> RollingWriter<'s, R> {
    /// Files of `format` under `dir` named `<prefix><n>.parquet` or `.orc` (see
    /// [`RollingWriter::with_extension`]), each finished once it reaches `target_file_size`
    /// bytes.
    pub(crate) fn new(
        storage: &'s Arc<dyn Storage>,
        format: OutputFormat,
        dir: &str,
        prefix: &str,
        target_file_size: u64,
        recorder: R,
    ) -> Self {
        let extension = match format {
            OutputFormat::Parquet(_) => ".parquet",
            OutputFormat::Orc { .. } => ".orc",
            OutputFormat::Avro { .. } => ".avro",
        };
        RollingWriter {
            storage,
            format,
            dir: dir.to_string(),
            prefix: prefix.to_string(),
            extension: extension.to_string(),
            target_file_size,
            first_step_rows: None,
            next_index: 0,
            open: None,
            done: Vec::new(),
            recorder,
            storage_writes: 0,
            spilled_bytes: 0,
        }
    }

    /// Names files `<prefix><n><extension>` (Paimon's `file.suffix.include.compression`
    /// puts the codec in it).
    pub(crate) fn with_extension(mut self, extension: String) -> Self {
        self.extension = extension;
        self
    }

    /// Starts every file with a step of `rows` rows, so a target smaller than one batch still
    /// rolls; then the average row size decides.
    pub(crate) fn with_first_step(mut self, rows: usize) -> Self {
        self.first_step_rows = Some(rows);
        self
    }

    fn ensure_open(&mut self) -> Result<&mut OpenFile<R::File>> {
        if self.open.is_none() {
            let name = format!("{}{}{}", self.prefix, self.next_index, self.extension);
            self.next_index += 1;
            let path = if self.dir.is_empty() {
                name.clone()
            } else {
                format!("{}/{}", self.dir, name)
            };
            let writer = match &self.format {
                OutputFormat::Parquet(spec) => {
                    let spill = spec.spill_budget.map(|budget| {
                        PageSpill::new(self.storage.clone(), format!("{path}.spill"), budget)
                    });
                    FileWriter::Parquet(ParquetFileWriter::new(spec, spill)?)
                }
                OutputFormat::Orc { schema, settings } => FileWriter::Orc(
                    OrcFileWriter::new(schema, settings)?,
                    ValueStatsCollector::new(schema),
                ),
                OutputFormat::Avro { schema, spec } => {
                    // A sync marker of the file's own, reproducible from its path.
                    let a = twox_hash::XxHash64::oneshot(1, path.as_bytes());
                    let b = twox_hash::XxHash64::oneshot(2, path.as_bytes());
                    let mut marker = [0u8; 16];
                    marker[..8].copy_from_slice(&a.to_le_bytes());
                    marker[8..].copy_from_slice(&b.to_le_bytes());
                    FileWriter::Avro(
                        AvroFileWriter::new(spec.clone(), marker),
                        ValueStatsCollector::new(schema),
                    )
                }
            };
            let sink = self.storage.create_writer(&path)?;
            let state = self.recorder.start();
            self.open = Some(OpenFile {
                path,
                name,
                sink,
                writer,
                rows: 0,
                state,
            });
        }
        self.open
            .as_mut()
            .ok_or_else(|| Error::internal("no open output"))
    }

    /// Writes `batch`, rolling to a new file at the target size. `attribute` maps an error of
    /// the file writer (not of rolling) to what the caller reports.
    pub(crate) fn write(
        &mut self,
        batch: &RecordBatch,
        attribute: &dyn Fn(Error) -> Error,
    ) -> Result<()> {
        let target = self.target_file_size;
        let first_step = self.first_step_rows;
        let mut offset = 0;
        while offset < batch.num_rows() {
            self.ensure_open()?;
            let Some(open) = self.open.as_mut() else {
                return Err(Error::internal("no open output"));
            };
            let rest = batch.num_rows() - offset;
            let estimated = open.writer.estimated_size();
            let step = match estimated.checked_div(open.rows) {
                None => first_step.map_or(rest, |rows| rest.min(rows)),
                Some(per_row) if estimated + per_row * rest as u64 >= target => {
                    rest.min(ROLL_CHECK_ROWS)
                }
                _ => rest,
            };
            let part = batch.slice(offset, step);
            self.recorder.record(&mut open.state, &part)?;
            {
                let out = &mut to_storage(&mut open.sink, &mut self.storage_writes);
                match &mut open.writer {
                    FileWriter::Parquet(w) => w.write(&part, out),
                    FileWriter::Orc(w, stats) => {
                        stats.add(&part);
                        w.write(&part, out)
                    }
                    FileWriter::Avro(w, stats) => {
                        stats.add(&part);
                        w.write(&part, out)
                    }
                }
                .map_err(attribute)?;
            }
            open.rows += step as u64;
            offset += step;
            self.roll_if_full()?;
        }
        Ok(())
    }

    /// Splices an input row group into the open file without decoding it (see
    /// [`ParquetFileWriter::append_row_group`]), first rolling if it would take a file that
    /// has rows past the target.
    pub(crate) fn splice<C: ChunkReader>(
        &mut self,
        row_group: &RowGroupMetaData,
        reader: &C,
        indexes: &RowGroupPageIndex,
        attribute: &dyn Fn(Error) -> Error,
    ) -> Result<()> {
        let target = self.target_file_size;
        let size = row_group.compressed_size().max(0) as u64;
        if let Some(open) = self.open.as_ref() {
            if open.rows > 0 && open.writer.estimated_size() + size > target {
                self.roll()?;
            }
        }
        self.ensure_open()?;
        let Some(open) = self.open.as_mut() else {
            return Err(Error::internal("no open output"));
        };
        let FileWriter::Parquet(writer) = &mut open.writer else {
            return Err(Error::internal(
                "a Parquet row group spliced into an ORC file",
            ));
        };
        let sink = &mut open.sink;
        writer
            .append_row_group(
                row_group,
                reader,
                indexes,
                &mut to_storage(sink, &mut self.storage_writes),
            )
            .map_err(attribute)?;
        open.rows += row_group.num_rows().max(0) as u64;
        self.roll_if_full()
    }

    fn roll_if_full(&mut self) -> Result<()> {
        let full = self
            .open
            .as_ref()
            .is_some_and(|o| o.writer.estimated_size() >= self.target_file_size);
        if full {
            self.roll()?;
        }
        Ok(())
    }

    /// Finishes the open file (if it has rows) and records it.
    pub(crate) fn roll(&mut self) -> Result<()> {
        let Some(open) = self.open.take() else {
            return Ok(());
        };
        let OpenFile {
            path,
            name,
            mut sink,
            writer,
            rows,
            state,
        } = open;
        if rows == 0 {
            sink.abort()?;
            return Ok(());
        }
        let finished = {
            let mut out = to_storage(&mut sink, &mut self.storage_writes);
            match writer {
                FileWriter::Parquet(mut writer) => {
                    writer.flush_row_group(&mut out).and_then(|()| {
                        self.recorder.flushed(&writer);
                        let (metadata, spilled) = writer.finish(&mut out)?;
                        self.spilled_bytes += spilled;
                        Ok(super::stats::collect(&metadata))
                    })
                }
                FileWriter::Orc(writer, stats) => writer.finish(&mut out).map(|()| stats.finish()),
                FileWriter::Avro(writer, stats) => writer.finish(&mut out).map(|()| stats.finish()),
            }
        };
        let column_stats = match finished {
            Ok(stats) => stats,
            Err(e) => {
                let _ = sink.abort();
                return Err(e);
            }
        };
        let size = sink.finish()?;
        let done = self.recorder.finish(FinishedFile {
            path: path.clone(),
            name,
            size,
            rows,
            column_stats,
            state,
        });
        let done = match done {
            Ok(done) => done,
            Err(e) => {
                // The file is complete but unrecorded: nothing would delete it later.
                let _ = self.storage.delete(&path);
                return Err(e);
            }
        };
        self.done.push(done);
        Ok(())
    }

    /// Undoes everything: aborts the open file and deletes the finished ones. Returns a line
    /// per object that could not be cleaned up.
    pub(crate) fn abort(&mut self) -> Vec<String> {
        let mut failures = Vec::new();
        if let Some(open) = self.open.take() {
            if let Err(e) = open.sink.abort() {
                failures.push(format!("abort '{}': {e}", open.path));
            }
        }
        for done in self.done.drain(..) {
            for path in std::iter::once(R::path(&done)).chain(R::extra_paths(&done)) {
                if let Err(e) = self.storage.delete(path) {
                    failures.push(format!("delete '{path}': {e}"));
                }
            }
        }
        failures
    }
}
