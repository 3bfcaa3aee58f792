//! The streaming k-way merge of a merge-tree rewrite (compaction.md §10.1).
//!
//! Each sorted run of a section is read by one cursor, one decoded batch at a time, with its
//! key columns converted to arrow's row format once per batch, so comparing two keys is a
//! `memcmp`. A small binary heap of cursors yields keys in ascending order; all records of
//! the smallest key form a group, sorted by sequence (user `sequence.field` values in
//! `sequence.field.sort-order`, then `_SEQUENCE_NUMBER` ascending) and handed to the merge engine (or the changelog wrapper). Results are
//! references into the decoded batches (the "arena"); every `BATCH_SIZE` results the output
//! columns are assembled at once with `interleave`, written, and the arena is cut back to the
//! batches cursors still read. Memory is therefore a few batches per run plus one output row
//! group, whatever the input size.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use arrow_row::{OwnedRow, RowConverter, SortField};
use arrow_schema::SortOptions;
use arrow_schema::{DataType, SchemaRef};
use parquet::basic::Compression;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::{ColumnPath, SchemaDescriptor};

use super::arena::{seq_order, Arena};
use super::changelog::{
    changelog_mode, full_compaction_key, lookup_key, plain_key, ChangelogMode, LookupOutcome,
    RowDeduplicate,
};
use super::dictionary_reads::{Candidates, DictionaryReads};
use super::kv_format::{key_datums, planner_key, KvLayout};
use super::lookup::LookupLevels;
use super::merge_engine::{Columns, MergeFunction, Origin, Record};
use super::output::{key_mirrors, OutputSettings, RollingOutput};
use super::pending::{flush, Pending, Sinks};
use super::reader::{file_schema, Reader};
use super::record_expiry::RecordExpiry;
use super::run_cursor::RunCursor;
use super::sorted_chunk::{CursorView, SortedChunk};
use super::{MergeMetrics, MergeTreeRewrite, MergeTreeRewriteResult, KEY_PREFIX_LEN};
use crate::deletion_vectors::DeletionVectorMaintainer;
use crate::error::{Error, Result};
use crate::options::{CoreOptions, SequenceSortOrder};
use crate::parquet_io::codec::PageCompressor;
use crate::parquet_io::dictionary::DictConfig;
use crate::parquet_io::footer::{read_footer, FooterPolicy};
use crate::parquet_io::read::{IoCounters, BATCH_SIZE};
use crate::parquet_io::writer::FileSpec;
use crate::rewrite::avro_output::AvroSpec;
use crate::rewrite::rolling::OutputFormat;
use crate::rewrite::writer_settings;
use crate::rewrite::RewriteInput;
use crate::storage::Storage;

/// Everything the merge keeps between groups.
pub(super) struct Merge<'s, 'r> {
    pub(super) req: &'r MergeTreeRewrite,
    pub(super) inputs: Vec<&'r RewriteInput>,
    pub(super) reader: Reader<'s>,
    pub(super) arena: Arena,
    pub(super) cursors: Vec<RunCursor>,
    pub(super) heap: Vec<usize>,
    pub(super) metrics: MergeMetrics,
    /// `None`: page by page; `Some(rows)`: windows of the push decoder.
    pub(super) window_rows: Option<u64>,
    /// Bytes of a column chunk each page read fetches ahead (`paimon-compact.merge.read-ahead`).
    pub(super) read_ahead: u64,
    /// The host's zstd, for page reads, when it offers one.
    pub(super) offload: Option<Arc<crate::host_codec::CodecOffload>>,
    /// Rows ordered a chunk at a time (`paimon-compact.merge.sorted-chunks`); `None`: the heap orders every row.
    pub(super) chunk: Option<SortedChunk>,
    /// The live cursors, as the next chunk sees them (kept to reuse its allocation).
    pub(super) live: Vec<CursorView>,
    /// `changelog-producer.row-deduplicate`, when the table asks for it.
    pub(super) dedup: Option<RowDeduplicate>,
}

impl Merge<'_, '_> {
    /// The merged rows' columns, as the merge engines and changelog read them.
    fn columns(&self) -> ArenaColumns<'_> {
        ArenaColumns {
            arena: &self.arena,
            layout: &self.reader.layout,
            inputs: &self.inputs,
            higher: &self.req.higher_levels,
        }
    }
}

