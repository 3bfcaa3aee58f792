//! Dictionary reads of the merge (`paimon-compact.merge.read-dictionaries`): a dictionary-encoded
//! STRING value column is merged as dictionary arrays, and the output is byte for byte the file
//! the plain path writes, whichever files have dictionary pages, through schema evolution
//! too; engines that compute values, and invalid option values, are handled.
#![cfg(feature = "rewrite")]

use crate::merge_support;

use merge_support::*;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use paimon_compact::rewrite::merge::{
    rewrite_merge_tree, MergeTreeRewrite, MergeTreeRewriteResult, RowKind, READ_DICTIONARIES_OPTION,
};
use paimon_compact::rewrite::RewriteInput;
use paimon_compact::storage::MemoryStorage;
use paimon_compact::ErrorKind;

const COLOURS: [&str; 5] = ["red", "green", "blue", "cyan", "magenta"];

/// A run of `n` records from `first` on, every `step`-th key, sequence numbers from `seq`:
/// `v` from five colours (and nulls), some deletes.
fn run_rows(first: i64, n: i64, step: i64, seq: i64) -> Vec<Rec> {
    (0..n)
        .map(|i| {
            let key = first + i * step;
            let s = seq + i;
            Rec {
                key,
                seq: s,
                kind: if s % 11 == 0 {
                    RowKind::Delete
                } else if s % 3 == 0 {
                    RowKind::UpdateAfter
                } else {
                    RowKind::Insert
                },
                v: (s % 7 != 0).then(|| COLOURS[(s as usize * 31 + key as usize) % 5].to_string()),
                n: Some(s),
                b: Some(s % 2 == 0),
            }
        })
        .collect()
}

/// Writes `rows` with or without dictionary encoding of `v` (without: every page PLAIN).
fn put(st: &MemoryStorage, name: &str, rows: &[Rec], dictionary: bool) -> RewriteInput {
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_max_row_group_row_count(Some(150))
        .set_data_page_row_count_limit(40)
        .set_write_batch_size(40)
        .set_column_dictionary_enabled(ColumnPath::from("v"), dictionary)
        .build();
    let mut bytes = Vec::new();
    let mut w = ArrowWriter::try_new(&mut bytes, schema(), Some(props)).unwrap();
    w.write(&batch(rows)).unwrap();
    w.close().unwrap();
    let keys = (key_of(rows[0].key), key_of(rows[rows.len() - 1].key));
    stored_input(st, name, 0, bytes, keys, rows.iter().map(|r| r.seq))
}

/// Three overlapping runs; `plain[i]` writes run `i` without a dictionary for `v`.
fn inputs(st: &MemoryStorage, plain: [bool; 3]) -> Vec<RewriteInput> {
    vec![
        put(st, "data-0.parquet", &run_rows(0, 400, 1, 1), !plain[0]),
        put(st, "data-1.parquet", &run_rows(1, 300, 2, 1000), !plain[1]),
        put(st, "data-2.parquet", &run_rows(5, 200, 3, 2000), !plain[2]),
    ]
}

fn request(inputs: Vec<RewriteInput>, schema: bool) -> MergeTreeRewrite {
    full_merge_request(
        inputs.into_iter().map(|i| vec![i]).collect(),
        schema.then(merge_support::schema),
    )
}

/// Which inputs are mapped by schema evolution.
#[derive(Clone, Copy, PartialEq)]
enum Evolve {
    None,
    AllButFirst,
    All,
}

