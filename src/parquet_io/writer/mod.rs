//! One output Parquet file, assembled row group by row group.
//!
//! This is arrow-rs's `ArrowWriter` loop (split batches so row groups stay under
//! `parquet.block.size`, one column writer per leaf) with two additions `ArrowWriter` cannot
//! offer: a column can be written by this layer's dictionary writers
//! ([`super::dictionary`]), and a whole input row group can be spliced in without decoding
//! (fast copy). The bytes go to an in-memory [`Sink`] that the caller drains to storage after
//! each call, so at most about one row group of output is in memory.
//!
//! What the writer is built from is a [`FileSpec`]; how each top-level field is written is
//! decided once, in [`ParquetFileWriter::new`], as a [`FieldWriter`].

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, FieldRef, SchemaRef};
use parquet::arrow::add_encoded_arrow_schema_to_metadata;
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnWriter, ArrowRowGroupWriterFactory, PageStore, PageStoreArgs,
    PageStoreFactory,
};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::page_index::RowGroupPageIndex;
use parquet::file::metadata::{ParquetMetaData, RowGroupMetaData};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::reader::ChunkReader;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnDescPtr, SchemaDescriptor};

use super::column_chunk::{self, ChunkPageStore, ChunkPages, TightPageStore};
use super::dictionary::primitives::{self, PrimitiveChunkWriter};
use super::dictionary::strings::{self, DictColumnWriter};
use super::dictionary::{DictConfig, DictWriterCounters};
use super::page_spill::PageSpill;
use super::sink::{append_draining, Drain, Sink};
use crate::error::{Error, Result};

/// Writer failures are about the data being written (a null in a required column, a value the
/// table type cannot hold): the caller attributes them to the input file being copied.
pub(crate) fn write_err(e: impl std::fmt::Display) -> Error {
    Error::corrupt(
        None,
        format!("cannot be written with the table schema: {e}"),
    )
}

/// Whether a top-level field's input dictionaries are forwarded to the writer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Forwarded {
    /// Not forwarded: a dictionary array reaching the field is decoded first (unless
    /// [`FileSpec::strings_take_dictionaries`] lets this layer's STRING writer take it).
    #[default]
    No,
    /// Forwarded (dictionary passthrough): [`DictColumnWriter`] maps each input dictionary to
    /// output ids once; its counters are the passthrough's metrics.
    Mapped,
    /// Forwarded to arrow-rs's writer as they are (it hashes every row again): a comparison
    /// point for the mapping writer only.
    #[cfg(feature = "bench-comparisons")]
    Arrow,
}

/// What the files of one rewrite are written with.
#[derive(Clone, Debug)]
pub(crate) struct FileSpec {
    /// The output Arrow schema (no dictionary types).
    pub schema: SchemaRef,
    /// The Parquet schema to write (normally the inputs' own, so field ids and physical types
    /// carry over).
    pub descr: Arc<SchemaDescriptor>,
    pub props: WriterProperties,
    pub dict: Arc<DictConfig>,
    /// Per top-level field; fields beyond its end are [`Forwarded::No`].
    pub forwarded: Vec<Forwarded>,
    /// Dictionary arrays reaching a STRING field this layer's writer takes go to it as they
    /// are (the merge's dictionary reads) instead of being decoded first (append, where only
    /// forwarded fields keep their dictionaries).
    pub strings_take_dictionaries: bool,
    /// `(field, source)` pairs of fields that hold the same values as an earlier field (see
    /// [`ParquetFileWriter::new`]).
    pub mirrors: Vec<(usize, usize)>,
    /// Encoded pages held in memory per file before the rest spills to storage
    /// ([`super::page_spill`]); `None`: never.
    pub spill_budget: Option<usize>,
}

impl FileSpec {
    /// `schema` and `descr` written with `props` and `dict`, nothing forwarded, mirrored or
    /// spilled.
    pub(crate) fn new(
        schema: SchemaRef,
        descr: Arc<SchemaDescriptor>,
        props: WriterProperties,
        dict: Arc<DictConfig>,
    ) -> Self {
        FileSpec {
            schema,
            descr,
            props,
            dict,
            forwarded: Vec::new(),
            strings_take_dictionaries: false,
            mirrors: Vec::new(),
            spill_budget: None,
        }
    }
}

/// How one top-level field is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FieldWriter {
    /// arrow-rs's column writers (nested fields, and what this layer's writers do not take);
    /// dictionary arrays are decoded first.
    Arrow,
    /// arrow-rs's column writer, given forwarded dictionary arrays as they are
    /// ([`Forwarded::Arrow`]).
    #[cfg(feature = "bench-comparisons")]
    ArrowDictionaries,
    /// Forwarded STRING dictionaries, mapped by [`DictColumnWriter`] ([`Forwarded::Mapped`]).
    Mapped,
    /// A STRING field that is not forwarded, written by [`DictColumnWriter`] all the same.
    Strings,
    /// An INT32/INT64/FLOAT/DOUBLE field written by [`primitives`]; `dictionary`: whether it
    /// writes a dictionary (`false`: PLAIN throughout).
    Primitive { dictionary: bool },
}

