//! Repetition levels counted before arrow-rs reads a page.
//!
//! arrow-rs 60.1 skips records of a repeated column (a list or map, when a row selection
//! leaves rows out) by counting its repetition levels a buffer at a time, and takes a buffer
//! that comes back empty as "none of these levels ended a record" rather than as the end of
//! the levels: a data page that declares more values than its repetition levels hold keeps it
//! looping for ever, without reading. The `parquet_merge` fuzz target found such a page
//! (`fuzz/README.md`, "short repetition levels"); the native replay did not end in five
//! minutes.
//!
//! So each data page's repetition levels are decoded with arrow-rs's own decoder
//! (`RleDecoder`, the one its column reader uses, so the count is the count arrow-rs will see)
//! up to the page's value count, and a page with fewer levels is corrupt input, on both read
//! paths:
//! - the page-at-a-time reader ([`super::page_stream`]) wraps the page readers of a repeated
//!   column ([`wrap`]) and checks each page arrow-rs is handed, decompressed;
//! - the push decoder ([`super::read`]) checks the bytes it fetched, before the decoder sees
//!   them ([`check_stored_page`]), when rows are left out (only skipping records loops; reading
//!   them fails on its own at the end of the levels). A version-1 page keeps its levels inside
//!   its compressed body, so such a page of a repeated column is decompressed for the check as
//!   well as by arrow-rs afterwards; version-2 levels are stored uncompressed.
//!
//! Only repeated columns pay for this, and only for their levels (a few bits per value).
//! Levels in the deprecated `BIT_PACKED` encoding are left to arrow-rs (no writer of Paimon
//! tables uses them).

use bytes::Bytes;
use parquet::basic::{Compression, Encoding};
use parquet::column::page::{Page, PageReader};
use parquet::compression::{create_codec, CodecOptions};
use parquet::encodings::rle::RleDecoder;
use parquet::errors::{ParquetError, Result};

use super::mapped_pages::MappedPages;
use super::thrift_guard::{LevelLayout, PageSizes};

/// The bits of a repetition level of a column whose largest is `max_rep_level`; `None`: the
/// column does not repeat.
fn bit_width(max_rep_level: i16) -> Option<u8> {
    match u16::try_from(max_rep_level) {
        Ok(max) if max > 0 => Some((u16::BITS - max.leading_zeros()) as u8),
        _ => None,
    }
}

/// `inner`, checked as the module says when its column repeats (`max_rep_level > 0`).
pub(crate) fn wrap(inner: Box<dyn PageReader>, max_rep_level: i16) -> Box<dyn PageReader> {
    match bit_width(max_rep_level) {
        Some(bit_width) => Box::new(MappedPages::new(inner, move |page| check(page, bit_width))),
        None => inner,
    }
}

/// Checks the repetition levels of a page as stored in its column chunk: `sizes` its header
/// (walked by [`super::thrift_guard`]), `body` the bytes after it, compressed with `codec`, of
/// a column whose largest repetition level is `max_rep_level`. Whatever cannot be followed
/// (not a data page, levels not in RLE, sizes past the body) is left to arrow-rs, which fails
/// on it by itself.
pub(crate) fn check_stored_page(
    sizes: &PageSizes,
    body: &[u8],
    codec: Compression,
    max_rep_level: i16,
) -> std::result::Result<(), String> {
    let (Some(bit_width), Some(data)) = (bit_width(max_rep_level), sizes.data) else {
        return Ok(());
    };
    let Ok(want) = usize::try_from(data.num_values) else {
        return Ok(());
    };
    let levels = match data.layout {
        LevelLayout::V2 { bytes } => {
            match usize::try_from(bytes).ok().and_then(|n| body.get(..n)) {
                Some(levels) => Bytes::copy_from_slice(levels),
                None => return Ok(()),
            }
        }
        LevelLayout::V1 { encoding } if encoding == Encoding::RLE as i32 => {
            let page = match decompress(body, codec, sizes.uncompressed)? {
                Some(page) => page,
                None => Bytes::copy_from_slice(body),
            };
            match v1_levels(&page) {
                Some(levels) => levels,
                None => return Ok(()),
            }
        }
        LevelLayout::V1 { .. } => return Ok(()),
    };
    check_count(levels, bit_width, want).map_err(|e| e.to_string())
}

