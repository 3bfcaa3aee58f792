//! Tables stored as ORC or Avro (`file.format = orc | avro`), compacted natively: the demo
//! writer's level-0 Parquet files are merged into ORC or Avro files, which the next compaction
//! reads back (through its Parquet copies) with new level-0 files; rows stay those of the
//! model. A failure at any storage call leaves the table as it was with nothing left behind,
//! and a corrupt ORC file is a typed error naming it. (Tables Java writes as ORC and Avro,
//! read back by Java, through the component too: `tests/java_interop`, tables `orc_*`,
//! `avro_*`.)
#![cfg(feature = "rewrite")]

use crate::table_support;

use std::collections::BTreeSet;

use paimon_compact::plan::PlanContext;
use paimon_compact::storage::{MemoryStorage, Storage};
use paimon_compact::table::binary_row::Datum;
use paimon_compact::table::demo::{create_table, field, new_schema, RowKind, TableWriter};
use paimon_compact::table::scan::scan;
use paimon_compact::table::{compact_table, CompactOptions};
use paimon_compact::ErrorKind;
use table_support::{clone_of, fail_each_storage_call, read_rows};

const NOW: i64 = 1_770_000_000_000;

fn create(st: &MemoryStorage, pk: bool, options: &[(&str, &str)]) {
    let schema = new_schema(
        vec![
            field(0, "k", "BIGINT NOT NULL").unwrap(),
            field(1, "c", "CHAR(4)").unwrap(),
            field(2, "d", "DECIMAL(12, 3)").unwrap(),
            field(3, "ts", "TIMESTAMP(6)").unwrap(),
            field(4, "day", "DATE").unwrap(),
        ],
        &[],
        if pk { &["k"] } else { &[] },
        options,
        NOW,
    );
    create_table(st, "t", &schema).unwrap();
}

/// Commits `from..to` of 50 rows each over overlapping keys, with updates and deletes.
fn commit(st: &MemoryStorage, pk: bool, from: i64, to: i64) {
    let mut w = TableWriter::new(st, "t", [from as u8 + 1; 16]);
    for c in from..to {
        let rows: Vec<(RowKind, Vec<Datum>)> = (0..50)
            .map(|i| {
                let k = (i * 7 + c * 11) % 80;
                let kind = match (i + c) % 9 {
                    0 if pk => RowKind::Delete,
                    _ => RowKind::Insert,
                };
                (
                    kind,
                    vec![
                        Datum::BigInt(k),
                        if i % 5 == 0 {
                            Datum::Null
                        } else {
                            Datum::String(format!("c{}", i % 7))
                        },
                        Datum::Decimal(i128::from(c * 1000 - i) * 7),
                        Datum::Timestamp {
                            millis: (c - 3) * 40_000_000_000 + i * 1_001,
                            nanos: (i as i32 % 1000) * 1000,
                        },
                        Datum::Date((c as i32 - 2) * 3_000 + i as i32),
                    ],
                )
            })
            .collect();
        w.commit(&rows, NOW + c).unwrap();
    }
}

fn opts(job: u8, full: bool) -> CompactOptions<'static> {
    let mut o = CompactOptions::new(PlanContext::at(NOW + 1000, 3), [job; 16]);
    o.full = full;
    o
}

fn live_files(st: &dyn Storage) -> Vec<String> {
    scan(st, "t")
        .unwrap()
        .buckets
        .values()
        .flat_map(|b| b.files.iter().map(|l| l.entry.file.file_name.clone()))
        .collect()
}

