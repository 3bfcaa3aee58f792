//! Failure cases of the append rewrite: every error is typed and names the file, every output
//! written so far is aborted or deleted through storage, and inputs are left exactly as they
//! were. Storage faults are injected at every read and every write in turn.
#![cfg(feature = "rewrite")]

use crate::append_support as support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::basic::Compression;

use paimon_compact::rewrite::{
    rewrite_append, RewriteInput, FAST_COPY_OPTION, PRIMITIVE_DICTIONARY_OPTION,
    STRING_DICTIONARY_OPTION,
};
use paimon_compact::storage::{
    MemoryStorage, ObjectMeta, Storage, StorageError, StorageErrorKind, StorageResult,
    StorageWriter,
};
use paimon_compact::{Error, ErrorKind};
use support::*;

/// A count shared by a storage's clones (the rewriter works on a clone of its storage).
#[derive(Clone, Default)]
struct Count(Arc<AtomicU64>);

impl Count {
    fn get(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
    /// Counts one more; returns the new count.
    fn bump(&self) -> u64 {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }
}

/// Storage that fails the k-th read or the k-th write (a `write` or `finish` call), and counts
/// what happened to outputs.
#[derive(Clone)]
struct Faulty {
    inner: MemoryStorage,
    fail_read: Option<u64>,
    fail_write: Option<u64>,
    reads: Count,
    writes: Count,
    finished: Count,
    aborted: Count,
    deleted: Count,
}

impl Faulty {
    fn new(inner: &MemoryStorage) -> Self {
        Faulty {
            inner: inner.clone(),
            fail_read: None,
            fail_write: None,
            reads: Count::default(),
            writes: Count::default(),
            finished: Count::default(),
            aborted: Count::default(),
            deleted: Count::default(),
        }
    }

    fn tick_write(&self, path: &str) -> StorageResult<()> {
        if Some(self.writes.bump()) == self.fail_write {
            return Err(StorageError::new(
                StorageErrorKind::Io,
                path,
                "injected write failure",
            ));
        }
        Ok(())
    }
}

struct FaultyWriter {
    inner: Box<dyn StorageWriter>,
    parent: Faulty,
    path: String,
}

impl StorageWriter for FaultyWriter {
    fn write(&mut self, chunk: &[u8]) -> StorageResult<()> {
        self.parent.tick_write(&self.path)?;
        self.inner.write(chunk)
    }
    fn finish(self: Box<Self>) -> StorageResult<u64> {
        self.parent.tick_write(&self.path)?;
        self.parent.finished.bump();
        self.inner.finish()
    }
    fn abort(self: Box<Self>) -> StorageResult<()> {
        self.parent.aborted.bump();
        self.inner.abort()
    }
}

impl Storage for Faulty {
    fn size(&self, path: &str) -> StorageResult<u64> {
        self.inner.size(path)
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        if Some(self.reads.bump()) == self.fail_read {
            return Err(StorageError::new(
                StorageErrorKind::Io,
                path,
                "injected read failure",
            ));
        }
        self.inner.read_range(path, offset, len)
    }
    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        self.inner.list(prefix)
    }
    fn create_writer(&self, path: &str) -> StorageResult<Box<dyn StorageWriter>> {
        Ok(Box::new(FaultyWriter {
            inner: self.inner.create_writer(path)?,
            parent: self.clone(),
            path: path.to_string(),
        }))
    }
    fn delete(&self, path: &str) -> StorageResult<()> {
        self.deleted.bump();
        self.inner.delete(path)
    }
    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()> {
        self.inner.create_if_absent(path, bytes)
    }
}

/// A snapshot of the storage: every path with its bytes.
fn snapshot(s: &MemoryStorage) -> Vec<(String, Vec<u8>)> {
    s.paths()
        .into_iter()
        .map(|p| (p.clone(), s.get(&p).unwrap().to_vec()))
        .collect()
}

/// Rolls every 64 KiB so that outputs are finished before the failing input is reached.
fn small_target() -> paimon_compact::options::CoreOptions {
    opts(&[("target-file-size", "64kb"), ("file.compression", "snappy")])
}

fn assert_corrupt(e: &Error, file: &str) {
    assert_eq!(
        e.kind,
        ErrorKind::CorruptInput {
            file: Some(file.to_string())
        },
        "{e}"
    );
    assert!(e.message.contains(file), "{e}");
}

