//! Schema evolution of whole tables with ARRAY, MAP, MULTISET and ROW columns, in both
//! rewriters (append rewrite and primary-key merge):
//!
//! * a schema version that only changed options (and comments) is not evolution: a table
//!   whose older files were written under such a version compacts to exactly the bytes of the
//!   same table that never had the change;
//! * real evolution (ROW fields added, renamed, widened, dropped and reordered, the same inside
//!   ARRAY<ROW> and MAP values, top-level columns dropped, moved and widened) compacts every
//!   file into the latest schema and reads back right.
//!
//! The tables are written here, file by file, as Paimon's Java writer lays them out (nested
//! Parquet groups named `element`, `key_value`, `key`, `value`; Parquet field ids), since the
//! demo writer only writes scalar columns.

use crate::table_support;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, Int32Array, Int64Array, Int8Array, ListArray, MapArray, RecordBatch,
    StringArray, StructArray,
};
use arrow_buffer::OffsetBuffer;
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use paimon_compact::plan::PlanContext;
use paimon_compact::storage::MemoryStorage;
use paimon_compact::table::binary_row::{BinaryRow, Datum};
use paimon_compact::table::commit::{self, CommitDelta, CommitSettings, WrittenFiles};
use paimon_compact::table::ids::IdGen;
use paimon_compact::table::manifest::{DataFileMeta, FileKind, ManifestEntry, SimpleStats};
use paimon_compact::table::path::TablePaths;
use paimon_compact::table::scan::scan;
use paimon_compact::table::schema::{DataType, TableSchema, TypeRoot};
use paimon_compact::table::snapshot::CommitKind;
use paimon_compact::table::{compact_table, plan_table, CompactOptions, PlanRequest};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use table_support::{clone_of, read_rows};

const NOW: i64 = 1_750_000_000_000;

/// The first version: every kind of nested column.
const V0: &str = r#"[
  {"id":0,"name":"id","type":"BIGINT NOT NULL"},
  {"id":1,"name":"r","type":{"type":"ROW","fields":[
     {"id":2,"name":"a","type":"INT"},
     {"id":3,"name":"b","type":"STRING"}]}},
  {"id":4,"name":"gone","type":"STRING"},
  {"id":5,"name":"tags","type":{"type":"ARRAY","element":{"type":"ROW","fields":[
     {"id":6,"name":"x","type":"INT"},
     {"id":7,"name":"y","type":"STRING"}]}}},
  {"id":8,"name":"m","type":{"type":"MAP","key":"STRING NOT NULL","value":{"type":"ROW",
     "fields":[{"id":9,"name":"p","type":"INT"}]}}},
  {"id":10,"name":"n","type":"INT"},
  {"id":11,"name":"ms","type":{"type":"MULTISET","element":"STRING"}}]"#;

/// The same fields with a nested field's comment added: only descriptions differ.
const V0_COMMENTED: &str = r#"[
  {"id":0,"name":"id","type":"BIGINT NOT NULL","description":"the key"},
  {"id":1,"name":"r","type":{"type":"ROW","fields":[
     {"id":2,"name":"a","type":"INT","description":"now documented"},
     {"id":3,"name":"b","type":"STRING"}]}},
  {"id":4,"name":"gone","type":"STRING"},
  {"id":5,"name":"tags","type":{"type":"ARRAY","element":{"type":"ROW","fields":[
     {"id":6,"name":"x","type":"INT"},
     {"id":7,"name":"y","type":"STRING"}]}}},
  {"id":8,"name":"m","type":{"type":"MAP","key":"STRING NOT NULL","value":{"type":"ROW",
     "fields":[{"id":9,"name":"p","type":"INT"}]}}},
  {"id":10,"name":"n","type":"INT"},
  {"id":11,"name":"ms","type":{"type":"MULTISET","element":"STRING"}}]"#;

