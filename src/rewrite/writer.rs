//! One output Parquet file, assembled row group by row group.
//!
//! This is arrow-rs's `ArrowWriter` loop (split batches so row groups stay under
//! `parquet.block.size`, one column writer per leaf) with two additions `ArrowWriter` cannot
//! offer: a column can be written by the dictionary-mapping writer
//! ([`DictColumnWriter`]), and a whole input row group can be spliced in without decoding
//! (fast copy). The bytes go to an in-memory sink that the caller drains to storage after each
//! call, so at most about one row group of output is in memory.

use std::io::{Read, Write};
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};

use super::page_spill::PageSpill;
use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::{DataType, FieldRef, SchemaRef};
use parquet::arrow::add_encoded_arrow_schema_to_metadata;
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnWriter, ArrowRowGroupWriterFactory, PageStore, PageStoreArgs,
    PageStoreFactory,
};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::page_index::RowGroupPageIndex;
use parquet::file::metadata::{ParquetMetaData, RowGroupMetaData};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::reader::{ChunkReader, Length};
use parquet::file::writer::{SerializedFileWriter, SerializedRowGroupWriter};
use parquet::schema::types::{ColumnDescPtr, SchemaDescriptor};

use super::column_chunk::{self, ChunkPageStore, TightPageStore};
use super::dictionary_writer::{
    self, ChunkPages, DictColumnWriter, DictWriterConfig, DictWriterCounters,
};
use super::primitive_dictionary_writer::{self, PrimitiveChunkWriter};
use crate::error::{Error, Result};
use crate::storage::Storage;

/// Writer failures are about the data being written (a null in a required column, a value the
/// table type cannot hold): the caller attributes them to the input file being copied.
fn write_err(e: impl std::fmt::Display) -> Error {
    Error::corrupt(
        None,
        format!("cannot be written with the table schema: {e}"),
    )
}

/// Undoes a rewrite's outputs: aborts the file being written (`open`: its path and writer) and
/// deletes the finished ones; returns a line per object that could not be cleaned up.
pub(crate) fn discard_outputs(
    storage: &dyn Storage,
    open: Option<(String, Box<dyn crate::storage::StorageWriter>)>,
    done: impl IntoIterator<Item = String>,
) -> Vec<String> {
    let mut failures = Vec::new();
    if let Some((path, sink)) = open {
        if let Err(e) = sink.abort() {
            failures.push(format!("abort '{path}': {e}"));
        }
    }
    for path in done {
        if let Err(e) = storage.delete(&path) {
            failures.push(format!("delete '{path}': {e}"));
        }
    }
    failures
}

/// Size of the pieces the sink collects output in.
const SINK_CHUNK: usize = 1 << 20;

/// Drained pieces kept for reuse. A chunk of this project's writers is sent on a piece at a
/// time ([`append_draining`]), but arrow-rs's own chunks (booleans, binary, STRING with the
/// dictionary off, ...) are copied into the sink whole before they are, so a flush can fill tens
/// of pieces at once; allocated afresh each time, their memory went back to the system after
/// every flush and came back as page faults. Kept, they cost no more than the largest such
/// chunk's bytes, which the flush held anyway.
const SINK_SPARE_PIECES: usize = 64;

/// The in-memory end of the Parquet writer, drained to storage as the file grows.
///
/// Bytes are kept in fixed-size pieces rather than one growing `Vec` (a doubling buffer would
/// briefly need twice the data), and the pieces are shared with [`ParquetFileWriter`] so they
/// can be sent to storage between the column chunks of a row group being flushed: otherwise a
/// whole row group would sit here while its pages are still in memory too.
#[derive(Clone, Default)]
pub(crate) struct Sink {
    state: Arc<Mutex<SinkState>>,
}

#[derive(Default)]
struct SinkState {
    /// Pieces written and not yet drained, in order.
    full: Vec<Vec<u8>>,
    /// Drained pieces, empty, for the next writes.
    spare: Vec<Vec<u8>>,
    /// The most pieces written and not yet drained at once (what the sink's memory peaked at).
    most_held: usize,
}

impl Sink {
    fn lock(&self) -> MutexGuard<'_, SinkState> {
        // No thread ever panics while holding it; a poisoned lock still holds whole pieces.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends every piece written so far to `out`, in order, keeping them for reuse.
    fn drain(&self, out: &mut Drain<'_>) -> Result<()> {
        let full = std::mem::take(&mut self.lock().full);
        for mut piece in full {
            out(&piece)?;
            piece.clear();
            let mut state = self.lock();
            if state.spare.len() < SINK_SPARE_PIECES {
                state.spare.push(piece);
            }
        }
        Ok(())
    }
}

