//! [`PrimaryKeyRewriter`]: the table layer's [`MergeTreeRewriter`], running
//! [`rewrite_merge_tree`] on a task's `Rewrite` action and describing the new files as Paimon
//! manifest records (exact min/max key and key statistics as BinaryRows, sequence range, row
//! and retract counts, file source COMPACT).

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{DataType as ArrowType, Field, Schema, SchemaRef};

use super::{rewrite_merge_tree, MergeInput, MergeOutputFile, MergeTreeRewrite};
use crate::error::{Error, Result};
use crate::rewrite::schema_evolution::{column_sources, ColumnSource};
use crate::table::binary_row::{BinaryRow, Datum};
use crate::table::manifest::{DataFile, SimpleStats};
use crate::table::merge_rewriter::{
    MergeRewriteInput, MergeRewriteRequest, MergeRewriteResult, MergeTreeRewriter,
};
use crate::table::schema::{DataField, DataType, TableSchema};

/// The primary-key merge rewriter for [`crate::table::compact_table`].
#[derive(Clone, Copy, Debug, Default)]
pub struct PrimaryKeyRewriter;

fn input(i: &MergeRewriteInput, maps: &HashMap<i64, Vec<Option<ColumnSource>>>) -> MergeInput {
    MergeInput {
        path: i.path.clone(),
        meta: i.meta.clone(),
        deleted_rows: i.deleted_rows.clone(),
        columns: maps.get(&i.file.schema_id).cloned(),
    }
}

/// The data-file row type of `schema` as Arrow: `_KEY_<k>` per trimmed primary key,
/// `_SEQUENCE_NUMBER`, `_VALUE_KIND`, then every column (used when no input of the latest
/// schema version is there to copy it from).
fn kv_schema(schema: &TableSchema) -> Result<SchemaRef> {
    let mut fields = Vec::new();
    for k in schema.trimmed_primary_keys() {
        fields.push(Field::new(
            format!("_KEY_{}", k.name),
            k.data_type.to_arrow()?,
            false,
        ));
    }
    fields.push(Field::new("_SEQUENCE_NUMBER", ArrowType::Int64, false));
    fields.push(Field::new("_VALUE_KIND", ArrowType::Int8, false));
    for f in &schema.fields {
        fields.push(Field::new(
            &f.name,
            f.data_type.to_arrow()?,
            f.data_type.nullable,
        ));
    }
    Ok(Arc::new(Schema::new(fields)))
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
                name: format!("_KEY_{}", k.name),
                shape: k.shape,
            })
        })
        .collect();
    map.push(Some(ColumnSource::named("_SEQUENCE_NUMBER")));
    map.push(Some(ColumnSource::named("_VALUE_KIND")));
    map.extend(column_sources(&old.fields, &latest.fields));
    map
}

/// The manifest record of a file the merge wrote.
pub fn manifest_record(
    o: &MergeOutputFile,
    key_types: &[DataType],
    schema_id: i64,
    creation_time_ms: i64,
) -> Result<DataFile> {
    let row = |values: &[Datum]| BinaryRow::encode(values, key_types);
    let mins: Vec<Datum> = o.key_stats.iter().map(|s| s.min.clone()).collect();
    let maxs: Vec<Datum> = o.key_stats.iter().map(|s| s.max.clone()).collect();
    let count = |v: u64| i64::try_from(v).map_err(|_| Error::illegal_state("count beyond i64"));
    Ok(DataFile {
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
        extra_files: Vec::new(),
        creation_time: Some(creation_time_ms),
        delete_row_count: Some(count(o.meta.delete_row_count.unwrap_or(0))?),
        embedded_file_index: None,
        file_source: Some(1),
        value_stats_cols: Some(Vec::new()),
        external_path: None,
        first_row_id: None,
        write_cols: None,
        write_cols_sequences: None,
    })
}