/// Merges `plain`-described inputs with `pairs` as options (plus `target-file-size`, small
/// enough to roll), and returns the result and every output file's bytes.
fn merge(
    engine: Engine,
    plain: [bool; 3],
    evolve: Evolve,
    pairs: &[(&str, &str)],
) -> (MergeTreeRewriteResult, Vec<Vec<u8>>) {
    let st = MemoryStorage::new();
    let mut ins = inputs(&st, plain);
    if evolve != Evolve::None {
        // Files mapped by name onto the table's schema, as the table layer does for files of
        // an older schema version.
        use paimon_compact::rewrite::schema_evolution::ColumnSource;
        let names: Vec<Option<ColumnSource>> = schema()
            .fields()
            .iter()
            .map(|f| Some(ColumnSource::named(f.name())))
            .collect();
        let skip = usize::from(evolve == Evolve::AllButFirst);
        for i in ins.iter_mut().skip(skip) {
            i.columns = Some(names.clone());
        }
    }
    let mut all = vec![("target-file-size", "8kb")];
    all.extend_from_slice(pairs);
    let o = config(engine).options(&all);
    let result = rewrite_merge_tree(&st, &request(ins, evolve != Evolve::None), &o).unwrap();
    let bytes = result
        .outputs
        .iter()
        .map(|f| st.get(&f.path).unwrap().as_ref().clone())
        .collect();
    (result, bytes)
}

/// The engine with `ignore-delete` where it would refuse the inputs' deletes.
fn config(engine: Engine) -> Config {
    Config {
        engine,
        ignore_delete: engine != Engine::Deduplicate,
        remove_record_on_delete: false,
        sequence_field: false,
        seq_descending: false,
    }
}

fn expected(engine: Engine) -> Vec<Rec> {
    let all: Vec<Rec> = [
        run_rows(0, 400, 1, 1),
        run_rows(1, 300, 2, 1000),
        run_rows(5, 200, 3, 2000),
    ]
    .concat();
    let cfg = config(engine);
    by_key(&cfg, &all)
        .values()
        .filter_map(|recs| plain_model(&cfg, recs))
        .filter(|r| !r.kind.is_retract())
        .collect()
}

fn rows_of(result: &MergeTreeRewriteResult, bytes: &[Vec<u8>]) -> Vec<Rec> {
    let st = MemoryStorage::new();
    let mut rows = Vec::new();
    for (f, b) in result.outputs.iter().zip(bytes) {
        st.put(&f.path, b.clone());
        rows.extend(read_rows(&st, &f.path));
    }
    rows
}

