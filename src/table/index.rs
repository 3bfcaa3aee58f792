//! Index manifests (format.md §10).
//!
//! The index manifest of a snapshot lists every live index file; for a deletion-vector index
//! file (whose format is in [`crate::deletion_vectors`]) it records where each data file's
//! vector starts.

use apache_avro::types::Value;

use super::avro::{self, put, Rec};
use super::binary_row::BinaryRow;
use super::manifest::FileKind;
use crate::error::{Error, Result};

/// The deletion-vector index file format (kept here under its old path too).
pub use crate::deletion_vectors::{
    encode_deletion_vectors, read_deletion_vector, DeletionVectorMeta, DV_FILE_VERSION, DV_MAGIC,
};

/// `_VERSION` of index manifest entries.
pub const INDEX_MANIFEST_VERSION: i32 = 1;
/// `_INDEX_TYPE` of deletion-vector index files.
pub const DELETION_VECTORS_INDEX: &str = "DELETION_VECTORS";
/// One index manifest entry.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IndexManifestEntry {
    /// `_KIND`; a snapshot's index manifest stores ADD entries only (a commit's changes are
    /// folded into a new full list, `format.md` §10).
    pub kind: FileKind,
    /// `_PARTITION`: the serialized partition row the index file belongs to.
    pub partition: BinaryRow,
    /// `_BUCKET`: the bucket the index file belongs to.
    pub bucket: i32,
    /// `_INDEX_TYPE`: [`DELETION_VECTORS_INDEX`], or e.g. `HASH` for dynamic buckets (kept
    /// as read, never interpreted).
    pub index_type: String,
    /// `_FILE_NAME`: the index file's name under `index/`.
    pub file_name: String,
    /// `_FILE_SIZE`: the index file's size in bytes.
    pub file_size: i64,
    /// `_ROW_COUNT`: for a deletion-vector file, the number of vectors it holds.
    pub row_count: i64,
    /// `_DELETIONS_VECTORS_RANGES`: per data file, where its vector lies in the index file
    /// (offset, length, cardinality); `None` for other index types.
    pub dv_ranges: Option<Vec<DeletionVectorMeta>>,
    /// `_EXTERNAL_PATH`: the index file's absolute URI when it lives outside the table
    /// directory; `None` for files under `index/`.
    pub external_path: Option<String>,
    /// `_GLOBAL_INDEX`, kept as decoded so an entry we copy is written back unchanged.
    pub global_index: Option<GlobalIndexMeta>,
}

/// `_GLOBAL_INDEX` (null for deletion vectors).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GlobalIndexMeta {
    /// `_ROW_RANGE_START`: first row id the global index file covers.
    pub row_range_start: i64,
    /// `_ROW_RANGE_END`: last row id the global index file covers.
    pub row_range_end: i64,
    /// `_INDEX_FIELD_ID`: id of the schema field the index is built on.
    pub index_field_id: i32,
    /// `_EXTRA_FIELD_IDS`: further indexed field ids (a null element reads as 0); `None`
    /// when absent.
    pub extra_field_ids: Option<Vec<i32>>,
    /// `_INDEX_META`: the index implementation's own metadata, opaque here.
    pub index_meta: Option<Vec<u8>>,
    /// `_SOURCE_META`: metadata about the indexed source, opaque here.
    pub source_meta: Option<Vec<u8>>,
}

