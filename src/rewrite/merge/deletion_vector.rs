//! Deletion vectors of a primary-key bucket (format spec §10, compaction spec §11): the
//! maintainer that compaction updates, and the bucket's index file in Paimon's format.
//!
//! With `deletion-vectors.enabled`, readers never merge levels: when compaction writes a newer
//! version of a key that also lives in a higher-level file outside the task, it marks that
//! row's position in the file's vector instead of rewriting the file. Vectors of files the
//! task rewrites are dropped (their rows were read with the vector applied). The index file
//! is a version byte, then per data file a big-endian length, the magic number, a portable
//! 32-bit RoaringBitmap and a CRC32 of magic plus bitmap — encoded by the table layer's
//! [`encode_deletion_vectors`], so there is one implementation of the format.

use std::collections::BTreeMap;

use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::storage::Storage;
use crate::table::index::{encode_deletion_vectors, DeletionVectorMeta};

/// The deletion vectors of one bucket, by data file name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeletionVectorMaintainer {
    vectors: BTreeMap<String, RoaringBitmap>,
    modified: bool,
}

/// A written deletion-vector index file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeletionVectorIndexFile {
    pub path: String,
    pub size: u64,
    /// Where each data file's vector is (offset of its length word, length, cardinality).
    pub ranges: Vec<DeletionVectorMeta>,
}

impl DeletionVectorMaintainer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts from the bucket's current vectors (as read from its index file).
    pub fn from_vectors(vectors: BTreeMap<String, RoaringBitmap>) -> Self {
        DeletionVectorMaintainer {
            vectors,
            modified: false,
        }
    }

    /// Marks row `position` of `file` deleted. Positions are 32-bit in Paimon's default
    /// format (files of at most 2^31 - 1 rows); a larger one is refused, never truncated.
    pub fn mark(&mut self, file: &str, position: u64) -> Result<()> {
        let p = u32::try_from(position)
            .ok()
            .filter(|p| *p <= i32::MAX as u32)
            .ok_or_else(|| {
                Error::unsupported(format!(
                    "row position {position} of '{file}' does not fit a 32-bit deletion vector"
                ))
            })?;
        if self.vectors.entry(file.to_string()).or_default().insert(p) {
            self.modified = true;
        }
        Ok(())
    }

    /// Drops the vector of a file that compaction rewrote (or removed).
    pub fn remove(&mut self, file: &str) {
        if self.vectors.remove(file).is_some() {
            self.modified = true;
        }
    }

    pub fn vector(&self, file: &str) -> Option<&RoaringBitmap> {
        self.vectors.get(file)
    }

    pub fn vectors(&self) -> &BTreeMap<String, RoaringBitmap> {
        &self.vectors
    }

    /// Whether a mark or a removal changed anything since construction.
    pub fn is_modified(&self) -> bool {
        self.modified
    }

    /// The index file's bytes and where each vector sits in it (empty vectors are left out).
    pub fn encode(&self) -> Result<(Vec<u8>, Vec<DeletionVectorMeta>)> {
        let non_empty: BTreeMap<String, RoaringBitmap> = self
            .vectors
            .iter()
            .filter(|(_, b)| !b.is_empty())
            .map(|(k, b)| (k.clone(), b.clone()))
            .collect();
        encode_deletion_vectors(&non_empty)
    }

    /// Writes the bucket's index file at `path` (relative to the storage root). Nothing is
    /// visible at `path` unless the whole file was written.
    pub fn write_index_file(
        &self,
        storage: &dyn Storage,
        path: &str,
    ) -> Result<DeletionVectorIndexFile> {
        let (bytes, ranges) = self.encode()?;
        let size = storage.write_all(path, &bytes)?;
        Ok(DeletionVectorIndexFile {
            path: path.to_string(),
            size,
            ranges,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStorage;
    use crate::table::index::read_deletion_vector;

    #[test]
    fn marks_removals_and_round_trip() {
        let mut m = DeletionVectorMaintainer::new();
        assert!(!m.is_modified());
        m.mark("a.parquet", 3).unwrap();
        m.mark("a.parquet", 70_000).unwrap();
        m.mark("b.parquet", 0).unwrap();
        m.mark("c.parquet", 1).unwrap();
        m.remove("c.parquet");
        assert!(m.is_modified());
        assert!(m.mark("a.parquet", 1 << 31).is_err());
        let st = MemoryStorage::new();
        let f = m.write_index_file(&st, "t/index/index-x-0").unwrap();
        assert_eq!(f.ranges.len(), 2);
        assert_eq!(st.get("t/index/index-x-0").unwrap()[0], 1, "version byte");
        for r in &f.ranges {
            let bm = read_deletion_vector(&st, &f.path, r).unwrap();
            assert_eq!(Some(&bm), m.vector(&r.data_file));
        }
    }
}
