//! The run cursors of the merge: each sorted run of a section is read file after file, one
//! decoded batch at a time (page by page through storage, or in push-decoder windows), and
//! every batch is checked to continue the run's key order.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_row::OwnedRow;
use arrow_schema::SchemaRef;

use super::arena::check_order;
use super::merge_tree::Merge;
use crate::error::{Error, Result};
use crate::parquet_io::footer::InputFile;
use crate::parquet_io::page_stream::PageStream;
use crate::parquet_io::read::{self, BatchStream};

/// An input file being read window by window.
pub(super) struct OpenRunFile {
    pub(super) input: usize,
    pub(super) file: InputFile,
    pub(super) schema: SchemaRef,
    pub(super) rows: u64,
    pub(super) source: RunSource,
}

/// How an open run file is decoded.
pub(super) enum RunSource {
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
pub(super) struct RunCursor {
    /// Input indices of the run's files, in key order.
    pub(super) files: Vec<usize>,
    pub(super) next_file: usize,
    pub(super) open: Option<OpenRunFile>,
    pub(super) slot: usize,
    pub(super) row: usize,
    pub(super) len: usize,
    /// The first 16 key bytes of the current row (copies of `Slot::prefixes[row]` and
    /// `Slot::tails[row]`): the heap compares them without following the cursor into the
    /// arena, which decides almost every comparison.
    pub(super) head: (u64, u64),
    /// The last key read and its file, to check that keys never go backwards.
    pub(super) last: Option<(OwnedRow, usize)>,
}

impl Merge<'_, '_> {
    /// Loads the cursor's next non-empty batch; `false` when the run is exhausted.
    pub(super) fn load(&mut self, c: usize) -> Result<bool> {
        loop {
            let cur = &mut self.cursors[c];
            let Some(of) = cur.open.as_mut() else {
                let Some(&input) = cur.files.get(cur.next_file) else {
                    return Ok(false);
                };
                cur.next_file += 1;
                let inp = self.inputs[input];
                let (file, schema) = self.reader.open(inp)?;
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
            let batch = match (batch, &self.reader.expiry) {
                (Some(b), Some(expiry)) => {
                    let (kept, expired) = expiry.retain(b, path)?;
                    self.metrics.expired_rows += expired;
                    Some(kept)
                }
                (b, _) => b,
            };
            let cur = &mut self.cursors[c];
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
}
