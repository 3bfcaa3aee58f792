//! A data file larger than 4 GiB, compacted by both engines in CI without 4 GiB of disk or
//! memory: the storage serves a virtual Parquet file and swallows the output.
//!
//! The writer writes one real row group (the *unit*, about 64 MiB of distinct rows); the
//! storage then serves a file of [`COPIES`] copies of that row group under a footer whose
//! row-group offsets are shifted copy by copy, and the table's metadata is patched to that
//! file's size, rows and sequence numbers (as a writer of a 4 GiB file would have written
//! them). Offsets past `u32::MAX` are on every path: footer, column chunk ranges, windowed
//! reads. The compaction's output (one file of the same size) goes to a sink that counts its
//! bytes and keeps its tail, whose footer must hold every row. The component runs within
//! [`COMPONENT_MEMORY`]: memory bounded by the layout (row groups, windows), not the file.
//! `benches/hostile/run.sh` does the same with a real 4 GiB file on disk (figures in
//! benches/README.md, "Hostile sizes").

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use paimon_compact::storage::{
    MemoryStorage, ObjectMeta, Storage, StorageError, StorageErrorKind, StorageResult,
    StorageWriter,
};
use paimon_compact::table::demo::{RowKind, TableWriter};
use paimon_compact::table::manifest::{
    decode_manifest, decode_manifest_list, encode_manifest, encode_manifest_list,
};
use paimon_compact::table::scan::scan;
use paimon_compact::value::Datum;

use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader, ParquetMetaDataWriter};

use crate::huge_inputs::{copy_of, engines, full_job, table, COMPONENT_MEMORY, NOW};

const TABLE: &str = "wh/db.db/big";
/// Rows of the unit row group, each with a payload of [`PAYLOAD`] bytes: about 64 MiB.
const UNIT_ROWS: i64 = 16_000;
const PAYLOAD: usize = 4_096;
/// Copies of the unit in the virtual file: past 4 GiB.
const COPIES: u64 = 66;
/// Bytes of each output kept (its end: the footer).
const TAIL: usize = 4 << 20;

/// The virtual file: "PAR1", the unit's row group `copies` times, then `footer`.
#[derive(Clone)]
struct Virtual {
    path: String,
    /// The unit file's bytes before its footer ("PAR1" and one row group).
    head: Bytes,
    copies: u64,
    /// The footer: metadata, its length, "PAR1".
    footer: Vec<u8>,
}

impl Virtual {
    fn body(&self) -> u64 {
        self.head.len() as u64 - 4
    }

    fn size(&self) -> u64 {
        4 + self.copies * self.body() + self.footer.len() as u64
    }

    fn read(&self, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        if offset.checked_add(len).is_none_or(|end| end > self.size()) {
            return Err(StorageError::new(
                StorageErrorKind::Io,
                &self.path,
                format!("range {offset}+{len} past the end ({})", self.size()),
            ));
        }
        let mut out = Vec::with_capacity(len as usize);
        let footer_at = 4 + self.copies * self.body();
        let mut at = offset;
        while at < offset + len {
            let want = offset + len - at;
            let piece: &[u8] = if at < 4 {
                &self.head[at as usize..4]
            } else if at < footer_at {
                let within = (at - 4) % self.body();
                &self.head[4 + within as usize..]
            } else {
                &self.footer[(at - footer_at) as usize..]
            };
            let take = piece.len().min(want as usize);
            out.extend_from_slice(&piece[..take]);
            at += take as u64;
        }
        Ok(out)
    }
}

/// An output data file: its size and its last [`TAIL`] bytes.
#[derive(Default, Clone)]
struct Sunk {
    size: u64,
    tail: Vec<u8>,
}

/// Memory storage that serves [`Virtual`] at its path and sinks new data files.
struct Inflated {
    inner: MemoryStorage,
    file: Virtual,
    sunk: Arc<Mutex<BTreeMap<String, Sunk>>>,
}

impl Inflated {
    fn sunk(&self, path: &str) -> Option<Sunk> {
        self.sunk.lock().unwrap().get(path).cloned()
    }
}