/// Real evolution of [`V0`]: `gone` dropped; `n` moved up and widened; in `r` a field renamed
/// (`b` to `bee`), one widened (`a`), one added (`c`), all reordered; in the elements of
/// `tags` one field dropped (`y`) and one added (`z`); the map values' field renamed.
const V2: &str = r#"[
  {"id":0,"name":"id","type":"BIGINT NOT NULL"},
  {"id":10,"name":"n","type":"BIGINT"},
  {"id":1,"name":"r","type":{"type":"ROW","fields":[
     {"id":3,"name":"bee","type":"STRING"},
     {"id":2,"name":"a","type":"BIGINT"},
     {"id":12,"name":"c","type":"STRING"}]}},
  {"id":5,"name":"tags","type":{"type":"ARRAY","element":{"type":"ROW","fields":[
     {"id":6,"name":"x","type":"INT"},
     {"id":13,"name":"z","type":"BIGINT"}]}}},
  {"id":8,"name":"m","type":{"type":"MAP","key":"STRING NOT NULL","value":{"type":"ROW",
     "fields":[{"id":9,"name":"q","type":"INT"}]}}},
  {"id":11,"name":"ms","type":{"type":"MULTISET","element":"STRING"}}]"#;

/// A schema version: `fields` (JSON) with `options`.
fn version(id: i64, fields: &str, pk: bool, options: &[(&str, &str)]) -> TableSchema {
    let keys = if pk { r#"["id"]"# } else { "[]" };
    let opts: Vec<String> = options
        .iter()
        .map(|(k, v)| format!("{k:?}:{v:?}"))
        .collect();
    let json = format!(
        r#"{{"version":3,"id":{id},"fields":{fields},"highestFieldId":13,
        "partitionKeys":[],"primaryKeys":{keys},"options":{{{}}},"comment":null,
        "timeMillis":{NOW}}}"#,
        opts.join(",")
    );
    TableSchema::from_json(json.as_bytes(), "test").unwrap()
}

fn base_options(pk: bool) -> Vec<(&'static str, &'static str)> {
    if pk {
        vec![("bucket", "1")]
    } else {
        vec![("bucket", "1"), ("bucket-key", "id")]
    }
}

fn put_version(st: &MemoryStorage, schema: &TableSchema) {
    st.put(&TablePaths::new("t").schema(schema.id), schema.to_json());
}

/// The value a leaf of field `id` holds in the row (or element) seeded `seed`.
fn leaf(t: &DataType, id: i32, seeds: &[i64]) -> ArrayRef {
    match &t.root {
        TypeRoot::Int => Arc::new(Int32Array::from_iter_values(
            seeds.iter().map(|s| *s as i32),
        )),
        TypeRoot::BigInt => Arc::new(Int64Array::from_iter_values(seeds.iter().copied())),
        TypeRoot::VarChar { .. } => Arc::new(StringArray::from_iter_values(
            seeds.iter().map(|s| format!("f{id}-{s}")),
        )),
        other => panic!("no test values for {other:?}"),
    }
}

/// Adds the Parquet field id to a field, as Paimon's Java writer does at every depth.
fn with_id(f: Field, id: i32) -> Field {
    f.with_metadata(HashMap::from([(
        "PARQUET:field_id".to_string(),
        id.to_string(),
    )]))
}

/// The Arrow field of a Paimon type as the Java writer writes it (field ids included).
fn arrow_field(name: &str, t: &DataType, id: i32) -> Field {
    let data_type = match &t.root {
        TypeRoot::Row { fields } => ArrowType::Struct(
            fields
                .iter()
                .map(|f| arrow_field(&f.name, &f.data_type, f.id))
                .collect(),
        ),
        TypeRoot::Array { element } => {
            ArrowType::List(Arc::new(arrow_field("element", element, 1000 + id)))
        }
        TypeRoot::Map { .. } | TypeRoot::Multiset { .. } => {
            let (k, v) = map_parts(t);
            let entries = ArrowType::Struct(
                vec![
                    arrow_field("key", &k.not_null(), 2000 + id),
                    arrow_field("value", &v, 3000 + id),
                ]
                .into(),
            );
            ArrowType::Map(Arc::new(Field::new("key_value", entries, false)), false)
        }
        _ => t.to_arrow().unwrap(),
    };
    with_id(Field::new(name, data_type, t.nullable), id)
}