/// `body` decompressed with `codec` as arrow-rs decompresses a page (to the header's
/// `uncompressed` size); `None` when the page is stored uncompressed.
fn decompress(
    body: &[u8],
    codec: Compression,
    uncompressed: Option<i32>,
) -> std::result::Result<Option<Bytes>, String> {
    let fail = |e: ParquetError| format!("a data page cannot be decompressed with {codec}: {e}");
    let Some(mut codec) = create_codec(codec, &CodecOptions::default()).map_err(fail)? else {
        return Ok(None);
    };
    let size = uncompressed.and_then(|n| usize::try_from(n).ok());
    // The codec sizes the buffer, as it does for arrow-rs.
    let mut out = Vec::new();
    codec.decompress(body, &mut out, size).map_err(fail)?;
    Ok(Some(Bytes::from(out)))
}

/// The levels of a version-1 page body (decompressed) in RLE: a little-endian i32 length,
/// then the levels.
fn v1_levels(buf: &Bytes) -> Option<Bytes> {
    let len = i32::from_le_bytes(buf.get(..4)?.try_into().ok()?);
    let end = usize::try_from(len).ok()?.checked_add(4)?;
    (end <= buf.len()).then(|| buf.slice(4..end))
}

/// The repetition levels of a data page and how many it must hold; `None` where arrow-rs
/// itself refuses (or panics, which the readers contain) before counting.
fn repetition_levels(page: &Page) -> Option<(Bytes, usize)> {
    match page {
        Page::DataPage {
            buf,
            num_values,
            rep_level_encoding: Encoding::RLE,
            ..
        } => Some((v1_levels(buf)?, *num_values as usize)),
        Page::DataPageV2 {
            buf,
            num_values,
            rep_levels_byte_len,
            ..
        } => {
            let end = *rep_levels_byte_len as usize;
            (end <= buf.len()).then(|| (buf.slice(..end), *num_values as usize))
        }
        _ => None,
    }
}

/// Levels of `bit_width` bits that arrow-rs's decoder gets out of `data`, counting up to `want`.
fn count_levels(data: Bytes, bit_width: u8, want: usize) -> Result<usize> {
    let mut decoder = RleDecoder::new(bit_width);
    decoder.set_data(data)?;
    let mut levels = [0i16; 1024];
    let mut n = 0;
    while n < want {
        let got = decoder.get_batch(&mut levels[..(want - n).min(1024)])?;
        if got == 0 {
            break;
        }
        n += got;
    }
    Ok(n)
}

/// Whether `levels` of `bit_width` bits hold the `want` a data page declares.
fn check_count(levels: Bytes, bit_width: u8, want: usize) -> Result<()> {
    let got = count_levels(levels, bit_width, want)?;
    if got < want {
        return Err(ParquetError::General(format!(
            "a data page declares {want} values but holds {got} repetition levels"
        )));
    }
    Ok(())
}