impl FieldWriter {
    /// Whether dictionary arrays reach arrow-rs's writer as they are.
    fn keeps_dictionary_arrays(self) -> bool {
        #[cfg(feature = "bench-comparisons")]
        if self == FieldWriter::ArrowDictionaries {
            return true;
        }
        false
    }
}

/// One top-level field of the file.
#[derive(Clone, Debug)]
struct Field {
    writer: FieldWriter,
    /// Its leaf columns.
    leaves: Range<usize>,
    /// The earlier field whose values it repeats, row for row, while that holds: its chunks
    /// are then copies of that field's (see [`ParquetFileWriter::new`]).
    mirror_of: Option<usize>,
}

#[derive(Debug, Default)]
struct TightPageStoreFactory;

impl PageStoreFactory for TightPageStoreFactory {
    fn create(&self, _args: &PageStoreArgs<'_>) -> parquet::errors::Result<Box<dyn PageStore>> {
        Ok(Box::<TightPageStore>::default())
    }
}

/// The column writer of one leaf in the row group in progress.
enum Slot {
    Arrow(Box<ArrowColumnWriter>),
    /// A forwarded (passthrough) STRING column; its counters are passthrough's metrics.
    Mapped(Box<DictColumnWriter>),
    /// A STRING column that is not forwarded, written by the same writer.
    Strings(Box<DictColumnWriter>),
    Primitive(Box<dyn PrimitiveChunkWriter>),
    /// A column whose values are those of an earlier leaf's: its chunk is that leaf's bytes,
    /// recorded under this column's descriptor.
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
    fields: Vec<Field>,
    /// See [`FileSpec::strings_take_dictionaries`].
    strings_take_dictionaries: bool,
    dict_cfg: Arc<DictConfig>,
    max_row_group_bytes: usize,
    in_progress: Option<InProgress>,
    pub(crate) counters: DictWriterCounters,
    pub(crate) dictionary_arrays_decoded: u64,
    /// Chunks written as copies of their source's.
    pub(crate) mirrored_chunks: u64,
    /// Where pages beyond the memory budget go (`None`: all pages stay in memory).
    spill: Option<PageSpill>,
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
    /// A writer of `spec`, spilling through `spill` when given (its budget is
    /// `spec.spill_budget`; the caller names the spill object).
    ///
    /// Which fields this layer's column writers take: non-nested, not forwarded (to either
    /// writer), written with page statistics (what those writers write) and no bloom filter
    /// (which they do not). The STRING writer needs the dictionary on; the primitive one writes
    /// PLAIN from the start when it is off (so key columns too compress through
    /// `PageCompressor`, and so through a host codec).
    ///
    /// `spec.mirrors` declares fields that should hold the same values as an earlier field: a
    /// primary-key file stores each key column twice, as `_KEY_k` and as the value column
    /// `k`. While a row group's batches agree, the field's chunk is the source's pages copied
    /// again under its own column metadata, so they are encoded and compressed once: a column
    /// chunk is a function of its values and its column's settings, and both are checked
    /// equal. Batches are compared before they are written; the first that differs ends the
    /// row group in progress (its rows all agreed) and the rest of the file writes the field
    /// itself. Pairs the writer cannot copy (not both this layer's writers, or types, levels or
    /// settings that differ) are ignored.
    pub(crate) fn new(spec: &FileSpec, spill: Option<PageSpill>) -> Result<Self> {
        let schema = spec.schema.clone();
        let descr = &spec.descr;
        let original = &spec.props;
        let mut props = original.clone();
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
        let forwarded = |f: usize| spec.forwarded.get(f).copied().unwrap_or_default();
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
            forwarded(f) == Forwarded::No
                && original.statistics_enabled(path) == EnabledStatistics::Page
                && original.bloom_filter_properties(path).is_none()
                && accepts(schema.field(f).data_type(), &column)
        };
        let writers = spec.dict.writers;
        let fields = (0..schema.fields().len())
            .map(|f| {
                let writer = match forwarded(f) {
                    Forwarded::Mapped => FieldWriter::Mapped,
                    #[cfg(feature = "bench-comparisons")]
                    Forwarded::Arrow => FieldWriter::ArrowDictionaries,
                    Forwarded::No if writers.primitives && ours(f, &primitives::accepts) => {
                        FieldWriter::Primitive {
                            dictionary: dictionary(f),
                        }
                    }
                    Forwarded::No
                        if writers.strings
                            && dictionary(f)
                            && ours(f, &strings::accepts_strings) =>
                    {
                        FieldWriter::Strings
                    }
                    Forwarded::No => FieldWriter::Arrow,
                };
                Field {
                    writer,
                    leaves: leaves.get(f).cloned().unwrap_or(0..0),
                    mirror_of: None,
                }
            })
            .collect();
        let mut writer = ParquetFileWriter {
            fields,
            file,
            sink,
            factory,
            schema,
            strings_take_dictionaries: spec.strings_take_dictionaries,
            dict_cfg: spec.dict.clone(),
            max_row_group_bytes,
            in_progress: None,
            counters: DictWriterCounters::default(),
            dictionary_arrays_decoded: 0,
            mirrored_chunks: 0,
            spill,
        };
        writer.mirror(&spec.mirrors);
        Ok(writer)
    }

    /// Marks the `(field, source)` pairs the writer can copy (see [`Self::new`]).
    fn mirror(&mut self, pairs: &[(usize, usize)]) {
        let descr = self.file.schema_descr();
        let props = self.file.properties();
        for &(field, source) in pairs {
            let (Some(f), Some(s)) = (self.fields.get(field), self.fields.get(source)) else {
                continue;
            };
            let (fl, sl) = (&f.leaves, &s.leaves);
            if fl.len() != 1 || sl.len() != 1 || sl.start >= fl.start {
                continue;
            }
            let (fc, sc) = (descr.column(fl.start), descr.column(sl.start));
            let (fp, sp) = (fc.path(), sc.path());
            let writers_agree = match (f.writer, s.writer) {
                (
                    FieldWriter::Primitive { dictionary: a },
                    FieldWriter::Primitive { dictionary: b },
                ) => a == b,
                (FieldWriter::Strings, FieldWriter::Strings) => true,
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
                self.fields[field].mirror_of = Some(source);
            }
        }
    }

    /// Whether any field is still mirrored.
    fn mirroring(&self) -> bool {
        self.fields.iter().any(|f| f.mirror_of.is_some())
    }

    /// Whether every mirrored field of `batch` holds its source's values.
    fn mirrors_hold(&self, batch: &RecordBatch) -> bool {
        self.fields
            .iter()
            .enumerate()
            .all(|(f, field)| match field.mirror_of {
                None => true,
                Some(s) => batch.column(f).as_ref() == batch.column(s).as_ref(),
            })
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
        for (f, field) in self.fields.iter().enumerate() {
            let leaf = field.leaves.start;
            let descr = self.file.schema_descr().column(leaf);
            if let Some(s) = field.mirror_of {
                slots[leaf] = Slot::Mirror {
                    source: self.fields[s].leaves.start,
                    descr,
                };
                continue;
            }
            match field.writer {
                FieldWriter::Arrow => {}
                #[cfg(feature = "bench-comparisons")]
                FieldWriter::ArrowDictionaries => {}
                FieldWriter::Mapped => {
                    slots[leaf] = Slot::Mapped(Box::new(DictColumnWriter::new(
                        descr,
                        self.dict_cfg.clone(),
                        self.page_store(),
                    )?))
                }
                FieldWriter::Strings => {
                    slots[leaf] = Slot::Strings(Box::new(DictColumnWriter::new(
                        descr,
                        self.dict_cfg.clone(),
                        self.page_store(),
                    )?))
                }
                FieldWriter::Primitive { dictionary } => {
                    slots[leaf] = Slot::Primitive(primitives::writer_for(
                        self.schema.field(f).data_type(),
                        descr,
                        self.dict_cfg.clone(),
                        ChunkPages::new(self.page_store()),
                        dictionary,
                    )?)
                }
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
        if self.mirroring() && !self.mirrors_hold(batch) {
            // The row group in progress agreed throughout and keeps its copies; from here on
            // the fields are written as themselves.
            self.flush_row_group(out)?;
            for field in &mut self.fields {
                field.mirror_of = None;
            }
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
            let spec = &self.fields[f];
            let leaves = spec.leaves.clone();
            match &mut ip.slots[leaves.start] {
                Slot::Mirror { .. } => continue,
                Slot::Mapped(w) => {
                    w.write(column)?;
                    continue;
                }
                Slot::Strings(w) => {
                    if !self.strings_take_dictionaries
                        && matches!(column.data_type(), DataType::Dictionary(_, _))
                    {
                        // Not forwarded: decoded here, as for arrow-rs's writer below.
                        self.dictionary_arrays_decoded += 1;
                        let plain =
                            arrow_cast::cast(column, field.data_type()).map_err(write_err)?;
                        w.write(&plain)?;
                    } else {
                        w.write(column)?;
                    }
                    continue;
                }
                Slot::Primitive(w) => {
                    if column.data_type() == field.data_type() {
                        w.write(column)?;
                    } else {
                        let plain =
                            arrow_cast::cast(column, field.data_type()).map_err(write_err)?;
                        w.write(&plain)?;
                    }
                    continue;
                }
                Slot::Arrow(_) => {}
            }
            // Passthrough is off or vetoed for this column: a dictionary array must not reach
            // the writer, whatever handed it over (unless arrow-rs's own dictionary path was
            // asked for, for comparison).
            let (field, column): (FieldRef, ArrayRef) = match column.data_type() {
                DataType::Dictionary(_, _) if column.data_type() != field.data_type() => {
                    if spec.writer.keeps_dictionary_arrays() {
                        let typed = field
                            .as_ref()
                            .clone()
                            .with_data_type(column.data_type().clone());
                        (Arc::new(typed), column.clone())
                    } else {
                        self.dictionary_arrays_decoded += 1;
                        let plain =
                            arrow_cast::cast(column, field.data_type()).map_err(write_err)?;
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
mod tests;