/// Column access for the engines.
struct ArenaColumns<'a> {
    arena: &'a Arena,
    layout: &'a KvLayout,
    inputs: &'a [&'a RewriteInput],
    higher: &'a [RewriteInput],
}

impl Columns for ArenaColumns<'_> {
    fn value(&self, slot: usize, j: usize) -> &ArrayRef {
        self.arena.slots[slot]
            .batch
            .column(self.layout.value_cols[j])
    }
    fn file_of(&self, r: &Record) -> &str {
        match r.origin {
            Origin::Input { file, .. } => &self.inputs[file].path,
            Origin::Lookup { file, .. } => &self.higher[file].path,
        }
    }
}

/// Merges the request's sections into new files; see the module documentation.
/// `storage`: see [`crate::io`].
///
/// The phases: the request is checked, the merge's schema and key layout resolved from the
/// inputs, the outputs opened, the sections merged, and the result collected from what was
/// written. Any failure after the outputs are opened aborts and deletes them.
///
/// A section of more sorted runs than one merge may read side by side first has groups of its
/// level-0 runs merged into temporary runs ([`super::run_spill`]), which are deleted when the
/// merge ends, whether it succeeded or not.
pub fn rewrite_merge_tree(
    storage: &dyn crate::io::ToIo,
    req: &MergeTreeRewrite,
    options: &CoreOptions,
) -> Result<MergeTreeRewriteResult> {
    let Some(spilled) = super::run_spill::spill_runs(storage, req, options)? else {
        return merge(storage, req, options, Keep::Merged);
    };
    let result = merge(storage, &spilled.req, options, Keep::Merged);
    let cleanup = spilled.delete(&storage.to_io().storage);
    let mut result = result?;
    cleanup?;
    result.metrics.spilled_runs = spilled.runs;
    result.metrics.spill_files = spilled.temps.len() as u64;
    Ok(result)
}

/// What a merge keeps of a key's records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Keep {
    /// The table's merge engine makes one row of them (and the changelog mode applies).
    Merged,
    /// Every record, unmerged, into one file at level 0 without changelog: a temporary run.
    All,
}

/// One merge of `req` (see [`rewrite_merge_tree`]).
pub(super) fn merge(
    storage: &dyn crate::io::ToIo,
    req: &MergeTreeRewrite,
    options: &CoreOptions,
    keep: Keep,
) -> Result<MergeTreeRewriteResult> {
    let shared = storage.to_io();
    let storage = &shared.storage;
    let inputs: Vec<&RewriteInput> = req.sections.iter().flatten().flatten().collect();
    let mode = match keep {
        Keep::Merged => check_request(req, options, &inputs)?,
        Keep::All => ChangelogMode::None,
    };
    let Some(first) = inputs.first() else {
        return Ok(MergeTreeRewriteResult {
            changelog_mode: mode,
            ..MergeTreeRewriteResult::default()
        });
    };
    check_prefixes(req, &inputs)?;
    let sorted_chunks = options.engine.sorted_chunks.get()?;
    let window_rows = options.engine.read_window_rows.get()?;
    let mut io = IoCounters::default();
    let resolved = resolve_schema(storage, req, options, &inputs, first, &mut io)?;
    let (key_converter, seq_converter) = key_converters(&resolved, options)?;
    let value_columns = resolved.value_columns();
    let mut mf = match keep {
        Keep::Merged => MergeFunction::new(options, &value_columns, &resolved.primary_keys())?,
        Keep::All => MergeFunction::KeepAll,
    };
    let whole_rows = mf.whole_rows();
    let expiry = RecordExpiry::new(
        // Rows expire once, in the final merge (which counts them).
        options
            .record_level_expire
            .as_ref()
            .filter(|_| keep == Keep::Merged),
        &resolved.schema,
        &resolved.layout.value_cols,
        req.creation_time_ms,
    )?;
    let offload = shared
        .host_codec
        .clone()
        .map(crate::host_codec::CodecOffload::new);
    let (mut sinks, dicts) = open_outputs(
        storage,
        req,
        options,
        mode,
        &resolved,
        whole_rows,
        offload.clone(),
    )?;
    let reader = Reader {
        storage,
        io,
        layout: resolved.layout.clone(),
        schema: resolved.schema.clone(),
        key_converter,
        seq_converter,
        evolutions: Default::default(),
        dicts,
        expiry,
    };
    let mut merge = Merge {
        req,
        inputs,
        reader,
        arena: Arena::default(),
        cursors: Vec::new(),
        heap: Vec::new(),
        metrics: MergeMetrics::default(),
        window_rows,
        read_ahead: options.engine.read_ahead.get()?,
        offload: offload.clone(),
        chunk: sorted_chunks.then(SortedChunk::default),
        live: Vec::new(),
        dedup: RowDeduplicate::new(
            options,
            &value_columns
                .into_iter()
                .map(|(name, _)| name)
                .collect::<Vec<_>>(),
        ),
    };
    let mut lookup = match mode {
        ChangelogMode::Lookup { .. } => Some(LookupLevels::new(&req.higher_levels)),
        _ => None,
    };
    let mut dv = DeletionVectorMaintainer::new();
    let run = run_merge(
        &mut merge,
        &mut sinks,
        &mut mf,
        mode,
        options.is_first_row(),
        &mut lookup,
        &mut dv,
        &resolved.layout,
    )
    .and_then(|()| finish_outputs(&mut sinks));
    let mut metrics = merge.metrics;
    metrics.dictionary_columns = merge.reader.dicts.len() as u64;
    metrics.storage_reads = merge.reader.io.reads;
    metrics.storage_read_bytes = merge.reader.io.bytes;
    metrics.host_codec = crate::host_codec::metrics_of(offload.as_ref());
    if let Err(e) = run {
        return Err(abort_outputs(&mut sinks, e));
    }
    Ok(collect_result(mode, sinks, &dv, metrics))
}