/// Runs a rewrite expected to fail; checks that storage is exactly as before.
fn fail(
    storage: &MemoryStorage,
    inputs: &[RewriteInput],
    options: &paimon_compact::options::CoreOptions,
) -> (Error, Faulty) {
    let before = snapshot(storage);
    let faulty = Faulty::new(storage);
    let e = rewrite_append(&faulty, &request(inputs), options).unwrap_err();
    assert_eq!(
        snapshot(storage),
        before,
        "leftover outputs or touched inputs after: {e}"
    );
    (e, faulty)
}

fn good_inputs(storage: &MemoryStorage) -> Vec<RewriteInput> {
    put_inputs(storage, 2, 6000, &props(Compression::SNAPPY, 2000), 1)
}

fn with_bad(storage: &MemoryStorage, bytes: Vec<u8>, rows: u64) -> Vec<RewriteInput> {
    let mut inputs = good_inputs(storage);
    let path = format!("{DIR}/data-bad-0.parquet");
    storage.put(&path, bytes);
    let mut meta = inputs[0].meta.as_ref().clone();
    meta.file_name = "data-bad-0.parquet".into();
    meta.row_count = rows;
    inputs.push(RewriteInput {
        path,
        meta: Arc::new(meta),
        deleted_rows: None,
        columns: None,
    });
    inputs
}

fn bad_path() -> String {
    format!("{DIR}/data-bad-0.parquet")
}

fn good_file() -> Vec<u8> {
    write_parquet(
        &batch_with(0, 6000, "bad", &random_s(0)),
        &props(Compression::SNAPPY, 2000),
    )
}

#[test]
fn truncated_input_names_the_file_and_leaves_nothing() {
    let storage = MemoryStorage::new();
    let mut bytes = good_file();
    bytes.truncate(bytes.len() - 100);
    let inputs = with_bad(&storage, bytes, 6000);
    let (e, faulty) = fail(&storage, &inputs, &small_target());
    assert_corrupt(&e, &bad_path());
    assert!(
        faulty.finished.get() > 0,
        "outputs were finished before the failure..."
    );
    assert_eq!(
        faulty.deleted.get(),
        faulty.finished.get(),
        "...and deleted after it"
    );
}

#[test]
fn corrupt_page_names_the_file() {
    let storage = MemoryStorage::new();
    let mut bytes = good_file();
    let md = {
        let reader =
            parquet::file::reader::SerializedFileReader::new(bytes::Bytes::from(bytes.clone()))
                .unwrap();
        parquet::file::reader::FileReader::metadata(&reader).clone()
    };
    // Garbage over the page header of the unique-string column in the second row group.
    let (start, _) = md.row_group(1).column(3).byte_range();
    for b in &mut bytes[start as usize..start as usize + 24] {
        *b = 0xff;
    }
    let inputs = with_bad(&storage, bytes, 6000);
    let (e, faulty) = fail(&storage, &inputs, &small_target());
    assert_corrupt(&e, &bad_path());
    assert!(faulty.finished.get() > 0);
}

#[test]
fn corrupt_compressed_data_names_the_file() {
    let storage = MemoryStorage::new();
    // gzip carries a CRC, so damage inside a page body is always detected (Parquet itself has
    // no checksums unless the writer adds page CRCs).
    let mut bytes = write_parquet(
        &batch_with(0, 6000, "bad", &random_s(0)),
        &props(Compression::GZIP(Default::default()), 2000),
    );
    let md = {
        let reader =
            parquet::file::reader::SerializedFileReader::new(bytes::Bytes::from(bytes.clone()))
                .unwrap();
        parquet::file::reader::FileReader::metadata(&reader).clone()
    };
    let (start, len) = md.row_group(2).column(0).byte_range();
    let mid = (start + len / 2) as usize;
    for b in &mut bytes[mid..mid + 32] {
        *b ^= 0x5a;
    }
    let inputs = with_bad(&storage, bytes, 6000);
    let (e, _) = fail(&storage, &inputs, &small_target());
    assert_corrupt(&e, &bad_path());
}