impl Write for Sink {
    fn write(&mut self, mut buf: &[u8]) -> std::io::Result<usize> {
        let n = buf.len();
        let mut state = self.lock();
        let SinkState {
            full,
            spare,
            most_held,
        } = &mut *state;
        while !buf.is_empty() {
            let chunk = match full.last_mut() {
                Some(c) if c.len() < c.capacity() => c,
                _ => {
                    full.push(
                        spare
                            .pop()
                            .unwrap_or_else(|| Vec::with_capacity(SINK_CHUNK)),
                    );
                    *most_held = (*most_held).max(full.len());
                    full.last_mut().expect("just pushed")
                }
            };
            let take = (chunk.capacity() - chunk.len()).min(buf.len());
            chunk.extend_from_slice(&buf[..take]);
            buf = &buf[take..];
        }
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Where finished output bytes go (the storage writer of the file). `Send`, as arrow-rs asks of
/// the chunk readers that reach it ([`Draining`]).
pub(crate) type Drain<'a> = dyn FnMut(&[u8]) -> Result<()> + Send + 'a;

/// Splices one of this project's chunks into the row group, sending the sink's bytes on to
/// storage every [`SINK_CHUNK`] bytes as the chunk passes through, instead of once it is all
/// there: a chunk copied whole into the sink first (30 MB for a column of unique strings in a
/// 128 MB row group) was the peak of a flush, on top of the pages still waiting.
fn append_draining(
    rg: &mut SerializedRowGroupWriter<'_, Sink>,
    chunk: &column_chunk::ChunkSource,
    close: ColumnCloseResult,
    sink: &Sink,
    out: &mut Drain<'_>,
) -> Result<()> {
    let failed = Mutex::new(None);
    let out = Mutex::new(out);
    let reader = Draining {
        chunk,
        sink,
        out: &out,
        failed: &failed,
    };
    match rg.append_column(&reader, close) {
        Ok(()) => Ok(()),
        // A storage failure is reported as itself, not as the Parquet error it became.
        Err(e) => Err(lock_ignoring_poison(&failed)
            .take()
            .unwrap_or_else(|| write_err(e))),
    }
}

fn lock_ignoring_poison<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these; what they hold is whole either way.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A chunk that drains the sink as it is read (see [`append_draining`]).
struct Draining<'a, 'o> {
    chunk: &'a column_chunk::ChunkSource,
    sink: &'a Sink,
    out: &'a Mutex<&'a mut Drain<'o>>,
    failed: &'a Mutex<Option<Error>>,
}

impl Length for Draining<'_, '_> {
    fn len(&self) -> u64 {
        self.chunk.len()
    }
}

impl<'a, 'o> ChunkReader for Draining<'a, 'o> {
    type T = DrainingRead<'a, 'o>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(DrainingRead {
            inner: self.chunk.get_read(start)?,
            sink: self.sink,
            out: self.out,
            failed: self.failed,
            pending: 0,
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        self.chunk.get_bytes(start, length)
    }
}

struct DrainingRead<'a, 'o> {
    inner: column_chunk::ChunkStream,
    sink: &'a Sink,
    out: &'a Mutex<&'a mut Drain<'o>>,
    failed: &'a Mutex<Option<Error>>,
    /// Bytes read since the sink was last drained.
    pending: usize,
}

impl Read for DrainingRead<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pending >= SINK_CHUNK {
            // What was read before has been written to the sink (in order: the row group
            // writes each read's bytes before the next read).
            self.pending = 0;
            let mut out = lock_ignoring_poison(self.out);
            if let Err(e) = self.sink.drain(&mut **out) {
                let msg = e.to_string();
                lock_ignoring_poison(self.failed).get_or_insert(e);
                return Err(std::io::Error::other(msg));
            }
        }
        let n = self.inner.read(buf)?;
        self.pending += n;
        Ok(n)
    }
}

#[derive(Debug, Default)]
struct TightPageStoreFactory;

impl PageStoreFactory for TightPageStoreFactory {
    fn create(&self, _args: &PageStoreArgs<'_>) -> parquet::errors::Result<Box<dyn PageStore>> {
        Ok(Box::<TightPageStore>::default())
    }
}

enum Slot {
    Arrow(Box<ArrowColumnWriter>),
    /// A forwarded (passthrough) STRING column; its counters are passthrough's metrics.
    Mapped(Box<DictColumnWriter>),
    /// A STRING column that is not forwarded, written by the same writer from plain strings.
    Strings(Box<DictColumnWriter>),
    Primitive(Box<dyn PrimitiveChunkWriter>),
    /// A column whose values are those of an earlier leaf's (see
    /// [`ParquetFileWriter::with_mirrored_fields`]): its chunk is that leaf's bytes, recorded
    /// under this column's descriptor.
    Mirror {
        source: usize,
        descr: ColumnDescPtr,
    },
}

struct InProgress {
    slots: Vec<Slot>,
    rows: usize,
}

impl InProgress {
    fn estimated_size(&self) -> usize {
        self.slots.iter().map(|slot| self.slot_size(slot)).sum()
    }