impl IndexManifestEntry {
    fn read(v: &Value, file: &str) -> Result<Self> {
        let r = Rec::new(v, file, "index manifest entry")?;
        let version = r.int("_VERSION")?;
        if version != INDEX_MANIFEST_VERSION {
            return Err(Error::corrupt(
                Some(file),
                format!("index manifest entry version {version}, expected 1"),
            ));
        }
        let kind = match r.int("_KIND")? {
            0 => FileKind::Add,
            1 => FileKind::Delete,
            k => {
                return Err(Error::corrupt(
                    Some(file),
                    format!("unknown entry kind {k}"),
                ))
            }
        };
        let dv_ranges = r
            .array("_DELETIONS_VECTORS_RANGES")?
            .map(|a| {
                a.iter()
                    .map(|v| {
                        let d = Rec::new(v, file, "deletion vector range")?;
                        Ok(DeletionVectorMeta {
                            data_file: d.string("f0")?,
                            offset: d.int("f1")?,
                            length: d.int("f2")?,
                            cardinality: d.opt_long("_CARDINALITY")?,
                        })
                    })
                    .collect::<Result<Vec<_>>>()
            })
            .transpose()?;
        let global_index = match r.opt("_GLOBAL_INDEX") {
            None => None,
            Some(_) => {
                let g = r.record("_GLOBAL_INDEX")?;
                Some(GlobalIndexMeta {
                    row_range_start: g.long("_ROW_RANGE_START")?,
                    row_range_end: g.long("_ROW_RANGE_END")?,
                    index_field_id: g.int("_INDEX_FIELD_ID")?,
                    extra_field_ids: g
                        .opt_longs("_EXTRA_FIELD_IDS")?
                        .map(|v| v.into_iter().map(|x| x.unwrap_or(0) as i32).collect()),
                    index_meta: g.opt_bytes("_INDEX_META")?,
                    source_meta: g.opt_bytes("_SOURCE_META")?,
                })
            }
        };
        Ok(IndexManifestEntry {
            kind,
            partition: BinaryRow(r.bytes("_PARTITION")?),
            bucket: r.int("_BUCKET")?,
            index_type: r.string("_INDEX_TYPE")?,
            file_name: r.string("_FILE_NAME")?,
            file_size: r.long("_FILE_SIZE")?,
            row_count: r.long("_ROW_COUNT")?,
            dv_ranges,
            external_path: r.opt_string("_EXTERNAL_PATH")?,
            global_index,
        })
    }

    fn value(&self) -> Value {
        put::record(vec![
            ("_VERSION", Value::Int(INDEX_MANIFEST_VERSION)),
            (
                "_KIND",
                Value::Int(match self.kind {
                    FileKind::Add => 0,
                    FileKind::Delete => 1,
                }),
            ),
            ("_PARTITION", Value::Bytes(self.partition.0.clone())),
            ("_BUCKET", Value::Int(self.bucket)),
            ("_INDEX_TYPE", Value::String(self.index_type.clone())),
            ("_FILE_NAME", Value::String(self.file_name.clone())),
            ("_FILE_SIZE", Value::Long(self.file_size)),
            ("_ROW_COUNT", Value::Long(self.row_count)),
            (
                "_DELETIONS_VECTORS_RANGES",
                put::opt(self.dv_ranges.as_ref(), |v| {
                    Value::Array(
                        v.iter()
                            .map(|d| {
                                put::record(vec![
                                    ("f0", Value::String(d.data_file.clone())),
                                    ("f1", Value::Int(d.offset)),
                                    ("f2", Value::Int(d.length)),
                                    ("_CARDINALITY", put::opt(d.cardinality, Value::Long)),
                                ])
                            })
                            .collect(),
                    )
                }),
            ),
            (
                "_EXTERNAL_PATH",
                put::opt(self.external_path.clone(), Value::String),
            ),
            (
                "_GLOBAL_INDEX",
                put::opt(self.global_index.as_ref(), |g| {
                    put::record(vec![
                        ("_ROW_RANGE_START", Value::Long(g.row_range_start)),
                        ("_ROW_RANGE_END", Value::Long(g.row_range_end)),
                        ("_INDEX_FIELD_ID", Value::Int(g.index_field_id)),
                        (
                            "_EXTRA_FIELD_IDS",
                            put::opt(g.extra_field_ids.as_ref(), |v| {
                                Value::Array(v.iter().map(|x| Value::Int(*x)).collect())
                            }),
                        ),
                        ("_INDEX_META", put::opt(g.index_meta.clone(), Value::Bytes)),
                        (
                            "_SOURCE_META",
                            put::opt(g.source_meta.clone(), Value::Bytes),
                        ),
                    ])
                }),
            ),
        ])
    }

    /// What identifies an index file across ADD and DELETE entries.
    pub fn identifier(&self) -> (BinaryRow, i32, String, String) {
        (
            self.partition.clone(),
            self.bucket,
            self.index_type.clone(),
            self.file_name.clone(),
        )
    }
}

