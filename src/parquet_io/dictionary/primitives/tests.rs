//! Unit tests of the primitive dictionary writer: its files read back as written, with the
//! statistics, column index and encodings of arrow-rs's writer.

use super::*;
use crate::parquet_io::writer::{FileSpec, ParquetFileWriter};
use arrow_array::{Date32Array, Float32Array, Float64Array, Int32Array, Int64Array, RecordBatch};
use arrow_schema::{Field, Schema};
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowSchemaConverter;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
use parquet::file::page_index::column_index::ColumnIndexMetaData;
use parquet::file::properties::WriterProperties;

/// Columns that exercise every rule: nulls (and pages of only nulls), NaN and signed
/// zeros, few distinct values (dictionary to the end), many (fallback to PLAIN), a
/// required column, dates.
fn batch(rows: usize) -> RecordBatch {
    let f64s: Float64Array = (0..rows)
        .map(|i| match i % 97 {
            0 => None,
            1 => Some(f64::NAN),
            2 => Some(-0.0),
            3 => Some(0.0),
            _ => Some(((i * 7919) % 5000) as f64 / 4.0 - 300.0),
        })
        .collect();
    let f32s: Float32Array = (0..rows)
        .map(|i| {
            if (20_000..26_000).contains(&i) {
                None
            } else if i % 5 == 0 {
                Some(f32::NAN)
            } else {
                Some((i % 13) as f32 - 6.5)
            }
        })
        .collect();
    let i64_unique: Int64Array = (0..rows)
        .map(|i| Some((i as i64).wrapping_mul(0x9E37_79B9) - 5))
        .collect();
    let i32s: Int32Array = (0..rows)
        .map(|i| (i % 11 != 0).then_some((i % 300) as i32 - 150))
        .collect();
    let dates: Date32Array = (0..rows).map(|i| Some(18_000 + (i % 40) as i32)).collect();
    // Unique doubles without nulls or NaN (fallback to PLAIN in whole slices), zeros of both
    // signs among them.
    let f64_unique: Float64Array = (0..rows)
        .map(|i| match i % 5000 {
            10 => Some(-0.0),
            11 => Some(0.0),
            _ => Some(i as f64 * 0.37 - 1000.0),
        })
        .collect();
    let i8s: arrow_array::Int8Array = (0..rows)
        .map(|i| (i % 9 != 4).then_some((i % 7) as i8 - 3))
        .collect();
    // STRING columns go to the string dictionary writer: few values with nulls, and
    // unique long values (multi-byte characters across the 64-byte statistics cut, some
    // ending in characters that cannot be moved up) that outgrow the dictionary.
    let words: arrow_array::StringArray = (0..rows)
        .map(|i| (i % 13 != 5).then(|| format!("w{:02}é", (i * 7) % 31)))
        .collect();
    let long: arrow_array::StringArray = (0..rows)
        .map(|i| {
            let tail = if i % 3 == 0 { "\u{7f}\u{7f}" } else { "☃" };
            Some(format!(
                "{:05}{}{tail}",
                (i * 7919) % rows,
                "ñ".repeat(30 + i % 5)
            ))
        })
        .collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("f64", DataType::Float64, true),
        Field::new("f32", DataType::Float32, true),
        Field::new("i64", DataType::Int64, false),
        Field::new("i32", DataType::Int32, true),
        Field::new("d", DataType::Date32, true),
        Field::new("i8", DataType::Int8, true),
        Field::new("f64u", DataType::Float64, false),
        Field::new("words", DataType::Utf8, true),
        Field::new("long", DataType::Utf8, false),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(f64s),
            Arc::new(f32s),
            Arc::new(i64_unique),
            Arc::new(i32s),
            Arc::new(dates),
            Arc::new(i8s),
            Arc::new(f64_unique),
            Arc::new(words),
            Arc::new(long),
        ],
    )
    .unwrap()
}

/// `ours`: this project's dictionary writers (primitive and STRING) where they apply.
fn write(batch: &RecordBatch, ours: bool, props: &WriterProperties) -> Bytes {
    let schema = batch.schema();
    let descr = ArrowSchemaConverter::new().convert(&schema).unwrap();
    let writers = super::super::DictWriters {
        strings: ours,
        primitives: ours,
    };
    let compression = props.compression(&parquet::schema::types::ColumnPath::from("x"));
    let cfg = Arc::new(DictConfig::new(compression, props, writers));
    let spec = FileSpec::new(schema, Arc::new(descr), props.clone(), cfg);
    let mut w = ParquetFileWriter::new(&spec, None).unwrap();
    let mut file = Vec::new();
    let mut out = |piece: &[u8]| -> Result<()> {
        file.extend_from_slice(piece);
        Ok(())
    };
    // Several batches, as the rewriters hand them over.
    for start in (0..batch.num_rows()).step_by(8192) {
        let len = 8192.min(batch.num_rows() - start);
        w.write(&batch.slice(start, len), &mut out).unwrap();
    }
    w.finish(&mut out).unwrap();
    Bytes::from(file)
}

