//! Shared helpers of the table tests: a fault-injecting storage, a storage with a hook (to
//! interleave another writer with a running job), and an independent row reader.

#![allow(
    dead_code,
    reason = "each test file uses a different part of the support module"
)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::{Array, Int64Array, Int8Array, RecordBatch};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use bytes::Bytes;
use paimon_compact::storage::{
    MemoryStorage, ObjectMeta, Storage, StorageError, StorageErrorKind, StorageResult,
    StorageWriter,
};
use paimon_compact::table::index::read_deletion_vector;
use paimon_compact::table::scan::scan;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// Fails exactly the `fail_at`-th storage call (0-based), counting every call including the
/// writer's `write`, `finish` and `abort`.
#[derive(Clone)]
pub struct FaultyStorage {
    pub inner: MemoryStorage,
    pub calls: Arc<AtomicUsize>,
    pub fail_at: Option<usize>,
    /// Every call from `fail_at` on fails, as after a crash (a killed job never cleans up).
    pub sticky: bool,
}

impl FaultyStorage {
    pub fn new(inner: MemoryStorage, fail_at: Option<usize>) -> Self {
        FaultyStorage {
            inner,
            calls: Arc::new(AtomicUsize::new(0)),
            fail_at,
            sticky: false,
        }
    }

    /// Fails every call from the `crash_at`-th on.
    #[allow(dead_code, reason = "not every test binary crashes its storage")]
    pub fn crashing_at(inner: MemoryStorage, crash_at: usize) -> Self {
        FaultyStorage {
            sticky: true,
            ..Self::new(inner, Some(crash_at))
        }
    }

    fn tick(&self, path: &str) -> StorageResult<()> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let crashed = self.sticky && self.fail_at.is_some_and(|f| n >= f);
        if Some(n) == self.fail_at || crashed {
            return Err(StorageError::new(
                StorageErrorKind::Io,
                path,
                format!("injected failure of call {n}"),
            ));
        }
        Ok(())
    }
}

struct FaultyWriter {
    outer: FaultyStorage,
    inner: Box<dyn StorageWriter>,
    path: String,
}

impl StorageWriter for FaultyWriter {
    fn write(&mut self, chunk: &[u8]) -> StorageResult<()> {
        self.outer.tick(&self.path)?;
        self.inner.write(chunk)
    }
    fn finish(self: Box<Self>) -> StorageResult<u64> {
        self.outer.tick(&self.path)?;
        self.inner.finish()
    }
    fn abort(self: Box<Self>) -> StorageResult<()> {
        self.outer.tick(&self.path)?;
        self.inner.abort()
    }
}

impl Storage for FaultyStorage {
    fn size(&self, path: &str) -> StorageResult<u64> {
        self.tick(path)?;
        self.inner.size(path)
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        self.tick(path)?;
        self.inner.read_range(path, offset, len)
    }
    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        self.tick(prefix)?;
        self.inner.list(prefix)
    }
    fn create_writer(&self, path: &str) -> StorageResult<Box<dyn StorageWriter>> {
        self.tick(path)?;
        Ok(Box::new(FaultyWriter {
            outer: self.clone(),
            inner: self.inner.create_writer(path)?,
            path: path.to_string(),
        }))
    }
    fn delete(&self, path: &str) -> StorageResult<()> {
        self.tick(path)?;
        self.inner.delete(path)
    }
    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()> {
        self.tick(path)?;
        self.inner.create_if_absent(path, bytes)
    }
}

/// The action of a [`HookStorage`], taken once; shared by the storage's clones.
pub type Hook = Arc<Mutex<Option<Box<dyn FnOnce() + Send>>>>;

/// Runs `hook` once, on the first call whose path contains `trigger` (to let another writer
/// act while a job is running). Clones share the hook.
#[derive(Clone)]
pub struct HookStorage {
    pub inner: MemoryStorage,
    pub trigger: String,
    pub hook: Hook,
}

impl HookStorage {
    fn maybe(&self, path: &str) {
        if path.contains(&self.trigger) {
            let hook = self.hook.lock().unwrap().take();
            if let Some(h) = hook {
                h();
            }
        }
    }
}

impl Storage for HookStorage {
    fn size(&self, path: &str) -> StorageResult<u64> {
        self.inner.size(path)
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        self.inner.read_range(path, offset, len)
    }
    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        self.inner.list(prefix)
    }
    fn create_writer(&self, path: &str) -> StorageResult<Box<dyn StorageWriter>> {
        self.maybe(path);
        self.inner.create_writer(path)
    }
    fn delete(&self, path: &str) -> StorageResult<()> {
        self.inner.delete(path)
    }
    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()> {
        self.maybe(path);
        self.inner.create_if_absent(path, bytes)
    }
}

fn cell(a: &dyn Array, row: usize) -> String {
    let f = ArrayFormatter::try_new(a, &FormatOptions::default()).unwrap();
    if a.is_null(row) {
        "null".into()
    } else {
        f.value(row).to_string()
    }
}