impl Storage for Inflated {
    fn size(&self, path: &str) -> StorageResult<u64> {
        if path == self.file.path {
            return Ok(self.file.size());
        }
        match self.sunk(path) {
            Some(s) => Ok(s.size),
            None => self.inner.size(path),
        }
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        if path == self.file.path {
            return self.file.read(offset, len);
        }
        if let Some(s) = self.sunk(path) {
            let start = s.size - s.tail.len() as u64;
            if offset < start || offset + len > s.size {
                return Err(StorageError::new(
                    StorageErrorKind::Io,
                    path,
                    "the test keeps only the end of an output",
                ));
            }
            let from = (offset - start) as usize;
            return Ok(s.tail[from..from + len as usize].to_vec());
        }
        self.inner.read_range(path, offset, len)
    }
    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        let mut out = self.inner.list(prefix)?;
        for o in &mut out {
            if o.path == self.file.path {
                o.size = self.file.size();
            }
        }
        for (path, s) in self.sunk.lock().unwrap().iter() {
            if path.starts_with(prefix) {
                out.push(ObjectMeta {
                    path: path.clone(),
                    size: s.size,
                    modified_ms: Some(NOW),
                });
            }
        }
        Ok(out)
    }
    fn create_writer(&self, path: &str) -> StorageResult<Box<dyn StorageWriter>> {
        if path.contains("/bucket-") && path.ends_with(".parquet") {
            return Ok(Box::new(Sink {
                path: path.to_string(),
                sunk: Sunk::default(),
                into: self.sunk.clone(),
            }));
        }
        self.inner.create_writer(path)
    }
    fn delete(&self, path: &str) -> StorageResult<()> {
        if self.sunk.lock().unwrap().remove(path).is_some() {
            return Ok(());
        }
        self.inner.delete(path)
    }
    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()> {
        self.inner.create_if_absent(path, bytes)
    }
}

/// Counts what is written and keeps the end of it.
struct Sink {
    path: String,
    sunk: Sunk,
    into: Arc<Mutex<BTreeMap<String, Sunk>>>,
}

impl StorageWriter for Sink {
    fn write(&mut self, chunk: &[u8]) -> StorageResult<()> {
        self.sunk.size += chunk.len() as u64;
        self.sunk.tail.extend_from_slice(chunk);
        if self.sunk.tail.len() > 2 * TAIL {
            let cut = self.sunk.tail.len() - TAIL;
            self.sunk.tail.drain(..cut);
        }
        Ok(())
    }
    fn finish(self: Box<Self>) -> StorageResult<u64> {
        let size = self.sunk.size;
        self.into.lock().unwrap().insert(self.path, self.sunk);
        Ok(size)
    }
    fn abort(self: Box<Self>) -> StorageResult<()> {
        Ok(())
    }
}

/// The footer of `copies` copies of the unit's only row group, each shifted by the row
/// group's length; page indexes are dropped (their offsets would need shifting too).
fn inflated_footer(unit: &ParquetMetaData, body: u64, copies: u64) -> Vec<u8> {
    assert_eq!(unit.num_row_groups(), 1, "the unit must be one row group");
    let rg = unit.row_group(0).clone();
    let groups = (0..copies)
        .map(|i| {
            let shift = (i * body) as i64;
            let columns = rg
                .columns()
                .iter()
                .map(|c| {
                    c.clone()
                        .into_builder()
                        .set_data_page_offset(c.data_page_offset() + shift)
                        .set_dictionary_page_offset(c.dictionary_page_offset().map(|o| o + shift))
                        .set_index_page_offset(None)
                        .set_offset_index_offset(None)
                        .set_offset_index_length(None)
                        .set_column_index_offset(None)
                        .set_column_index_length(None)
                        .build()
                        .unwrap()
                })
                .collect();
            rg.clone()
                .into_builder()
                .set_column_metadata(columns)
                .set_file_offset(rg.file_offset().unwrap_or(4) + shift)
                .set_ordinal(i as i32)
                .build()
                .unwrap()
        })
        .collect();
    let file = unit.file_metadata();
    let meta = ParquetMetaData::new(
        parquet::file::metadata::FileMetaData::new(
            file.version(),
            file.num_rows() * copies as i64,
            file.created_by().map(str::to_string),
            file.key_value_metadata().cloned(),
            file.schema_descr_ptr(),
            file.column_orders().cloned(),
        ),
        groups,
    );
    let mut out = Vec::new();
    ParquetMetaDataWriter::new(&mut out, &meta)
        .finish()
        .unwrap();
    out
}

