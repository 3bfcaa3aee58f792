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
//! So the page readers of a repeated column are wrapped ([`wrap`]): each data page's
//! repetition levels are decoded with arrow-rs's own decoder (`RleDecoder`, the one its
//! column reader uses, so the count is the count arrow-rs will see) up to the page's value
//! count, and a page with fewer levels is corrupt input. Only repeated columns pay for this,
//! and only for their levels (a few bits per value). Levels in the deprecated `BIT_PACKED`
//! encoding are left to arrow-rs (no writer of Paimon tables uses them).

use bytes::Bytes;
use parquet::basic::Encoding;
use parquet::column::page::{Page, PageMetadata, PageReader};
use parquet::encodings::rle::RleDecoder;
use parquet::errors::{ParquetError, Result};

/// `inner`, checked as the module says when its column repeats (`max_rep_level > 0`).
pub(crate) fn wrap(inner: Box<dyn PageReader>, max_rep_level: i16) -> Box<dyn PageReader> {
    match u16::try_from(max_rep_level) {
        Ok(max) if max > 0 => Box::new(LevelChecked {
            inner,
            bit_width: (u16::BITS - max.leading_zeros()) as u8,
        }),
        _ => inner,
    }
}

struct LevelChecked {
    inner: Box<dyn PageReader>,
    bit_width: u8,
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
        } => {
            // A little-endian i32 length, then the levels.
            let len = i32::from_le_bytes(buf.get(..4)?.try_into().ok()?);
            let end = usize::try_from(len).ok()?.checked_add(4)?;
            (end <= buf.len()).then(|| (buf.slice(4..end), *num_values as usize))
        }
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

/// `page`, or why its repetition levels (of `bit_width` bits) cannot be read as it declares.
fn check(page: Page, bit_width: u8) -> Result<Page> {
    if let Some((levels, want)) = repetition_levels(&page) {
        let got = count_levels(levels, bit_width, want)?;
        if got < want {
            return Err(ParquetError::General(format!(
                "a data page declares {want} values but holds {got} repetition levels"
            )));
        }
    }
    Ok(page)
}

impl Iterator for LevelChecked {
    type Item = Result<Page>;

    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

impl PageReader for LevelChecked {
    fn get_next_page(&mut self) -> Result<Option<Page>> {
        match self.inner.get_next_page()? {
            Some(page) => check(page, self.bit_width).map(Some),
            None => Ok(None),
        }
    }

    fn peek_next_page(&mut self) -> Result<Option<PageMetadata>> {
        self.inner.peek_next_page()
    }

    fn skip_next_page(&mut self) -> Result<()> {
        self.inner.skip_next_page()
    }

    fn supports_deferred_dictionary(&self) -> bool {
        self.inner.supports_deferred_dictionary()
    }

    fn take_deferred_dictionary(&mut self) -> Result<Option<Page>> {
        // A dictionary page has no levels.
        self.inner.take_deferred_dictionary()
    }

    fn at_record_boundary(&mut self) -> Result<bool> {
        self.inner.at_record_boundary()
    }
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
}