/// `page`, or why its repetition levels (of `bit_width` bits) cannot be read as it declares.
fn check(page: Page, bit_width: u8) -> Result<Page> {
    if let Some((levels, want)) = repetition_levels(&page) {
        check_count(levels, bit_width, want)?;
    }
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RLE runs of `count` copies of `value`, one bit wide.
    fn rle_run(count: u8, value: u8) -> Vec<u8> {
        vec![count << 1, value]
    }

    #[test]
    fn levels_are_counted_as_arrow_rs_decodes_them() {
        let runs = [rle_run(10, 0), rle_run(5, 1)].concat();
        assert_eq!(count_levels(Bytes::from(runs.clone()), 1, 100).unwrap(), 15);
        assert_eq!(count_levels(Bytes::from(runs), 1, 12).unwrap(), 12);
        // A zero run header ends the levels (padding, as arrow-rs reads it).
        let padded = [rle_run(3, 1), vec![0, 0, 0]].concat();
        assert_eq!(count_levels(Bytes::from(padded), 1, 100).unwrap(), 3);
        assert_eq!(count_levels(Bytes::new(), 1, 100).unwrap(), 0);
    }

    #[test]
    fn a_page_with_fewer_levels_than_values_is_refused() {
        let levels = rle_run(4, 1);
        let mut buf = (levels.len() as i32).to_le_bytes().to_vec();
        buf.extend_from_slice(&levels);
        let page = |num_values| Page::DataPage {
            buf: Bytes::from(buf.clone()),
            num_values,
            encoding: Encoding::PLAIN,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        assert!(check(page(4), 1).is_ok());
        let why = check(page(5), 1).unwrap_err().to_string();
        assert!(
            why.contains("declares 5 values but holds 4 repetition levels"),
            "{why}"
        );
    }

    /// A file of one list column (rows of 0 to 3 elements) written by arrow-rs as `props` say,
    /// and its column chunk's bytes.
    fn list_chunk(props: parquet::file::properties::WriterProperties) -> (Vec<u8>, Compression) {
        use arrow_array::builder::{Int64Builder, ListBuilder};
        use arrow_array::{ArrayRef, RecordBatch};
        use parquet::arrow::ArrowWriter;
        use parquet::file::reader::{FileReader, SerializedFileReader};

        let mut list = ListBuilder::new(Int64Builder::new());
        for row in 0..500i64 {
            for e in 0..row % 4 {
                list.values().append_value(row * 10 + e);
            }
            list.append(row % 7 != 0);
        }
        let column: ArrayRef = std::sync::Arc::new(list.finish());
        let batch = RecordBatch::try_from_iter([("l", column)]).unwrap();
        let mut file = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut file, batch.schema(), Some(props)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let reader = SerializedFileReader::new(Bytes::from(file.clone())).unwrap();
        let chunk = reader.metadata().row_group(0).column(0);
        let (start, len) = chunk.byte_range();
        let codec = chunk.compression();
        (file[start as usize..(start + len) as usize].to_vec(), codec)
    }

    /// The data pages' bodies of `chunk` (offset in the chunk, length), after their headers.
    fn data_page_bodies(chunk: &[u8], codec: Compression) -> Vec<(usize, usize)> {
        let mut bodies = Vec::new();
        super::super::page_guard::check_pages(chunk, codec, |sizes, body| {
            if sizes.data.is_some() {
                let start = body.as_ptr() as usize - chunk.as_ptr() as usize;
                bodies.push((start, body.len()));
            }
            Ok(())
        })
        .unwrap();
        bodies
    }

    /// Checks every page of `chunk` as the push decoder's reads do.
    fn check_chunk(chunk: &[u8], codec: Compression) -> std::result::Result<usize, String> {
        super::super::page_guard::check_pages(chunk, codec, |sizes, body| {
            check_stored_page(sizes, body, codec, 1)
        })
    }

    #[test]
    fn stored_pages_of_every_layout_are_counted_as_arrow_rs_reads_them() {
        use parquet::file::properties::{WriterProperties, WriterVersion};
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            for codec in [Compression::UNCOMPRESSED, Compression::SNAPPY] {
                let props = WriterProperties::builder()
                    .set_writer_version(version)
                    .set_compression(codec)
                    .set_data_page_row_count_limit(100)
                    .set_write_batch_size(100)
                    .build();
                let (chunk, codec) = list_chunk(props);
                let pages = data_page_bodies(&chunk, codec);
                assert!(pages.len() > 1, "{version:?} {codec}: several data pages");
                assert_eq!(check_chunk(&chunk, codec), Ok(chunk.len()));
            }
        }
    }

    #[test]
    fn a_stored_page_with_fewer_levels_than_values_is_refused() {
        use parquet::file::properties::{WriterProperties, WriterVersion};
        // Uncompressed, so the levels can be damaged in place: version 1 keeps them after an
        // i32 length (made 0 here: no levels), version 2 at the body's start (a zero run
        // header there: no levels either).
        for (version, at) in [
            (WriterVersion::PARQUET_1_0, 0),
            (WriterVersion::PARQUET_2_0, 0),
        ] {
            let props = WriterProperties::builder()
                .set_writer_version(version)
                .set_compression(Compression::UNCOMPRESSED)
                .set_data_page_row_count_limit(100)
                .set_write_batch_size(100)
                .build();
            let (mut chunk, codec) = list_chunk(props);
            let (body, _) = data_page_bodies(&chunk, codec)[1];
            chunk[body + at..body + at + 4].fill(0);
            let why = check_chunk(&chunk, codec).unwrap_err();
            assert!(
                why.contains("values but holds 0 repetition levels"),
                "{version:?}: {why}"
            );
            // A column that does not repeat is not checked.
            assert!(
                super::super::page_guard::check_pages(&chunk, codec, |sizes, body| {
                    check_stored_page(sizes, body, codec, 0)
                })
                .is_ok()
            );
        }
    }
}
