//! The table layer's side of a primary-key merge: what [`rewrite_merge_tree`] needs from the
//! table before it runs (files of older schema versions mapped onto the latest by field id,
//! the lookup scope checked) and what the table needs from its output files afterwards (Paimon
//! manifest records: exact min/max key and key statistics as BinaryRows, sequence range, row
//! and retract counts, value statistics, file source COMPACT).
//!
//! [`rewrite_merge_tree`]: crate::rewrite::merge::rewrite_merge_tree

use std::collections::HashMap;

use arrow_schema::SchemaRef;

use super::binary_row::{BinaryRow, Datum};
use super::manifest::{DataFileMeta, SimpleStats};
use super::scan::Table;
use super::schema::{DataField, DataType, TableSchema};
use crate::error::{Error, Result};
use crate::meta::Level;
use crate::rewrite::merge::{
    kv_format, rewrite_merge_tree, MergeOutputFile, MergeTreeRewrite, MergeTreeRewriteResult,
};
use crate::rewrite::schema_evolution::{column_sources, ColumnSource};
use crate::rewrite::RewriteInput;
use crate::storage::Storage;

/// Refuses a lookup merge below the max level that was given no files above its output.
///
/// Such a merge must see the levels above the output (older versions of its keys): without
/// them, first-row would keep a second "first" row, deletion vectors would miss marks and
/// lookup changelog would call updates inserts. A universal pick below the max level always
/// leaves a non-empty level above it, so an empty list here means the caller did not pass them.
pub(crate) fn check_lookup_scope(
    table: &Table,
    sections: &[Vec<Vec<RewriteInput>>],
    higher_levels: &[RewriteInput],
    output_level: Level,
    max_level: Level,
) -> Result<()> {
    let l0_input = sections
        .iter()
        .flatten()
        .flatten()
        .any(|f| f.meta.level.is_zero());
    if table.options.need_lookup()
        && l0_input
        && !output_level.is_zero()
        && output_level < max_level
        && higher_levels.is_empty()
    {
        return Err(Error::unsupported(format!(
            "a lookup merge into level {output_level} (below the max level {max_level}) needs \
             the bucket's files above it, and none were passed"
        )));
    }
    Ok(())
}

/// Maps the inputs written under schema versions with other fields onto the latest version,
/// and returns the data-file schema the merge then reads and writes in (`None` when every
/// input has the latest fields and is read as it is).
///
/// Files of versions that only changed options have the latest fields and are read as they
/// are: the table's schema versions decide, once per version, which is which.
/// `schema_id_of` gives the schema version an input was written under.
pub(crate) fn map_evolved_inputs(
    storage: &dyn Storage,
    table: &Table,
    sections: &mut [Vec<Vec<RewriteInput>>],
    higher_levels: &mut [RewriteInput],
    schema_id_of: impl Fn(&RewriteInput) -> Result<i64>,
) -> Result<Option<SchemaRef>> {
    let latest = &table.schema;
    let mut ids = Vec::new();
    for f in sections
        .iter()
        .flatten()
        .flatten()
        .chain(higher_levels.iter())
    {
        ids.push(schema_id_of(f)?);
    }
    let mut maps: HashMap<i64, Vec<Option<ColumnSource>>> = HashMap::new();
    for &id in &ids {
        if maps.contains_key(&id) {
            continue;
        }
        if let Some(old) = table
            .schema_versions
            .evolved(storage, &table.paths, latest, id)?
        {
            maps.insert(id, column_map(latest, &old));
        }
    }
    if maps.is_empty() {
        return Ok(None);
    }
    let inputs = sections
        .iter_mut()
        .flatten()
        .flatten()
        .chain(higher_levels.iter_mut());
    for (f, id) in inputs.zip(ids) {
        f.columns = maps.get(&id).cloned();
    }
    Ok(Some(kv_schema(latest)?))
}

/// For a file written under schema version `schema_id`: `None` when that version has the
/// latest fields, else its data-file row type and where each column of the latest version's
/// data-file row type comes from in it (the postpone replay's view of an evolved file).
pub(super) fn evolved_file_schema(
    storage: &dyn Storage,
    table: &Table,
    schema_id: i64,
) -> Result<Option<crate::rewrite::merge::redistribute::Evolved>> {
    let latest = &table.schema;
    let Some(old) = table
        .schema_versions
        .evolved(storage, &table.paths, latest, schema_id)?
    else {
        return Ok(None);
    };
    Ok(Some(crate::rewrite::merge::redistribute::Evolved {
        row_type: kv_schema(&old)?,
        columns: column_map(latest, &old),
    }))
}

/// The data-file row type of `schema` as Arrow (used when no input of the latest schema
/// version is there to copy it from).
pub(super) fn kv_schema(schema: &TableSchema) -> Result<SchemaRef> {
    let keys: Vec<DataField> = schema.trimmed_primary_keys().into_iter().cloned().collect();
    kv_format::data_file_schema(&keys, &schema.fields)
}