/// The changelog mode of the request, and that its output level is written as Parquet.
fn check_request(
    req: &MergeTreeRewrite,
    options: &CoreOptions,
    inputs: &[&RewriteInput],
) -> Result<ChangelogMode> {
    let mode = changelog_mode(
        options,
        req.output_level,
        req.max_level,
        req.drop_delete,
        inputs.iter().map(|i| i.meta.level),
    )?;
    let format = options.file_format_for_level(req.output_level.get());
    if !matches!(format, "parquet" | "orc" | "avro") {
        return Err(Error::unsupported(format!(
            "the merge rewriter writes Parquet, ORC and Avro; level {} is configured as \
             '{format}'",
            req.output_level
        )));
    }
    let changelog_format = options.format_for(req.output_level.get(), true);
    if mode.produces_changelog() && !matches!(changelog_format, "parquet" | "orc" | "avro") {
        return Err(Error::unsupported(format!(
            "the merge rewriter writes Parquet, ORC and Avro; changelog files of level {} are \
             configured as '{changelog_format}' (changelog-file.format)",
            req.output_level
        )));
    }
    Ok(mode)
}

/// No output name may be an input's.
fn check_prefixes(req: &MergeTreeRewrite, inputs: &[&RewriteInput]) -> Result<()> {
    for prefix in [&req.file_prefix, &req.changelog_prefix] {
        let full = if req.output_dir.is_empty() {
            prefix.clone()
        } else {
            format!("{}/{}", req.output_dir, prefix)
        };
        if let Some(clash) = inputs
            .iter()
            .map(|i| &i.path)
            .chain(req.higher_levels.iter().map(|i| &i.path))
            .find(|p| p.starts_with(&full))
        {
            return Err(Error::illegal_state(format!(
                "output prefix '{full}' would name input '{clash}'"
            )));
        }
    }
    Ok(())
}

/// The merge's schema, the Parquet schema its outputs are written with, and where its columns
/// are.
struct Resolved {
    schema: SchemaRef,
    descr: Arc<SchemaDescriptor>,
    /// The footer of the input whose schema is the merge's, when one is (it decides the
    /// dictionary reads).
    file: Option<Arc<ParquetMetaData>>,
    layout: KvLayout,
}

impl Resolved {
    /// Names and types of the value columns, as the merge engines see them.
    fn value_columns(&self) -> Vec<(String, DataType)> {
        self.layout
            .value_cols
            .iter()
            .map(|&c| {
                let f = self.schema.field(c);
                (f.name().clone(), f.data_type().clone())
            })
            .collect()
    }

    /// The table's primary key columns (the key columns without their `_KEY_` prefix).
    fn primary_keys(&self) -> Vec<String> {
        self.layout
            .key_cols
            .iter()
            .map(|&c| self.schema.field(c).name()[KEY_PREFIX_LEN..].to_string())
            .collect()
    }
}