/// Patches the table's first commit (one manifest list, one manifest, one file) to describe
/// the virtual file: its size, rows and sequence numbers.
fn patch_first_commit(storage: &MemoryStorage, data_path: &str, size: u64, rows: i64) {
    let snapshot_path = format!("{TABLE}/snapshot/snapshot-1");
    let mut snapshot: serde_json::Value =
        serde_json::from_slice(&storage.get(&snapshot_path).unwrap()).unwrap();
    let list_name = snapshot["deltaManifestList"].as_str().unwrap().to_string();
    let list_path = format!("{TABLE}/manifest/{list_name}");
    let mut metas = decode_manifest_list(&storage.get(&list_path).unwrap(), &list_path).unwrap();
    assert_eq!(metas.len(), 1);
    let manifest_path = format!("{TABLE}/manifest/{}", metas[0].file_name);
    let mut entries =
        decode_manifest(&storage.get(&manifest_path).unwrap(), &manifest_path).unwrap();
    assert_eq!(entries.len(), 1);
    assert!(data_path.ends_with(&entries[0].file.file_name));
    let file = &mut entries[0].file;
    file.file_size = size as i64;
    file.row_count = rows;
    file.max_sequence_number = file.min_sequence_number + rows - 1;
    let manifest = encode_manifest(&entries, apache_avro::Codec::Null, [1; 16]).unwrap();
    metas[0].file_size = manifest.len() as i64;
    storage.put(&manifest_path, manifest);
    let list = encode_manifest_list(&metas, apache_avro::Codec::Null, [2; 16]).unwrap();
    let list_size = list.len() as i64;
    storage.put(&list_path, list);
    for (key, value) in [
        ("deltaManifestListSize", list_size),
        ("totalRecordCount", rows),
        ("deltaRecordCount", rows),
    ] {
        if snapshot.get(key).is_some() {
            snapshot[key] = value.into();
        }
    }
    storage.put(&snapshot_path, serde_json::to_vec(&snapshot).unwrap());
}

/// An append table whose first file is the virtual file and two small files after it (a
/// full compaction of an append bucket takes three): the storage of its metadata and small
/// files, the virtual file, and the rows the table holds.
fn big_table() -> (MemoryStorage, Virtual, i64) {
    let columns = [
        ("id".to_string(), "BIGINT NOT NULL"),
        ("payload".to_string(), "STRING"),
    ];
    let options = [
        ("bucket", "1"),
        ("bucket-key", "id"),
        ("file.compression", "none"),
        ("target-file-size", "64 gb"),
        ("write-only", "true"),
    ];
    let filler = "x".repeat(PAYLOAD - 8);
    let unit: Vec<(RowKind, Vec<Datum>)> = (0..UNIT_ROWS)
        .map(|i| {
            let payload = format!("{i:08}{filler}");
            (
                RowKind::Insert,
                vec![Datum::BigInt(i), Datum::String(payload)],
            )
        })
        .collect();
    let storage = table(TABLE, &columns, &[], &[], &options, &unit, usize::MAX);
    drop(unit);
    let data_path = storage
        .paths()
        .into_iter()
        .find(|p| p.contains("/bucket-0/data-"))
        .unwrap();
    let bytes = storage.get(&data_path).unwrap();
    let meta = ParquetMetaDataReader::new()
        .parse_and_finish(&Bytes::from(bytes.to_vec()))
        .unwrap();
    let footer_len =
        u32::from_le_bytes(bytes[bytes.len() - 8..bytes.len() - 4].try_into().unwrap());
    let head_len = bytes.len() - 8 - footer_len as usize;
    let head = Bytes::copy_from_slice(&bytes[..head_len]);
    let body = head_len as u64 - 4;
    let file = Virtual {
        path: data_path.clone(),
        footer: inflated_footer(&meta, body, COPIES),
        head,
        copies: COPIES,
    };
    assert!(file.size() > u64::from(u32::MAX), "{} bytes", file.size());
    let rows = UNIT_ROWS * COPIES as i64;
    patch_first_commit(&storage, &data_path, file.size(), rows);
    // The unit's bytes are served by `Virtual` from now on.
    storage.put(&data_path, Vec::new());
    let small = |i: i64| {
        vec![(
            RowKind::Insert,
            vec![Datum::BigInt(i), Datum::String("s".into())],
        )]
    };
    // Another seed than the first commit's, so that no file name repeats.
    let mut writer = TableWriter::new(&storage, TABLE, [8; 16]);
    writer.commit(&small(-1), NOW + 1).unwrap();
    writer.commit(&small(-2), NOW + 2).unwrap();
    (storage, file, rows + 2)
}

