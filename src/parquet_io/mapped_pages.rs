//! A page reader whose pages pass through a function before a column reader sees them.
//!
//! arrow-rs lets a caller supply the page readers of a row group, not change what one of its
//! readers returns; the layers that need to act on each page ([`super::host_decompression`]
//! decompresses zstd bodies with the host's codec, [`super::level_guard`] counts repetition
//! levels) wrap the reader instead. Every method but the two that return pages is forwarded
//! unchanged, so the wrapper keeps the inner reader's skipping and deferred-dictionary
//! behaviour: only the pages a column reader actually receives are mapped.

use parquet::column::page::{Page, PageMetadata, PageReader};
use parquet::errors::Result;

/// `inner`'s pages, each passed through `map` (data and dictionary pages alike; a map that
/// only concerns data pages returns the others as they are). The inner reader is boxed: the
/// readers wrapped are arrow-rs's, handed around as `Box<dyn PageReader>`.
pub(crate) struct MappedPages<F> {
    inner: Box<dyn PageReader>,
    map: F,
}

impl<F> MappedPages<F>
where
    F: FnMut(Page) -> Result<Page> + Send,
{
    pub(crate) fn new(inner: Box<dyn PageReader>, map: F) -> Self {
        Self { inner, map }
    }

    fn mapped(&mut self, page: Option<Page>) -> Result<Option<Page>> {
        page.map(&mut self.map).transpose()
    }
}

impl<F> Iterator for MappedPages<F>
where
    F: FnMut(Page) -> Result<Page> + Send,
{
    type Item = Result<Page>;

    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

impl<F> PageReader for MappedPages<F>
where
    F: FnMut(Page) -> Result<Page> + Send,
{
    fn get_next_page(&mut self) -> Result<Option<Page>> {
        let page = self.inner.get_next_page()?;
        self.mapped(page)
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
        let page = self.inner.take_deferred_dictionary()?;
        self.mapped(page)
    }

    fn at_record_boundary(&mut self) -> Result<bool> {
        self.inner.at_record_boundary()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use parquet::basic::Encoding;
    use parquet::errors::ParquetError;
    use std::sync::{Arc, Mutex};

    /// Pages handed out from a list, the last one of them a dictionary page kept aside.
    struct Listed {
        pages: Vec<Page>,
        dictionary: Option<Page>,
    }

    impl Iterator for Listed {
        type Item = Result<Page>;
        fn next(&mut self) -> Option<Self::Item> {
            self.get_next_page().transpose()
        }
    }

    impl PageReader for Listed {
        fn get_next_page(&mut self) -> Result<Option<Page>> {
            Ok((!self.pages.is_empty()).then(|| self.pages.remove(0)))
        }
        fn peek_next_page(&mut self) -> Result<Option<PageMetadata>> {
            Ok(None)
        }
        fn skip_next_page(&mut self) -> Result<()> {
            self.pages.remove(0);
            Ok(())
        }
        fn take_deferred_dictionary(&mut self) -> Result<Option<Page>> {
            Ok(self.dictionary.take())
        }
    }

    fn data_page(body: &'static [u8]) -> Page {
        Page::DataPage {
            buf: Bytes::from_static(body),
            num_values: 1,
            encoding: Encoding::PLAIN,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        }
    }

    #[test]
    fn returned_pages_are_mapped_and_skipped_pages_are_not() {
        let dictionary = Page::DictionaryPage {
            buf: Bytes::from_static(b"d"),
            num_values: 1,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        };
        let inner = Listed {
            pages: vec![data_page(b"a"), data_page(b"b"), data_page(b"c")],
            dictionary: Some(dictionary),
        };
        let mapped = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&mapped);
        let mut reader = MappedPages::new(Box::new(inner), move |page: Page| {
            record.lock().unwrap().push(page.buffer().to_vec());
            Ok(page)
        });
        assert_eq!(
            reader.get_next_page().unwrap().unwrap().buffer().as_ref(),
            b"a"
        );
        reader.skip_next_page().unwrap();
        assert_eq!(
            reader.get_next_page().unwrap().unwrap().buffer().as_ref(),
            b"c"
        );
        assert_eq!(
            reader
                .take_deferred_dictionary()
                .unwrap()
                .unwrap()
                .buffer()
                .as_ref(),
            b"d"
        );
        assert!(reader.get_next_page().unwrap().is_none());
        assert_eq!(
            *mapped.lock().unwrap(),
            [b"a".to_vec(), b"c".to_vec(), b"d".to_vec()]
        );
    }

    #[test]
    fn an_error_of_the_map_is_the_reader_s_error() {
        let inner = Listed {
            pages: vec![data_page(b"a")],
            dictionary: None,
        };
        let mut reader = MappedPages::new(Box::new(inner), |_: Page| -> Result<Page> {
            Err(ParquetError::General("refused".into()))
        });
        let err = reader.get_next_page().unwrap_err();
        assert!(err.to_string().contains("refused"), "{err}");
    }
}
