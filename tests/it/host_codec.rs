//! zstd run by the host (`Io::host_codec`, the component's `codec` import): the append
//! rewrite and the merge hand every zstd page they read and write to it, the files come out
//! byte for byte as with the built-in codec, and a failing host codec is a typed error that
//! leaves no output behind. The wasmtime host's own codec is checked in `host/tests`.
#![cfg(feature = "rewrite")]

use crate::append_support;
use crate::merge_support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{WriterProperties, WriterVersion};

use merge_support::{full_merge_request, put_file, put_file_with, Rec};
use paimon_compact::host_codec::{HostCodec, HostCodecMetrics};
use paimon_compact::io::{Io, ToIo};
use paimon_compact::rewrite::merge::{rewrite_merge_tree, RowKind};
use paimon_compact::rewrite::rewrite_append;
use paimon_compact::rewrite::RewriteInput;
use paimon_compact::storage::MemoryStorage;
use paimon_compact::ErrorKind;

/// zstd as a native host would run it, failing the n-th compression or decompression when told.
#[derive(Default)]
struct NativeZstd {
    compressed: AtomicU64,
    decompressed: AtomicU64,
    fail_compress_at: Option<u64>,
    fail_decompress_at: Option<u64>,
}

impl HostCodec for NativeZstd {
    fn zstd_compress(&self, level: i32, input: &[u8]) -> Result<Vec<u8>, String> {
        let n = self.compressed.fetch_add(1, Ordering::SeqCst) + 1;
        if Some(n) == self.fail_compress_at {
            return Err("injected compression failure".into());
        }
        zstd::bulk::compress(input, level).map_err(|e| e.to_string())
    }

    fn zstd_decompress(&self, input: &[u8], _hint: Option<usize>) -> Result<Vec<u8>, String> {
        let n = self.decompressed.fetch_add(1, Ordering::SeqCst) + 1;
        if Some(n) == self.fail_decompress_at {
            return Err("injected decompression failure".into());
        }
        zstd::stream::decode_all(input).map_err(|e| e.to_string())
    }
}

/// Memory storage whose host offers `codec`: the storage, and the codec beside it.
struct Offering {
    inner: MemoryStorage,
    codec: Arc<NativeZstd>,
}

impl ToIo for Offering {
    fn to_io(&self) -> Io {
        Io::new(Arc::new(self.inner.clone())).with_host_codec(Some(self.codec.clone()))
    }
}

/// Every file, by path.
fn contents(st: &MemoryStorage) -> BTreeMap<String, Vec<u8>> {
    st.paths()
        .into_iter()
        .map(|p| {
            let bytes = st.get(&p).unwrap().to_vec();
            (p, bytes)
        })
        .collect()
}

/// Append inputs in zstd: V1 pages in one file, V2 pages (levels stored uncompressed before
/// the compressed values) in the other, several row groups each.
fn append_inputs(st: &MemoryStorage) -> Vec<paimon_compact::rewrite::RewriteInput> {
    let zstd = Compression::ZSTD(ZstdLevel::try_new(3).unwrap());
    let v1 = append_support::props(zstd, 700);
    let v2 = WriterProperties::builder()
        .set_compression(zstd)
        .set_max_row_group_row_count(Some(900))
        .set_writer_version(WriterVersion::PARQUET_2_0)
        .build();
    let mut inputs = append_support::put_inputs_named(st, "v1", 2, 1500, &v1, 0);
    inputs.extend(append_support::put_inputs_named(
        st, "v2", 2, 1500, &v2, 3000,
    ));
    inputs
}

/// A second copy of the inputs `put` writes, in storage whose host offers native zstd.
fn offering(put: impl FnOnce(&MemoryStorage)) -> (MemoryStorage, Offering) {
    let inner = MemoryStorage::new();
    put(&inner);
    let st = Offering {
        inner: inner.clone(),
        codec: Arc::new(NativeZstd::default()),
    };
    (inner, st)
}

/// The rewrite gave the host pages both ways, and its metrics count what the host was given.
fn check_offloaded(m: HostCodecMetrics, codec: &NativeZstd) {
    assert!(m.offered);
    assert!(m.pages_compressed > 0 && m.pages_decompressed > 0, "{m:?}");
    assert_eq!(m.pages_compressed, codec.compressed.load(Ordering::SeqCst));
    assert_eq!(
        m.pages_decompressed,
        codec.decompressed.load(Ordering::SeqCst)
    );
}

#[test]
fn append_pages_go_to_the_host_and_the_bytes_do_not_change() {
    let options = append_support::opts(&[("file.compression", "zstd")]);
    let builtin = MemoryStorage::new();
    let inputs = append_inputs(&builtin);
    let req = append_support::request(&inputs);
    let plain = rewrite_append(&builtin, &req, &options).unwrap();
    assert_eq!(plain.metrics.host_codec, HostCodecMetrics::default());

    let (hosted, st) = offering(|s| {
        append_inputs(s);
    });
    let offloaded = rewrite_append(&st, &req, &options).unwrap();
    check_offloaded(offloaded.metrics.host_codec, &st.codec);
    assert_eq!(plain.outputs.len(), offloaded.outputs.len());
    assert_eq!(contents(&builtin), contents(&hosted));
    append_support::assert_rows_identical(&hosted, &inputs, &offloaded);
}

