//! The in-memory end of a [`super::writer::ParquetFileWriter`], and how its bytes reach storage
//! while a row group is flushed.
//!
//! arrow-rs's file writer writes into a `Write`; here that is a [`Sink`] of fixed-size pieces
//! that the caller drains to its storage writer ([`Drain`]) after each call, and, through
//! [`append_draining`], between the pieces of one large column chunk, so a flush never holds a
//! whole row group of output on top of the pages it is assembling.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex, MutexGuard};

use parquet::column::writer::ColumnCloseResult;
use parquet::file::reader::{ChunkReader, Length};
use parquet::file::writer::SerializedRowGroupWriter;

use super::column_chunk::{ChunkSource, ChunkStream};
use super::writer::write_err;
use crate::error::{Error, Result};

/// Size of the pieces the sink collects output in.
pub(crate) const SINK_CHUNK: usize = 1 << 20;

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
/// briefly need twice the data), and the pieces are shared with the file writer
/// ([`super::writer::ParquetFileWriter`]) so they can be sent to storage between the column
/// chunks of a row group being flushed: otherwise a whole row group would sit here while its
/// pages are still in memory too.
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

    /// The most pieces held at once so far (what the sink's memory peaked at).
    #[cfg(test)]
    pub(crate) fn most_held(&self) -> usize {
        self.lock().most_held
    }

    /// Sends every piece written so far to `out`, in order, keeping them for reuse.
    pub(crate) fn drain(&self, out: &mut Drain<'_>) -> Result<()> {
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
/// there, so a flush never holds a whole chunk on top of the pages still waiting (measured:
/// benches/README.md, "Then: each primary-key column encoded once").
pub(crate) fn append_draining(
    rg: &mut SerializedRowGroupWriter<'_, Sink>,
    chunk: &ChunkSource,
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
    chunk: &'a ChunkSource,
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
    inner: ChunkStream,
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