/// Java's `IndexManifestEntry` Avro schema.
pub fn index_manifest_schema() -> &'static str {
    r#"{"type":"record","name":"record","namespace":"org.apache.paimon.avro.generated","fields":[
      {"name":"_VERSION","type":"int"},
      {"name":"_KIND","type":"int"},
      {"name":"_PARTITION","type":"bytes"},
      {"name":"_BUCKET","type":"int"},
      {"name":"_INDEX_TYPE","type":"string"},
      {"name":"_FILE_NAME","type":"string"},
      {"name":"_FILE_SIZE","type":"long"},
      {"name":"_ROW_COUNT","type":"long"},
      {"name":"_DELETIONS_VECTORS_RANGES","type":["null",{"type":"array","items":{"type":"record","name":"record__DELETIONS_VECTORS_RANGES","fields":[
        {"name":"f0","type":"string"},
        {"name":"f1","type":"int"},
        {"name":"f2","type":"int"},
        {"name":"_CARDINALITY","type":["null","long"],"default":null}]}}],"default":null},
      {"name":"_EXTERNAL_PATH","type":["null","string"],"default":null},
      {"name":"_GLOBAL_INDEX","type":["null",{"type":"record","name":"record__GLOBAL_INDEX","fields":[
        {"name":"_ROW_RANGE_START","type":"long"},
        {"name":"_ROW_RANGE_END","type":"long"},
        {"name":"_INDEX_FIELD_ID","type":"int"},
        {"name":"_EXTRA_FIELD_IDS","type":["null",{"type":"array","items":"int"}],"default":null},
        {"name":"_INDEX_META","type":["null","bytes"],"default":null},
        {"name":"_SOURCE_META","type":["null","bytes"],"default":null}]}],"default":null}]}"#
}

/// Decodes an index manifest; `file` names it in errors. A `_VERSION` other than
/// [`INDEX_MANIFEST_VERSION`] or an unknown `_KIND` is `CorruptInput`.
pub fn decode_index_manifest(bytes: &[u8], file: &str) -> Result<Vec<IndexManifestEntry>> {
    avro::read_records(bytes, file, |v| IndexManifestEntry::read(v, file))
}

/// Encodes an index manifest with Java's schema ([`index_manifest_schema`]), the given codec
/// (`manifest.compression`) and the job's 16-byte sync marker.
pub fn encode_index_manifest(
    entries: &[IndexManifestEntry],
    codec: apache_avro::Codec,
    marker: [u8; 16],
) -> Result<Vec<u8>> {
    let schema = avro::parse_schema(index_manifest_schema())?;
    avro::write_records(
        &schema,
        entries.iter().map(IndexManifestEntry::value),
        codec,
        marker,
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use roaring::RoaringBitmap;

    use super::*;
    use crate::storage::MemoryStorage;

    #[test]
    fn deletion_vectors_round_trip_and_detect_damage() {
        let mut v = BTreeMap::new();
        v.insert(
            "data-a-0.parquet".to_string(),
            RoaringBitmap::from_iter([1u32, 5, 9]),
        );
        v.insert(
            "data-b-0.parquet".to_string(),
            RoaringBitmap::from_iter(0u32..1000),
        );
        let (bytes, metas) = encode_deletion_vectors(&v).unwrap();
        let st = MemoryStorage::new();
        st.put("t/index/index-x-0", bytes.clone());
        for m in &metas {
            let bm = read_deletion_vector(&st, "t/index/index-x-0", m).unwrap();
            assert_eq!(&bm, &v[&m.data_file]);
        }
        let mut broken = bytes.clone();
        let last = broken.len() - 6;
        broken[last] ^= 0xff;
        st.put("t/index/index-x-0", broken);
        let e = read_deletion_vector(&st, "t/index/index-x-0", &metas[1]).unwrap_err();
        assert!(e.message.contains("index-x-0"), "{e}");
        st.put("t/index/index-x-0", bytes[..bytes.len() - 3].to_vec());
        assert!(read_deletion_vector(&st, "t/index/index-x-0", &metas[1]).is_err());

        let entries = vec![IndexManifestEntry {
            kind: FileKind::Add,
            partition: BinaryRow::empty(),
            bucket: 0,
            index_type: DELETION_VECTORS_INDEX.into(),
            file_name: "index-x-0".into(),
            file_size: bytes.len() as i64,
            row_count: 2,
            dv_ranges: Some(metas),
            external_path: None,
            global_index: None,
        }];
        let enc =
            encode_index_manifest(&entries, avro::codec_for("zstd").unwrap(), [0; 16]).unwrap();
        assert_eq!(decode_index_manifest(&enc, "im").unwrap(), entries);
    }
}