#[test]
fn not_parquet_and_empty_files() {
    for bytes in [
        b"this is not a parquet file, just text".to_vec(),
        Vec::new(),
        b"PAR1".to_vec(),
    ] {
        let storage = MemoryStorage::new();
        let inputs = with_bad(&storage, bytes, 10);
        let (e, _) = fail(&storage, &inputs, &small_target());
        assert_corrupt(&e, &bad_path());
    }
}

#[test]
fn schema_mismatch_by_name_and_by_type() {
    // A renamed column.
    let renamed = {
        let b = batch_with(0, 3000, "bad", &random_s(0));
        let fields: Vec<Field> = b
            .schema()
            .fields()
            .iter()
            .map(|f| {
                if f.name() == "x" {
                    f.as_ref().clone().with_name("y")
                } else {
                    f.as_ref().clone()
                }
            })
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), b.columns().to_vec()).unwrap()
    };
    // `id` as a string.
    let retyped = {
        let b = batch_with(0, 3000, "bad", &random_s(0));
        let mut columns: Vec<ArrayRef> = b.columns().to_vec();
        let ids = columns[0].as_any().downcast_ref::<Int64Array>().unwrap();
        columns[0] = Arc::new(
            ids.iter()
                .map(|v| v.map(|v| v.to_string()))
                .collect::<StringArray>(),
        );
        let mut fields: Vec<Field> = b
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields[0] = Field::new("id", DataType::Utf8, false);
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    };
    // A column too few.
    let narrower = batch_with(0, 3000, "bad", &random_s(0))
        .project(&[0, 1, 2, 3])
        .unwrap();
    for (what, batch) in [
        ("renamed", renamed),
        ("retyped", retyped),
        ("narrower", narrower),
    ] {
        let storage = MemoryStorage::new();
        let inputs = with_bad(
            &storage,
            write_parquet(&batch, &props(Compression::SNAPPY, 1000)),
            3000,
        );
        let (e, _) = fail(&storage, &inputs, &small_target());
        assert_corrupt(&e, &bad_path());
        assert!(
            e.message.contains("schema does not match the table"),
            "{what}: {e}"
        );
    }
}

#[test]
fn table_schema_mismatch_names_the_first_file() {
    let storage = MemoryStorage::new();
    let inputs = good_inputs(&storage);
    let mut fields: Vec<Field> = schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new("extra", DataType::Int32, true));
    let mut req = request(&inputs);
    req.table_schema = Some(Arc::new(Schema::new(fields)));
    let before = snapshot(&storage);
    let e = rewrite_append(&storage, &req, &small_target()).unwrap_err();
    assert_corrupt(&e, &inputs[0].path);
    assert_eq!(snapshot(&storage), before);
}

#[test]
fn nulls_in_a_required_table_column_name_the_file() {
    let storage = MemoryStorage::new();
    let inputs = good_inputs(&storage);
    // The table says `s` is NOT NULL, the files hold nulls: with and without passthrough.
    for passthrough in ["false", "true"] {
        let mut fields: Vec<Field> = schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields[2] = fields[2].clone().with_nullable(false);
        let mut req = request(&inputs);
        req.table_schema = Some(Arc::new(Schema::new(fields)));
        let before = snapshot(&storage);
        let options = opts(&[("parquet.read.enable-dictionary-passthrough", passthrough)]);
        let e = rewrite_append(&storage, &req, &options).unwrap_err();
        assert!(
            matches!(e.kind, ErrorKind::CorruptInput { file: Some(ref f) } if f == &inputs[0].path),
            "{passthrough}: {e}"
        );
        assert_eq!(snapshot(&storage), before);
    }
}

#[test]
fn manifest_and_deletion_vector_inconsistencies() {
    let storage = MemoryStorage::new();
    let mut inputs = good_inputs(&storage);
    let mut meta = inputs[1].meta.as_ref().clone();
    meta.row_count = 5999;
    inputs[1].meta = Arc::new(meta);
    let (e, _) = fail(&storage, &inputs, &small_target());
    assert_corrupt(&e, &inputs[1].path);
    assert!(e.message.contains("manifest says 5999 rows"), "{e}");

    let mut inputs = good_inputs(&storage);
    inputs[1].deleted_rows = Some(vec![3, 6000]);
    let (e, _) = fail(&storage, &inputs, &small_target());
    assert_corrupt(&e, &inputs[1].path);
}