/// A live file's batches and the positions its deletion vector removes.
pub fn open_live_file(
    storage: &dyn Storage,
    table: &paimon_compact::table::scan::Table,
    b: &paimon_compact::table::scan::BucketState,
    l: &paimon_compact::table::scan::LiveFile,
) -> (
    Box<dyn Iterator<Item = Result<RecordBatch, String>>>,
    Vec<u32>,
) {
    let path = table
        .paths
        .live_data_file(&b.partition_path, b.bucket, &l.entry.file, "test")
        .unwrap();
    let deleted: Vec<u32> = match &l.deletion_vector {
        Some((idx, meta)) => {
            let p = table.paths.index_file(idx, "test").unwrap();
            read_deletion_vector(storage, &p, meta)
                .unwrap()
                .iter()
                .collect()
        }
        None => vec![],
    };
    if !path.ends_with(".parquet") {
        // ORC and Avro files, read as the table's data-file row type of their own schema.
        let schema = if table.schema.primary_keys.is_empty() {
            paimon_compact::types::arrow_schema(&table.schema.fields).unwrap()
        } else {
            let keys: Vec<_> = table
                .schema
                .trimmed_primary_keys()
                .into_iter()
                .cloned()
                .collect();
            paimon_compact::rewrite::merge::kv_format::data_file_schema(&keys, &table.schema.fields)
                .unwrap()
        };
        let rows = l.entry.file.row_count as u64;
        let batches =
            paimon_compact::rewrite::read_orc_or_avro_file(storage, &path, &schema, rows).unwrap();
        return (Box::new(batches.into_iter().map(Ok)), deleted);
    }
    let bytes = Bytes::from(storage.read_all(&path).unwrap());
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .unwrap()
        .build()
        .unwrap();
    (
        Box::new(reader.map(|b| b.map_err(|e| e.to_string()))),
        deleted,
    )
}

/// Runs `job` (a compaction of `table`) on fresh copies of `base`, first to count its storage
/// calls (at least `min_calls`), then once with each call failing in turn. A run that fails
/// must end in an `Io` error, add no file and leave the table's rows as in `base`; a run that
/// survives its fault must leave `after`; at least one run survives and one fails. Returns
/// the fault-free run's result.
#[allow(dead_code, reason = "not every test binary injects faults this way")]
pub fn fail_each_storage_call<T>(
    base: &MemoryStorage,
    table: &str,
    min_calls: usize,
    after: &[String],
    job: impl Fn(&FaultyStorage) -> paimon_compact::Result<T>,
) -> T {
    use std::collections::BTreeSet;
    let before = read_rows(base, table);
    let probe = FaultyStorage::new(clone_of(base), None);
    let result = job(&probe).expect("the run without a fault");
    let total = probe.calls.load(Ordering::SeqCst);
    assert!(total > min_calls, "{total} calls");
    let initial: BTreeSet<String> = base.paths().into_iter().collect();
    let (mut ok, mut failed) = (0, 0);
    for k in 0..total {
        let mem = clone_of(base);
        match job(&FaultyStorage::new(mem.clone(), Some(k))) {
            Ok(_) => {
                ok += 1;
                assert_eq!(read_rows(&mem, table), after, "k={k}");
            }
            Err(e) => {
                failed += 1;
                assert!(
                    matches!(e.kind, paimon_compact::ErrorKind::Io { .. }),
                    "k={k}: {e}"
                );
                let now: BTreeSet<String> = mem.paths().into_iter().collect();
                assert_eq!(
                    now.difference(&initial).collect::<Vec<_>>(),
                    Vec::<&String>::new(),
                    "k={k}: a failed run left files ({e})"
                );
                assert_eq!(read_rows(&mem, table), before, "k={k}");
            }
        }
    }
    assert!(ok > 0 && failed > 0, "ok {ok}, failed {failed}");
    result
}

/// Every visible row of the table at its latest snapshot, each as `v1|v2|...`, sorted.
/// Independent of the job: reads the Parquet files directly, applies deletion vectors, and for
/// primary-key tables keeps the newest record of each key and drops retracted keys.
/// An independent copy of a storage (fault-injection runs each start from one).
pub fn clone_of(m: &MemoryStorage) -> MemoryStorage {
    let c = MemoryStorage::new();
    for p in m.paths() {
        c.put(&p, m.get(&p).unwrap().to_vec());
    }
    c
}

