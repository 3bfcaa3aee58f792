//! The streaming k-way merge of a merge-tree rewrite (compaction.md §10.1).
//!
//! Each sorted run of a section is read by one cursor, one decoded batch at a time, with its
//! key columns converted to arrow's row format once per batch, so comparing two keys is a
//! `memcmp`. A small binary heap of cursors yields keys in ascending order; all records of
//! the smallest key form a group, sorted by sequence (user `sequence.field` values in
//! `sequence.field.sort-order`, then `_SEQUENCE_NUMBER` ascending) and handed to the merge engine (or the changelog wrapper). Results are
//! references into the decoded batches (the "arena"); every `BATCH_SIZE` results the output
//! columns are assembled at once with `interleave`, written, and the arena is cut back to the
//! batches cursors still read. Memory is therefore a few batches per run plus one output row
//! group, whatever the input size.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array, RecordBatch};
use arrow::buffer::ScalarBuffer;
use arrow::compute::{interleave, SortOptions};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::row::{OwnedRow, RowConverter, Rows, SortField};
use parquet::arrow::arrow_reader::RowSelection;
use parquet::arrow::parquet_to_arrow_schema;
use parquet::schema::types::ColumnPath;

use super::changelog::{
    changelog_mode, full_compaction_key, lookup_key, plain_key, ChangelogMode, Emit, LookupOutcome,
};
use super::dictionary_reads::{Candidates, DictionaryReads};
use super::kv_format::{
    array_of, key_datums, kind_array, kinds_of, planner_key, KvLayout, RowKind,
};
use super::lookup::LookupLevels;
use super::merge_engine::{Cell, Columns, MergeFunction, Merged, Origin, Record, Values};
use super::output::{key_mirrors, OutputSettings, RollingOutput};
use super::sorted_chunk::{CursorView, SortedChunk};
use super::{MergeMetrics, MergeTreeRewrite, MergeTreeRewriteResult, KEY_PREFIX_LEN};
use crate::deletion_vectors::DeletionVectorMaintainer;
use crate::error::{Error, Result};
use crate::options::{CoreOptions, SequenceSortOrder};
use crate::parquet_io::codec::PageCompressor;
use crate::parquet_io::dictionary::DictConfig;
use crate::parquet_io::footer::{read_footer, FooterPolicy, InputFile};
use crate::parquet_io::page_stream::PageStream;
use crate::parquet_io::read::{self, BatchStream, IoCounters, BATCH_SIZE};
use crate::parquet_io::writer::FileSpec;
use crate::rewrite::schema_evolution::{same_but_spelling, ColumnMap, ColumnSource, Evolution};
use crate::rewrite::writer_settings;
use crate::rewrite::RewriteInput;
use crate::storage::Storage;
use crate::value::Datum;

/// A decoded batch with its keys in row format.
pub(crate) struct Slot {
    batch: RecordBatch,
    keys: Rows,
    /// The first eight bytes of each key row (big-endian, zero-padded): most comparisons are
    /// decided here without touching the rows.
    prefixes: Vec<u64>,
    /// Bytes 8..16 of each key row (zero-padded): with the prefix, the first 16 bytes. When
    /// every key row of the batch has the same length of at most 16 bytes (`short_len`; a
    /// BIGINT key is 9 bytes) the two words are the whole key and the rows are never touched.
    tails: Vec<u64>,
    short_len: Option<usize>,
    user_seq: Option<Rows>,
    seqs: ScalarBuffer<i64>,
    pub(crate) kinds: Vec<RowKind>,
    /// Input index (or higher-level index for lookup batches).
    file: usize,
    /// The level of that input (what each record carries), kept here so the merge loop does
    /// not follow the input's metadata for every record.
    level: u32,
}

impl Slot {
    pub(crate) fn len(&self) -> usize {
        self.batch.num_rows()
    }
    pub(crate) fn seq(&self, row: usize) -> i64 {
        self.seqs[row]
    }
    fn head(&self, row: usize) -> (u64, u64) {
        (self.prefixes[row], self.tails[row])
    }
    /// The key heads (prefixes, tails) of `rows`.
    pub(super) fn heads(&self, rows: std::ops::Range<usize>) -> (&[u64], &[u64]) {
        (&self.prefixes[rows.clone()], &self.tails[rows])
    }
    /// The length of every key row when all are that long and at most 16 bytes.
    pub(super) fn short_len(&self) -> Option<usize> {
        self.short_len
    }
}

/// The batches results may point into.
#[derive(Default)]
pub(crate) struct Arena {
    pub(crate) slots: Vec<Slot>,
}

impl Arena {
    pub(crate) fn push(&mut self, slot: Slot) -> usize {
        self.slots.push(slot);
        self.slots.len() - 1
    }

    /// The merge's record of the input row at `(slot, row)`.
    fn record(&self, (s, row): (usize, usize)) -> Record {
        let slot = &self.slots[s];
        Record {
            slot: s,
            row,
            seq: slot.seq(row),
            kind: slot.kinds[row],
            level: slot.level,
            origin: Origin::Input {
                file: slot.file,
                pos: 0,
            },
        }
    }

    fn key(&self, at: (usize, usize)) -> arrow::row::Row<'_> {
        self.slots[at.0].keys.row(at.1)
    }

    pub(crate) fn cmp_keys(&self, a: (usize, usize), b: (usize, usize)) -> Ordering {
        let (sa, sb) = (&self.slots[a.0], &self.slots[b.0]);
        match (sa.prefixes[a.1], sa.tails[a.1]).cmp(&(sb.prefixes[b.1], sb.tails[b.1])) {
            Ordering::Equal => self.cmp_after_head(a, b),
            o => o,
        }
    }

    /// The order of two keys whose first 16 bytes (zero-padded) are equal: equal when both
    /// rows are that short and equally long, else decided by the rows.
    #[inline]
    pub(super) fn cmp_after_head(&self, a: (usize, usize), b: (usize, usize)) -> Ordering {
        let (sa, sb) = (&self.slots[a.0], &self.slots[b.0]);
        match (sa.short_len, sb.short_len) {
            (Some(la), Some(lb)) if la == lb => Ordering::Equal,
            _ => self.key(a).cmp(&self.key(b)),
        }
    }
}