/// A table whose compacted levels are `format` (`orc` or `avro`), with Parquet level-0
/// files on top.
fn format_table(pk: bool, format: &str) -> MemoryStorage {
    let st = MemoryStorage::new();
    create(&st, pk, &[("bucket", "2"), ("file.format", format)]);
    commit(&st, pk, 0, 4);
    let before = read_rows(&st, "t");
    compact_table(&st, "t", &opts(1, true)).unwrap();
    assert_eq!(read_rows(&st, "t"), before);
    let files = live_files(&st);
    let ext = format!(".{format}");
    assert!(
        !files.is_empty() && files.iter().all(|f| f.ends_with(&ext)),
        "{files:?}"
    );
    let magic: &[u8] = if format == "orc" { b"ORC" } else { b"Obj\x01" };
    for p in st.paths().iter().filter(|p| p.ends_with(&ext)) {
        assert_eq!(&st.get(p).unwrap()[..magic.len()], magic, "{p}");
    }
    commit(&st, pk, 4, 6);
    st
}

fn orc_table(pk: bool) -> MemoryStorage {
    format_table(pk, "orc")
}

#[test]
fn orc_and_avro_files_are_written_and_read_back_by_the_next_compaction() {
    for (pk, format) in [
        (true, "orc"),
        (false, "orc"),
        (true, "avro"),
        (false, "avro"),
    ] {
        let st = format_table(pk, format);
        let before = read_rows(&st, "t");
        let report = compact_table(&st, "t", &opts(2, true)).unwrap();
        assert!(report.totals.rewrites >= 1, "{:?}", report.totals);
        assert_eq!(read_rows(&st, "t"), before, "pk={pk} {format}");
        let files = live_files(&st);
        let ext = format!(".{format}");
        assert!(files.iter().all(|f| f.ends_with(&ext)), "{files:?}");
        // The Parquet copies of the ORC inputs are gone.
        assert!(
            st.paths().iter().all(|p| !p.ends_with("-copy.parquet")),
            "{:?}",
            st.paths()
        );
    }
}

#[test]
fn a_failure_at_any_storage_call_of_an_orc_or_avro_compaction_leaves_the_table_unchanged() {
    for format in ["orc", "avro"] {
        failures_leave_the_table_unchanged(format);
    }
}

fn failures_leave_the_table_unchanged(format: &str) {
    let base = format_table(true, format);
    let rows = read_rows(&base, "t");
    fail_each_storage_call(&base, "t", 20, &rows, |st| {
        compact_table(st, "t", &opts(3, true))
    });
}

#[test]
fn a_corrupt_orc_file_is_a_typed_error_naming_it_and_changes_nothing() {
    let base = orc_table(true);
    let orc: Vec<String> = base
        .paths()
        .into_iter()
        .filter(|p| p.ends_with(".orc"))
        .collect();
    let victim = &orc[0];
    let bytes = base.get(victim).unwrap().to_vec();
    let n = bytes.len();
    // The postscript's length byte, the postscript, the footer, a stripe's streams, and the
    // file cut short.
    let corruptions: Vec<Vec<u8>> = vec![
        {
            let mut b = bytes.clone();
            b[n - 1] = 0xff;
            b
        },
        {
            let mut b = bytes.clone();
            b[n - 3] ^= 0x5a;
            b
        },
        {
            let mut b = bytes.clone();
            let ps = usize::from(b[n - 1]);
            b[n - 2 - ps - 4] ^= 0xff;
            b
        },
        {
            let mut b = bytes.clone();
            for x in &mut b[3..40.min(n)] {
                *x = 0xee;
            }
            b
        },
        bytes[..n / 2].to_vec(),
    ];
    for (i, bad) in corruptions.into_iter().enumerate() {
        let st = clone_of(&base);
        st.put(victim, bad);
        let snapshot: BTreeSet<String> = st.paths().into_iter().collect();
        match compact_table(&st, "t", &opts(4, true)) {
            Err(e) => {
                assert!(
                    matches!(&e.kind, ErrorKind::CorruptInput { file: Some(f) } if victim.ends_with(f.as_str()) || f.ends_with(victim.rsplit('/').next().unwrap())),
                    "corruption {i}: {e}"
                );
                assert!(!e.message.contains('\n'), "{e}");
            }
            Ok(_) => panic!("corruption {i} was compacted"),
        }
        let now: BTreeSet<String> = st.paths().into_iter().collect();
        assert_eq!(now, snapshot, "corruption {i}: the table changed");
    }
}