/// Fails the k-th storage read for every k a successful run makes.
#[test]
fn failing_read_at_every_call() {
    let storage = MemoryStorage::new();
    let inputs = good_inputs(&storage);
    for fast_copy in ["false", "true"] {
        let options = opts(&[
            ("target-file-size", "64kb"),
            ("file.compression", "snappy"),
            (FAST_COPY_OPTION, fast_copy),
        ]);
        let probe = Faulty::new(&storage);
        let ok = rewrite_append(&probe, &request(&inputs), &options).unwrap();
        let reads = probe.reads.get();
        assert!(reads >= 4, "{reads} reads");
        for o in &ok.outputs {
            storage.delete(&o.path).unwrap();
        }
        let before = snapshot(&storage);
        for k in 1..=reads {
            let mut faulty = Faulty::new(&storage);
            faulty.fail_read = Some(k);
            let e = rewrite_append(&faulty, &request(&inputs), &options).unwrap_err();
            let ErrorKind::Io {
                storage: kind,
                path,
            } = &e.kind
            else {
                panic!("read {k}: {e}")
            };
            assert_eq!(*kind, StorageErrorKind::Io);
            assert!(inputs.iter().any(|i| &i.path == path), "read {k}: {e}");
            assert_eq!(snapshot(&storage), before, "read {k}: leftovers");
            assert_eq!(faulty.deleted.get(), faulty.finished.get(), "read {k}");
        }
    }
}

/// Fails the k-th storage write (or finish) for every k a successful run makes.
#[test]
fn failing_write_at_every_call() {
    let storage = MemoryStorage::new();
    let inputs = good_inputs(&storage);
    let options = small_target();
    let probe = Faulty::new(&storage);
    let ok = rewrite_append(&probe, &request(&inputs), &options).unwrap();
    assert!(ok.outputs.len() >= 2);
    let writes = probe.writes.get();
    for o in &ok.outputs {
        storage.delete(&o.path).unwrap();
    }
    let before = snapshot(&storage);
    for k in 1..=writes {
        let mut faulty = Faulty::new(&storage);
        faulty.fail_write = Some(k);
        let e = rewrite_append(&faulty, &request(&inputs), &options).unwrap_err();
        let ErrorKind::Io { path, .. } = &e.kind else {
            panic!("write {k}: {e}")
        };
        assert!(
            path.starts_with(&format!("{DIR}/data-out-")),
            "write {k}: {e}"
        );
        assert_eq!(snapshot(&storage), before, "write {k}: leftovers");
        assert_eq!(faulty.deleted.get(), faulty.finished.get(), "write {k}");
    }
}

#[test]
fn invalid_requests_fail_before_writing() {
    let storage = MemoryStorage::new();
    let inputs = good_inputs(&storage);
    let before = snapshot(&storage);
    let e = rewrite_append(
        &storage,
        &request(&inputs),
        &opts(&[("file.compression", "brotli")]),
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
    let e = rewrite_append(
        &storage,
        &request(&inputs),
        &opts(&[(FAST_COPY_OPTION, "yes")]),
    )
    .unwrap_err();
    assert!(
        matches!(e.kind, ErrorKind::InvalidOption { ref key, .. } if key == FAST_COPY_OPTION),
        "{e}"
    );
    for key in [STRING_DICTIONARY_OPTION, PRIMITIVE_DICTIONARY_OPTION] {
        let e =
            rewrite_append(&storage, &request(&inputs), &opts(&[(key, "fastest")])).unwrap_err();
        assert!(
            matches!(e.kind, ErrorKind::InvalidOption { key: ref k, .. } if k == key),
            "{e}"
        );
    }
    let e = rewrite_append(
        &storage,
        &request(&inputs),
        &opts(&[("file.format", "lance")]),
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
    let e = rewrite_append(&storage, &request_named(&inputs, "data-in-"), &opts(&[])).unwrap_err();
    assert_eq!(e.kind, ErrorKind::IllegalState, "{e}");
    assert_eq!(snapshot(&storage), before);
}

/// With a tiny spill threshold every output row group spills its pages through storage: a
/// failing read or write at any call (spill objects included) is a typed storage error and
/// leaves nothing behind, and a clean run spills and leaves no spill object either.
#[test]
fn failing_storage_while_pages_are_spilled() {
    let storage = MemoryStorage::new();
    let inputs = good_inputs(&storage);
    let options = opts(&[
        ("target-file-size", "64kb"),
        ("file.compression", "snappy"),
        ("paimon-compact.write.spill-threshold", "1kb"),
    ]);
    let probe = Faulty::new(&storage);
    let ok = rewrite_append(&probe, &request(&inputs), &options).unwrap();
    assert!(ok.metrics.spilled_bytes > 0, "{:?}", ok.metrics);
    assert!(
        storage.paths().iter().all(|p| !p.ends_with(".spill")),
        "spill objects are deleted after each row group"
    );
    let (reads, writes) = (probe.reads.get(), probe.writes.get());
    for o in &ok.outputs {
        storage.delete(&o.path).unwrap();
    }
    let before = snapshot(&storage);
    for k in 1..=reads {
        let mut faulty = Faulty::new(&storage);
        faulty.fail_read = Some(k);
        let e = rewrite_append(&faulty, &request(&inputs), &options).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Io { .. }), "read {k}: {e}");
        assert_eq!(snapshot(&storage), before, "read {k}: leftovers");
    }
    for k in 1..=writes {
        let mut faulty = Faulty::new(&storage);
        faulty.fail_write = Some(k);
        let e = rewrite_append(&faulty, &request(&inputs), &options).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Io { .. }), "write {k}: {e}");
        assert_eq!(snapshot(&storage), before, "write {k}: leftovers");
    }
}