pub fn read_rows(storage: &dyn Storage, table_path: &str) -> Vec<String> {
    let state = scan(storage, table_path).unwrap();
    let table = &state.table;
    let pk = !table.schema.primary_keys.is_empty();
    let n_keys = table.key_types.len();
    let mut plain = Vec::new();
    let mut merged: BTreeMap<String, (i64, i8, String)> = BTreeMap::new();
    for b in state.buckets.values() {
        for l in &b.files {
            let (reader, deleted) = open_live_file(storage, table, b, l);
            let mut pos = 0u32;
            for batch in reader {
                let batch: RecordBatch = batch.unwrap();
                let first_value_col = if pk { n_keys + 2 } else { 0 };
                for r in 0..batch.num_rows() {
                    let here = pos;
                    pos += 1;
                    if deleted.contains(&here) {
                        continue;
                    }
                    let values: Vec<String> = (first_value_col..batch.num_columns())
                        .map(|c| cell(batch.column(c).as_ref(), r))
                        .collect();
                    let line = values.join("|");
                    if pk {
                        let key: Vec<String> = (0..n_keys)
                            .map(|c| cell(batch.column(c).as_ref(), r))
                            .collect();
                        let key = format!("{}#{}", b.partition_path, key.join("|"));
                        let seq = batch
                            .column(n_keys)
                            .as_any()
                            .downcast_ref::<Int64Array>()
                            .unwrap()
                            .value(r);
                        let kind = batch
                            .column(n_keys + 1)
                            .as_any()
                            .downcast_ref::<Int8Array>()
                            .unwrap()
                            .value(r);
                        let newer = merged.get(&key).is_none_or(|(s, _, _)| seq > *s);
                        if newer {
                            merged.insert(key, (seq, kind, line));
                        }
                    } else {
                        plain.push(line);
                    }
                }
            }
        }
    }
    if pk {
        plain = merged
            .into_values()
            .filter(|(_, kind, _)| *kind == 0 || *kind == 2)
            .map(|(_, _, l)| l)
            .collect();
    }
    plain.sort();
    plain
}

/// Every row of the table's files at levels >= 1, deletion vectors applied and nothing merged:
/// what Paimon's reader of a deletion-vector (or first-row) table returns. Panics when a key
/// appears twice or a retract record is visible, since such a reader would return both.
/// Returns the rows as [`read_rows`] does, and the number of level-0 files it skipped.
pub fn read_rows_without_merge(storage: &dyn Storage, table_path: &str) -> (Vec<String>, usize) {
    let state = scan(storage, table_path).unwrap();
    let table = &state.table;
    let n_keys = table.key_types.len();
    assert!(n_keys > 0, "a primary-key table");
    let mut seen = std::collections::BTreeSet::new();
    let mut rows = Vec::new();
    let mut level0 = 0;
    for b in state.buckets.values() {
        for l in &b.files {
            if l.entry.file.level == 0 {
                level0 += 1;
                continue;
            }
            let (reader, deleted) = open_live_file(storage, table, b, l);
            let mut pos = 0u32;
            for batch in reader {
                let batch: RecordBatch = batch.unwrap();
                for r in 0..batch.num_rows() {
                    let here = pos;
                    pos += 1;
                    if deleted.contains(&here) {
                        continue;
                    }
                    let key: Vec<String> = (0..n_keys)
                        .map(|c| cell(batch.column(c).as_ref(), r))
                        .collect();
                    let key = format!("{}#{}", b.partition_path, key.join("|"));
                    assert!(
                        seen.insert(key.clone()),
                        "key {key} is visible twice (second in {})",
                        l.entry.file.file_name
                    );
                    let kind = batch
                        .column(n_keys + 1)
                        .as_any()
                        .downcast_ref::<Int8Array>()
                        .unwrap()
                        .value(r);
                    assert!(
                        kind == 0 || kind == 2,
                        "a retract record of key {key} is visible in {}",
                        l.entry.file.file_name
                    );
                    let values: Vec<String> = (n_keys + 2..batch.num_columns())
                        .map(|c| cell(batch.column(c).as_ref(), r))
                        .collect();
                    rows.push(values.join("|"));
                }
            }
        }
    }
    rows.sort();
    (rows, level0)
}

/// The rows of the given changelog (or data) files of a primary-key table, each as
/// `<kind>:v1|v2|...` with kind one of `+I`, `-U`, `+U`, `-D`, sorted.
pub fn read_changelog(storage: &dyn Storage, table_path: &str, paths: &[String]) -> Vec<String> {
    let table = paimon_compact::table::scan::Table::load(storage, table_path).unwrap();
    let n_keys = table.key_types.len();
    let mut out = Vec::new();
    for path in paths {
        let bytes = Bytes::from(storage.read_all(path).unwrap());
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .build()
            .unwrap();
        for batch in reader {
            let batch: RecordBatch = batch.unwrap();
            for r in 0..batch.num_rows() {
                let kind = batch
                    .column(n_keys + 1)
                    .as_any()
                    .downcast_ref::<Int8Array>()
                    .unwrap()
                    .value(r);
                let kind = ["+I", "-U", "+U", "-D"][kind as usize];
                let values: Vec<String> = (n_keys + 2..batch.num_columns())
                    .map(|c| cell(batch.column(c).as_ref(), r))
                    .collect();
                out.push(format!("{kind}:{}", values.join("|")));
            }
        }
    }
    out.sort();
    out
}
