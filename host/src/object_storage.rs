//! Storage over an object store (S3 and S3-compatible stores, GCS, Azure) through the
//! `object_store` crate, for tables whose URI is `s3://`, `gs://`, `az://` or `abfss://`.
//!
//! The core calls storage synchronously; `object_store` is async. Each [`ObjectStorage`] owns a
//! small multi-threaded tokio runtime and blocks the calling thread on one request at a time,
//! so calls may come from any number of threads (parallel buckets, the component's host calls)
//! and never from inside the runtime itself.
//!
//! Contracts the commit protocol relies on (`format.md §8`):
//! * `create_if_absent` is a conditional put (`If-None-Match: *`). The store's client retries
//!   throttling and server errors, so a retried put can find the object its own first attempt
//!   wrote: when a conditional put reports "already exists", the object is read back and, if its
//!   bytes are the ones being written, the call succeeds. Any other unanswered put is an `Io`
//!   error, which the commit treats as "outcome unknown", never as a lost race.
//! * `list` is a string-prefix listing (`snapshot/snapshot-` matches `snapshot/snapshot-12`),
//!   sorted by path: the paginated listing where the store has one (S3, GCS), otherwise the
//!   listing of the prefix's directory filtered by the prefix.
//! * Writers buffer up to one part; a file that fits is one PUT, a larger one a multipart upload
//!   whose parts go up while the writer fills the next, and which is aborted on `abort`, on a
//!   failed part, and when the writer is dropped unfinished.
//!
//! Every request is counted by kind ([`RequestCounts`]) so a job can report what it cost.

use std::collections::BTreeMap;
use std::future::Future;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use object_store::list::{PaginatedListOptions, PaginatedListStore};
use object_store::path::Path;
use object_store::{
    MultipartUpload, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UploadPart,
};
pub use paimon_compact::storage::RequestCounts;
use paimon_compact::storage::{
    ObjectMeta, Storage, StorageError, StorageErrorKind, StorageResult, StorageWriter,
};
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

/// Bytes a writer buffers before it starts a multipart upload, and the size of each part but
/// the last. S3 requires parts of at least 5 MiB; larger parts mean fewer requests per GB.
pub const PART_SIZE: usize = 10 * 1024 * 1024;

/// Parts of one file in flight at once. A writer holds at most this many parts plus the one it
/// is filling, so its memory is bounded by `(MAX_PARTS_IN_FLIGHT + 1) * PART_SIZE`.
pub const MAX_PARTS_IN_FLIGHT: usize = 2;

