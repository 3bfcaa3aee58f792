//! Page headers checked before arrow-rs reads them.
//!
//! arrow-rs parses each page's header inside its page reader and acts on what the header
//! declares before anything checks it: it skips unknown fields as the footer reader does (so a
//! header can send it into the same long loops, [`super::thrift_guard`]), reserves a declared
//! binary length before reading it, and reserves `uncompressed_page_size` bytes before
//! decompressing a page. A few flipped bits in a header could thus hang a job or make it ask
//! for gigabytes: natively an abort, in the component a memory-limit error that names no file.
//!
//! Every page header of an input reaches arrow-rs through bytes this crate fetched, so the
//! readers check them here first: the push decoder's ranges ([`super::read`], whole column
//! chunks or the runs of pages an offset index locates) and the page-at-a-time reader's header
//! and page reads ([`super::page_stream`]). A header is refused, as corrupt input, when the
//! Thrift walk refuses it, when it runs past the end of its column chunk (a reader of a stream
//! would read on into bytes no check saw), when it declares a negative size or a page longer
//! than what is left of its column chunk, or a decompressed size its codec cannot produce from
//! the page's bytes
//! (each block codec has a largest expansion; zstd and brotli have none worth a bound, and an
//! uncompressed page is never decompressed). What the walk cannot follow is left to arrow-rs,
//! which fails on it by itself.

use parquet::basic::Compression;
use parquet::file::metadata::ParquetMetaData;

use super::thrift_guard::{check_page_header, PageHeaderWalk, PageSizes};

/// What [`check_page`] found of a page header it did not refuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PageCheck {
    /// The header was walked whole: its page (header and body) takes this many bytes.
    Page(u64),
    /// The header goes on past the bytes given (but not past its column chunk): a reader that
    /// will read on must check it with more of them.
    NeedsMore,
    /// Not followed to its end, for a reason arrow-rs refuses by itself (or a required size is
    /// absent).
    Unfollowed,
}

/// The column chunks of a file by byte range, to find the chunk a read falls in: for the
/// page-header checks (its codec) and the page reader's read-ahead (its leaf column).
pub(crate) struct ChunkMap {
    /// Sorted by start.
    chunks: Vec<Chunk>,
}

/// One column chunk of a [`ChunkMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chunk {
    pub start: u64,
    pub end: u64,
    /// The chunk's leaf column (its index in its row group).
    pub leaf: usize,
    pub codec: Compression,
    /// Its column's largest repetition level (`0`: the column does not repeat).
    pub max_rep_level: i16,
}

impl ChunkMap {
    pub(crate) fn of(metadata: &ParquetMetaData) -> Self {
        let mut chunks: Vec<Chunk> = metadata
            .row_groups()
            .iter()
            .flat_map(|rg| rg.columns().iter().enumerate())
            .map(|(leaf, c)| {
                let (start, len) = c.byte_range();
                Chunk {
                    start,
                    end: start.saturating_add(len),
                    leaf,
                    codec: c.compression(),
                    max_rep_level: c.column_descr().max_rep_level(),
                }
            })
            .collect();
        chunks.sort_unstable_by_key(|c| (c.start, c.end, c.leaf));
        ChunkMap { chunks }
    }

    /// The chunk that holds byte `offset`.
    pub(crate) fn at(&self, offset: u64) -> Option<&Chunk> {
        let i = self.chunks.partition_point(|c| c.start <= offset);
        self.chunks[..i].last().filter(|c| offset < c.end)
    }

    /// Every chunk, by start.
    pub(crate) fn chunks(&self) -> &[Chunk] {
        &self.chunks
    }
}

/// The most bytes a page body of `compressed` bytes can decompress to with `codec`, where the
/// codec bounds it: snappy expands at most about 21 times (a 3-byte copy of 64 bytes), LZ4 about
/// 255 times, deflate 1 032 times. `None`: no bound worth checking.
fn max_uncompressed(codec: Compression, compressed: u64) -> Option<u64> {
    let ratio = match codec {
        Compression::SNAPPY => 32,
        Compression::LZ4 | Compression::LZ4_RAW => 256,
        Compression::GZIP(_) => 1_100,
        _ => return None,
    };
    // Slack for a codec's own framing on tiny pages.
    Some(compressed.saturating_mul(ratio).saturating_add(4096))
}

/// Checks the page header at the start of `bytes`; `left`: the bytes of the column chunk from
/// the header's first byte on (at least `bytes.len()`). A header that runs past the end of its
/// column chunk is refused: arrow-rs reading it from a stream would read on into whatever
/// follows, where no check was made.
pub(crate) fn check_page(bytes: &[u8], left: u64, codec: Compression) -> Result<PageCheck, String> {
    walk_page(bytes, left, codec).map(|(check, _)| check)
}