/// One bit flipped in every third byte of a footer, in turn (the bit moves with the byte), read
/// through the rewrite with and without fast copy (which also decodes the page indexes): each
/// flip ends in a result or a typed error, never a panic, and a failed rewrite leaves storage
/// as it was. Before the footer's layout was checked, a flip that made a column chunk's
/// offset negative panicked inside arrow-rs ("column start and length should not be
/// negative").
#[test]
fn every_bit_of_a_footer_flipped_is_a_result_or_a_typed_error_never_a_panic() {
    let good = good_file();
    let n = good.len();
    let footer_len = u32::from_le_bytes(good[n - 8..n - 4].try_into().unwrap()) as usize;
    let footer = n - 8 - footer_len..n - 4;
    let mut outcomes: std::collections::BTreeMap<String, usize> = Default::default();
    for (k, i) in footer.clone().step_by(3).enumerate() {
        let mut bytes = good.clone();
        bytes[i] ^= 1 << (k % 8);
        let storage = MemoryStorage::new();
        let path = bad_path();
        storage.put(&path, bytes);
        let meta = {
            let mut m = good_inputs(&MemoryStorage::new())[0].meta.as_ref().clone();
            m.file_name = "data-bad-0.parquet".into();
            m.row_count = 6000;
            m
        };
        let inputs = vec![RewriteInput {
            path,
            meta: Arc::new(meta),
            deleted_rows: None,
            columns: None,
        }];
        let options = if k % 2 == 0 {
            small_target()
        } else {
            opts(&[(FAST_COPY_OPTION, "true"), ("file.compression", "snappy")])
        };
        let before = snapshot(&storage);
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rewrite_append(&storage, &request(&inputs), &options)
        }));
        let outcome = match run {
            Err(p) => panic!(
                "byte {i} of {n} (footer {footer:?}), bit {}: panicked: {:?}",
                k % 8,
                p.downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| p.downcast_ref::<&str>().copied())
            ),
            Ok(Ok(_)) => "ok".to_string(),
            Ok(Err(e)) => {
                assert_eq!(
                    snapshot(&storage),
                    before,
                    "byte {i}: storage changed after {e}"
                );
                assert!(!e.message.contains('\n'), "one line: {e}");
                serde_json::to_value(&e.kind).unwrap()["kind"]
                    .as_str()
                    .unwrap()
                    .to_string()
            }
        };
        *outcomes.entry(outcome).or_default() += 1;
    }
    eprintln!(
        "{} flips over a footer of {} bytes: {outcomes:?}",
        outcomes.values().sum::<usize>(),
        footer.len()
    );
    assert!(
        outcomes.get("corrupt-input").copied().unwrap_or(0) > footer.len() / 30,
        "{outcomes:?}"
    );
}