/// A MAP's (or a MULTISET's: element to INT count) key and value types.
fn map_parts(t: &DataType) -> (DataType, DataType) {
    match &t.root {
        TypeRoot::Map { key, value } => ((**key).clone(), (**value).clone()),
        TypeRoot::Multiset { element } => {
            ((**element).clone(), DataType::new(TypeRoot::Int).not_null())
        }
        _ => unreachable!(),
    }
}

/// The values of a column of type `t` (field `id`, Arrow field `field`) for rows `seeds`:
/// every ROW field by its id, two elements per ARRAY, one entry per MAP. Fields whose id is
/// in `absent` are null (added after the rows were written).
fn column(t: &DataType, id: i32, field: &Field, seeds: &[i64], absent: &[i32]) -> ArrayRef {
    if absent.contains(&id) {
        return arrow_array::new_null_array(field.data_type(), seeds.len());
    }
    match (&t.root, field.data_type()) {
        (TypeRoot::Row { fields }, ArrowType::Struct(arrow_fields)) => {
            let columns = fields
                .iter()
                .zip(arrow_fields)
                .map(|(f, af)| column(&f.data_type, f.id, af, seeds, absent))
                .collect();
            Arc::new(StructArray::new(arrow_fields.clone(), columns, None))
        }
        (TypeRoot::Array { element }, ArrowType::List(item)) => {
            let inner: Vec<i64> = seeds.iter().flat_map(|s| [s * 10, s * 10 + 1]).collect();
            let values = column(element, id, item, &inner, absent);
            let offsets = OffsetBuffer::from_lengths(seeds.iter().map(|_| 2));
            Arc::new(ListArray::new(item.clone(), offsets, values, None))
        }
        (TypeRoot::Map { .. } | TypeRoot::Multiset { .. }, ArrowType::Map(entries, _)) => {
            let (k, v) = map_parts(t);
            let ArrowType::Struct(kv) = entries.data_type() else {
                unreachable!()
            };
            let keys = column(&k, id, &kv[0], seeds, absent);
            let values = if matches!(t.root, TypeRoot::Multiset { .. }) {
                Arc::new(Int32Array::from_iter_values(seeds.iter().map(|_| 2))) as ArrayRef
            } else {
                column(&v, id, &kv[1], seeds, absent)
            };
            let entries_array = StructArray::new(kv.clone(), vec![keys, values], None);
            let offsets = OffsetBuffer::from_lengths(seeds.iter().map(|_| 1));
            Arc::new(MapArray::new(
                entries.clone(),
                offsets,
                entries_array,
                None,
                false,
            ))
        }
        _ => leaf(t, id, seeds),
    }
}