/// [`check_page`], with what the header declares when it was walked whole.
fn walk_page(
    bytes: &[u8],
    left: u64,
    codec: Compression,
) -> Result<(PageCheck, Option<PageSizes>), String> {
    let sizes = match check_page_header(bytes, left)? {
        PageHeaderWalk::Whole(sizes) => sizes,
        PageHeaderWalk::Short if bytes.len() as u64 >= left => {
            return Err(format!(
                "a page header runs past the end of its column chunk ({left} bytes from the \
                 header on)"
            ))
        }
        PageHeaderWalk::Short => return Ok((PageCheck::NeedsMore, None)),
        PageHeaderWalk::Unfollowed => return Ok((PageCheck::Unfollowed, None)),
    };
    let header = sizes.header;
    // Both sizes are required fields: without one arrow-rs refuses the header by itself.
    let (Some(uncompressed), Some(compressed)) = (sizes.uncompressed, sizes.compressed) else {
        return Ok((PageCheck::Unfollowed, Some(sizes)));
    };
    let (Ok(uncompressed), Ok(compressed)) =
        (u64::try_from(uncompressed), u64::try_from(compressed))
    else {
        return Err(format!(
            "a page header declares a negative size (uncompressed {uncompressed}, compressed \
             {compressed})"
        ));
    };
    let body_left = left.saturating_sub(header);
    if compressed > body_left {
        return Err(format!(
            "a page header declares {compressed} bytes of page, but only {body_left} bytes of \
             the column chunk follow it"
        ));
    }
    if let Some(most) = max_uncompressed(codec, compressed) {
        if uncompressed > most {
            return Err(format!(
                "a page header declares {uncompressed} bytes decompressed from {compressed} \
                 bytes of {codec}, more than the codec can produce"
            ));
        }
    }
    Ok((PageCheck::Page(header + compressed), Some(sizes)))
}