#[derive(Default, Debug)]
struct Counters {
    get: AtomicU64,
    head: AtomicU64,
    put: AtomicU64,
    list: AtomicU64,
    delete: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> RequestCounts {
        RequestCounts {
            get: self.get.load(Ordering::Relaxed),
            head: self.head.load(Ordering::Relaxed),
            put: self.put.load(Ordering::Relaxed),
            list: self.list.load(Ordering::Relaxed),
            delete: self.delete.load(Ordering::Relaxed),
        }
    }
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// One bucket (or container) of a store, and how to list it by string prefix.
#[derive(Clone)]
struct Bucket {
    store: Arc<dyn ObjectStore>,
    /// The store's paginated listing, where it has one.
    paginated: Option<Arc<dyn PaginatedListStore>>,
}

/// The scheme and bucket of a URI: `s3://bucket/a/b` → (`s3://bucket`, `a/b`).
pub(crate) fn split_uri(uri: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = uri.split_once("://")?;
    if scheme.is_empty()
        || !scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+')
    {
        return None;
    }
    let end = scheme.len() + 3 + rest.find('/').unwrap_or(rest.len());
    let key = uri[end..].trim_start_matches('/');
    Some((&uri[..end], key))
}

/// How many times a request that failed with throttling, a server error or a dropped
/// connection is retried (`PAIMON_COMPACT_STORE_RETRIES`, default 10), and for how long at most
/// (`PAIMON_COMPACT_STORE_RETRY_TIMEOUT_MS`, default three minutes), with exponential back-off
/// from 100 ms. Tests shorten them; a production job keeps the defaults.
fn retry_config(bucket_uri: &str) -> StorageResult<object_store::RetryConfig> {
    let mut config = object_store::RetryConfig::default();
    let number = |key: &str| -> StorageResult<Option<u64>> {
        match std::env::var(key) {
            Ok(v) => v.trim().parse::<u64>().map(Some).map_err(|_| {
                StorageError::new(
                    StorageErrorKind::Permission,
                    bucket_uri,
                    format!("{key}={v:?} is not a non-negative integer"),
                )
            }),
            Err(_) => Ok(None),
        }
    };
    if let Some(n) = number("PAIMON_COMPACT_STORE_RETRIES")? {
        config.max_retries = usize::try_from(n).unwrap_or(usize::MAX);
    }
    if let Some(ms) = number("PAIMON_COMPACT_STORE_RETRY_TIMEOUT_MS")? {
        config.retry_timeout = std::time::Duration::from_millis(ms);
    }
    config.backoff.init_backoff = std::time::Duration::from_millis(100);
    Ok(config)
}

/// Builds the client of one bucket from the URI and each cloud's standard environment
/// (`AWS_*`, `GOOGLE_*`, `AZURE_*`), with retries and back-off ([`retry_config`]).
fn connect(bucket_uri: &str) -> StorageResult<Bucket> {
    let retry = retry_config(bucket_uri)?;
    let fail = |e: object_store::Error| {
        StorageError::new(
            StorageErrorKind::Io,
            bucket_uri,
            format!("cannot configure the object store: {e}"),
        )
    };
    let scheme = bucket_uri.split("://").next().unwrap_or_default();
    match scheme {
        "s3" | "s3a" => {
            let s3 = object_store::aws::AmazonS3Builder::from_env()
                .with_url(bucket_uri)
                .with_retry(retry.clone())
                .build()
                .map_err(fail)?;
            let s3 = Arc::new(s3);
            Ok(Bucket {
                store: s3.clone(),
                paginated: Some(s3),
            })
        }
        "gs" => {
            let gcs = object_store::gcp::GoogleCloudStorageBuilder::from_env()
                .with_url(bucket_uri)
                .with_retry(retry.clone())
                .build()
                .map_err(fail)?;
            let gcs = Arc::new(gcs);
            Ok(Bucket {
                store: gcs.clone(),
                paginated: Some(gcs),
            })
        }
        "az" | "azure" | "abfs" | "abfss" | "adl" => {
            let az = object_store::azure::MicrosoftAzureBuilder::from_env()
                .with_url(bucket_uri)
                .with_retry(retry.clone())
                .build()
                .map_err(fail)?;
            Ok(Bucket {
                store: Arc::new(az),
                paginated: None,
            })
        }
        other => Err(StorageError::new(
            StorageErrorKind::Permission,
            bucket_uri,
            format!("no object store for the scheme '{other}': s3, gs, az and abfss are served"),
        )),
    }
}

/// Maps the crate's errors onto the core's kinds; the message keeps the store's own words.
fn storage_error(e: object_store::Error, path: &str) -> StorageError {
    use object_store::Error as E;
    let kind = match &e {
        E::NotFound { .. } => StorageErrorKind::NotFound,
        E::AlreadyExists { .. } | E::Precondition { .. } => StorageErrorKind::AlreadyExists,
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => StorageErrorKind::Permission,
        _ => StorageErrorKind::Io,
    };
    StorageError::new(kind, path, e.to_string())
}

/// State shared by a storage and its writers (which are owned and may outlive a borrow).
struct Shared {
    runtime: Runtime,
    /// The store the table lives in, and the key prefix of the storage's root in it.
    root: (String, Bucket, String),
    /// Other buckets reached through full URIs (external data paths), connected on first use.
    others: Mutex<BTreeMap<String, Bucket>>,
    counters: Counters,
}

impl Shared {
    /// Runs one request to completion on the storage's runtime.
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.runtime.block_on(f)
    }