impl MergeTreeRewriter for PrimaryKeyRewriter {
    fn rewrite(
        &self,
        io: &crate::io::Io,
        request: &MergeRewriteRequest<'_>,
    ) -> Result<MergeRewriteResult> {
        let storage = io.storage.as_ref();
        let table = request.table;
        let all: Vec<&MergeRewriteInput> = request.sections.iter().flatten().flatten().collect();
        // A lookup merge below the max level must see the levels above the output (older
        // versions of its keys): without them, first-row would keep a second "first" row,
        // deletion vectors would miss marks and lookup changelog would call updates inserts.
        // A universal pick below the max level always leaves a non-empty level above it, so an
        // empty list here means the caller did not pass them.
        let l0_input = all.iter().any(|f| f.meta.level.is_zero());
        if table.options.need_lookup()
            && l0_input
            && !request.output_level.is_zero()
            && request.output_level < request.max_level
            && request.higher_levels.is_empty()
        {
            return Err(Error::unsupported(format!(
                "a lookup merge into level {} (below the max level {}) needs the bucket's files \
                 above it, and none were passed",
                request.output_level, request.max_level
            )));
        }
        // Files of schema versions with other fields are read through a column map onto the
        // latest version, and the output is written in it. Files of versions that only
        // changed options have the latest fields and are read as they are (the table's
        // schema versions decide, once per version, which is which).
        let latest = &table.schema;
        let mut maps: HashMap<i64, Vec<Option<ColumnSource>>> = HashMap::new();
        for f in all.iter().copied().chain(&request.higher_levels) {
            let id = f.file.schema_id;
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
        let target = if maps.is_empty() {
            None
        } else {
            Some(kv_schema(latest)?)
        };
        // The outputs have the latest fields either way.
        let schema_id = latest.id;
        let req = MergeTreeRewrite {
            sections: request
                .sections
                .iter()
                .map(|s| {
                    s.iter()
                        .map(|r| r.iter().map(|i| input(i, &maps)).collect())
                        .collect()
                })
                .collect(),
            schema: target,
            higher_levels: request
                .higher_levels
                .iter()
                .map(|i| input(i, &maps))
                .collect(),
            output_dir: request.output_dir.clone(),
            file_prefix: request.file_prefix.clone(),
            changelog_prefix: request.changelog_prefix.clone(),
            output_level: request.output_level,
            max_level: request.max_level,
            drop_delete: request.drop_delete,
            write_data: request.write_data,
            creation_time_ms: request.creation_time_ms,
        };
        let r = rewrite_merge_tree(io, &req, &table.options)?;
        let written: Vec<String> = r
            .outputs
            .iter()
            .chain(&r.changelog)
            .map(|f| f.path.clone())
            .collect();
        let records = |files: &[MergeOutputFile]| -> Result<Vec<DataFile>> {
            files
                .iter()
                .map(|o| {
                    let mut rec =
                        manifest_record(o, &table.key_types, schema_id, request.creation_time_ms)?;
                    // Value statistics name columns of the file's schema: only written when
                    // that is the latest, whose fields they are computed against.
                    if schema_id == table.schema.id {
                        let (stats, cols) = crate::table::value_stats::value_stats(
                            table,
                            &o.column_stats,
                            o.meta.row_count,
                        )?;
                        rec.value_stats = stats;
                        rec.value_stats_cols = Some(cols);
                    }
                    Ok(rec)
                })
                .collect()
        };
        let (outputs, changelog) = match (records(&r.outputs), records(&r.changelog)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => {
                for p in &written {
                    let _ = storage.delete(p);
                }
                return Err(e);
            }
        };
        Ok(MergeRewriteResult {
            outputs,
            changelog,
            written,
            deletion_vector_marks: r.deletion_vector_marks,
            rows_read: r.metrics.input_rows,
            host_codec: r.metrics.host_codec,
            rows_written: r.metrics.output_rows,
        })
    }
}