/// Checks every page header in `bytes`, a run of whole pages of one column chunk that starts
/// at a page header (what arrow-rs reads a column chunk or an offset index's pages as), and
/// hands each page that passed to `each` (its header's sizes and its body, as stored) for
/// further checks. Stops, leaving the rest to arrow-rs, at a header the walk cannot follow.
/// Returns the bytes of the pages checked (all of `bytes` when every header was followed).
pub(crate) fn check_pages(
    bytes: &[u8],
    codec: Compression,
    mut each: impl FnMut(&PageSizes, &[u8]) -> Result<(), String>,
) -> Result<usize, String> {
    let mut at = 0usize;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let at_page = |why| format!("{why} (page at byte {at} of the range read)");
        match walk_page(rest, rest.len() as u64, codec).map_err(at_page)? {
            // At most `rest.len()`: the page fits in what is left.
            (PageCheck::Page(len), Some(sizes)) => {
                let body = rest
                    .get(sizes.header as usize..len as usize)
                    .unwrap_or_default();
                each(&sizes, body).map_err(at_page)?;
                at += len as usize;
            }
            _ => break,
        }
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch, StringArray};
    use bytes::Bytes;
    use parquet::arrow::ArrowWriter;
    use parquet::basic::{GzipLevel, ZstdLevel};
    use parquet::file::properties::WriterProperties;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    use super::*;

    /// A zigzag varint of `v`, as the compact protocol writes an i32.
    fn i32_field(header: u8, v: i32, out: &mut Vec<u8>) {
        out.push(header);
        let mut z = ((v << 1) ^ (v >> 31)) as u32 as u64;
        loop {
            if z < 0x80 {
                out.push(z as u8);
                return;
            }
            out.push((z as u8 & 0x7f) | 0x80);
            z >>= 7;
        }
    }

    /// A data page header declaring `uncompressed` and `compressed` bytes, with `extra` bytes
    /// (fields) spliced in before its stop.
    fn header(uncompressed: i32, compressed: i32, extra: &[u8]) -> Vec<u8> {
        let mut h = Vec::new();
        i32_field(0x15, 0, &mut h); // 1: type DATA_PAGE
        i32_field(0x15, uncompressed, &mut h); // 2
        i32_field(0x15, compressed, &mut h); // 3
        h.push(0x2c); // 5: data_page_header
        i32_field(0x15, 10, &mut h); // num_values
        i32_field(0x15, 0, &mut h); // encoding
        i32_field(0x15, 3, &mut h);
        i32_field(0x15, 3, &mut h);
        h.push(0);
        h.extend_from_slice(extra);
        h.push(0);
        h
    }

    #[test]
    fn a_plain_header_is_walked_and_its_page_measured() {
        let h = header(4000, 1000, &[]);
        let len = h.len() as u64;
        assert_eq!(
            check_page(&h, len + 1000, Compression::SNAPPY),
            Ok(PageCheck::Page(len + 1000))
        );
        // The bytes given end inside the header: more are needed to tell...
        assert_eq!(
            check_page(&h[..5], len + 1000, Compression::SNAPPY),
            Ok(PageCheck::NeedsMore)
        );
        // ... unless they are all that is left of the column chunk.
        let why = check_page(&h[..5], 5, Compression::SNAPPY).unwrap_err();
        assert!(
            why.contains("runs past the end of its column chunk"),
            "{why}"
        );
    }

    #[test]
    fn hostile_headers_are_refused_before_arrow_rs_reads_them() {
        let refused =
            |h: Vec<u8>, left: u64, codec| check_page(&h, left, codec).expect_err("refused");
        // Gigabytes declared for a page of a kilobyte.
        let why = refused(header(i32::MAX, 1000, &[]), 2000, Compression::SNAPPY);
        assert!(why.contains("more than the codec can produce"), "{why}");
        let why = refused(
            header(2_000_000, 1000, &[]),
            2000,
            Compression::GZIP(GzipLevel::default()),
        );
        assert!(why.contains("more than the codec can produce"), "{why}");
        // ... which zstd could produce, so only its page length is checked there.
        assert!(check_page(
            &header(2_000_000, 1000, &[]),
            2000,
            Compression::ZSTD(ZstdLevel::default())
        )
        .is_ok());
        // Negative sizes, and a page longer than its column chunk.
        assert!(
            refused(header(100, -1, &[]), 2000, Compression::UNCOMPRESSED).contains("negative")
        );
        let why = refused(header(100, 5000, &[]), 2000, Compression::UNCOMPRESSED);
        assert!(why.contains("bytes of the column chunk follow"), "{why}");
        // An unknown field (id 9) holding two billion booleans, which arrow-rs would skip one
        // by one without reading a byte.
        let why = refused(
            header(100, 10, &[0x49, 0xf1, 0xff, 0xff, 0xff, 0xff, 0x07]),
            2000,
            Compression::UNCOMPRESSED,
        );
        assert!(why.contains("booleans"), "{why}");
        // Statistics whose max value declares a terabyte, which arrow-rs reserves before reading
        // it: a data page header carrying statistics { 1: binary of 2^40 bytes }.
        let mut h = Vec::new();
        i32_field(0x15, 0, &mut h);
        i32_field(0x15, 100, &mut h);
        i32_field(0x15, 10, &mut h);
        h.push(0x2c);
        i32_field(0x15, 10, &mut h);
        h.push(0x4c); // 5: statistics
        h.push(0x18); // 1: binary
        h.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x20]);
        h.extend_from_slice(&[0, 0, 0]);
        let why = refused(h, 2000, Compression::UNCOMPRESSED);
        assert!(why.contains("declares 1099511627776 bytes"), "{why}");
    }

    /// Every page of files arrow-rs writes in each codec, with and without dictionaries,
    /// passes: the checks refuse nothing a writer makes.
    #[test]
    fn every_page_of_real_files_passes() {
        let n = 20_000i64;
        let batch = RecordBatch::try_from_iter([
            ("k", Arc::new(Int64Array::from_iter_values(0..n)) as _),
            (
                "v",
                Arc::new(StringArray::from_iter_values((0..n).map(|i| {
                    format!("value {}", i % 300).repeat(1 + (i % 3) as usize)
                }))) as _,
            ),
            (
                "z",
                Arc::new(Int64Array::from_iter_values((0..n).map(|_| 0))) as _,
            ),
        ])
        .unwrap();
        for codec in [
            Compression::UNCOMPRESSED,
            Compression::SNAPPY,
            Compression::LZ4_RAW,
            Compression::GZIP(GzipLevel::default()),
            Compression::ZSTD(ZstdLevel::default()),
        ] {
            for dictionary in [true, false] {
                let props = WriterProperties::builder()
                    .set_compression(codec)
                    .set_dictionary_enabled(dictionary)
                    .set_data_page_row_count_limit(1000)
                    .set_write_batch_size(1000)
                    .build();
                let mut file = Vec::new();
                let mut w = ArrowWriter::try_new(&mut file, batch.schema(), Some(props)).unwrap();
                w.write(&batch).unwrap();
                w.close().unwrap();
                let file = Bytes::from(file);
                let reader = SerializedFileReader::new(file.clone()).unwrap();
                let map = ChunkMap::of(reader.metadata());
                for c in reader
                    .metadata()
                    .row_groups()
                    .iter()
                    .flat_map(|rg| rg.columns())
                {
                    let (start, len) = c.byte_range();
                    let chunk = map.at(start).unwrap();
                    assert_eq!((chunk.end, chunk.codec), (start + len, codec));
                    let pages = &file[start as usize..(start + len) as usize];
                    assert_eq!(
                        check_pages(pages, codec, |_, _| Ok(())),
                        Ok(pages.len()),
                        "{codec} {dictionary}: every header followed"
                    );
                }
            }
        }
    }
}