    /// The bucket and object key of a storage path: a path relative to the root, or the full
    /// URI of an object elsewhere (a Paimon external data file).
    fn resolve(&self, path: &str) -> StorageResult<(Bucket, String)> {
        if let Some((bucket_uri, key)) = split_uri(path) {
            if bucket_uri == self.root.0 {
                return Ok((self.root.1.clone(), key.to_string()));
            }
            let mut others = self.others.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(b) = others.get(bucket_uri) {
                return Ok((b.clone(), key.to_string()));
            }
            let b = connect(bucket_uri)?;
            others.insert(bucket_uri.to_string(), b.clone());
            return Ok((b, key.to_string()));
        }
        let ok = !path.is_empty()
            && !path.starts_with('/')
            && !path
                .split('/')
                .any(|s| s.is_empty() || s == "." || s == "..");
        if !ok {
            return Err(StorageError::new(
                StorageErrorKind::Permission,
                path,
                "paths must be relative and stay inside the storage root",
            ));
        }
        let key = if self.root.2.is_empty() {
            path.to_string()
        } else {
            format!("{}/{path}", self.root.2)
        };
        Ok((self.root.1.clone(), key))
    }

    /// The storage path of a key listed in `bucket_uri`: relative to the root when it is under
    /// it and in the root's bucket, a full URI otherwise.
    fn path_of(&self, bucket_uri: &str, key: &str, relative: bool) -> String {
        if relative {
            let root = &self.root.2;
            if root.is_empty() {
                return key.to_string();
            }
            if let Some(rest) = key.strip_prefix(root.as_str()) {
                if let Some(rest) = rest.strip_prefix('/') {
                    return rest.to_string();
                }
            }
        }
        format!("{bucket_uri}/{key}")
    }
}

fn object_path(key: &str, path: &str) -> StorageResult<Path> {
    Path::parse(key).map_err(|e| {
        StorageError::new(
            StorageErrorKind::Permission,
            path,
            format!("not a valid object key: {e}"),
        )
    })
}

/// A table's storage in an object store. Cloning shares the client, runtime and counters.
#[derive(Clone)]
pub struct ObjectStorage {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ObjectStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ObjectStorage({}/{})",
            self.shared.root.0, self.shared.root.2
        )
    }
}

impl ObjectStorage {
    /// Storage rooted at `uri` (`s3://bucket/warehouse/db.db`): relative paths are keys under
    /// it. Credentials and endpoints come from the environment (`AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`, and the
    /// Google and Azure equivalents). Nothing is requested until the first call.
    pub fn open(uri: &str) -> StorageResult<Self> {
        let (bucket_uri, key) = split_uri(uri).ok_or_else(|| {
            StorageError::new(
                StorageErrorKind::Permission,
                uri,
                "not an object-store URI (scheme://bucket/path)",
            )
        })?;
        // The HTTP client's TLS needs a process-wide crypto provider; installing it twice is
        // harmless (the second call reports the first and changes nothing).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let bucket = connect(bucket_uri)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("object-store")
            .enable_all()
            .build()
            .map_err(|e| {
                StorageError::new(StorageErrorKind::Io, uri, format!("no async runtime: {e}"))
            })?;
        Ok(ObjectStorage {
            shared: Arc::new(Shared {
                runtime,
                root: (
                    bucket_uri.to_string(),
                    bucket,
                    key.trim_end_matches('/').to_string(),
                ),
                others: Mutex::new(BTreeMap::new()),
                counters: Counters::default(),
            }),
        })
    }