/// The rows `seeds` of `schema` as a data file's batch (`_KEY_id`, `_SEQUENCE_NUMBER`,
/// `_VALUE_KIND` first for a primary-key table).
fn batch(schema: &TableSchema, seeds: &[i64], first_seq: i64, absent: &[i32]) -> RecordBatch {
    let mut fields: Vec<Field> = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    if !schema.primary_keys.is_empty() {
        fields.push(with_id(
            Field::new("_KEY_id", ArrowType::Int64, false),
            i32::MAX / 2,
        ));
        columns.push(Arc::new(Int64Array::from(seeds.to_vec())));
        fields.push(with_id(
            Field::new("_SEQUENCE_NUMBER", ArrowType::Int64, false),
            i32::MAX - 1,
        ));
        columns.push(Arc::new(Int64Array::from_iter_values(
            (0..seeds.len() as i64).map(|i| first_seq + i),
        )));
        fields.push(with_id(
            Field::new("_VALUE_KIND", ArrowType::Int8, false),
            i32::MAX - 2,
        ));
        columns.push(Arc::new(Int8Array::from(vec![0i8; seeds.len()])));
    }
    for f in &schema.fields {
        let af = arrow_field(&f.name, &f.data_type, f.id);
        columns.push(column(&f.data_type, f.id, &af, seeds, absent));
        fields.push(af);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

/// Writes rows `seeds` (ascending) as one file of bucket 0 under the table's latest schema
/// and commits it.
fn commit_rows(st: &MemoryStorage, seeds: &[i64], file_seed: u8) {
    let state = scan(st, "t").unwrap();
    let table = &state.table;
    let pk = !table.schema.primary_keys.is_empty();
    let first_seq = state
        .buckets
        .values()
        .flat_map(|b| &b.files)
        .map(|f| f.entry.file.max_sequence_number + 1)
        .max()
        .unwrap_or(0);
    let b = batch(&table.schema, seeds, first_seq, &[]);
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, b.schema(), Some(props)).unwrap();
    w.write(&b).unwrap();
    w.close().unwrap();
    let mut ids = IdGen::new([file_seed; 16]);
    let name = format!("data-{}-0.parquet", ids.next_uuid());
    let path = table.paths.data_file("", 0, &name, "test").unwrap();
    st.put(&path, buf.clone());
    let key = |s: i64| BinaryRow::encode(&[Datum::BigInt(s)], &table.key_types).unwrap();
    let (min_key, max_key, key_stats) = if pk {
        let (lo, hi) = (key(seeds[0]), key(seeds[seeds.len() - 1]));
        let stats = SimpleStats {
            min_values: lo.clone(),
            max_values: hi.clone(),
            null_counts: Some(vec![Some(0)]),
        };
        (lo, hi, stats)
    } else {
        (BinaryRow::empty(), BinaryRow::empty(), SimpleStats::empty())
    };
    let entry = ManifestEntry {
        kind: FileKind::Add,
        partition: BinaryRow::encode(&[], &[]).unwrap(),
        bucket: 0,
        total_buckets: 1,
        file: DataFileMeta {
            file_name: name,
            file_size: buf.len() as i64,
            row_count: seeds.len() as i64,
            min_key,
            max_key,
            key_stats,
            value_stats: SimpleStats::empty(),
            min_sequence_number: first_seq,
            max_sequence_number: first_seq + seeds.len() as i64 - 1,
            schema_id: table.schema.id,
            level: 0,
            extra_files: Vec::new(),
            creation_time: Some(NOW),
            delete_row_count: Some(0),
            embedded_file_index: None,
            file_source: Some(0),
            value_stats_cols: Some(Vec::new()),
            external_path: None,
            first_row_id: None,
            write_cols: None,
            write_cols_sequences: None,
        },
    };
    let delta = CommitDelta {
        entries: vec![entry],
        ..CommitDelta::default()
    };
    let settings = CommitSettings {
        kind: CommitKind::Append,
        commit_user: "schema-evolution-test".into(),
        now_ms: NOW,
        max_retries: 0,
        jitter_seed: 0,
        merge_manifests: false,
        commit_identifier: i64::MAX,
    };
    let mut written = WrittenFiles::default();
    commit::commit(
        st,
        table,
        state.snapshot_id(),
        &delta,
        &settings,
        &mut ids,
        &mut written,
    )
    .unwrap();
}

fn ids(range: std::ops::Range<i64>) -> Vec<i64> {
    range.collect()
}

/// Four commits; with `option_change`, the last two are written under a second version that
/// only changed options and comments.
fn nested_table(pk: bool, option_change: bool) -> MemoryStorage {
    let st = MemoryStorage::new();
    let options = base_options(pk);
    put_version(&st, &version(0, V0, pk, &options));
    commit_rows(&st, &ids(0..8), 1);
    commit_rows(&st, &ids(4..12), 2);
    if option_change {
        let mut more = options.clone();
        more.push(("snapshot.num-retained.min", "20"));
        more.push(("test.owner", "someone"));
        let mut v1 = version(1, V0_COMMENTED, pk, &more);
        v1.comment = Some("a comment, too".into());
        put_version(&st, &v1);
    }
    commit_rows(&st, &ids(10..20), 3);
    commit_rows(&st, &ids(15..25), 4);
    st
}

fn full(seed: u8) -> CompactOptions<'static> {
    let mut o = CompactOptions::new(PlanContext::at(NOW + 1000, 3), [seed; 16]);
    o.full = true;
    o
}