/// The first input decides the schema and the layout and every other input must match it,
/// unless the caller names the schema (files of several schema versions, each mapped).
fn resolve_schema(
    storage: &Arc<dyn Storage>,
    req: &MergeTreeRewrite,
    options: &CoreOptions,
    inputs: &[&RewriteInput],
    first: &RewriteInput,
    io: &mut IoCounters,
) -> Result<Resolved> {
    let sequence_fields: Vec<String> = options
        .sequence_field
        .as_deref()
        .map(|s| s.split(',').map(|f| f.trim().to_string()).collect())
        .unwrap_or_default();
    let (schema, descr, file) = match &req.schema {
        None => {
            let first_file = read_footer(storage.as_ref(), &first.path, FooterPolicy::ROWS, io)?;
            let schema = Arc::new(file_schema(&first_file)?);
            (
                schema,
                first_file.metadata.file_metadata().schema_descr_ptr(),
                Some(first_file.metadata),
            )
        }
        Some(target) => match inputs.iter().find(|i| i.columns.is_none()) {
            // An input of the latest version: its own schema and Parquet schema (field ids)
            // are the target, and the older inputs are mapped onto it.
            Some(latest) => {
                let file = read_footer(storage.as_ref(), &latest.path, FooterPolicy::ROWS, io)?;
                let schema = Arc::new(file_schema(&file)?);
                let descr = file.metadata.file_metadata().schema_descr_ptr();
                (schema, descr, Some(file.metadata))
            }
            None => {
                let descr = parquet::arrow::ArrowSchemaConverter::new()
                    .convert(target)
                    .map_err(|e| Error::unsupported(format!("table schema as Parquet: {e}")))?;
                (target.clone(), Arc::new(descr), None)
            }
        },
    };
    let layout = KvLayout::of(&schema, &first.path, &sequence_fields)?;
    Ok(Resolved {
        schema,
        descr,
        file,
        layout,
    })
}

/// The row converters of the key columns and of the user sequence fields (if any).
///
/// `sequence.field.sort-order` is encoded in the sequence rows themselves, so every place that
/// orders records by sequence (the merge, lookup changelog, deletion vectors) follows it. As
/// Paimon's `UserDefinedSeqComparator`: descending reverses non-null values only, a null stays
/// the oldest (nulls first either way).
fn key_converters(
    resolved: &Resolved,
    options: &CoreOptions,
) -> Result<(RowConverter, Option<RowConverter>)> {
    let (schema, layout) = (&resolved.schema, &resolved.layout);
    let key_fields: Vec<SortField> = layout
        .key_cols
        .iter()
        .map(|&c| SortField::new(schema.field(c).data_type().clone()))
        .collect();
    let key_converter = RowConverter::new(key_fields)
        .map_err(|e| Error::unsupported(format!("primary key type: {e}")))?;
    let seq_sort = SortOptions {
        descending: options.sequence_field_sort_order == SequenceSortOrder::Descending,
        nulls_first: true,
    };
    let seq_converter = if layout.user_seq_cols.is_empty() {
        None
    } else {
        Some(
            RowConverter::new(
                layout
                    .user_seq_cols
                    .iter()
                    .map(|&c| {
                        SortField::new_with_options(schema.field(c).data_type().clone(), seq_sort)
                    })
                    .collect(),
            )
            .map_err(|e| Error::unsupported(format!("sequence field type: {e}")))?,
        )
    };
    Ok((key_converter, seq_converter))
}

