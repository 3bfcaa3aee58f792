//! The demo tables: written by our own writer, planned, compacted, read back unchanged.

use crate::table_support;

use paimon_compact::plan::PlanContext;
use paimon_compact::storage::MemoryStorage;
use paimon_compact::table::demo::{bucket_of, murmur_hash, write_demo, DEMO_TABLES};
use paimon_compact::table::{compact_table, plan_table, CompactOptions, PlanRequest};
use table_support::read_rows;

#[test]
fn demo_tables_compact_and_read_back() {
    let st = MemoryStorage::new();
    let tables = write_demo(&st, "warehouse", 1_750_000_000_000, [1; 16]).unwrap();
    assert_eq!(tables.len(), DEMO_TABLES.len());
    let ctx = PlanContext::at(1_750_000_100_000, 3);
    for t in &tables {
        let rows = read_rows(&st, t);
        assert!(!rows.is_empty(), "{t}");
        let plan = plan_table(
            &st,
            t,
            &PlanRequest {
                context: ctx,
                ..PlanRequest::default()
            },
        )
        .unwrap();
        assert!(plan.summary.files >= 6, "{t}: {plan:#?}");
        let report = compact_table(&st, t, &CompactOptions::new(ctx, [2; 16])).unwrap();
        // Every demo table compacts, the primary-key one (overlapping keys, updates and
        // deletes) through the merge rewriter.
        assert!(report.skipped.is_empty(), "{t}: {report:#?}");
        assert!(
            report.totals.files_removed > report.totals.files_added,
            "{t}: {report:#?}"
        );
        assert_eq!(report.snapshot_after, Some(7), "{t}");
        if t.ends_with("orders") {
            assert!(report.totals.rewrites > 0, "{t}: {report:#?}");
        }
        assert_eq!(read_rows(&st, t), rows, "{t}");
    }
}

#[test]
fn bucket_hash_matches_paimon() {
    // Expected values computed with pypaimon 2.1.0's `_hash_bytes_by_words` and
    // `_bucket_from_hash` (the same algorithm as Java's MurmurHashUtils and KeyAndBucketExtractor).
    use paimon_compact::table::binary_row::{BinaryRow, Datum};
    use paimon_compact::table::schema::DataType;
    let t = |s: &str| DataType::parse(s, "t").unwrap();
    let row = BinaryRow::encode(&[Datum::BigInt(57)], &[t("BIGINT")]).unwrap();
    assert_eq!(murmur_hash(&row.as_bytes()[4..]), 1_428_573_506);
    assert_eq!(bucket_of(&row, 4), 2);
    let row = BinaryRow::encode(&[Datum::String("abc".into())], &[t("STRING")]).unwrap();
    assert_eq!(bucket_of(&row, 7), 4);
}