fn read(file: &Bytes) -> (Vec<RecordBatch>, ParquetMetaData) {
    let b = ParquetRecordBatchReaderBuilder::try_new(file.clone()).unwrap();
    let meta = ParquetMetaDataReader::new()
        .with_page_index_policy(PageIndexPolicy::Required)
        .parse_and_finish(file)
        .unwrap();
    (b.build().unwrap().map(|r| r.unwrap()).collect(), meta)
}

/// Per page: min, max, null count and NaN count, as text.
fn pages(i: &ColumnIndexMetaData) -> Vec<String> {
    macro_rules! each {
        ($ci:expr) => {
            (0..$ci.num_pages() as usize)
                .map(|p| {
                    format!(
                        "{:?} {:?} {:?} {:?} {}",
                        $ci.min_value(p),
                        $ci.max_value(p),
                        $ci.null_count(p),
                        $ci.nan_count(p),
                        $ci.is_null_page(p)
                    )
                })
                .collect()
        };
    }
    match i {
        ColumnIndexMetaData::INT32(ci) => each!(ci),
        ColumnIndexMetaData::INT64(ci) => each!(ci),
        ColumnIndexMetaData::FLOAT(ci) => each!(ci),
        ColumnIndexMetaData::DOUBLE(ci) => each!(ci),
        ColumnIndexMetaData::BYTE_ARRAY(ci) => each!(ci),
        other => panic!("unexpected column index {other:?}"),
    }
}

/// Equal as written values (bit patterns, so NaN and -0.0 count).
fn same_values(a: &[RecordBatch], b: &[RecordBatch]) {
    let a = arrow_select::concat::concat_batches(&a[0].schema(), a).unwrap();
    let b = arrow_select::concat::concat_batches(&b[0].schema(), b).unwrap();
    assert_eq!(a.num_rows(), b.num_rows());
    for c in 0..a.num_columns() {
        assert_eq!(a.column(c).to_data(), b.column(c).to_data(), "column {c}");
    }
}

/// What the column index should say of a page holding `values`.
fn expected_page(values: &ArrayRef) -> String {
    fn of<T: DictPrimitive>(values: &[T], nulls: Option<&NullBuffer>) -> String {
        let (mut min, mut max, mut n, mut nan) = (None, None, 0i64, 0i64);
        for (i, &v) in values.iter().enumerate() {
            if nulls.is_some_and(|b| b.is_null(i)) {
                n += 1;
                continue;
            }
            nan += i64::from(v.is_nan());
            update_min(&mut min, v);
            update_max(&mut max, v);
        }
        format!(
            "{:?} {:?} {:?} {:?} {}",
            min.as_ref(),
            max.as_ref(),
            Some(n),
            T::FLOAT.then_some(nan),
            min.is_none()
        )
    }
    if values.data_type() == &DataType::Utf8 {
        // Byte order, cut to the column index's 64 bytes as parquet-rs cuts it.
        let strings = values.as_string::<i32>();
        let (mut min, mut max, mut n) = (None::<&[u8]>, None::<&[u8]>, 0i64);
        for v in strings.iter() {
            let Some(v) = v.map(str::as_bytes) else {
                n += 1;
                continue;
            };
            min = Some(min.map_or(v, |m| m.min(v)));
            max = Some(max.map_or(v, |m| m.max(v)));
        }
        let limit = parquet::file::properties::DEFAULT_COLUMN_INDEX_TRUNCATE_LENGTH;
        use crate::parquet_io::statistics_truncation::{lower_bound, upper_bound};
        let lo = min.map(|v| lower_bound(v, limit).0);
        let hi = max.map(|v| upper_bound(v, limit).0);
        return format!(
            "{:?} {:?} {:?} {:?} {}",
            lo.as_deref(),
            hi.as_deref(),
            Some(n),
            None::<i64>,
            lo.is_none()
        );
    }
    if values.data_type() == &DataType::Int8 {
        return expected_page(&arrow_cast::cast(values, &DataType::Int32).unwrap());
    }
    let nulls = values.nulls();
    match values.data_type() {
        DataType::Int32 => of(values.as_primitive::<Int32Type>().values(), nulls),
        DataType::Date32 => of(values.as_primitive::<Date32Type>().values(), nulls),
        DataType::Int64 => of(values.as_primitive::<Int64Type>().values(), nulls),
        DataType::Float32 => of(values.as_primitive::<Float32Type>().values(), nulls),
        DataType::Float64 => of(values.as_primitive::<Float64Type>().values(), nulls),
        other => panic!("{other}"),
    }
}