fn rec(key: i64, seq: i64, kind: RowKind, n: i64) -> Rec {
    Rec {
        key,
        seq,
        kind,
        v: (n % 3 != 0).then(|| format!("value-{}", n % 40)),
        n: (n % 5 != 0).then_some(n),
        b: Some(n % 2 == 0),
    }
}

/// Three sorted runs over overlapping keys with updates and deletes; one file without an offset
/// index (pages found by walking headers) and one with deleted positions (pages skipped).
fn merge_runs(st: &MemoryStorage) -> Vec<Vec<RewriteInput>> {
    let mut runs = Vec::new();
    for r in 0..3i64 {
        let rows: Vec<Rec> = (0..3000i64)
            .filter(|k| (k + r) % (r + 2) != 0)
            .map(|k| {
                let kind = match (k + r) % 17 {
                    0 => RowKind::Delete,
                    _ => RowKind::Insert,
                };
                rec(k, r * 10_000 + k, kind, k * (r + 1))
            })
            .collect();
        let name = format!("data-run-{r}.parquet");
        let input = if r == 1 {
            put_file_with(st, &name, 0, &rows, 800, false)
        } else {
            put_file(st, &name, 0, &rows, 800)
        };
        let input = if r == 2 {
            RewriteInput {
                deleted_rows: Some((0..rows.len() as u64).step_by(7).collect()),
                ..input
            }
        } else {
            input
        };
        runs.push(vec![input]);
    }
    runs
}

#[test]
fn merge_pages_go_to_the_host_and_the_bytes_do_not_change() {
    let options = merge_support::opts(&[("file.compression", "zstd")]);
    let builtin = MemoryStorage::new();
    let req = full_merge_request(merge_runs(&builtin), None);
    let plain = rewrite_merge_tree(&builtin, &req, &options).unwrap();
    assert_eq!(plain.metrics.host_codec, HostCodecMetrics::default());

    let (hosted, st) = offering(|s| {
        merge_runs(s);
    });
    let offloaded = rewrite_merge_tree(&st, &req, &options).unwrap();
    check_offloaded(offloaded.metrics.host_codec, &st.codec);
    assert_eq!(plain.metrics.output_rows, offloaded.metrics.output_rows);
    assert!(plain.metrics.output_rows > 0);
    assert_eq!(contents(&builtin), contents(&hosted));
}

#[test]
fn a_failing_host_codec_is_a_typed_error_and_leaves_nothing_behind() {
    for (fail_compress_at, fail_decompress_at) in [
        (Some(1), None),
        (Some(5), None),
        (None, Some(1)),
        (None, Some(9)),
    ] {
        let case = format!("compress {fail_compress_at:?}, decompress {fail_decompress_at:?}");
        let failing = |mem: &MemoryStorage| Offering {
            inner: mem.clone(),
            codec: Arc::new(NativeZstd {
                fail_compress_at,
                fail_decompress_at,
                ..Default::default()
            }),
        };
        // Append.
        let mem = MemoryStorage::new();
        let inputs = append_inputs(&mem);
        let before = contents(&mem);
        let st = failing(&mem);
        let options = append_support::opts(&[("file.compression", "zstd")]);
        let e = rewrite_append(&st, &append_support::request(&inputs), &options).unwrap_err();
        check_error(&e, fail_decompress_at.is_some(), "data-", &case);
        assert_eq!(contents(&mem), before, "append, {case}: storage unchanged");

        // Merge.
        let mem = MemoryStorage::new();
        let req = full_merge_request(merge_runs(&mem), None);
        let before = contents(&mem);
        let st = failing(&mem);
        let options = merge_support::opts(&[("file.compression", "zstd")]);
        let e = rewrite_merge_tree(&st, &req, &options).unwrap_err();
        check_error(&e, fail_decompress_at.is_some(), "data-run-", &case);
        assert_eq!(contents(&mem), before, "merge, {case}: storage unchanged");
    }
}

/// A page the host could not decompress is an input the job cannot read: corrupt input naming
/// the file. A page it could not compress is the host failing the job.
fn check_error(e: &paimon_compact::Error, reading: bool, input: &str, case: &str) {
    assert!(e.message.contains("injected"), "{case}: {e:?}");
    if reading {
        match &e.kind {
            ErrorKind::CorruptInput { file: Some(f) } => assert!(f.contains(input), "{case}: {f}"),
            other => panic!("{case}: {other:?} ({e})"),
        }
    } else {
        assert!(
            !matches!(e.kind, ErrorKind::CorruptInput { .. }),
            "{case}: {e:?}"
        );
    }
}