#[test]
fn a_data_file_over_4_gib_compacts_in_bounded_memory() {
    let (base, file, rows) = big_table();
    // The component within a sixteenth of the file. What it must hold grows with the row
    // groups (an input window, the output row group), not the file: 128 MiB is too little
    // for these (benches/README.md, "Hostile sizes").
    for engine in engines(COMPONENT_MEMORY) {
        let storage = Arc::new(Inflated {
            inner: copy_of(&base),
            file: file.clone(),
            sunk: Arc::new(Mutex::new(BTreeMap::new())),
        });
        let t0 = std::time::Instant::now();
        let report = engine
            .compact_table(storage.clone(), TABLE, &full_job(), None)
            .unwrap_or_else(|e| panic!("{}: {e}", engine.name()));
        // For benches/README.md ("Hostile sizes"); `--nocapture` shows it.
        eprintln!(
            "a {} byte file, {}: {:.1} s",
            storage.file.size(),
            engine.name(),
            t0.elapsed().as_secs_f64()
        );
        assert!(
            report.compaction.snapshot_after.is_some(),
            "{}",
            engine.name()
        );

        // One output, as large as the input, whose footer holds every row; the table's
        // metadata names it with that size and row count.
        let sunk = storage.sunk.lock().unwrap().clone();
        assert_eq!(sunk.len(), 1, "{}: {:?}", engine.name(), sunk.keys());
        let (path, out) = sunk.into_iter().next().unwrap();
        assert!(
            out.size > u64::from(u32::MAX),
            "{}: {} bytes",
            engine.name(),
            out.size
        );
        let n = out.tail.len();
        assert_eq!(&out.tail[n - 4..], b"PAR1");
        let footer_len = u32::from_le_bytes(out.tail[n - 8..n - 4].try_into().unwrap()) as usize;
        let meta =
            ParquetMetaDataReader::decode_metadata(&out.tail[n - 8 - footer_len..n - 8]).unwrap();
        assert_eq!(meta.file_metadata().num_rows(), rows, "{}", engine.name());
        let last = meta.row_group(meta.num_row_groups() - 1);
        let end = last
            .columns()
            .iter()
            .map(|c| {
                let (start, len) = c.byte_range();
                start + len
            })
            .max()
            .unwrap();
        assert!(
            end > u64::from(u32::MAX) && end < out.size,
            "{}",
            engine.name()
        );

        let state = scan(&storage.inner, TABLE).unwrap();
        let files: Vec<_> = state
            .buckets
            .values()
            .flat_map(|b| b.files.iter())
            .collect();
        assert_eq!(files.len(), 1, "{}", engine.name());
        assert!(path.ends_with(&files[0].entry.file.file_name));
        assert_eq!(files[0].entry.file.row_count, rows);
        assert_eq!(files[0].entry.file.file_size as u64, out.size);
    }
}