fn check_against_arrow(props: WriterProperties, rows: usize) {
    let batch = batch(rows);
    let ours = write(&batch, true, &props);
    let theirs = write(&batch, false, &props);
    let (our_rows, our_meta) = read(&ours);
    let (their_rows, their_meta) = read(&theirs);
    same_values(&our_rows, &their_rows);
    same_values(&our_rows, std::slice::from_ref(&batch));
    assert_eq!(our_meta.num_row_groups(), their_meta.num_row_groups());
    for (rg, (o, t)) in our_meta
        .row_groups()
        .iter()
        .zip(their_meta.row_groups())
        .enumerate()
    {
        for (c, (oc, tc)) in o.columns().iter().zip(t.columns()).enumerate() {
            let what = format!("row group {rg}, column {c}");
            let (os, ts) = (oc.statistics().unwrap(), tc.statistics().unwrap());
            assert_eq!(os.min_bytes_opt(), ts.min_bytes_opt(), "{what}: min");
            assert_eq!(os.max_bytes_opt(), ts.max_bytes_opt(), "{what}: max");
            assert_eq!(os.null_count_opt(), ts.null_count_opt(), "{what}: nulls");
            assert_eq!(os.nan_count_opt(), ts.nan_count_opt(), "{what}: NaNs");
            assert_eq!(os.min_is_exact(), ts.min_is_exact(), "{what}: exact min");
            assert_eq!(os.max_is_exact(), ts.max_is_exact(), "{what}: exact max");
            let encodings = |m: &parquet::file::metadata::ColumnChunkMetaData| {
                (
                    format!("{:?}", m.page_encoding_stats_mask()),
                    m.encodings().collect::<Vec<_>>(),
                )
            };
            assert_eq!(encodings(oc), encodings(tc), "{what}: page encodings");
            // The index describes every page exactly; where the pages are cut as
            // arrow-rs cuts them (its mini-batches differ in places), it is the same.
            let (oi, ti) = (
                our_meta.page_index_for_row_group(rg),
                their_meta.page_index_for_row_group(rg),
            );
            let rows = |x: &parquet::file::metadata::page_index::RowGroupPageIndex| {
                x.offset_index(c)
                    .unwrap()
                    .page_locations()
                    .iter()
                    .map(|l| l.first_row_index as usize)
                    .collect::<Vec<_>>()
            };
            let ours_pages = pages(oi.column_index(c).unwrap());
            let base: usize = (0..rg)
                .map(|r| our_meta.row_group(r).num_rows() as usize)
                .sum();
            let n = our_meta.row_group(rg).num_rows() as usize;
            let starts = rows(&oi);
            for (p, &start) in starts.iter().enumerate() {
                let end = starts.get(p + 1).copied().unwrap_or(n);
                let slice = batch.column(c).slice(base + start, end - start);
                assert_eq!(ours_pages[p], expected_page(&slice), "{what}: page {p}");
            }
            if starts == rows(&ti) {
                assert_eq!(
                    ours_pages,
                    pages(ti.column_index(c).unwrap()),
                    "{what}: column index"
                );
            }
        }
    }
}

#[test]
fn writes_what_arrow_rs_writes() {
    check_against_arrow(WriterProperties::builder().build(), 60_000);
}

/// `parquet.enable.dictionary=false`: PLAIN throughout, as arrow-rs writes it.
#[test]
fn without_dictionary_matches_too() {
    let props = WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_data_page_size_limit(4096)
        .build();
    check_against_arrow(props, 30_000);
}

#[test]
fn small_limits_and_fallback_match_too() {
    let props = WriterProperties::builder()
        .set_dictionary_page_size_limit(4096)
        .set_data_page_size_limit(2048)
        .set_data_page_row_count_limit(3000)
        .set_max_row_group_row_count(Some(25_000))
        .build();
    check_against_arrow(props, 60_000);
}