/// The data files of the latest snapshot: name, schema id and bytes.
fn data_files(st: &MemoryStorage) -> BTreeMap<String, (i64, Vec<u8>)> {
    let state = scan(st, "t").unwrap();
    let mut out = BTreeMap::new();
    for b in state.buckets.values() {
        for l in &b.files {
            let path = state
                .table
                .paths
                .live_data_file(&b.partition_path, b.bucket, &l.entry.file, "test")
                .unwrap();
            let bytes = st.get(&path).unwrap().to_vec();
            out.insert(
                l.entry.file.file_name.clone(),
                (l.entry.file.schema_id, bytes),
            );
        }
    }
    out
}

fn option_only_change_is_not_evolution(pk: bool) {
    let plain = nested_table(pk, false);
    let altered = nested_table(pk, true);
    // The planner does not block the bucket for the older files.
    let plan = plan_table(&altered, "t", &PlanRequest::default()).unwrap();
    assert!(
        plan.buckets.iter().all(|b| b.blocked.is_none()),
        "{:?}",
        plan.buckets
    );
    let rows = read_rows(&plain, "t");
    assert_eq!(read_rows(&altered, "t"), rows);
    let mut reports = Vec::new();
    for st in [&plain, &altered] {
        let report = compact_table(st, "t", &full(7)).unwrap();
        assert!(report.skipped.is_empty(), "{:?}", report.skipped);
        assert!(report.snapshot_after.is_some());
        assert_eq!(report.totals.rewrites, 1, "{report:?}");
        reports.push(report);
    }
    assert_eq!(
        reports[0].totals.fast_copy_files,
        reports[1].totals.fast_copy_files
    );
    let (a, b) = (data_files(&plain), data_files(&altered));
    assert_eq!(a.len(), 1, "{:?}", a.keys());
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "the same outputs"
    );
    for ((name, (id_a, bytes_a)), (_, (id_b, bytes_b))) in a.iter().zip(&b) {
        assert_eq!(bytes_a, bytes_b, "{name}: the same bytes");
        assert_eq!(
            (*id_a, *id_b),
            (0, 1),
            "{name}: each table's latest version"
        );
    }
    assert_eq!(read_rows(&altered, "t"), rows);
}

#[test]
fn option_only_version_leaves_append_files_as_they_are() {
    option_only_change_is_not_evolution(false);
}

#[test]
fn option_only_version_leaves_primary_key_files_as_they_are() {
    option_only_change_is_not_evolution(true);
}

/// A cell as [`read_rows`] shows it.
fn cell(a: &dyn Array, row: usize) -> String {
    if a.is_null(row) {
        return "null".into();
    }
    let f = ArrayFormatter::try_new(a, &FormatOptions::default()).unwrap();
    f.value(row).to_string()
}