/// Reads input files: footers, schema checks, batches, and their conversion to slots.
pub(crate) struct Reader<'s> {
    storage: &'s Arc<dyn Storage>,
    pub(crate) io: IoCounters,
    layout: KvLayout,
    schema: SchemaRef,
    key_converter: RowConverter,
    seq_converter: Option<RowConverter>,
    /// Files written under an older schema version, by path: how their batches become rows of
    /// the merge's schema.
    evolutions: std::collections::HashMap<String, Evolution>,
    /// STRING columns read as dictionary arrays, and the schema of the batches that result.
    pub(crate) dicts: DictionaryReads,
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

fn file_schema(input: &InputFile) -> Result<Schema> {
    let fm = input.metadata.file_metadata();
    parquet_to_arrow_schema(fm.schema_descr(), fm.key_value_metadata())
        .map(|s| plain(&s))
        .map_err(|e| read::corrupt(&input.path, e))
}

impl<'s> Reader<'s> {
    /// Opens a file and checks it has the columns (names and types) of the merge, or, for a
    /// file of an older schema version (`columns`), that its column map applies. The schema
    /// returned is the one to decode the file with.
    fn open(&mut self, path: &str, columns: Option<&ColumnMap>) -> Result<(InputFile, Schema)> {
        let file = read_footer(
            self.storage.as_ref(),
            path,
            FooterPolicy::PAGES,
            &mut self.io,
        )?;
        let schema = file_schema(&file)?;
        let respelled = match columns {
            Some(_) => None,
            None => self.check_columns(path, &schema)?,
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

    /// Checks that a file read as it is has the columns (names and types) of the merge. When
    /// a nested type differs only in spelling (nested field ids, a list item's or map entries'
    /// names: another writer's file), returns the identity map that rebuilds the file's arrays
    /// in the merge's spelling.
    fn check_columns(
        &self,
        path: &str,
        schema: &Schema,
    ) -> Result<Option<Vec<Option<ColumnSource>>>> {
        let ours = self.schema.fields();
        if schema.fields().len() != ours.len() {
            return Err(Error::corrupt(
                Some(path),
                format!(
                    "{} columns where the merge's first input has {} (schema evolution is not \
                     supported by the merge rewriter)",
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
                        "column '{}' ({}) where the merge's first input has '{}' ({})",
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

    /// A batch stream over `input`, skipping the positions of `selection`.
    pub(crate) fn open_stream(
        &mut self,
        input: &RewriteInput,
        selection: Option<RowSelection>,
    ) -> Result<BatchStream> {
        let (file, schema) = self.open(&input.path, input.columns.as_deref())?;
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

/// An input file being read window by window.
struct OpenRunFile {
    input: usize,
    file: InputFile,
    schema: SchemaRef,
    rows: u64,
    source: RunSource,
}

/// How an open run file is decoded.
enum RunSource {
    /// Page by page through storage (the default).
    Pages(Option<PageStream>),
    /// Push-decoder windows of `window` rows (`paimon-compact.merge.read-window-rows`).
    Windows {
        next_row: u64,
        window: u64,
        stream: Option<BatchStream>,
    },
}

/// One sorted run of a section, read file after file.
struct RunCursor {
    /// Input indices of the run's files, in key order.
    files: Vec<usize>,
    next_file: usize,
    open: Option<OpenRunFile>,
    slot: usize,
    row: usize,
    len: usize,
    /// The first 16 key bytes of the current row (copies of `Slot::prefixes[row]` and
    /// `Slot::tails[row]`): the heap compares them without following the cursor into the
    /// arena, which decides almost every comparison.
    head: (u64, u64),
    /// The last key read and its file, to check that keys never go backwards.
    last: Option<(OwnedRow, usize)>,
}

/// Everything the merge keeps between groups.
struct Merge<'s, 'r> {
    req: &'r MergeTreeRewrite,
    inputs: Vec<&'r RewriteInput>,
    reader: Reader<'s>,
    arena: Arena,
    cursors: Vec<RunCursor>,
    heap: Vec<usize>,
    metrics: MergeMetrics,
    /// `None`: page by page; `Some(rows)`: windows of the push decoder.
    window_rows: Option<u64>,
    /// Bytes of a column chunk each page read fetches ahead (`paimon-compact.merge.read-ahead`).
    read_ahead: u64,
    /// The host's zstd, for page reads, when it offers one.
    offload: Option<Arc<crate::host_codec::CodecOffload>>,
    /// Rows ordered a chunk at a time (`paimon-compact.merge.sorted-chunks`); `None`: the heap orders every row.
    chunk: Option<SortedChunk>,
    /// The live cursors, as the next chunk sees them (kept to reuse its allocation).
    live: Vec<CursorView>,
}

impl Merge<'_, '_> {
    /// The merged rows' columns, as the merge engines and changelog read them.
    fn columns(&self) -> ArenaColumns<'_> {
        ArenaColumns {
            arena: &self.arena,
            layout: &self.reader.layout,
            inputs: &self.inputs,
            higher: &self.req.higher_levels,
        }
    }

    /// Loads the cursor's next non-empty batch; `false` when the run is exhausted.
    fn load(&mut self, c: usize) -> Result<bool> {
        loop {
            let cur = &mut self.cursors[c];
            let Some(of) = cur.open.as_mut() else {
                let Some(&input) = cur.files.get(cur.next_file) else {
                    return Ok(false);
                };
                cur.next_file += 1;
                let inp = self.inputs[input];
                let (file, schema) = self.reader.open(&inp.path, inp.columns.as_deref())?;
                let rows = file.metadata.file_metadata().num_rows().max(0) as u64;
                let deleted = inp.deleted_rows.as_deref().unwrap_or(&[]);
                read::check_deletion_vector(&inp.path, deleted, rows)?;
                let source = match self.window_rows {
                    None => RunSource::Pages(None),
                    Some(w) => RunSource::Windows {
                        next_row: 0,
                        window: if file.metadata.page_index().is_some() && w > 0 {
                            w
                        } else {
                            rows.max(1)
                        },
                        stream: None,
                    },
                };
                self.metrics.deleted_rows += deleted.len() as u64;
                self.metrics.input_files += 1;
                self.metrics.input_bytes += file.size;
                self.cursors[c].open = Some(OpenRunFile {
                    input,
                    file,
                    schema: Arc::new(schema),
                    rows,
                    source,
                });
                continue;
            };
            let input = of.input;
            let path = &self.inputs[input].path;
            let deleted = self.inputs[input].deleted_rows.as_deref().unwrap_or(&[]);
            let batch = match &mut of.source {
                RunSource::Pages(stream) => {
                    let Some(stream) = stream else {
                        let sel = read::deletion_selection(deleted, of.rows, 0..of.rows);
                        let meta = read::reader_metadata(&of.file, of.schema.clone())?;
                        *stream = Some(PageStream::new(
                            self.reader.storage,
                            &of.file,
                            meta,
                            Some(sel),
                            self.read_ahead,
                            self.offload.as_ref(),
                        )?);
                        continue;
                    };
                    let batch = stream.next_batch();
                    let io = stream.take_io();
                    self.reader.io.reads += io.reads;
                    self.reader.io.bytes += io.bytes;
                    match batch? {
                        Some(b) => self.reader.evolve(b, path).map(Some)?,
                        None => None,
                    }
                }
                RunSource::Windows {
                    next_row,
                    window,
                    stream,
                } => {
                    let Some(s) = stream.as_mut() else {
                        if *next_row >= of.rows {
                            cur.open = None;
                            continue;
                        }
                        let start = *next_row;
                        let end = (start + *window).min(of.rows);
                        let sel = read::deletion_selection(deleted, of.rows, start..end);
                        let meta = read::reader_metadata(&of.file, of.schema.clone())?;
                        *stream = Some(BatchStream::new(&of.file, meta, Some(sel))?);
                        *next_row = end;
                        continue;
                    };
                    let b = self.reader.next_batch(s, path)?;
                    if b.is_none() {
                        *stream = None;
                        continue;
                    }
                    b
                }
            };
            match batch {
                None => {
                    cur.open = None;
                }
                Some(b) if b.num_rows() == 0 => {}
                Some(batch) => {
                    let mut slot = self.reader.slot_of(batch, path, Some(input))?;
                    slot.level = self.inputs[input].meta.level.get();
                    check_order(&slot, path)?;
                    let n = slot.len();
                    self.metrics.input_rows += n as u64;
                    let first = slot.keys.row(0);
                    if let Some((last, last_file)) = &self.cursors[c].last {
                        let ord = first.cmp(&last.row());
                        if ord == Ordering::Less || (ord == Ordering::Equal && *last_file != input)
                        {
                            return Err(Error::corrupt(
                                Some(path),
                                if *last_file == input {
                                    "keys out of order between row groups".to_string()
                                } else {
                                    format!(
                                        "its first key is not above the last key of '{}', the \
                                         previous file of its sorted run",
                                        self.inputs[*last_file].path
                                    )
                                },
                            ));
                        }
                    }
                    let last_key = slot.keys.row(n - 1).owned();
                    let id = self.arena.push(slot);
                    let cur = &mut self.cursors[c];
                    cur.last = Some((last_key, input));
                    cur.slot = id;
                    cur.row = 0;
                    cur.len = n;
                    cur.head = self.arena.slots[id].head(0);
                    return Ok(true);
                }
            }
        }
    }

    fn less(&self, a: usize, b: usize) -> bool {
        let (ca, cb) = (&self.cursors[a], &self.cursors[b]);
        let by_head = ca.head.cmp(&cb.head);
        let ord = if by_head == Ordering::Equal {
            self.arena
                .cmp_after_head((ca.slot, ca.row), (cb.slot, cb.row))
        } else {
            by_head
        };
        match ord {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => a < b,
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < n && self.less(self.heap[l], self.heap[m]) {
                m = l;
            }
            if r < n && self.less(self.heap[r], self.heap[m]) {
                m = r;
            }
            if m == i {
                return;
            }
            self.heap.swap(i, m);
            i = m;
        }
    }

    /// Moves the heap's top cursor one row on.
    fn advance_top(&mut self) -> Result<()> {
        let c = self.heap[0];
        let cur = &mut self.cursors[c];
        cur.row += 1;
        let alive = if cur.row < cur.len {
            cur.head = self.arena.slots[cur.slot].head(cur.row);
            true
        } else {
            self.load(c)?
        };
        if alive {
            self.sift_down(0);
        } else {
            let last = self.heap.len() - 1;
            self.heap.swap(0, last);
            self.heap.pop();
            self.sift_down(0);
        }
        Ok(())
    }

    fn record_of(&self, c: usize) -> Record {
        let cur = &self.cursors[c];
        self.arena.record((cur.slot, cur.row))
    }

    /// Restores the heap order after cursors moved outside it.
    fn heapify(&mut self) {
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(i);
        }
    }

    /// Appends the records of the next key (every run's rows of it, in cursor order) to
    /// `group` and returns where that key is; `None` once the section's runs are exhausted.
    fn next_group(&mut self, group: &mut Vec<Record>) -> Result<Option<(usize, usize)>> {
        let Some(chunk) = self.chunk.as_mut() else {
            return self.heap_group(group);
        };
        // Almost every key comes from the current chunk: served in place. (Taking the chunk
        // out of its `Option` and putting it back moved its 96 bytes twice per key, and the
        // reload of a field just overwritten by the take stalled on store forwarding: about a
        // quarter of the merge loop's own samples.)
        if let Some(gk) = chunk_group(chunk, &self.cursors, &self.arena, group) {
            return Ok(Some(gk));
        }
        let mut chunk = std::mem::take(&mut self.chunk).unwrap_or_default();
        let next = self.refill_group(&mut chunk, group);
        self.chunk = Some(chunk);
        next
    }

    /// [`Self::next_group`] once the chunk is spent: the cursors move past it, and the next
    /// chunk is filled (or the heap takes the key when no chunk can be cut).
    fn refill_group(
        &mut self,
        chunk: &mut SortedChunk,
        group: &mut Vec<Record>,
    ) -> Result<Option<(usize, usize)>> {
        loop {
            if chunk.consumed() {
                for &(c, row) in chunk.ends() {
                    let cur = &mut self.cursors[c];
                    cur.row = row;
                    cur.head = self.arena.slots[cur.slot].head(row);
                }
                chunk.clear();
                self.heapify();
            }
            if self.heap.is_empty() {
                return Ok(None);
            }
            self.live.clear();
            for &c in &self.heap {
                let cur = &self.cursors[c];
                self.live.push(CursorView {
                    cursor: c,
                    slot: cur.slot,
                    row: cur.row,
                    len: cur.len,
                });
            }
            self.live.sort_unstable_by_key(|v| v.cursor);
            if !chunk.fill(&self.live, &self.arena) {
                // The smallest row left is the bound itself: the heap takes that key.
                return self.heap_group(group);
            }
            self.metrics.sorted_chunk_rows += chunk.len() as u64;
            if let Some(gk) = chunk_group(chunk, &self.cursors, &self.arena, group) {
                return Ok(Some(gk));
            }
        }
    }

    /// [`Self::next_group`] by the heap: the smallest key, from every cursor that has it.
    fn heap_group(&mut self, group: &mut Vec<Record>) -> Result<Option<(usize, usize)>> {
        let Some(&top) = self.heap.first() else {
            return Ok(None);
        };
        let gk = (self.cursors[top].slot, self.cursors[top].row);
        let head = self.cursors[top].head;
        group.push(self.record_of(top));
        self.advance_top()?;
        // The rows after it join while their key equals it (the head settles almost every
        // inequality).
        while let Some(&c) = self.heap.first() {
            let cur = &self.cursors[c];
            if cur.head != head || self.arena.cmp_keys((cur.slot, cur.row), gk) != Ordering::Equal {
                break;
            }
            group.push(self.record_of(c));
            self.advance_top()?;
        }
        Ok(Some(gk))
    }
}

/// The next key of a sorted chunk (its first entry and every following one with an equal
/// key), appended to `group`; `None` when the chunk is spent. Inlined: returned through memory,
/// the key's location was stored as two words and reloaded as one, a store-forwarding stall per
/// key.
#[inline(always)]
fn chunk_group(
    chunk: &mut SortedChunk,
    cursors: &[RunCursor],
    arena: &Arena,
    group: &mut Vec<Record>,
) -> Option<(usize, usize)> {
    let e = chunk.take()?;
    let gk = (cursors[e.cursor as usize].slot, e.row as usize);
    group.push(arena.record(gk));
    while let Some(f) = chunk.peek() {
        if f.head != e.head {
            break;
        }
        let fk = (cursors[f.cursor as usize].slot, f.row as usize);
        if arena.cmp_after_head(fk, gk) != Ordering::Equal {
            break;
        }
        group.push(arena.record(fk));
        chunk.take();
    }
    Some(gk)
}

/// Keys of one batch must not decrease.
fn check_order(slot: &Slot, path: &str) -> Result<()> {
    for i in 1..slot.len() {
        let (a, b) = (slot.head(i - 1), slot.head(i));
        let below = match b.cmp(&a) {
            Ordering::Less => true,
            Ordering::Greater => false,
            // Equal first 16 bytes: equal keys when that short, else the rows decide.
            Ordering::Equal => slot.short_len.is_none() && slot.keys.row(i) < slot.keys.row(i - 1),
        };
        if below {
            return Err(Error::corrupt(
                Some(path),
                format!(
                    "keys out of order: row {i} of a batch is below row {}",
                    i - 1
                ),
            ));
        }
    }
    Ok(())
}

/// Sequence order of two records: user sequence fields, then the sequence number. The user
/// fields' rows already carry `sequence.field.sort-order` (see `rewrite_merge_tree`); the
/// sequence number ascends whatever that order, as in Paimon's merge readers.
fn seq_order(arena: &Arena, a: &Record, b: &Record) -> Ordering {
    let (sa, sb) = (&arena.slots[a.slot], &arena.slots[b.slot]);
    if let (Some(ua), Some(ub)) = (&sa.user_seq, &sb.user_seq) {
        match ua.row(a.row).cmp(&ub.row(b.row)) {
            Ordering::Equal => {}
            o => return o,
        }
    }
    a.seq.cmp(&b.seq)
}

/// Results waiting to be assembled into a batch.
#[derive(Default)]
struct Pending {
    keys: Vec<(usize, usize)>,
    seqs: Vec<i64>,
    kinds: Vec<i8>,
    rows: Vec<(usize, usize)>,
    /// Per value column (engines that merge per column).
    cells: Vec<Vec<Cell>>,
}

impl Pending {
    fn len(&self) -> usize {
        self.seqs.len()
    }

    fn push(&mut self, m: Merged, whole_rows: bool, value_cols: usize) {
        self.keys.push(m.key);
        self.seqs.push(m.seq);
        self.kinds.push(m.kind.as_byte());
        if whole_rows {
            if let Values::Row(s, r) = m.values {
                self.rows.push((s, r));
                return;
            }
        }
        if self.cells.len() != value_cols {
            self.cells = vec![Vec::new(); value_cols];
        }
        match m.values {
            Values::Row(s, r) => self.cells.iter_mut().for_each(|c| c.push(Cell::Src(s, r))),
            Values::Cells(cells) => {
                for (col, cell) in self.cells.iter_mut().zip(cells) {
                    col.push(cell);
                }
            }
        }
    }

    fn clear(&mut self) {
        self.keys.clear();
        self.seqs.clear();
        self.kinds.clear();
        self.rows.clear();
        self.cells.iter_mut().for_each(Vec::clear);
    }
}

/// Assembles pending results into a batch of the output schema.
fn assemble(
    p: &Pending,
    arena: &Arena,
    layout: &KvLayout,
    schema: &SchemaRef,
    whole_rows: bool,
) -> Result<RecordBatch> {
    let fail = |e: arrow::error::ArrowError| {
        Error::internal(format!("assembling rows: {e}")).with_source(e)
    };
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    let sources = |c: usize| -> Vec<&dyn Array> {
        arena
            .slots
            .iter()
            .map(|s| s.batch.column(c).as_ref())
            .collect()
    };
    for &c in &layout.key_cols {
        columns.push(interleave(&sources(c), &p.keys).map_err(fail)?);
    }
    columns.push(Arc::new(Int64Array::from(p.seqs.clone())));
    columns.push(kind_array(
        &p.kinds,
        schema.field(layout.kind_col).data_type(),
    ));
    for (j, &c) in layout.value_cols.iter().enumerate() {
        if whole_rows {
            columns.push(interleave(&sources(c), &p.rows).map_err(fail)?);
            continue;
        }
        let cells = &p.cells[j];
        let mut computed: Vec<Datum> = Vec::new();
        let mut idx: Vec<(usize, usize)> = Vec::with_capacity(cells.len());
        let extra = arena.slots.len();
        for cell in cells {
            match cell {
                Cell::Src(s, r) => idx.push((*s, *r)),
                Cell::Val(d) => {
                    idx.push((extra, computed.len()));
                    computed.push(d.clone());
                }
            }
        }
        let mut src = sources(c);
        let computed_array;
        if !computed.is_empty() {
            computed_array = array_of(&computed, schema.field(c).data_type())?;
            src.push(computed_array.as_ref());
        }
        columns.push(interleave(&src, &idx).map_err(fail)?);
    }
    RecordBatch::try_new(schema.clone(), columns).map_err(fail)
}

/// The two output streams and the pending results of each.
struct Sinks<'s> {
    data: Option<RollingOutput<'s>>,
    changelog: Option<RollingOutput<'s>>,
    pending_data: Pending,
    pending_changelog: Pending,
    whole_rows: bool,
    value_cols: usize,
    drop_delete: bool,
    retracts_dropped: u64,
}

impl Emit for Sinks<'_> {
    fn data(&mut self, row: Merged) -> Result<()> {
        if self.drop_delete && row.kind.is_retract() {
            self.retracts_dropped += 1;
            return Ok(());
        }
        if self.data.is_some() {
            self.pending_data
                .push(row, self.whole_rows, self.value_cols);
        }
        Ok(())
    }
    fn changelog(&mut self, row: Merged) -> Result<()> {
        if self.changelog.is_some() {
            self.pending_changelog
                .push(row, self.whole_rows, self.value_cols);
        }
        Ok(())
    }
}

/// Column access for the engines.
struct ArenaColumns<'a> {
    arena: &'a Arena,
    layout: &'a KvLayout,
    inputs: &'a [&'a RewriteInput],
    higher: &'a [RewriteInput],
}

impl Columns for ArenaColumns<'_> {
    fn value(&self, slot: usize, j: usize) -> &ArrayRef {
        self.arena.slots[slot]
            .batch
            .column(self.layout.value_cols[j])
    }
    fn file_of(&self, r: &Record) -> &str {
        match r.origin {
            Origin::Input { file, .. } => &self.inputs[file].path,
            Origin::Lookup { file, .. } => &self.higher[file].path,
        }
    }
}

/// Merges the request's sections into new files; see the module documentation.
/// `storage`: see [`crate::io`].
pub fn rewrite_merge_tree(
    storage: &dyn crate::io::ToIo,
    req: &MergeTreeRewrite,
    options: &CoreOptions,
) -> Result<MergeTreeRewriteResult> {
    let shared = storage.to_io();
    let storage = &shared.storage;
    let inputs: Vec<&RewriteInput> = req.sections.iter().flatten().flatten().collect();
    let mode = changelog_mode(
        options,
        req.output_level,
        req.max_level,
        req.drop_delete,
        inputs.iter().map(|i| i.meta.level),
    )?;
    let format = options.file_format_for_level(req.output_level.get());
    if format != "parquet" {
        return Err(Error::unsupported(format!(
            "the merge rewriter writes Parquet; level {} is configured as '{format}'",
            req.output_level
        )));
    }
    let mut result = MergeTreeRewriteResult {
        changelog_mode: mode,
        ..MergeTreeRewriteResult::default()
    };
    let Some(first) = inputs.first() else {
        return Ok(result);
    };
    for prefix in [&req.file_prefix, &req.changelog_prefix] {
        let full = if req.output_dir.is_empty() {
            prefix.clone()
        } else {
            format!("{}/{}", req.output_dir, prefix)
        };
        if let Some(clash) = inputs
            .iter()
            .map(|i| &i.path)
            .chain(req.higher_levels.iter().map(|i| &i.path))
            .find(|p| p.starts_with(&full))
        {
            return Err(Error::illegal_state(format!(
                "output prefix '{full}' would name input '{clash}'"
            )));
        }
    }
    let sorted_chunks = options.engine.sorted_chunks.get()?;
    let window_rows = options.engine.read_window_rows.get()?;
    let sequence_fields: Vec<String> = options
        .sequence_field
        .as_deref()
        .map(|s| s.split(',').map(|f| f.trim().to_string()).collect())
        .unwrap_or_default();

    // The first input decides the schema and the layout and every other input must match
    // it, unless the caller names the schema (files of several schema versions, each mapped).
    let mut io = IoCounters::default();
    let (schema, descr, schema_file) = match &req.schema {
        None => {
            let first_file =
                read_footer(storage.as_ref(), &first.path, FooterPolicy::ROWS, &mut io)?;
            let schema = Arc::new(file_schema(&first_file)?);
            (
                schema,
                first_file.metadata.file_metadata().schema_descr_ptr(),
                Some(first_file.metadata),
            )
        }
        Some(target) => match inputs.iter().find(|i| i.columns.is_none()) {
            // An input of the latest version: its own schema and Parquet schema (field ids)
            // are the target, and the older inputs are mapped onto it.
            Some(latest) => {
                let file =
                    read_footer(storage.as_ref(), &latest.path, FooterPolicy::ROWS, &mut io)?;
                let schema = Arc::new(file_schema(&file)?);
                let descr = file.metadata.file_metadata().schema_descr_ptr();
                (schema, descr, Some(file.metadata))
            }
            None => {
                let descr = parquet::arrow::ArrowSchemaConverter::new()
                    .convert(target)
                    .map_err(|e| Error::unsupported(format!("table schema as Parquet: {e}")))?;
                (target.clone(), Arc::new(descr), None)
            }
        },
    };
    let layout = KvLayout::of(&schema, &first.path, &sequence_fields)?;
    let key_fields: Vec<SortField> = layout
        .key_cols
        .iter()
        .map(|&c| SortField::new(schema.field(c).data_type().clone()))
        .collect();
    let key_converter = RowConverter::new(key_fields)
        .map_err(|e| Error::unsupported(format!("primary key type: {e}")))?;
    // `sequence.field.sort-order` is encoded in the sequence rows themselves, so every place
    // that orders records by sequence (the merge, lookup changelog, deletion vectors) follows
    // it. As Paimon's `UserDefinedSeqComparator`: descending reverses non-null values only,
    // a null stays the oldest (nulls first either way).
    let seq_sort = SortOptions {
        descending: options.sequence_field_sort_order == SequenceSortOrder::Descending,
        nulls_first: true,
    };
    let seq_converter = if layout.user_seq_cols.is_empty() {
        None
    } else {
        Some(
            RowConverter::new(
                layout
                    .user_seq_cols
                    .iter()
                    .map(|&c| {
                        SortField::new_with_options(schema.field(c).data_type().clone(), seq_sort)
                    })
                    .collect(),
            )
            .map_err(|e| Error::unsupported(format!("sequence field type: {e}")))?,
        )
    };
    let value_columns: Vec<(String, DataType)> = layout
        .value_cols
        .iter()
        .map(|&c| {
            (
                schema.field(c).name().clone(),
                schema.field(c).data_type().clone(),
            )
        })
        .collect();
    let primary_keys: Vec<String> = layout
        .key_cols
        .iter()
        .map(|&c| schema.field(c).name()[KEY_PREFIX_LEN..].to_string())
        .collect();
    let mut mf = MergeFunction::new(options, &value_columns, &primary_keys)?;
    let whole_rows = mf.whole_rows();

    // Keys, sequence numbers and the key's own table columns are distinct in every output file
    // (one row per key): dictionary-encoding them can never pay and costs a hash per value.
    let mut props = writer_settings::writer_properties(options)?.into_builder();
    for &c in layout.key_cols.iter().chain([&layout.seq_col]) {
        props = props.set_column_dictionary_enabled(
            ColumnPath::from(schema.field(c).name().as_str()),
            false,
        );
    }
    for pk in &primary_keys {
        props = props.set_column_dictionary_enabled(ColumnPath::from(pk.as_str()), false);
    }
    let props = props.build();
    let compression = writer_settings::compression(options)?;
    PageCompressor::new(compression, None)?;
    let offload = shared
        .host_codec
        .clone()
        .map(crate::host_codec::CodecOffload::new);
    let dict_cfg = Arc::new(
        DictConfig::new(compression, &props, writer_settings::dict_writers(options)?)
            .with_offload(offload.clone()),
    );
    let dicts = DictionaryReads::plan(
        &Candidates {
            options,
            schema: &schema,
            layout: &layout,
            whole_rows,
            props: &props,
            dict_cfg: &dict_cfg,
        },
        schema_file.as_deref(),
    )?;
    let file = FileSpec {
        strings_take_dictionaries: true,
        mirrors: key_mirrors(&schema, &layout.key_cols),
        spill_budget: options.engine.spill_threshold.get()?,
        ..FileSpec::new(schema.clone(), descr, props, dict_cfg)
    };
    let settings = Arc::new(OutputSettings {
        file: Arc::new(file),
        target_file_size: options.target_file_size,
        level: req.output_level,
        creation_time_ms: req.creation_time_ms,
        key_cols: layout.key_cols.clone(),
        seq_col: layout.seq_col,
        kind_col: layout.kind_col,
    });
    let produce_changelog = matches!(
        mode,
        ChangelogMode::FullCompaction
            | ChangelogMode::Lookup {
                produce_changelog: true,
                ..
            }
    );
    let mut sinks = Sinks {
        data: if req.write_data {
            Some(RollingOutput::new(
                storage,
                settings.clone(),
                &req.output_dir,
                &req.file_prefix,
            )?)
        } else {
            None
        },
        changelog: if produce_changelog {
            Some(RollingOutput::new(
                storage,
                settings.clone(),
                &req.output_dir,
                &req.changelog_prefix,
            )?)
        } else {
            None
        },
        pending_data: Pending::default(),
        pending_changelog: Pending::default(),
        whole_rows,
        value_cols: layout.value_cols.len(),
        drop_delete: req.drop_delete,
        retracts_dropped: 0,
    };

    let reader = Reader {
        storage,
        io,
        layout: layout.clone(),
        schema: schema.clone(),
        key_converter,
        seq_converter,
        evolutions: Default::default(),
        dicts,
    };
    let mut merge = Merge {
        req,
        inputs,
        reader,
        arena: Arena::default(),
        cursors: Vec::new(),
        heap: Vec::new(),
        metrics: MergeMetrics::default(),
        window_rows,
        read_ahead: options.engine.read_ahead.get()?,
        offload: offload.clone(),
        chunk: sorted_chunks.then(SortedChunk::default),
        live: Vec::new(),
    };
    let mut lookup = match mode {
        ChangelogMode::Lookup { .. } => Some(LookupLevels::new(&req.higher_levels)),
        _ => None,
    };
    let mut dv = DeletionVectorMaintainer::new();
    let run = run_merge(
        &mut merge,
        &mut sinks,
        &mut mf,
        mode,
        options.is_first_row(),
        &mut lookup,
        &mut dv,
        &layout,
    );
    let run = run.and_then(|()| {
        if let Some(d) = sinks.data.as_mut() {
            d.roll()?;
        }
        if let Some(c) = sinks.changelog.as_mut() {
            c.roll()?;
        }
        Ok(())
    });
    let mut metrics = merge.metrics;
    metrics.dictionary_columns = merge.reader.dicts.len() as u64;
    metrics.storage_reads = merge.reader.io.reads;
    metrics.storage_read_bytes = merge.reader.io.bytes;
    metrics.host_codec = crate::host_codec::metrics_of(offload.as_ref());
    if let Err(e) = run {
        let mut failures = Vec::new();
        for out in [sinks.data.as_mut(), sinks.changelog.as_mut()]
            .into_iter()
            .flatten()
        {
            failures.extend(out.abort());
        }
        return Err(if failures.is_empty() {
            e
        } else {
            e.with_note(format_args!("cleanup failed: {}", failures.join("; ")))
        });
    }
    metrics.retracts_dropped = sinks.retracts_dropped;
    if let Some(d) = sinks.data.take() {
        let d = d.finish();
        metrics.storage_writes += d.storage_writes;
        metrics.spilled_bytes += d.spilled_bytes;
        metrics.mirrored_key_chunks += d.mirrored_chunks;
        result.outputs = d.files;
    }
    if let Some(c) = sinks.changelog.take() {
        let c = c.finish();
        metrics.storage_writes += c.storage_writes;
        metrics.spilled_bytes += c.spilled_bytes;
        metrics.mirrored_key_chunks += c.mirrored_chunks;
        result.changelog = c.files;
    }
    metrics.output_files = result.outputs.len() as u64;
    metrics.output_rows = result.outputs.iter().map(|f| f.meta.row_count).sum();
    metrics.output_bytes = result.outputs.iter().map(|f| f.meta.file_size).sum();
    metrics.changelog_files = result.changelog.len() as u64;
    metrics.changelog_rows = result.changelog.iter().map(|f| f.meta.row_count).sum();
    result.deletion_vector_marks = dv
        .vectors()
        .iter()
        .map(|(f, b)| (f.clone(), b.iter().map(u64::from).collect()))
        .collect::<BTreeMap<_, _>>();
    metrics.deletion_vector_marks = result
        .deletion_vector_marks
        .values()
        .map(|v| v.len() as u64)
        .sum();
    result.metrics = metrics;
    Ok(result)
}

/// Flushes pending results of both streams and cuts the arena back to live batches.
fn flush(
    merge: &mut Merge<'_, '_>,
    sinks: &mut Sinks<'_>,
    lookup: &mut Option<LookupLevels>,
    layout: &KvLayout,
) -> Result<()> {
    let whole_rows = sinks.whole_rows;
    // The merge's schema, with the columns read as dictionaries typed as such.
    let schema = merge.reader.dicts.batch_schema().clone();
    for (pending, out) in [
        (&mut sinks.pending_data, sinks.data.as_mut()),
        (&mut sinks.pending_changelog, sinks.changelog.as_mut()),
    ] {
        if pending.len() > 0 {
            let batch = assemble(pending, &merge.arena, layout, &schema, whole_rows)?;
            if let Some(out) = out {
                out.write(&batch)?;
            }
            pending.clear();
        }
    }
    // Keep only the batches cursors still read, renumbered.
    let mut live: Vec<&mut usize> = merge
        .cursors
        .iter_mut()
        .filter(|c| c.len > 0)
        .map(|c| &mut c.slot)
        .collect();
    if let Some(l) = lookup.as_mut() {
        live.extend(l.live_slots());
    }
    let old = std::mem::take(&mut merge.arena.slots);
    let mut old: Vec<Option<Slot>> = old.into_iter().map(Some).collect();
    let mut remap: BTreeMap<usize, usize> = BTreeMap::new();
    for s in live {
        let new = match remap.get(s) {
            Some(&n) => n,
            None => {
                let slot = old
                    .get_mut(*s)
                    .and_then(Option::take)
                    .ok_or_else(|| Error::internal("a cursor's batch is missing"))?;
                let n = merge.arena.push(slot);
                remap.insert(*s, n);
                n
            }
        };
        *s = new;
    }
    Ok(())
}

#[allow(
    clippy::too_many_arguments,
    reason = "the merge loop's state is borrowed apart so the hot loop holds no struct of references"
)]
fn run_merge(
    merge: &mut Merge<'_, '_>,
    sinks: &mut Sinks<'_>,
    mf: &mut MergeFunction,
    mode: ChangelogMode,
    first_row: bool,
    lookup: &mut Option<LookupLevels>,
    dv: &mut DeletionVectorMaintainer,
    layout: &KvLayout,
) -> Result<()> {
    let req = merge.req;
    let mut group: Vec<Record> = Vec::new();
    let mut candidates: Vec<Record> = Vec::new();
    let mut input_base = 0usize;
    let mut previous_section_end: Option<OwnedRow> = None;
    let mut last_key: Option<(usize, usize)> = None;
    for section in &req.sections {
        // One cursor per run of the section.
        merge.cursors.clear();
        merge.heap.clear();
        for run in section {
            let n = run.len();
            merge.cursors.push(RunCursor {
                files: (input_base..input_base + n).collect(),
                next_file: 0,
                open: None,
                slot: 0,
                row: 0,
                len: 0,
                head: (0, 0),
                last: None,
            });
            input_base += n;
        }
        for c in 0..merge.cursors.len() {
            if merge.load(c)? {
                merge.heap.push(c);
            }
        }
        merge.heapify();
        let mut first_group = true;
        loop {
            group.clear();
            let Some(gk) = merge.next_group(&mut group)? else {
                break;
            };
            if first_group {
                first_group = false;
                if let Some(prev) = &previous_section_end {
                    if merge.arena.key(gk) <= prev.row() {
                        let slot = &merge.arena.slots[gk.0];
                        return Err(Error::corrupt(
                            Some(&merge.inputs[slot.file].path),
                            "sections are not in key order (a section starts at or below the \
                             end of the previous one)",
                        ));
                    }
                }
            }
            merge.metrics.keys += 1;
            {
                let arena = &merge.arena;
                group.sort_by(|a, b| seq_order(arena, a, b));
            }
            process_group(
                merge,
                sinks,
                mf,
                mode,
                first_row,
                lookup,
                dv,
                &group,
                &mut candidates,
                gk,
            )?;
            last_key = Some(gk);
            let live = merge.cursors.len() + 8;
            if sinks.pending_data.len() >= BATCH_SIZE
                || sinks.pending_changelog.len() >= BATCH_SIZE
                || merge.arena.slots.len() > live + 16
            {
                // Slots are renumbered by the flush: keep the key's bytes instead.
                previous_section_end = Some(merge.arena.key(gk).owned());
                last_key = None;
                flush(merge, sinks, lookup, layout)?;
            }
        }
        if let Some(gk) = last_key.take() {
            previous_section_end = Some(merge.arena.key(gk).owned());
        }
    }
    flush(merge, sinks, lookup, layout)
}