/// The writer settings of the outputs, the columns read as dictionaries, and the output
/// streams (data unless the request writes none, changelog when the mode produces it).
fn open_outputs<'s>(
    storage: &'s Arc<dyn Storage>,
    req: &MergeTreeRewrite,
    options: &CoreOptions,
    mode: ChangelogMode,
    resolved: &Resolved,
    whole_rows: bool,
    offload: Option<Arc<crate::host_codec::CodecOffload>>,
) -> Result<(Sinks<'s>, DictionaryReads)> {
    let (schema, layout) = (&resolved.schema, &resolved.layout);
    let level = req.output_level.get();
    let format_of = |changelog: bool| options.format_for(level, changelog).to_string();
    // The Parquet codec of the data or changelog files; the Parquet settings of an ORC
    // output only plan the dictionary reads, and stay uncompressed.
    let parquet_codec = |changelog: bool| -> Result<Compression> {
        if format_of(changelog) != "parquet" {
            return Ok(Compression::UNCOMPRESSED);
        }
        let (name, key) = options.compression_for(level, changelog);
        writer_settings::codec(options, name, key)
    };
    let data_codec = parquet_codec(false)?;
    let (data_props, data_dict_cfg) = output_writers(options, resolved, data_codec, &offload)?;
    let dicts = DictionaryReads::plan(
        &Candidates {
            options,
            schema,
            layout,
            whole_rows,
            props: &data_props,
            dict_cfg: &data_dict_cfg,
        },
        resolved.file.as_deref(),
    )?;
    let file_index = crate::rewrite::file_index::FileIndexSpec::from_options(options)?;
    let settings_of = |changelog: bool, props, dict_cfg| -> Result<Arc<OutputSettings>> {
        let name = format_of(changelog);
        let format = match name.as_str() {
            "parquet" => OutputFormat::Parquet(Arc::new(FileSpec {
                strings_take_dictionaries: true,
                mirrors: key_mirrors(schema, &layout.key_cols),
                spill_budget: options.engine.spill_threshold.get()?,
                ..FileSpec::new(schema.clone(), resolved.descr.clone(), props, dict_cfg)
            })),
            "orc" => {
                let (codec, key) = options.compression_for(level, changelog);
                OutputFormat::Orc {
                    schema: schema.clone(),
                    settings: Arc::new(writer_settings::orc_settings(
                        options,
                        codec,
                        key,
                        &req.column_types,
                    )?),
                }
            }
            "avro" => {
                let (codec, key) = options.compression_for(level, changelog);
                OutputFormat::Avro {
                    schema: schema.clone(),
                    spec: Arc::new(AvroSpec::new(
                        options,
                        schema,
                        &req.column_types,
                        codec,
                        key,
                    )?),
                }
            }
            other => {
                return Err(Error::unsupported(format!(
                    "level {level} {} files are asked to be '{other}' (file.format, \
                     file.format.per.level, changelog-file.format), which this build does not \
                     write",
                    if changelog { "changelog" } else { "data" }
                )))
            }
        };
        Ok(Arc::new(OutputSettings {
            format,
            target_file_size: options.target_file_size,
            level: req.output_level,
            creation_time_ms: req.creation_time_ms,
            key_cols: layout.key_cols.clone(),
            seq_col: layout.seq_col,
            kind_col: layout.kind_col,
            extension: options.file_extension(&name),
            file_index: file_index.clone(),
        }))
    };
    let settings = settings_of(false, data_props, data_dict_cfg)?;
    let produce_changelog = mode.produces_changelog();
    // Checked whether or not this merge writes changelog, as Paimon checks the option.
    let changelog_codec = parquet_codec(true)?;
    let same = changelog_codec == data_codec
        && format_of(true) == format_of(false)
        && options.compression_for(level, true).0 == options.compression_for(level, false).0;
    let changelog_settings = if same || !produce_changelog {
        settings.clone()
    } else {
        let (props, dict_cfg) = output_writers(options, resolved, changelog_codec, &offload)?;
        settings_of(true, props, dict_cfg)?
    };
    let open = |settings: &Arc<OutputSettings>, prefix: &str| {
        RollingOutput::new(storage, settings.clone(), &req.output_dir, prefix)
    };
    let sinks = Sinks {
        data: req
            .write_data
            .then(|| open(&settings, &req.file_prefix))
            .transpose()?,
        changelog: produce_changelog
            .then(|| open(&changelog_settings, &req.changelog_prefix))
            .transpose()?,
        pending_data: Pending::default(),
        pending_changelog: Pending::default(),
        whole_rows,
        value_cols: layout.value_cols.len(),
        drop_delete: req.drop_delete,
        retracts_dropped: 0,
    };
    Ok((sinks, dicts))
}

/// The writer properties and dictionary settings of outputs compressed with `codec`: keys,
/// sequence numbers and the key's own table columns are distinct in every output file (one row
/// per key), so dictionary-encoding them can never pay and costs a hash per value.
fn output_writers(
    options: &CoreOptions,
    resolved: &Resolved,
    codec: Compression,
    offload: &Option<Arc<crate::host_codec::CodecOffload>>,
) -> Result<(WriterProperties, Arc<DictConfig>)> {
    let (schema, layout) = (&resolved.schema, &resolved.layout);
    let mut props = writer_settings::writer_properties(options, codec)?.into_builder();
    for &c in layout.key_cols.iter().chain([&layout.seq_col]) {
        props = props.set_column_dictionary_enabled(
            ColumnPath::from(schema.field(c).name().as_str()),
            false,
        );
    }
    for pk in &resolved.primary_keys() {
        props = props.set_column_dictionary_enabled(ColumnPath::from(pk.as_str()), false);
    }
    let props = props.build();
    // Fail on an unwritable codec now, not after outputs exist.
    PageCompressor::new(codec, None)?;
    let dict_cfg = Arc::new(
        DictConfig::new(codec, &props, writer_settings::dict_writers(options)?)
            .with_offload(offload.clone()),
    );
    Ok((props, dict_cfg))
}