    /// The names of the "directories" directly under `dir` (relative to the root, `""` for the
    /// root itself): the common prefixes of one delimiter listing, so walking a warehouse
    /// (databases, then tables) never lists the data files. Sorted.
    pub fn list_directories(&self, dir: &str) -> StorageResult<Vec<String>> {
        let s = &*self.shared;
        let (_, bucket, root) = &s.root;
        let key = [root.as_str(), dir.trim_matches('/')]
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join("/");
        let prefix = (!key.is_empty())
            .then(|| object_path(&key, dir))
            .transpose()?;
        bump(&s.counters.list);
        let listed = s
            .block_on(bucket.store.list_with_delimiter(prefix.as_ref()))
            .map_err(|e| storage_error(e, dir))?;
        let mut names: Vec<String> = listed
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename().map(str::to_string))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Requests made so far through this storage and its clones.
    pub fn requests(&self) -> RequestCounts {
        self.shared.counters.snapshot()
    }

    /// Every object whose key starts with `prefix` (a string prefix), unsorted.
    async fn list_prefix(
        shared: &Shared,
        bucket: &Bucket,
        prefix: &str,
    ) -> object_store::Result<Vec<object_store::ObjectMeta>> {
        let mut out = Vec::new();
        if let Some(p) = &bucket.paginated {
            let mut token = None;
            loop {
                bump(&shared.counters.list);
                let page = p
                    .list_paginated(
                        Some(prefix),
                        PaginatedListOptions {
                            page_token: token,
                            ..Default::default()
                        },
                    )
                    .await?;
                out.extend(page.result.objects);
                match page.page_token {
                    Some(t) => token = Some(t),
                    None => return Ok(out),
                }
            }
        }
        // Segment-based listing only: list the prefix's directory and filter by the prefix.
        let dir = prefix.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
        let dir = (!dir.is_empty()).then(|| Path::from(dir));
        bump(&shared.counters.list);
        let mut stream = bucket.store.list(dir.as_ref());
        while let Some(meta) = stream.next().await {
            let meta = meta?;
            if meta.location.as_ref().starts_with(prefix) {
                out.push(meta);
            }
        }
        Ok(out)
    }
}

impl Storage for ObjectStorage {
    fn size(&self, path: &str) -> StorageResult<u64> {
        let s = &self.shared;
        let (bucket, key) = s.resolve(path)?;
        let location = object_path(&key, path)?;
        bump(&s.counters.head);
        let meta = s
            .block_on(bucket.store.head(&location))
            .map_err(|e| storage_error(e, path))?;
        Ok(meta.size)
    }

    fn read_range(&self, path: &str, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        let s = &self.shared;
        let (bucket, key) = s.resolve(path)?;
        let location = object_path(&key, path)?;
        if len == 0 {
            return Ok(Vec::new());
        }
        bump(&s.counters.get);
        let range: Range<u64> = offset..offset.saturating_add(len);
        let e = match s.block_on(bucket.store.get_range(&location, range)) {
            Ok(bytes) => return Ok(bytes.to_vec()),
            Err(
                e @ (object_store::Error::NotFound { .. }
                | object_store::Error::PermissionDenied { .. }
                | object_store::Error::Unauthenticated { .. }),
            ) => return Err(storage_error(e, path)),
            Err(e) => e,
        };
        // A range that starts at or past the end (an empty file, a read-ahead past the last
        // byte) is refused by the store; the trait reads fewer bytes at the end, so see what
        // is there.
        bump(&s.counters.head);
        let size = s
            .block_on(bucket.store.head(&location))
            .map_err(|e| storage_error(e, path))?
            .size;
        if offset >= size {
            return Ok(Vec::new());
        }
        if offset.saturating_add(len) <= size {
            return Err(storage_error(e, path));
        }
        bump(&s.counters.get);
        s.block_on(bucket.store.get_range(&location, offset..size))
            .map(|b| b.to_vec())
            .map_err(|e| storage_error(e, path))
    }

    fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        let s = &self.shared;
        // A relative prefix lists under the root and yields relative paths; a full URI (an
        // external data path) yields full URIs.
        let (bucket_uri, relative) = match split_uri(prefix) {
            Some((b, _)) => (b.to_string(), false),
            None => (s.root.0.clone(), true),
        };
        // An empty relative prefix lists the whole root; `resolve` refuses empty paths.
        let (bucket, key) = if relative && prefix.is_empty() {
            (s.root.1.clone(), format!("{}/", s.root.2))
        } else if relative {
            let (b, k) = s.resolve(prefix.trim_end_matches('/'))?;
            let k = if prefix.ends_with('/') {
                format!("{k}/")
            } else {
                k
            };
            (b, k)
        } else {
            s.resolve(prefix)?
        };
        let key = key.trim_start_matches('/').to_string();
        let metas = s
            .block_on(Self::list_prefix(s, &bucket, &key))
            .map_err(|e| storage_error(e, prefix))?;
        let mut out: Vec<ObjectMeta> = metas
            .into_iter()
            .map(|m| ObjectMeta {
                path: s.path_of(&bucket_uri, m.location.as_ref(), relative),
                size: m.size,
                modified_ms: Some(m.last_modified.timestamp_millis()),
            })
            .filter(|m| m.path.starts_with(prefix))
            .collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    fn create_writer(&self, path: &str) -> StorageResult<Box<dyn StorageWriter>> {
        let (bucket, key) = self.shared.resolve(path)?;
        let location = object_path(&key, path)?;
        Ok(Box::new(ObjectWriter {
            shared: self.shared.clone(),
            store: bucket.store,
            location,
            path: path.to_string(),
            buf: Vec::new(),
            upload: None,
            in_flight: Vec::new(),
            written: 0,
        }))
    }

    fn delete(&self, path: &str) -> StorageResult<()> {
        let s = &self.shared;
        let (bucket, key) = s.resolve(path)?;
        let location = object_path(&key, path)?;
        bump(&s.counters.delete);
        match s.block_on(bucket.store.delete(&location)) {
            Ok(()) => Ok(()),
            Err(e) => Err(storage_error(e, path)),
        }
    }

    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> StorageResult<()> {
        let s = &self.shared;
        let (bucket, key) = s.resolve(path)?;
        let location = object_path(&key, path)?;
        bump(&s.counters.put);
        let put = bucket.store.put_opts(
            &location,
            PutPayload::from(bytes.to_vec()),
            PutOptions {
                mode: PutMode::Create,
                ..Default::default()
            },
        );
        match s.block_on(put) {
            Ok(_) => Ok(()),
            Err(e @ object_store::Error::AlreadyExists { .. }) => {
                // A retried put may have found its own first attempt: the same bytes are ours.
                bump(&s.counters.get);
                match s.block_on(async { bucket.store.get(&location).await?.bytes().await }) {
                    Ok(existing) if existing.as_ref() == bytes => Ok(()),
                    Ok(_) => Err(storage_error(e, path)),
                    Err(read) => Err(StorageError::new(
                        StorageErrorKind::Io,
                        path,
                        format!(
                            "the conditional put found an object that cannot be read back, so \
                             whether this write made it is unknown: {read}"
                        ),
                    )),
                }
            }
            Err(e) => Err(storage_error(e, path)),
        }
    }
}

/// A file being written: one PUT if it fits in a part, otherwise a multipart upload.
struct ObjectWriter {
    shared: Arc<Shared>,
    store: Arc<dyn ObjectStore>,
    location: Path,
    path: String,
    buf: Vec<u8>,
    upload: Option<Box<dyn MultipartUpload>>,
    in_flight: Vec<JoinHandle<object_store::Result<()>>>,
    written: u64,
}

impl ObjectWriter {
    /// Sends the buffer as the next part, starting the upload first if needed; waits while the
    /// maximum number of parts is in flight.
    fn send_part(&mut self) -> StorageResult<()> {
        let s = self.shared.clone();
        if self.upload.is_none() {
            bump(&s.counters.put);
            let started = s
                .block_on(self.store.put_multipart(&self.location))
                .map_err(|e| storage_error(e, &self.path))?;
            self.upload = Some(started);
        }
        let Some(upload) = self.upload.as_mut() else {
            return Err(StorageError::new(
                StorageErrorKind::Io,
                &self.path,
                "multipart upload missing",
            ));
        };
        let part: UploadPart = upload.put_part(PutPayload::from(std::mem::take(&mut self.buf)));
        bump(&s.counters.put);
        self.in_flight.push(s.runtime.spawn(part));
        while self.in_flight.len() > MAX_PARTS_IN_FLIGHT {
            let first = self.in_flight.remove(0);
            self.join(first)?;
        }
        Ok(())
    }