#[allow(
    clippy::too_many_arguments,
    reason = "the merge loop's state is borrowed apart so the hot loop holds no struct of references"
)]
fn process_group(
    merge: &mut Merge<'_, '_>,
    sinks: &mut Sinks<'_>,
    mf: &mut MergeFunction,
    mode: ChangelogMode,
    first_row: bool,
    lookup: &mut Option<LookupLevels>,
    dv: &mut DeletionVectorMaintainer,
    group: &[Record],
    candidates: &mut Vec<Record>,
    gk: (usize, usize),
) -> Result<()> {
    let req = merge.req;
    match mode {
        ChangelogMode::None => {
            let cols = merge.columns();
            plain_key(group, mf, &cols, sinks)
        }
        ChangelogMode::FullCompaction => {
            let cols = merge.columns();
            full_compaction_key(group, req.max_level, mf, &cols, sinks)
        }
        ChangelogMode::Lookup {
            produce_changelog,
            deletion_vectors,
        } => {
            // The lookup may read (and push) batches, so it runs first, before the engine
            // borrows the arena.
            let needs_lookup = group.iter().all(|r| r.level == 0)
                && lookup.as_ref().is_some_and(|l| !l.is_empty());
            let mut found: Option<Record> = None;
            if needs_lookup {
                merge.metrics.lookups += 1;
                let key_cols: Vec<&dyn Array> = merge
                    .reader
                    .layout
                    .key_cols
                    .iter()
                    .map(|&c| merge.arena.slots[gk.0].batch.column(c).as_ref())
                    .collect();
                let planner = planner_key(&key_datums(&key_cols, gk.1)?);
                if let Some(l) = lookup.as_mut() {
                    found = l.find(
                        &mut merge.reader,
                        &mut merge.arena,
                        &req.higher_levels,
                        gk,
                        &planner,
                    )?;
                }
                if let Some(f) = &found {
                    merge.metrics.lookup_hits += 1;
                    if deletion_vectors && !first_row {
                        if let Origin::Lookup { file, pos } = f.origin {
                            let name = &req.higher_levels[file].meta.file_name;
                            dv.mark(name, pos)?;
                        }
                    }
                }
            }
            let cols = merge.columns();
            let arena = &merge.arena;
            let order = |a: &Record, b: &Record| seq_order(arena, a, b);
            let mut lookup_once = || Ok(LookupOutcome { found });
            lookup_key(
                group,
                produce_changelog,
                first_row,
                mf,
                &cols,
                &mut lookup_once,
                &order,
                candidates,
                sinks,
            )
        }
    }
}