/// Paimon's type of each column of [`kv_schema`]'s row type: the keys, the sequence number
/// (BIGINT), the row kind (TINYINT), then the fields.
pub(super) fn kv_types(schema: &TableSchema) -> Vec<crate::types::DataType> {
    use crate::types::{DataType, TypeRoot};
    let keys = schema
        .trimmed_primary_keys()
        .into_iter()
        .map(|k| k.data_type.clone());
    keys.chain([
        DataType::new(TypeRoot::BigInt).not_null(),
        DataType::new(TypeRoot::TinyInt).not_null(),
    ])
    .chain(schema.fields.iter().map(|f| f.data_type.clone()))
    .collect()
}

/// For a file of schema version `old`: where each column of the latest version's data-file
/// schema comes from in it, matched by field id at every depth (renamed columns and nested
/// fields followed, added ones `None`).
fn column_map(latest: &TableSchema, old: &TableSchema) -> Vec<Option<ColumnSource>> {
    let keys: Vec<DataField> = latest.trimmed_primary_keys().into_iter().cloned().collect();
    let mut map: Vec<Option<ColumnSource>> = column_sources(&old.fields, &keys)
        .into_iter()
        .map(|k| {
            k.map(|k| ColumnSource {
                name: kv_format::key_column(&k.name),
                shape: k.shape,
            })
        })
        .collect();
    map.push(Some(ColumnSource::named(kv_format::SEQUENCE_NUMBER)));
    map.push(Some(ColumnSource::named(kv_format::VALUE_KIND)));
    map.extend(column_sources(&old.fields, &latest.fields));
    map
}

/// Runs the merge and describes the files it wrote as manifest records: `(result, data files,
/// changelog files)`. If the records cannot be made, the files are deleted again (a failed
/// deletion is left to the caller's sweep of the request's prefixes).
pub(crate) fn merge(
    io: &crate::io::Io,
    table: &Table,
    req: &MergeTreeRewrite,
) -> Result<(MergeTreeRewriteResult, Vec<DataFileMeta>, Vec<DataFileMeta>)> {
    let storage = io.storage.as_ref();
    let r = rewrite_merge_tree(io, req, &table.options)?;
    let level = req.output_level.get();
    let outputs = manifest_records(table, &r.outputs, req.creation_time_ms, level, false);
    let changelog = manifest_records(table, &r.changelog, req.creation_time_ms, level, true);
    match (outputs, changelog) {
        (Ok(o), Ok(c)) => Ok((r, o, c)),
        (Err(e), _) | (_, Err(e)) => {
            for f in r.outputs.iter().chain(&r.changelog) {
                let _ = storage.delete(&f.path);
            }
            Err(e)
        }
    }
}

/// The manifest records of files a merge wrote. They have the latest schema's fields whatever
/// the inputs' versions, so they are recorded under it with value statistics computed against
/// its fields, in the stats mode of the files' level (or of changelog files).
fn manifest_records(
    table: &Table,
    files: &[MergeOutputFile],
    creation_time_ms: i64,
    level: u32,
    changelog: bool,
) -> Result<Vec<DataFileMeta>> {
    let mode = table.options.stats_mode_for(level, changelog);
    files
        .iter()
        .map(|o| {
            let mut rec = manifest_record(o, &table.key_types, table.schema.id, creation_time_ms)?;
            let (stats, cols) =
                super::value_stats::value_stats(table, &o.column_stats, o.meta.row_count, mode)?;
            rec.value_stats = stats;
            rec.value_stats_cols = Some(cols);
            Ok(rec)
        })
        .collect()
}

/// The manifest record of a file the merge wrote (no value statistics).
fn manifest_record(
    o: &MergeOutputFile,
    key_types: &[DataType],
    schema_id: i64,
    creation_time_ms: i64,
) -> Result<DataFileMeta> {
    let row = |values: &[Datum]| BinaryRow::encode(values, key_types);
    let mins: Vec<Datum> = o.key_stats.iter().map(|s| s.min.clone()).collect();
    let maxs: Vec<Datum> = o.key_stats.iter().map(|s| s.max.clone()).collect();
    let count = |v: u64| i64::try_from(v).map_err(|_| Error::internal("count beyond i64"));
    let (extra_files, embedded_file_index) =
        crate::rewrite::file_index::FileIndex::manifest_fields(o.file_index.as_ref());
    Ok(DataFileMeta {
        file_name: o.meta.file_name.clone(),
        file_size: count(o.meta.file_size)?,
        row_count: count(o.meta.row_count)?,
        min_key: row(&o.min_key)?,
        max_key: row(&o.max_key)?,
        key_stats: SimpleStats {
            min_values: row(&mins)?,
            max_values: row(&maxs)?,
            null_counts: Some(
                o.key_stats
                    .iter()
                    .map(|s| count(s.null_count).map(Some))
                    .collect::<Result<Vec<_>>>()?,
            ),
        },
        value_stats: SimpleStats::empty(),
        min_sequence_number: o.meta.min_sequence_number.0,
        max_sequence_number: o.meta.max_sequence_number.0,
        schema_id,
        level: o.meta.level.get() as i32,
        extra_files,
        creation_time: Some(creation_time_ms),
        delete_row_count: Some(count(o.meta.delete_row_count.unwrap_or(0))?),
        embedded_file_index,
        file_source: Some(1),
        value_stats_cols: Some(Vec::new()),
        external_path: None,
        first_row_id: None,
        write_cols: None,
        write_cols_sequences: None,
    })
}