    fn slot_size(&self, slot: &Slot) -> usize {
        match slot {
            Slot::Arrow(w) => w.get_estimated_total_bytes(),
            Slot::Mapped(w) | Slot::Strings(w) => w.estimated_size(),
            Slot::Primitive(w) => w.estimated_size(),
            // Written again in full: a mirror's bytes count toward the row group's size.
            Slot::Mirror { source, .. } => self.slots.get(*source).map_or(0, |s| self.slot_size(s)),
        }
    }
}

/// Writes one output file.
pub(crate) struct ParquetFileWriter {
    file: SerializedFileWriter<Sink>,
    sink: Sink,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    /// Leaf columns of each top-level field.
    field_leaves: Vec<Range<usize>>,
    /// Top-level fields written by the dictionary-mapping writer.
    mapped: Vec<bool>,
    /// Top-level INT32/INT64/FLOAT/DOUBLE fields written by the primitive dictionary writer,
    /// each with whether it writes a dictionary (`false`: PLAIN throughout).
    primitive: Vec<Option<bool>>,
    /// Top-level STRING fields not in `mapped` that the dictionary-mapping writer takes anyway.
    strings: Vec<bool>,
    /// Top-level fields whose dictionary arrays go to arrow-rs's writer as they are (it hashes
    /// every row again): the comparison point for the mapping writer, never the default.
    arrow_dictionaries: Vec<bool>,
    /// Whether dictionary arrays reaching a `strings` field go to its dictionary writer as
    /// they are (the merge's dictionary reads) instead of being decoded first (append, where
    /// only forwarded fields keep their dictionaries).
    dictionary_inputs: bool,
    dict_cfg: Arc<DictWriterConfig>,
    max_row_group_bytes: usize,
    in_progress: Option<InProgress>,
    pub(crate) counters: DictWriterCounters,
    pub(crate) dictionary_arrays_decoded: u64,
    /// Chunks written as copies of their source's (see [`Self::with_mirrored_fields`]).
    pub(crate) mirrored_chunks: u64,
    /// Where pages beyond the memory budget go (`None`: all pages stay in memory).
    spill: Option<PageSpill>,
    /// For each top-level field, the earlier field whose values it repeats, row for row, so
    /// its chunks are copies of that field's (see [`Self::with_mirrored_fields`]).
    mirror_of: Vec<Option<usize>>,
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
        arrow_dictionaries: Vec<bool>,
        dict_cfg: Arc<DictWriterConfig>,
        spill: Option<PageSpill>,
    ) -> Result<Self> {
        let original = props;
        let mut props = props.clone();
        add_encoded_arrow_schema_to_metadata(&schema, &mut props);
        let max_row_group_bytes = props.max_row_group_bytes().unwrap_or(usize::MAX);
        let sink = Sink::default();
        let file =
            SerializedFileWriter::new(sink.clone(), descr.root_schema_ptr(), Arc::new(props))
                .map_err(|e| {
                    Error::internal(format!("creating a Parquet writer: {e}")).with_source(e)
                })?;
        let stores: Arc<dyn PageStoreFactory> = match &spill {
            Some(s) => s.factory(),
            None => Arc::new(TightPageStoreFactory),
        };
        let factory =
            ArrowRowGroupWriterFactory::new(&file, schema.clone()).with_page_store_factory(stores);
        let leaves = field_leaves(descr);
        // Which fields one of this project's column writers may take: non-nested, not
        // forwarded (to either writer), written with page statistics (what those writers
        // write) and no bloom filter (which they do not). The STRING writer needs the
        // dictionary on; the primitive one writes PLAIN from the start when it is off (so
        // key columns too compress through `PageCompressor`, and so through a host codec).
        let dictionary = |f: usize| {
            leaves
                .get(f)
                .is_some_and(|range| original.dictionary_enabled(descr.column(range.start).path()))
        };
        let ours = |f: usize, accepts: &dyn Fn(&DataType, &ColumnDescPtr) -> bool| -> bool {
            let Some(range) = leaves.get(f).filter(|r| r.len() == 1) else {
                return false;
            };
            let column = descr.column(range.start);
            let path = column.path();
            !mapped.get(f).copied().unwrap_or(false)
                && !arrow_dictionaries.get(f).copied().unwrap_or(false)
                && original.statistics_enabled(path) == EnabledStatistics::Page
                && original.bloom_filter_properties(path).is_none()
                && accepts(schema.field(f).data_type(), &column)
        };
        let fields = schema.fields().len();
        let primitive = (0..fields)
            .map(|f| {
                (dict_cfg.primitive && ours(f, &primitive_dictionary_writer::accepts))
                    .then(|| dictionary(f))
            })
            .collect();
        let strings = (0..fields)
            .map(|f| {
                dict_cfg.strings && dictionary(f) && ours(f, &dictionary_writer::accepts_strings)
            })
            .collect();
        Ok(ParquetFileWriter {
            field_leaves: leaves,
            primitive,
            strings,
            file,
            sink,
            factory,
            schema,
            mapped,
            arrow_dictionaries,
            dictionary_inputs: false,
            dict_cfg,
            max_row_group_bytes,
            in_progress: None,
            counters: DictWriterCounters::default(),
            dictionary_arrays_decoded: 0,
            mirrored_chunks: 0,
            spill,
            mirror_of: vec![None; fields],
        })
    }