/// Finishes the last file of each output stream.
fn finish_outputs(sinks: &mut Sinks<'_>) -> Result<()> {
    if let Some(d) = sinks.data.as_mut() {
        d.roll()?;
    }
    if let Some(c) = sinks.changelog.as_mut() {
        c.roll()?;
    }
    Ok(())
}

/// Aborts and deletes every output after `e`; the error, with what could not be undone.
fn abort_outputs(sinks: &mut Sinks<'_>, e: Error) -> Error {
    let mut failures = Vec::new();
    for out in [sinks.data.as_mut(), sinks.changelog.as_mut()]
        .into_iter()
        .flatten()
    {
        failures.extend(out.abort());
    }
    if failures.is_empty() {
        e
    } else {
        e.with_note(format_args!("cleanup failed: {}", failures.join("; ")))
    }
}

/// The result of a merge that completed: the files written, the deletion-vector marks, and
/// the metrics of both.
fn collect_result(
    mode: ChangelogMode,
    mut sinks: Sinks<'_>,
    dv: &DeletionVectorMaintainer,
    mut metrics: MergeMetrics,
) -> MergeTreeRewriteResult {
    let mut result = MergeTreeRewriteResult {
        changelog_mode: mode,
        ..MergeTreeRewriteResult::default()
    };
    metrics.retracts_dropped = sinks.retracts_dropped;
    if let Some(d) = sinks.data.take() {
        let d = d.finish();
        metrics.storage_writes += d.storage_writes;
        metrics.spilled_bytes += d.spilled_bytes;
        metrics.mirrored_key_chunks += d.mirrored_chunks;
        result.outputs = d.files;
    }
    if let Some(c) = sinks.changelog.take() {
        let c = c.finish();
        metrics.storage_writes += c.storage_writes;
        metrics.spilled_bytes += c.spilled_bytes;
        metrics.mirrored_key_chunks += c.mirrored_chunks;
        result.changelog = c.files;
    }
    metrics.output_files = result.outputs.len() as u64;
    metrics.output_rows = result.outputs.iter().map(|f| f.meta.row_count).sum();
    metrics.output_bytes = result.outputs.iter().map(|f| f.meta.file_size).sum();
    metrics.changelog_files = result.changelog.len() as u64;
    metrics.changelog_rows = result.changelog.iter().map(|f| f.meta.row_count).sum();
    result.deletion_vector_marks = dv
        .vectors()
        .iter()
        .map(|(f, b)| (f.clone(), b.iter().map(u64::from).collect()))
        .collect::<BTreeMap<_, _>>();
    metrics.deletion_vector_marks = result
        .deletion_vector_marks
        .values()
        .map(|v| v.len() as u64)
        .sum();
    result.metrics = metrics;
    result
}

