//! One output Parquet file, assembled row group by row group.
//!
//! This is arrow-rs's `ArrowWriter` loop (split batches so row groups stay under
//! `parquet.block.size`, one column writer per leaf) with two additions `ArrowWriter` cannot
//! offer: a column can be written by the dictionary-mapping writer
//! ([`DictColumnWriter`]), and a whole input row group can be spliced in without decoding
//! (fast copy). The bytes go to an in-memory sink that the caller drains to storage after each
//! call, so at most about one row group of output is in memory.

use std::io::Write;
use std::ops::Range;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::{DataType, SchemaRef};
use parquet::arrow::add_encoded_arrow_schema_to_metadata;
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnWriter, ArrowRowGroupWriterFactory};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::{ParquetMetaData, RowGroupMetaData};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::ChunkReader;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::SchemaDescriptor;

use super::dictionary_writer::{DictColumnWriter, DictWriterConfig, DictWriterCounters};
use crate::error::{Error, Result};

/// Writer failures are about the data being written (a null in a required column, a value the
/// table type cannot hold): the caller attributes them to the input file being copied.
fn write_err(e: impl std::fmt::Display) -> Error {
    Error::corrupt(
        None,
        format!("cannot be written with the table schema: {e}"),
    )
}

/// The in-memory end of the Parquet writer; drained to storage by the caller.
#[derive(Default)]
pub(crate) struct Sink(Vec<u8>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

enum Slot {
    Arrow(Box<ArrowColumnWriter>),
    Mapped(Box<DictColumnWriter>),
}

impl Slot {
    fn estimated_size(&self) -> usize {
        match self {
            Slot::Arrow(w) => w.get_estimated_total_bytes(),
            Slot::Mapped(w) => w.estimated_size(),
        }
    }
}

struct InProgress {
    slots: Vec<Slot>,
    rows: usize,
}

impl InProgress {
    fn estimated_size(&self) -> usize {
        self.slots.iter().map(Slot::estimated_size).sum()
    }
}

/// Writes one output file.
pub(crate) struct ParquetFileWriter {
    file: SerializedFileWriter<Sink>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    /// Leaf columns of each top-level field.
    field_leaves: Vec<Range<usize>>,
    /// Top-level fields written by the dictionary-mapping writer.
    mapped: Vec<bool>,
    dict_cfg: Arc<DictWriterConfig>,
    max_row_group_bytes: usize,
    in_progress: Option<InProgress>,
    pub(crate) counters: DictWriterCounters,
    pub(crate) dictionary_arrays_decoded: u64,
}

/// The leaf columns of each top-level field of `descr`.
pub(crate) fn field_leaves(descr: &SchemaDescriptor) -> Vec<Range<usize>> {
    let fields = descr.root_schema().get_fields().len();
    let mut ranges: Vec<Range<usize>> = vec![0..0; fields];
    let mut seen = vec![false; fields];
    for leaf in 0..descr.num_columns() {
        let root = descr.get_column_root_idx(leaf);
        if !seen[root] {
            ranges[root] = leaf..leaf;
            seen[root] = true;
        }
        ranges[root].end = leaf + 1;
    }
    ranges
}

impl ParquetFileWriter {
    /// `schema` is the output Arrow schema (no dictionary types), `descr` the Parquet schema to
    /// write (normally the inputs' own, so field ids and physical types carry over), `mapped`
    /// the top-level fields the dictionary-mapping writer takes.
    pub(crate) fn new(
        schema: SchemaRef,
        descr: &SchemaDescriptor,
        props: &WriterProperties,
        mapped: Vec<bool>,
        dict_cfg: Arc<DictWriterConfig>,
    ) -> Result<Self> {
        let mut props = props.clone();
        add_encoded_arrow_schema_to_metadata(&schema, &mut props);
        let max_row_group_bytes = props.max_row_group_bytes().unwrap_or(usize::MAX);
        let file =
            SerializedFileWriter::new(Sink::default(), descr.root_schema_ptr(), Arc::new(props))
                .map_err(|e| Error::illegal_state(format!("creating a Parquet writer: {e}")))?;
        let factory = ArrowRowGroupWriterFactory::new(&file, schema.clone());
        Ok(ParquetFileWriter {
            field_leaves: field_leaves(descr),
            file,
            factory,
            schema,
            mapped,
            dict_cfg,
            max_row_group_bytes,
            in_progress: None,
            counters: DictWriterCounters::default(),
            dictionary_arrays_decoded: 0,
        })
    }

    fn start_row_group(&mut self) -> Result<InProgress> {
        let index = self.file.flushed_row_groups().len();
        let writers = self
            .factory
            .create_column_writers(index)
            .map_err(write_err)?;
        let mut slots: Vec<Slot> = writers
            .into_iter()
            .map(|w| Slot::Arrow(Box::new(w)))
            .collect();
        for (f, mapped) in self.mapped.iter().enumerate() {
            if !mapped {
                continue;
            }
            let leaf = self.field_leaves[f].start;
            let descr = self.file.schema_descr().column(leaf);
            slots[leaf] = Slot::Mapped(Box::new(DictColumnWriter::new(
                descr,
                self.dict_cfg.clone(),
            )?));
        }
        Ok(InProgress { slots, rows: 0 })
    }

    /// Bytes written so far plus the estimated size of the row group in progress.
    pub(crate) fn estimated_size(&self) -> u64 {
        let open = self
            .in_progress
            .as_ref()
            .map_or(0, InProgress::estimated_size);
        (self.file.bytes_written() + open) as u64
    }

    /// Writes `batch`, cutting row groups at `parquet.block.size` as `ArrowWriter` does: once a
    /// row group holds rows, its average row size decides how many more fit.
    pub(crate) fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let mut remaining = batch.clone();
        while remaining.num_rows() > 0 {
            let in_progress = match self.in_progress.take() {
                Some(ip) => ip,
                None => self.start_row_group()?,
            };
            let buffered = in_progress.rows;
            let mut take = remaining.num_rows();
            let current = in_progress.estimated_size();
            if let Some(average) = current.checked_div(buffered) {
                if current >= self.max_row_group_bytes {
                    self.in_progress = Some(in_progress);
                    self.flush_row_group()?;
                    continue;
                }
                let fit = (self.max_row_group_bytes - current) / average.max(1);
                if fit == 0 {
                    self.in_progress = Some(in_progress);
                    self.flush_row_group()?;
                    continue;
                }
                take = take.min(fit);
            }
            let part = remaining.slice(0, take);
            remaining = remaining.slice(take, remaining.num_rows() - take);
            let mut in_progress = in_progress;
            self.write_columns(&mut in_progress, &part)?;
            in_progress.rows += take;
            let full = in_progress.estimated_size() >= self.max_row_group_bytes;
            self.in_progress = Some(in_progress);
            if full {
                self.flush_row_group()?;
            }
        }
        Ok(())
    }

    fn write_columns(&mut self, ip: &mut InProgress, batch: &RecordBatch) -> Result<()> {
        for (f, (field, column)) in self.schema.fields().iter().zip(batch.columns()).enumerate() {
            let leaves = self.field_leaves[f].clone();
            if self.mapped[f] {
                if let Slot::Mapped(w) = &mut ip.slots[leaves.start] {
                    w.write(column)?;
                    continue;
                }
            }
            // Passthrough is off or vetoed for this column: a dictionary array must not reach
            // the writer, whatever handed it over.
            let column: ArrayRef = match column.data_type() {
                DataType::Dictionary(_, _) if column.data_type() != field.data_type() => {
                    self.dictionary_arrays_decoded += 1;
                    arrow::compute::cast(column, field.data_type()).map_err(write_err)?
                }
                _ => column.clone(),
            };
            let leaf_columns = compute_leaves(field, &column).map_err(write_err)?;
            for (leaf, leaf_column) in leaves.zip(leaf_columns) {
                match &mut ip.slots[leaf] {
                    Slot::Arrow(w) => w.write(&leaf_column).map_err(write_err)?,
                    Slot::Mapped(_) => {
                        return Err(Error::illegal_state(
                            "mapped column given to the Arrow writer",
                        ))
                    }
                }
            }
        }
        Ok(())
    }

    /// Closes the row group in progress (if it has rows) into the file.
    pub(crate) fn flush_row_group(&mut self) -> Result<()> {
        let Some(ip) = self.in_progress.take() else {
            return Ok(());
        };
        if ip.rows == 0 {
            return Ok(());
        }
        let mut rg = self.file.next_row_group().map_err(write_err)?;
        for slot in ip.slots {
            match slot {
                Slot::Arrow(w) => {
                    let chunk = w.close().map_err(write_err)?;
                    chunk.append_to_row_group(&mut rg).map_err(write_err)?;
                }
                Slot::Mapped(w) => {
                    self.counters.add(&w.counters());
                    let (bytes, close) = w.close()?;
                    rg.append_column(&bytes, close).map_err(write_err)?;
                }
            }
        }
        rg.close().map_err(write_err)?;
        Ok(())
    }

    /// Splices an input row group in without decoding it. `reader` serves the input file's
    /// bytes at the input's offsets (at least this row group's column chunks).
    pub(crate) fn append_row_group<R: ChunkReader>(
        &mut self,
        row_group: &RowGroupMetaData,
        reader: &R,
    ) -> Result<()> {
        self.flush_row_group()?;
        let mut rg = self.file.next_row_group().map_err(write_err)?;
        for chunk in row_group.columns() {
            let close = ColumnCloseResult {
                bytes_written: chunk.compressed_size() as u64,
                rows_written: row_group.num_rows() as u64,
                metadata: chunk.clone(),
                bloom_filter: None,
                column_index: None,
                offset_index: None,
            };
            rg.append_column(reader, close).map_err(write_err)?;
        }
        rg.close().map_err(write_err)?;
        Ok(())
    }

    /// Output bytes produced since the last call.
    pub(crate) fn take_bytes(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.file.inner_mut().0)
    }

    /// Writes the footer; returns the file's metadata and the last bytes.
    pub(crate) fn finish(mut self) -> Result<(ParquetMetaData, Vec<u8>)> {
        self.flush_row_group()?;
        let metadata = self.file.finish().map_err(write_err)?;
        let tail = self.take_bytes();
        Ok((metadata, tail))
    }
}