    /// Declares fields that should hold the same values as an earlier field, as `(field,
    /// source)` pairs: a primary-key file stores each key column twice, as `_KEY_k` and as the
    /// value column `k`. While a row group's batches agree, the field's chunk is the source's
    /// pages copied again under its own column metadata, so they are encoded and compressed
    /// once: a column chunk is a function of its values and its column's settings, and both
    /// are checked equal. Batches are compared before they are written; the first that
    /// differs ends the row group in progress (its rows all agreed) and the rest of the file
    /// writes the field itself. Pairs the writer cannot copy (not both this project's
    /// writers, or types, levels or settings that differ) are ignored.
    pub(crate) fn with_mirrored_fields(mut self, pairs: &[(usize, usize)]) -> Self {
        let descr = self.file.schema_descr();
        let props = self.file.properties();
        let mut mirror_of = std::mem::take(&mut self.mirror_of);
        for &(field, source) in pairs {
            let (Some(f), Some(s)) = (self.field_leaves.get(field), self.field_leaves.get(source))
            else {
                continue;
            };
            if f.len() != 1 || s.len() != 1 || s.start >= f.start {
                continue;
            }
            let (fc, sc) = (descr.column(f.start), descr.column(s.start));
            let (fp, sp) = (fc.path(), sc.path());
            let writers_agree = match (self.primitive[field], self.primitive[source]) {
                (Some(a), Some(b)) => a == b,
                (None, None) => self.strings[field] && self.strings[source],
                _ => false,
            };
            let same = writers_agree
                && self.schema.field(field).data_type() == self.schema.field(source).data_type()
                && fc.physical_type() == sc.physical_type()
                && fc.logical_type_ref() == sc.logical_type_ref()
                && fc.converted_type() == sc.converted_type()
                && fc.type_length() == sc.type_length()
                && fc.type_precision() == sc.type_precision()
                && fc.type_scale() == sc.type_scale()
                && fc.max_def_level() == sc.max_def_level()
                && fc.max_rep_level() == sc.max_rep_level()
                && props.dictionary_enabled(fp) == props.dictionary_enabled(sp)
                && props.encoding(fp) == props.encoding(sp)
                && props.compression(fp) == props.compression(sp)
                && props.statistics_enabled(fp) == props.statistics_enabled(sp);
            if same {
                mirror_of[field] = Some(source);
            }
        }
        self.mirror_of = mirror_of;
        self
    }

    /// Whether every mirrored field of `batch` holds its source's values.
    fn mirrors_hold(&self, batch: &RecordBatch) -> bool {
        self.mirror_of
            .iter()
            .enumerate()
            .all(|(f, source)| match source {
                None => true,
                Some(s) => batch.column(f).as_ref() == batch.column(*s).as_ref(),
            })
    }

    /// Lets the STRING fields this project's dictionary writer takes receive dictionary arrays
    /// as they are: it maps each dictionary's entries once instead of every row's bytes.
    pub(crate) fn with_dictionary_inputs(mut self) -> Self {
        self.dictionary_inputs = true;
        self
    }

    /// A writer error caused by a failing spill is that storage failure, typed as such.
    fn retype(&self, e: Error) -> Error {
        match self.spill.as_ref().and_then(PageSpill::take_error) {
            Some(storage) => Error::from(storage),
            None => e,
        }
    }