/// The rows of `b` from column `first` on, as [`read_rows`] shows them.
fn rows_of(b: &RecordBatch, first: usize) -> Vec<String> {
    (0..b.num_rows())
        .map(|r| {
            (first..b.num_columns())
                .map(|c| cell(b.column(c).as_ref(), r))
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

/// Files of [`V0`], of a version that only changed options, and (with `latest_files`) of
/// [`V2`]: every file compacts into V2, nested fields followed by id. Without files of V2 the
/// outputs take V2's Arrow form from the schema alone.
fn nested_evolution(pk: bool, latest_files: bool) {
    let st = MemoryStorage::new();
    let options = base_options(pk);
    put_version(&st, &version(0, V0, pk, &options));
    commit_rows(&st, &ids(0..4), 1);
    commit_rows(&st, &ids(4..6), 4);
    let mut more = options.clone();
    more.push(("test.owner", "someone"));
    put_version(&st, &version(1, V0, pk, &more));
    commit_rows(&st, &ids(6..10), 2);
    let v2 = version(2, V2, pk, &more);
    put_version(&st, &v2);
    if latest_files {
        // Under V2, keys 8.. are written again (a primary-key table keeps these).
        commit_rows(&st, &ids(8..14), 3);
    }

    let report = compact_table(&st, "t", &full(9)).unwrap();
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert!(report.snapshot_after.is_some());
    let files = data_files(&st);
    assert!(
        files.values().all(|(id, _)| *id == 2),
        "all of the latest version"
    );

    // Rows 0..10 come from files of V0 (and of its option-only twin): the fields added since
    // (`r.c`, `tags[].z`) are null, the rest is followed by field id.
    let mut rows = Vec::new();
    let n0 = if pk && latest_files { 8 } else { 10 };
    let old = batch(&v2, &ids(0..n0), 0, &[12, 13]);
    rows.extend(rows_of(&old, if pk { 3 } else { 0 }));
    if latest_files {
        let new = batch(&v2, &ids(8..14), 0, &[]);
        rows.extend(rows_of(&new, if pk { 3 } else { 0 }));
    }
    rows.sort();
    assert_eq!(read_rows(&st, "t"), rows);
    // Spot checks, independent of the generator.
    let joined = rows.join("\n");
    assert!(
        joined.contains(
            "0|0|{bee: f3-0, a: 0, c: }|[{x: 0, z: }, {x: 1, z: }]|{f8-0: {q: 0}}|{f11-0: 2}"
        ),
        "{joined}"
    );
    let latest_row = concat!(
        "13|13|{bee: f3-13, a: 13, c: f12-13}|[{x: 130, z: 130}, {x: 131, z: 131}]|",
        "{f8-13: {q: 13}}|{f11-13: 2}"
    );
    assert_eq!(joined.contains(latest_row), latest_files, "{joined}");

    // Compacting again reads the outputs (written in the latest version) as they are.
    let again = compact_table(&st, "t", &full(10)).unwrap();
    assert!(again.skipped.is_empty(), "{:?}", again.skipped);
    assert_eq!(read_rows(&st, "t"), rows);
}

#[test]
fn nested_evolution_in_an_append_table() {
    nested_evolution(false, true);
    nested_evolution(false, false);
}

#[test]
fn nested_evolution_in_a_primary_key_table() {
    nested_evolution(true, true);
    nested_evolution(true, false);
}

/// A column of an impossible type change stays a typed refusal (nothing written).
#[test]
fn an_impossible_nested_change_is_refused() {
    let st = MemoryStorage::new();
    let options = base_options(false);
    put_version(&st, &version(0, V0, false, &options));
    commit_rows(&st, &ids(0..4), 1);
    commit_rows(&st, &ids(4..8), 2);
    // `r.b` becomes a ROW: no cast reaches it.
    let broken = V0.replace(
        r#"{"id":3,"name":"b","type":"STRING"}"#,
        r#"{"id":3,"name":"b","type":{"type":"ROW","fields":[{"id":14,"name":"deep","type":"INT"}]}}"#,
    );
    put_version(&st, &version(1, &broken, false, &options));
    commit_rows(&st, &ids(8..12), 3);
    commit_rows(&st, &ids(12..16), 4);
    let before = clone_of(&st);
    let e = compact_table(&st, "t", &full(11)).unwrap_err();
    assert!(
        matches!(e.kind, paimon_compact::ErrorKind::Unsupported),
        "{e}"
    );
    assert!(e.message.contains("cannot become"), "{e}");
    assert_eq!(st.paths(), before.paths(), "nothing left behind");
}