#[allow(
    clippy::too_many_arguments,
    reason = "the merge loop's state is borrowed apart so the hot loop holds no struct of references"
)]
fn run_merge(
    merge: &mut Merge<'_, '_>,
    sinks: &mut Sinks<'_>,
    mf: &mut MergeFunction,
    mode: ChangelogMode,
    first_row: bool,
    lookup: &mut Option<LookupLevels>,
    dv: &mut DeletionVectorMaintainer,
    layout: &KvLayout,
) -> Result<()> {
    let req = merge.req;
    let mut group: Vec<Record> = Vec::new();
    let mut candidates: Vec<Record> = Vec::new();
    let mut input_base = 0usize;
    let mut previous_section_end: Option<OwnedRow> = None;
    let mut last_key: Option<(usize, usize)> = None;
    for section in &req.sections {
        // One cursor per run of the section.
        merge.cursors.clear();
        merge.heap.clear();
        for run in section {
            let n = run.len();
            merge.cursors.push(RunCursor {
                files: (input_base..input_base + n).collect(),
                next_file: 0,
                open: None,
                slot: 0,
                row: 0,
                len: 0,
                head: (0, 0),
                last: None,
            });
            input_base += n;
        }
        for c in 0..merge.cursors.len() {
            if merge.load(c)? {
                merge.heap.push(c);
            }
        }
        merge.heapify();
        let mut first_group = true;
        loop {
            group.clear();
            let Some(gk) = merge.next_group(&mut group)? else {
                break;
            };
            if first_group {
                first_group = false;
                if let Some(prev) = &previous_section_end {
                    if merge.arena.key(gk) <= prev.row() {
                        let slot = &merge.arena.slots[gk.0];
                        return Err(Error::corrupt(
                            Some(&merge.inputs[slot.file].path),
                            "sections are not in key order (a section starts at or below the \
                             end of the previous one)",
                        ));
                    }
                }
            }
            merge.metrics.keys += 1;
            {
                let arena = &merge.arena;
                group.sort_by(|a, b| seq_order(arena, a, b));
            }
            process_group(
                merge,
                sinks,
                mf,
                mode,
                first_row,
                lookup,
                dv,
                &group,
                &mut candidates,
                gk,
            )?;
            last_key = Some(gk);
            let live = merge.cursors.len() + 8;
            if sinks.pending_data.len() >= BATCH_SIZE
                || sinks.pending_changelog.len() >= BATCH_SIZE
                || merge.arena.slots.len() > live + 16
            {
                // Slots are renumbered by the flush: keep the key's bytes instead.
                previous_section_end = Some(merge.arena.key(gk).owned());
                last_key = None;
                flush(merge, sinks, lookup, layout)?;
            }
        }
        if let Some(gk) = last_key.take() {
            previous_section_end = Some(merge.arena.key(gk).owned());
        }
    }
    flush(merge, sinks, lookup, layout)
}

#[allow(
    clippy::too_many_arguments,
    reason = "the merge loop's state is borrowed apart so the hot loop holds no struct of references"
)]
fn process_group(
    merge: &mut Merge<'_, '_>,
    sinks: &mut Sinks<'_>,
    mf: &mut MergeFunction,
    mode: ChangelogMode,
    first_row: bool,
    lookup: &mut Option<LookupLevels>,
    dv: &mut DeletionVectorMaintainer,
    group: &[Record],
    candidates: &mut Vec<Record>,
    gk: (usize, usize),
) -> Result<()> {
    let req = merge.req;
    match mode {
        ChangelogMode::None => {
            let cols = merge.columns();
            plain_key(group, mf, &cols, sinks)
        }
        ChangelogMode::FullCompaction => {
            let cols = merge.columns();
            full_compaction_key(group, req.max_level, mf, &cols, merge.dedup.as_ref(), sinks)
        }
        ChangelogMode::Lookup {
            produce_changelog,
            deletion_vectors,
        } => {
            // The lookup may read (and push) batches, so it runs first, before the engine
            // borrows the arena.
            let needs_lookup = group.iter().all(|r| r.level == 0)
                && lookup.as_ref().is_some_and(|l| !l.is_empty());
            let mut found: Option<Record> = None;
            if needs_lookup {
                merge.metrics.lookups += 1;
                let key_cols: Vec<&dyn Array> = merge
                    .reader
                    .layout
                    .key_cols
                    .iter()
                    .map(|&c| merge.arena.slots[gk.0].batch.column(c).as_ref())
                    .collect();
                let planner = planner_key(&key_datums(&key_cols, gk.1)?);
                if let Some(l) = lookup.as_mut() {
                    found = l.find(
                        &mut merge.reader,
                        &mut merge.arena,
                        &req.higher_levels,
                        gk,
                        &planner,
                    )?;
                }
                if let Some(f) = &found {
                    merge.metrics.lookup_hits += 1;
                    if deletion_vectors && !first_row {
                        if let Origin::Lookup { file, pos } = f.origin {
                            let name = &req.higher_levels[file].meta.file_name;
                            dv.mark(name, pos)?;
                        }
                    }
                }
            }
            let cols = merge.columns();
            let arena = &merge.arena;
            let order = |a: &Record, b: &Record| seq_order(arena, a, b);
            let mut lookup_once = || Ok(LookupOutcome { found });
            lookup_key(
                group,
                produce_changelog,
                first_row,
                mf,
                &cols,
                &mut lookup_once,
                &order,
                candidates,
                merge.dedup.as_ref(),
                sinks,
            )
        }
    }
}