    fn join(&self, h: JoinHandle<object_store::Result<()>>) -> StorageResult<()> {
        match self.shared.block_on(h) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(storage_error(e, &self.path)),
            Err(e) => Err(StorageError::new(
                StorageErrorKind::Io,
                &self.path,
                format!("a part upload did not finish: {e}"),
            )),
        }
    }

    /// Aborts the upload, if one started, after the parts in flight settle.
    fn abort_upload(&mut self) -> StorageResult<()> {
        for h in std::mem::take(&mut self.in_flight) {
            let _ = self.shared.block_on(h);
        }
        if let Some(mut upload) = self.upload.take() {
            bump(&self.shared.counters.delete);
            self.shared
                .block_on(upload.abort())
                .map_err(|e| storage_error(e, &self.path))?;
        }
        Ok(())
    }
}

impl StorageWriter for ObjectWriter {
    fn write(&mut self, mut chunk: &[u8]) -> StorageResult<()> {
        while !chunk.is_empty() {
            let room = PART_SIZE - self.buf.len();
            let n = room.min(chunk.len());
            self.buf.extend_from_slice(&chunk[..n]);
            chunk = &chunk[n..];
            self.written += n as u64;
            if self.buf.len() == PART_SIZE {
                if let Err(e) = self.send_part() {
                    let _ = self.abort_upload();
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> StorageResult<u64> {
        let s = self.shared.clone();
        if self.upload.is_none() {
            bump(&s.counters.put);
            let payload = PutPayload::from(std::mem::take(&mut self.buf));
            s.block_on(self.store.put(&self.location, payload))
                .map_err(|e| storage_error(e, &self.path))?;
            return Ok(self.written);
        }
        let result = (|| {
            if !self.buf.is_empty() {
                self.send_part()?;
            }
            for h in std::mem::take(&mut self.in_flight) {
                self.join(h)?;
            }
            let Some(upload) = self.upload.as_mut() else {
                return Err(StorageError::new(
                    StorageErrorKind::Io,
                    &self.path,
                    "multipart upload missing",
                ));
            };
            bump(&s.counters.put);
            s.block_on(upload.complete())
                .map_err(|e| storage_error(e, &self.path))?;
            self.upload = None;
            Ok(self.written)
        })();
        if result.is_err() {
            let _ = self.abort_upload();
        }
        result
    }

    fn abort(mut self: Box<Self>) -> StorageResult<()> {
        self.buf.clear();
        self.abort_upload()
    }
}

impl Drop for ObjectWriter {
    /// A writer dropped unfinished (a panic, a cancelled job) aborts its upload, so no
    /// incomplete multipart upload is left to be billed.
    fn drop(&mut self) {
        if self.upload.is_some() {
            let _ = self.abort_upload();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_split_into_bucket_and_key() {
        assert_eq!(split_uri("s3://b/a/t"), Some(("s3://b", "a/t")));
        assert_eq!(split_uri("s3://b"), Some(("s3://b", "")));
        assert_eq!(split_uri("gs://b/"), Some(("gs://b", "")));
        assert_eq!(
            split_uri("abfss://c@acct.dfs.core.windows.net/w/t"),
            Some(("abfss://c@acct.dfs.core.windows.net", "w/t"))
        );
        assert_eq!(split_uri("bucket-0/data.parquet"), None);
        assert_eq!(split_uri("file:/tmp/x"), None);
    }

    #[test]
    fn an_unknown_scheme_is_refused_with_the_schemes_served() {
        let e = ObjectStorage::open("ftp://host/t").unwrap_err();
        assert_eq!(e.kind, StorageErrorKind::Permission);
        assert!(e.message.contains("s3, gs, az"), "{e}");
    }
}