#[test]
fn dictionary_encoded_strings_merge_as_dictionaries_into_the_same_files() {
    for engine in [Engine::Deduplicate, Engine::FirstRow] {
        let (on, on_bytes) = merge(engine, [false; 3], Evolve::None, &[]);
        let (off, off_bytes) = merge(
            engine,
            [false; 3],
            Evolve::None,
            &[(READ_DICTIONARIES_OPTION, "false")],
        );
        assert_eq!(on.metrics.dictionary_columns, 1, "{engine:?}");
        assert_eq!(off.metrics.dictionary_columns, 0, "{engine:?}");
        assert!(on_bytes.len() > 1, "{engine:?}: the output rolls");
        assert_eq!(
            on_bytes, off_bytes,
            "{engine:?}: the same files byte for byte"
        );
        assert_eq!(rows_of(&on, &on_bytes), expected(engine), "{engine:?}");
        // The files' metadata (keys, sequence ranges, counts, statistics) is the same too.
        let metas = |r: &MergeTreeRewriteResult| {
            r.outputs
                .iter()
                .map(|f| {
                    (
                        f.meta.row_count,
                        f.meta.file_size,
                        f.min_key.clone(),
                        f.max_key.clone(),
                        format!("{:?}", f.column_stats),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(metas(&on), metas(&off), "{engine:?}");
    }
}

#[test]
fn files_without_dictionary_pages_are_converted_or_decide_against() {
    let (_, off_bytes) = merge(
        Engine::Deduplicate,
        [false; 3],
        Evolve::None,
        &[(READ_DICTIONARIES_OPTION, "false")],
    );
    // The first file decides; a later plain file is converted to dictionary arrays.
    let (later_plain, bytes) = merge(Engine::Deduplicate, [false, true, false], Evolve::None, &[]);
    assert_eq!(later_plain.metrics.dictionary_columns, 1);
    let (_, off_later_plain) = merge(
        Engine::Deduplicate,
        [false, true, false],
        Evolve::None,
        &[(READ_DICTIONARIES_OPTION, "false")],
    );
    assert_eq!(bytes, off_later_plain);
    // A plain first file: the column is read as strings throughout.
    let (first_plain, first_bytes) =
        merge(Engine::Deduplicate, [true, false, false], Evolve::None, &[]);
    assert_eq!(first_plain.metrics.dictionary_columns, 0);
    assert_eq!(
        rows_of(&first_plain, &first_bytes),
        rows_of(&later_plain, &bytes)
    );
    assert_eq!(rows_of(&later_plain, &bytes), expected(Engine::Deduplicate));
    // How the inputs were encoded does not change what is written.
    assert_eq!(bytes, off_bytes);
    assert_eq!(first_bytes, off_bytes);
}

#[test]
fn files_mapped_through_schema_evolution_keep_their_dictionaries() {
    // The first file is of the table's schema and decides; the later ones are mapped (one of
    // them plain, converted after the mapping).
    let (on, on_bytes) = merge(
        Engine::Deduplicate,
        [false, true, false],
        Evolve::AllButFirst,
        &[],
    );
    let (off, off_bytes) = merge(
        Engine::Deduplicate,
        [false, true, false],
        Evolve::AllButFirst,
        &[(READ_DICTIONARIES_OPTION, "false")],
    );
    assert_eq!(on.metrics.dictionary_columns, 1);
    assert_eq!(off.metrics.dictionary_columns, 0);
    assert_eq!(on_bytes, off_bytes);
    assert_eq!(rows_of(&on, &on_bytes), expected(Engine::Deduplicate));
    // No file of the table's schema: nothing decides, strings are read plain.
    let (all, all_bytes) = merge(Engine::Deduplicate, [false; 3], Evolve::All, &[]);
    assert_eq!(all.metrics.dictionary_columns, 0);
    assert_eq!(all_bytes, off_bytes);
}

#[test]
fn engines_computing_values_and_disabled_dictionaries_read_plain_strings() {
    let (partial, bytes) = merge(Engine::PartialUpdate, [false; 3], Evolve::None, &[]);
    assert_eq!(partial.metrics.dictionary_columns, 0);
    assert_eq!(rows_of(&partial, &bytes), expected(Engine::PartialUpdate));
    // No output dictionary for the column: nothing to map into.
    let (no_dict, _) = merge(
        Engine::Deduplicate,
        [false; 3],
        Evolve::None,
        &[("parquet.enable.dictionary", "false")],
    );
    assert_eq!(no_dict.metrics.dictionary_columns, 0);
}

/// arrow-rs's writer for strings (a comparison point, only in `bench-comparisons` builds) would
/// decode the dictionaries again, so none is read.
#[cfg(feature = "bench-comparisons")]
#[test]
fn the_arrow_rs_comparison_writer_reads_plain_strings() {
    let (arrow_writer, _) = merge(
        Engine::Deduplicate,
        [false; 3],
        Evolve::None,
        &[("paimon-compact.write.string-dictionary-writer", "arrow")],
    );
    assert_eq!(arrow_writer.metrics.dictionary_columns, 0);
}

#[test]
fn an_invalid_value_is_a_typed_error_before_any_output() {
    let st = MemoryStorage::new();
    let ins = inputs(&st, [false; 3]);
    let before = files_in(&st);
    let err = rewrite_merge_tree(
        &st,
        &request(ins, false),
        &opts(&[(READ_DICTIONARIES_OPTION, "sometimes")]),
    )
    .unwrap_err();
    assert!(
        matches!(&err.kind, ErrorKind::InvalidOption { key, .. } if key == READ_DICTIONARIES_OPTION),
        "{err:?}"
    );
    assert_eq!(files_in(&st), before);
}