    /// Bytes of pages written to spill objects so far.
    pub(crate) fn spilled_bytes(&self) -> u64 {
        self.spill.as_ref().map_or(0, PageSpill::spilled_bytes)
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
                self.page_store(),
            )?));
        }
        for (f, strings) in self.strings.iter().enumerate() {
            if !strings || self.mirror_of[f].is_some() {
                continue;
            }
            let leaf = self.field_leaves[f].start;
            let descr = self.file.schema_descr().column(leaf);
            slots[leaf] = Slot::Strings(Box::new(DictColumnWriter::new(
                descr,
                self.dict_cfg.clone(),
                self.page_store(),
            )?));
        }
        for (f, primitive) in self.primitive.iter().enumerate() {
            let Some(dictionary) = *primitive else {
                continue;
            };
            if self.mirror_of[f].is_some() {
                // Its slot is the mirror below.
                continue;
            }
            let leaf = self.field_leaves[f].start;
            let descr = self.file.schema_descr().column(leaf);
            slots[leaf] = Slot::Primitive(primitive_dictionary_writer::writer_for(
                self.schema.field(f).data_type(),
                descr,
                self.dict_cfg.clone(),
                ChunkPages::new(self.page_store()),
                dictionary,
            )?);
        }
        for (f, source) in self.mirror_of.iter().enumerate() {
            if let Some(s) = source {
                let leaf = self.field_leaves[f].start;
                slots[leaf] = Slot::Mirror {
                    source: self.field_leaves[*s].start,
                    descr: self.file.schema_descr().column(leaf),
                };
            }
        }
        Ok(InProgress { slots, rows: 0 })
    }

    /// Where a column writer of ours keeps its finished pages: with the file's spill when
    /// there is one (so they count against its budget), else tightly in memory.
    fn page_store(&self) -> Box<dyn ChunkPageStore> {
        match &self.spill {
            Some(s) => s.store(),
            None => Box::<TightPageStore>::default(),
        }
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
    pub(crate) fn write(&mut self, batch: &RecordBatch, out: &mut Drain<'_>) -> Result<()> {
        if self.mirror_of.iter().any(Option::is_some) && !self.mirrors_hold(batch) {
            // The row group in progress agreed throughout and keeps its copies; from here on
            // the fields are written as themselves.
            self.flush_row_group(out)?;
            self.mirror_of.fill(None);
        }
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
                    self.flush_row_group(out)?;
                    continue;
                }
                let fit = (self.max_row_group_bytes - current) / average.max(1);
                if fit == 0 {
                    self.in_progress = Some(in_progress);
                    self.flush_row_group(out)?;
                    continue;
                }
                take = take.min(fit);
            }
            let part = remaining.slice(0, take);
            remaining = remaining.slice(take, remaining.num_rows() - take);
            let mut in_progress = in_progress;
            if let Err(e) = self.write_columns(&mut in_progress, &part) {
                return Err(self.retype(e));
            }
            in_progress.rows += take;
            let full = in_progress.estimated_size() >= self.max_row_group_bytes;
            self.in_progress = Some(in_progress);
            if full {
                self.flush_row_group(out)?;
            }
        }
        Ok(())
    }

    fn write_columns(&mut self, ip: &mut InProgress, batch: &RecordBatch) -> Result<()> {
        for (f, (field, column)) in self.schema.fields().iter().zip(batch.columns()).enumerate() {
            let leaves = self.field_leaves[f].clone();
            if matches!(ip.slots[leaves.start], Slot::Mirror { .. }) {
                continue;
            }
            if self.mapped[f] {
                if let Slot::Mapped(w) = &mut ip.slots[leaves.start] {
                    w.write(column)?;
                    continue;
                }
            }
            if self.strings[f] {
                if let Slot::Strings(w) = &mut ip.slots[leaves.start] {
                    if !self.dictionary_inputs
                        && matches!(column.data_type(), DataType::Dictionary(_, _))
                    {
                        // Not forwarded: decoded here, as for arrow-rs's writer below.
                        self.dictionary_arrays_decoded += 1;
                        let plain =
                            arrow::compute::cast(column, field.data_type()).map_err(write_err)?;
                        w.write(&plain)?;
                    } else {
                        w.write(column)?;
                    }
                    continue;
                }
            }
            if self.primitive[f].is_some() {
                if let Slot::Primitive(w) = &mut ip.slots[leaves.start] {
                    if column.data_type() == field.data_type() {
                        w.write(column)?;
                    } else {
                        let plain =
                            arrow::compute::cast(column, field.data_type()).map_err(write_err)?;
                        w.write(&plain)?;
                    }
                    continue;
                }
            }
            // Passthrough is off or vetoed for this column: a dictionary array must not reach
            // the writer, whatever handed it over (unless arrow-rs's own dictionary path was
            // asked for, for comparison).
            let (field, column): (FieldRef, ArrayRef) = match column.data_type() {
                DataType::Dictionary(_, _) if column.data_type() != field.data_type() => {
                    if self.arrow_dictionaries.get(f).copied().unwrap_or(false) {
                        let typed = field
                            .as_ref()
                            .clone()
                            .with_data_type(column.data_type().clone());
                        (Arc::new(typed), column.clone())
                    } else {
                        self.dictionary_arrays_decoded += 1;
                        let plain =
                            arrow::compute::cast(column, field.data_type()).map_err(write_err)?;
                        (field.clone(), plain)
                    }
                }
                _ => (field.clone(), column.clone()),
            };
            let leaf_columns = compute_leaves(&field, &column).map_err(write_err)?;
            for (leaf, leaf_column) in leaves.zip(leaf_columns) {
                match &mut ip.slots[leaf] {
                    Slot::Arrow(w) => w.write(&leaf_column).map_err(write_err)?,
                    Slot::Mapped(_)
                    | Slot::Strings(_)
                    | Slot::Primitive(_)
                    | Slot::Mirror { .. } => {
                        return Err(Error::internal("mapped column given to the Arrow writer"))
                    }
                }
            }
        }
        Ok(())
    }

    /// Closes the row group in progress (if it has rows) into the file.
    pub(crate) fn flush_row_group(&mut self, out: &mut Drain<'_>) -> Result<()> {
        match self.flush_pages(out) {
            Ok(()) => match &self.spill {
                Some(s) => s.row_group_done().map_err(Error::from),
                None => Ok(()),
            },
            Err(e) => Err(self.retype(e)),
        }
    }

    fn flush_pages(&mut self, out: &mut Drain<'_>) -> Result<()> {
        let Some(ip) = self.in_progress.take() else {
            return Ok(());
        };
        if ip.rows == 0 {
            return Ok(());
        }
        let mut rg = self.file.next_row_group().map_err(write_err)?;
        let mirrored: Vec<usize> = ip
            .slots
            .iter()
            .filter_map(|s| match s {
                Slot::Mirror { source, .. } => Some(*source),
                _ => None,
            })
            .collect();
        // A mirrored source's chunk, to be copied again when its mirror's turn comes.
        let mut again: Vec<Option<(column_chunk::ChunkSource, ColumnCloseResult)>> =
            (0..ip.slots.len()).map(|_| None).collect();
        for (leaf, slot) in ip.slots.into_iter().enumerate() {
            let ours = match slot {
                Slot::Arrow(w) => {
                    let chunk = w.close().map_err(write_err)?;
                    chunk.append_to_row_group(&mut rg).map_err(write_err)?;
                    None
                }
                Slot::Mapped(w) => {
                    self.counters.add(&w.counters());
                    Some(w.close()?)
                }
                Slot::Strings(w) => Some(w.close()?),
                Slot::Primitive(w) => Some(w.close()?),
                Slot::Mirror { source, descr } => {
                    let (bytes, close) =
                        again
                            .get_mut(source)
                            .and_then(Option::take)
                            .ok_or_else(|| {
                                Error::internal("a mirrored column without its source's chunk")
                            })?;
                    let close = column_chunk::close_as(&close, descr)?;
                    self.mirrored_chunks += 1;
                    Some((bytes, close))
                }
            };
            if let Some((bytes, close)) = ours {
                if mirrored.contains(&leaf) {
                    let (first, second) = bytes.twice()?;
                    append_draining(&mut rg, &first, close.clone(), &self.sink, out)?;
                    again[leaf] = Some((second, close));
                } else {
                    append_draining(&mut rg, &bytes, close, &self.sink, out)?;
                }
            }
            // The chunk's pages are freed; send its bytes on before the next one is copied.
            self.sink.drain(out)?;
        }
        rg.close().map_err(write_err)?;
        self.sink.drain(out)?;
        Ok(())
    }

    /// Splices an input row group in without decoding it. `reader` serves the input file's
    /// bytes at the input's offsets (at least this row group's column chunks); the input's page
    /// index, when it has one, is carried over (the writer moves its page offsets).
    pub(crate) fn append_row_group<R: ChunkReader>(
        &mut self,
        row_group: &RowGroupMetaData,
        reader: &R,
        indexes: &RowGroupPageIndex,
        out: &mut Drain<'_>,
    ) -> Result<()> {
        self.flush_row_group(out)?;
        let mut rg = self.file.next_row_group().map_err(write_err)?;
        for (c, chunk) in row_group.columns().iter().enumerate() {
            let offset_index = indexes.offset_index(c).cloned();
            // A column index without its offset index is useless to readers.
            let column_index = offset_index.as_ref().and(indexes.column_index(c)).cloned();
            let close = ColumnCloseResult {
                bytes_written: chunk.compressed_size() as u64,
                rows_written: row_group.num_rows() as u64,
                metadata: chunk.clone(),
                bloom_filter: None,
                column_index,
                offset_index,
            };
            rg.append_column(reader, close).map_err(write_err)?;
        }
        rg.close().map_err(write_err)?;
        self.sink.drain(out)?;
        Ok(())
    }

    /// Writes the footer, sending every remaining byte to `out`; returns the file's metadata.
    /// Also returns the bytes of pages that went through spill objects.
    pub(crate) fn finish(mut self, out: &mut Drain<'_>) -> Result<(ParquetMetaData, u64)> {
        self.flush_row_group(out)?;
        let metadata = self.file.finish().map_err(write_err)?;
        self.sink.drain(out)?;
        Ok((metadata, self.spilled_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStorage;
    use arrow::array::{Array, DictionaryArray, Int64Array, StringArray};
    use arrow::datatypes::{Field, Int32Type, Schema};
    use bytes::Bytes;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ArrowSchemaConverter;

    /// A vetoed (or never requested) passthrough must never let a dictionary array reach the
    /// writer, whoever handed it over: it is decoded, counted, and written as values.
    #[test]
    fn dictionary_arrays_are_decoded_when_not_forwarded() {
        let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, true)]));
        let descr = ArrowSchemaConverter::new().convert(&schema).unwrap();
        let dict: DictionaryArray<Int32Type> = vec![Some("a"), None, Some("b"), Some("a")]
            .into_iter()
            .collect();
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new(
                "s",
                dict.data_type().clone(),
                true,
            )])),
            vec![Arc::new(dict) as ArrayRef],
        )
        .unwrap();
        let cfg = Arc::new(DictWriterConfig {
            compression: parquet::basic::Compression::SNAPPY,
            offload: None,
            data_page_size_limit: 1 << 20,
            data_page_row_count_limit: 20_000,
            dictionary_page_size_limit: 1 << 20,
            write_batch_size: 1024,
            statistics: true,
            statistics_truncate_length: None,
            column_index_truncate_length: None,
            primitive: false,
            strings: false,
        });
        let props = WriterProperties::builder().build();
        let mut w =
            ParquetFileWriter::new(schema, &descr, &props, vec![false], vec![false], cfg, None)
                .unwrap();
        let mut file = Vec::new();
        let mut out = |piece: &[u8]| -> Result<()> {
            file.extend_from_slice(piece);
            Ok(())
        };
        w.write(&batch, &mut out).unwrap();
        assert_eq!(w.dictionary_arrays_decoded, 1);
        w.finish(&mut out).unwrap();
        let read = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(file))
            .unwrap()
            .build()
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        let expected = StringArray::from(vec![Some("a"), None, Some("b"), Some("a")]);
        assert_eq!(
            read.column(0).as_ref(),
            &expected as &dyn arrow::array::Array
        );
    }

    fn mirror_cfg() -> Arc<DictWriterConfig> {
        Arc::new(DictWriterConfig {
            compression: parquet::basic::Compression::ZSTD(Default::default()),
            offload: None,
            data_page_size_limit: 4096,
            data_page_row_count_limit: 20_000,
            dictionary_page_size_limit: 8192,
            write_batch_size: 1024,
            statistics: true,
            statistics_truncate_length: None,
            column_index_truncate_length: None,
            primitive: true,
            strings: true,
        })
    }

    /// The layout of a primary-key file: each key column stored twice, `_KEY_<name>` first.
    fn kv_schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("_KEY_id", DataType::Int64, false),
            Field::new("_KEY_name", DataType::Utf8, false),
            Field::new("v", DataType::Utf8, true),
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, false),
        ]))
    }

    /// Rows `from..to`; `k` overrides the value column `id` of row `from + k.0`.
    fn kv_batch(from: i64, to: i64, k: Option<(usize, i64)>) -> RecordBatch {
        let ids: Vec<i64> = (from..to).map(|i| i * 7 + 1).collect();
        let names: Vec<String> = (from..to).map(|i| format!("user-{:08}", i * 3)).collect();
        let mut value_ids = ids.clone();
        if let Some((at, v)) = k {
            value_ids[at] = v;
        }
        let v: Vec<Option<String>> = (from..to)
            .map(|i| (i % 5 != 0).then(|| format!("v{}", i % 97)))
            .collect();
        RecordBatch::try_new(
            kv_schema(),
            vec![
                Arc::new(Int64Array::from(ids)),
                Arc::new(StringArray::from(names.clone())),
                Arc::new(StringArray::from(v)),
                Arc::new(Int64Array::from(value_ids)),
                Arc::new(StringArray::from(names)),
            ],
        )
        .unwrap()
    }

    /// Writes `batches` to a file, with the key columns mirrored or not, spilling beyond
    /// `spill` bytes of pages (through `storage`) when given.
    fn write_kv(
        batches: &[RecordBatch],
        mirrored: bool,
        spill: Option<(&MemoryStorage, usize)>,
    ) -> Vec<u8> {
        let schema = kv_schema();
        let descr = ArrowSchemaConverter::new().convert(&schema).unwrap();
        let props = WriterProperties::builder()
            .set_max_row_group_bytes(Some(64 * 1024))
            .build();
        let spill = spill.map(|(st, budget)| {
            PageSpill::new(Arc::new(st.clone()), "out.parquet.spill".into(), budget)
        });
        let fields = schema.fields().len();
        let mut w = ParquetFileWriter::new(
            schema,
            &descr,
            &props,
            vec![false; fields],
            vec![false; fields],
            mirror_cfg(),
            spill,
        )
        .unwrap();
        if mirrored {
            w = w.with_mirrored_fields(&[(3, 0), (4, 1)]);
            assert_eq!(w.mirror_of, vec![None, None, None, Some(0), Some(1)]);
        }
        let mut file = Vec::new();
        let mut out = |piece: &[u8]| -> Result<()> {
            file.extend_from_slice(piece);
            Ok(())
        };
        for b in batches {
            w.write(b, &mut out).unwrap();
        }
        w.finish(&mut out).unwrap();
        file
    }

    fn read_back(file: Vec<u8>) -> (Vec<RecordBatch>, usize) {
        let builder = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(file)).unwrap();
        let row_groups = builder.metadata().num_row_groups();
        let batches = builder
            .build()
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        (batches, row_groups)
    }

    /// A mirrored key column is the source's pages copied under its own metadata, and that is
    /// exactly what encoding it again gives: the files are the same byte for byte, over
    /// several row groups, with pages in memory and with most of them spilled (so a source's
    /// spilled pages are read back twice), and the spill objects are gone afterwards.
    #[test]
    fn a_mirrored_column_is_byte_for_byte_the_column_written_again() {
        let batches: Vec<RecordBatch> = (0..6)
            .map(|i| kv_batch(i * 5000, (i + 1) * 5000, None))
            .collect();
        let plain = write_kv(&batches, false, None);
        assert_eq!(write_kv(&batches, true, None), plain);
        let storage = MemoryStorage::new();
        assert_eq!(write_kv(&batches, true, Some((&storage, 8 * 1024))), plain);
        assert!(storage.paths().is_empty(), "{:?}", storage.paths());
        let (read, row_groups) = read_back(plain);
        assert!(row_groups > 2, "{row_groups} row groups");
        let rows: usize = read.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(rows, 30_000);
    }

    /// A batch whose value column differs from its key column (never so in a file Paimon
    /// wrote, but not trusted) ends the row group in progress, and from there on the column
    /// is written as itself: every value reads back as written.
    #[test]
    fn a_batch_that_differs_ends_the_mirror_and_its_row_group() {
        let batches = vec![
            kv_batch(0, 1000, None),
            kv_batch(1000, 2000, Some((17, -5))),
            kv_batch(2000, 3000, None),
        ];
        let (read, row_groups) = read_back(write_kv(&batches, true, None));
        let expected = arrow::compute::concat_batches(&kv_schema(), &batches).unwrap();
        let got = arrow::compute::concat_batches(&kv_schema(), &read).unwrap();
        assert_eq!(got, expected);
        // The first batch ends its row group, which it would not have otherwise.
        let first_rows = |mirrored| {
            let file = Bytes::from(write_kv(&batches, mirrored, None));
            let reader = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
            reader.metadata().row_group(0).num_rows()
        };
        assert_eq!(first_rows(true), 1000);
        assert!(first_rows(false) > 1000);
        assert!(row_groups > 1);
    }

    /// A row group's chunks go to storage as they are copied (a megabyte at a time), not once
    /// a whole chunk sits in the sink; a storage write that fails in the middle of a chunk is
    /// that storage error, typed, not the Parquet error it passes through.
    #[test]
    fn a_flush_sends_a_large_chunk_on_as_it_goes_and_reports_a_failed_write_as_itself() {
        let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, false)]));
        let descr = ArrowSchemaConverter::new().convert(&schema).unwrap();
        let props = WriterProperties::builder()
            .set_compression(parquet::basic::Compression::UNCOMPRESSED)
            .build();
        // 4 MB of unique strings: one chunk, written PLAIN once the dictionary is full.
        let values: Vec<String> = (0..100_000).map(|i| format!("{i:040}")).collect();
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(values))])
            .unwrap();
        let cfg = Arc::new(DictWriterConfig {
            compression: parquet::basic::Compression::UNCOMPRESSED,
            ..(*mirror_cfg()).clone()
        });
        let write = |fail_at: Option<usize>| {
            let mut w = ParquetFileWriter::new(
                schema.clone(),
                &descr,
                &props,
                vec![false],
                vec![false],
                cfg.clone(),
                None,
            )
            .unwrap();
            let (mut calls, mut largest, mut file) = (0usize, 0usize, Vec::new());
            let mut out = |piece: &[u8]| -> Result<()> {
                calls += 1;
                if Some(calls) == fail_at {
                    return Err(crate::storage::StorageError::new(
                        crate::storage::StorageErrorKind::Io,
                        "out.parquet",
                        "disk full",
                    )
                    .into());
                }
                largest = largest.max(piece.len());
                file.extend_from_slice(piece);
                Ok(())
            };
            w.write(&batch, &mut out).unwrap();
            let result = w.flush_row_group(&mut out);
            // Never more than the piece being filled and the one before it.
            assert!(w.sink.lock().most_held <= 2, "{}", w.sink.lock().most_held);
            let result = result.and_then(|()| w.finish(&mut out));
            (result.map(|_| ()), calls, largest, file)
        };
        let (result, calls, largest, file) = write(None);
        result.unwrap();
        assert!(
            calls >= 4 && largest <= SINK_CHUNK,
            "{calls} writes, the largest {largest} bytes"
        );
        assert!(file.len() > 4_000_000, "{}", file.len());
        assert_eq!(
            read_back(file)
                .0
                .iter()
                .map(RecordBatch::num_rows)
                .sum::<usize>(),
            100_000
        );
        let (result, ..) = write(Some(2));
        let err = result.unwrap_err();
        assert!(
            matches!(&err.kind, crate::error::ErrorKind::Io { path, .. } if path == "out.parquet"),
            "{err:?}"
        );
    }
}
