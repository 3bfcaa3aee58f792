//! Deletion vectors (format.md §10, compaction.md §11): Paimon's deletion-vector index
//! file, and the maintainer of a bucket's vectors that compaction updates.
//!
//! With `deletion-vectors.enabled`, readers never merge levels: when compaction writes a newer
//! version of a key that also lives in a higher-level file outside the task, it marks that
//! row's position in the file's vector instead of rewriting the file. Vectors of files the
//! task rewrites are dropped (their rows were read with the vector applied). The index file
//! is a version byte, then per data file a big-endian length, the magic number, a portable
//! 32-bit RoaringBitmap and a CRC32 of magic plus bitmap; the index manifest
//! (`table::index`) records where each data file's vector starts. Every length and
//! offset is checked against the file before use.
//!
//! Shared by the merge (which marks rows) and the table layer (which reads vectors and writes
//! the bucket's index file), so neither depends on the other for the format.

use std::collections::BTreeMap;

use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::storage::Storage;

/// The 32-bit bitmap format's magic number.
pub const DV_MAGIC: i32 = 1_581_511_376;
/// The index file format version byte.
pub const DV_FILE_VERSION: u8 = 1;

/// Where one data file's deletion vector sits in an index file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeletionVectorMeta {
    /// Name of the data file the vector belongs to, as the index manifest records it in
    /// `_DELETIONS_VECTORS_RANGES` (format.md §10).
    pub data_file: String,
    /// Offset of the length word.
    pub offset: i32,
    /// Magic plus bitmap bytes.
    pub length: i32,
    /// Number of deleted rows in the vector; `None` when the index manifest does not record
    /// it (older writers). Always set by [`encode_deletion_vectors`].
    pub cardinality: Option<i64>,
}

/// Reads one data file's deletion vector from an index file.
pub fn read_deletion_vector(
    storage: &dyn Storage,
    index_path: &str,
    meta: &DeletionVectorMeta,
) -> Result<RoaringBitmap> {
    let bad = |why: String| {
        Error::corrupt(
            Some(index_path),
            format!("deletion vector of '{}': {why}", meta.data_file),
        )
    };
    if meta.offset < 1 || meta.length < 4 {
        return Err(bad(format!(
            "offset {} / length {} are out of range",
            meta.offset, meta.length
        )));
    }
    let total = 4 + meta.length as u64 + 4;
    let bytes = storage.read_range(index_path, meta.offset as u64, total)?;
    if bytes.len() as u64 != total {
        return Err(bad(format!(
            "needs {total} bytes at offset {}, the file ends after {}",
            meta.offset,
            bytes.len()
        )));
    }
    let word = |i: usize| i32::from_be_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    if word(0) != meta.length {
        return Err(bad(format!(
            "length word {} differs from the index manifest's {}",
            word(0),
            meta.length
        )));
    }
    if word(4) != DV_MAGIC {
        return Err(bad(format!("bad magic number {}", word(4))));
    }
    let body = &bytes[4..4 + meta.length as usize];
    let crc = word(4 + meta.length as usize) as u32;
    if crc32fast::hash(body) != crc {
        return Err(bad("checksum mismatch".into()));
    }
    RoaringBitmap::deserialize_from(&body[4..]).map_err(|e| bad(format!("bad bitmap: {e}")))
}

/// Encodes a deletion-vector index file; returns its bytes and where each vector is.
pub fn encode_deletion_vectors(
    vectors: &BTreeMap<String, RoaringBitmap>,
) -> Result<(Vec<u8>, Vec<DeletionVectorMeta>)> {
    let mut out = vec![DV_FILE_VERSION];
    let mut metas = Vec::with_capacity(vectors.len());
    for (file, bitmap) in vectors {
        let mut body = DV_MAGIC.to_be_bytes().to_vec();
        bitmap
            .serialize_into(&mut body)
            .map_err(|e| Error::internal(format!("bitmap serialization: {e}")).with_source(e))?;
        let offset = i32::try_from(out.len())
            .map_err(|_| Error::unsupported("a deletion-vector index file beyond 2 GiB"))?;
        let length = i32::try_from(body.len())
            .map_err(|_| Error::unsupported("a deletion vector beyond 2 GiB"))?;
        out.extend_from_slice(&length.to_be_bytes());
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
        metas.push(DeletionVectorMeta {
            data_file: file.clone(),
            offset,
            length,
            cardinality: Some(bitmap.len() as i64),
        });
    }
    Ok((out, metas))
}

/// The deletion vectors of one bucket, by data file name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeletionVectorMaintainer {
    vectors: BTreeMap<String, RoaringBitmap>,
    modified: bool,
}

/// A written deletion-vector index file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeletionVectorIndexFile {
    /// Path the file was written at, relative to the storage root.
    pub path: String,
    /// Size of the whole file in bytes, as the storage reported on finishing it.
    pub size: u64,
    /// Where each data file's vector is (offset of its length word, length, cardinality).
    pub ranges: Vec<DeletionVectorMeta>,
}

impl DeletionVectorMaintainer {
    /// A bucket without deletion vectors yet (and unmodified).
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

    /// The deleted row positions of data file `file`; `None` if it has no vector.
    pub fn vector(&self, file: &str) -> Option<&RoaringBitmap> {
        self.vectors.get(file)
    }

    /// Every vector, by data file name (may include empty ones, which [`Self::encode`] leaves
    /// out).
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
