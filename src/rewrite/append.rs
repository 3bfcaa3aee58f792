//! The append-only compaction rewrite (compaction.md §13): the picked files, in sequence order,
//! streamed into new files at the unit's level, rolling to a new file at `target-file-size`.
//!
//! * Memory: one input row group's bytes (or, for a file with a column chunk larger than
//!   `paimon-compact.append.read-window`, one window per column), the decoded batch in flight,
//!   and the output row group being encoded (bounded by `parquet.block.size`), whatever the
//!   size of the inputs.
//! * Sequence numbers: as Java, rows are renumbered from the first input's minimum sequence
//!   number, so output file `k` covers the next `rows_k` numbers.
//! * Failure: any error aborts the output being written and deletes every output finished so
//!   far, through storage; inputs are only ever read.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::{parquet_to_arrow_schema, ArrowSchemaConverter};
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::SchemaDescriptor;

use super::dictionary_passthrough::PassthroughPolicy;
use super::fast_copy::{self, FileWindow};
use super::file_index::{FileIndex, FileIndexBuilder};
use super::input::RewriteInput;
use super::metrics::{FastCopyRefusal, FastCopyRefusalReason, RewriteMetrics};
use super::schema_evolution::{same_but_spelling, ColumnSource, Evolution};
use super::stats::ColumnStats;
use super::writer_settings;
use crate::error::{Error, ErrorKind, Result};
use crate::host_codec::CodecOffload;
use crate::io::ToIo;
use crate::meta::{CompactionFile, FileSource, Key, Level, SequenceNumber};
use crate::options::engine::PassthroughWriter;
use crate::options::CoreOptions;
use crate::orc_io::write::OrcWriteSettings;
use crate::parquet_io::codec::PageCompressor;
use crate::parquet_io::dictionary::{DictConfig, DictWriterCounters};
use crate::parquet_io::footer::{read_footer, FooterPolicy, InputFile};
use crate::parquet_io::page_stream::PageStream;
use crate::parquet_io::read::{self, BatchStream, IoCounters};
use crate::parquet_io::writer::{field_leaves, FileSpec, Forwarded, ParquetFileWriter};
use crate::plan::should_requeue_last;
use crate::rewrite::avro_output::AvroSpec;
use crate::rewrite::rolling::{FinishedFile, OutputFormat, Recorder, RollingWriter};
use crate::storage::Storage;

/// What to rewrite and where.
#[derive(Clone, Debug)]
pub struct AppendRewrite {
    /// The files, in sequence order (the order of the compaction unit).
    pub inputs: Vec<RewriteInput>,
    /// The table's row type as Arrow; `None` takes the first input's. Every input must have
    /// these columns (by name, in order) in types Arrow can read as these.
    pub table_schema: Option<SchemaRef>,
    /// Directory of the bucket, relative to the storage root (no trailing `/`).
    pub output_dir: String,
    /// File-name prefix of the new files, e.g. `data-<uuid>-`; files are `<prefix><n>.parquet`.
    /// The caller makes it unique (the core has no randomness).
    pub file_prefix: String,
    /// Level of the new files (0 for append tables).
    pub output_level: Level,
    /// Stamped into each output's metadata (the core reads no clock).
    pub creation_time_ms: i64,
    /// Collect per-column min/max/null counts of each output.
    pub collect_value_stats: bool,
    /// Paimon's type of each column of the output, by position, when the caller knows them
    /// (empty otherwise): ORC declares `CHAR(n)` and `VARCHAR(n)` by them.
    pub column_types: Vec<crate::types::DataType>,
}

/// One new file.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RewrittenFile {
    /// Path relative to the storage root.
    pub path: String,
    /// Manifest metadata: file source COMPACT, the requested level, sequence range, row count.
    pub meta: CompactionFile,
    /// Per top-level column, when asked for.
    pub value_stats: Option<Vec<ColumnStats>>,
    /// Its file index (`file-index.*`), embedded or in a file beside it.
    #[serde(default)]
    pub file_index: Option<FileIndex>,
}

/// The outcome of an append rewrite.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AppendRewriteResult {
    /// New files in order (their sequence ranges follow each other).
    pub outputs: Vec<RewrittenFile>,
    /// The last output is smaller than `compaction.file-size` and goes back into the queue
    /// (compaction.md §13.3).
    pub requeue_last: bool,
    /// What the rewrite read, wrote and decided (fast copy, dictionary passthrough), for logs
    /// and the job report.
    pub metrics: RewriteMetrics,
}

/// An output format other than Parquet, and what it is written with.
enum OtherFormat {
    Orc(Arc<OrcWriteSettings>),
    /// The codec named by `key` (the spec needs the output schema).
    Avro {
        codec: String,
        key: String,
    },
}

/// Settings derived once from the options.
struct Settings {
    props: WriterProperties,
    compression: Compression,
    dict_cfg: Arc<DictConfig>,
    fast_copy: bool,
    /// Which writer takes forwarded dictionaries.
    passthrough_writer: PassthroughWriter,
    target_file_size: u64,
    block_size: u64,
    enable_dictionary: bool,
    /// Encoded pages held in memory per output file before the rest spills (`None`: never).
    spill_threshold: Option<usize>,
    /// The host's zstd, when it offers one ([`crate::host_codec`]).
    offload: Option<Arc<CodecOffload>>,
    /// The most bytes of a column chunk one read fetches (`None`: no limit).
    read_window: Option<u64>,
    /// Of the new files' names ([`CoreOptions::file_extension`]).
    extension: String,
    /// The output format when it is not Parquet (ORC or Avro: decoded rows only, no fast
    /// copy, no dictionary passthrough); `None` for Parquet.
    other_format: Option<OtherFormat>,
    /// The file index each new file gets (`file-index.*`).
    file_index: Option<Arc<crate::rewrite::file_index::FileIndexSpec>>,
}

impl Settings {
    /// `req`'s output format is `format` (`parquet` or `orc`).
    fn new(
        options: &CoreOptions,
        offload: Option<Arc<CodecOffload>>,
        req: &AppendRewrite,
        format: &str,
    ) -> Result<Self> {
        let (name, key) = options.compression_for(req.output_level.get(), false);
        let orc = match format {
            "parquet" => None,
            "orc" => Some(OtherFormat::Orc(Arc::new(writer_settings::orc_settings(
                options,
                name,
                key,
                &req.column_types,
            )?))),
            "avro" => Some(OtherFormat::Avro {
                codec: name.to_string(),
                key: key.to_string(),
            }),
            other => {
                return Err(Error::unsupported(format!(
                    "append rewrite writes Parquet, ORC and Avro; level {} is configured as \
                     '{other}'",
                    req.output_level.get()
                )))
            }
        };
        let compression = if orc.is_some() {
            // The Parquet settings of an ORC output are unused.
            Compression::UNCOMPRESSED
        } else {
            writer_settings::compression(options)?
        };
        // Fail on an unwritable codec now, not after outputs exist.
        PageCompressor::new(compression, None)?;
        let props = writer_settings::writer_properties(options, compression)?;
        let file_index = crate::rewrite::file_index::FileIndexSpec::from_options(options)?;
        // A copied row group is never decoded, so nothing would feed its file index; an ORC
        // output takes decoded rows only.
        let fast_copy = options.engine.fast_copy.get()? && file_index.is_none() && orc.is_none();
        let passthrough_writer = options.engine.passthrough_writer.get()?;
        let dict_cfg = Arc::new(
            DictConfig::new(compression, &props, writer_settings::dict_writers(options)?)
                .with_offload(offload.clone()),
        );
        Ok(Settings {
            props,
            compression,
            dict_cfg,
            fast_copy,
            passthrough_writer,
            target_file_size: options.target_file_size,
            block_size: options.parquet.block_size,
            enable_dictionary: options.parquet.enable_dictionary,
            spill_threshold: options.engine.spill_threshold.get()?,
            offload,
            read_window: Some(options.engine.append_read_window.get()?).filter(|&w| w > 0),
            extension: options.file_extension(format),
            file_index,
            other_format: orc,
        })
    }
}

/// The output schema: Arrow types without dictionaries (a dictionary-typed table schema or an
/// input written from dictionary arrays must not leak dictionary types into the file).
fn plain_schema(schema: &Schema) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Dictionary(_, v) => f.as_ref().clone().with_data_type(v.as_ref().clone()),
            _ => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// The Arrow schema a file declares (its embedded Arrow schema if any, else derived).
fn file_arrow_schema(input: &InputFile) -> Result<Schema> {
    let fm = input.metadata.file_metadata();
    parquet_to_arrow_schema(fm.schema_descr(), fm.key_value_metadata())
        .map_err(|e| read::corrupt(&input.path, e))
}

/// Checks that `input` has the output's columns, by name and in order (Paimon matches by name,
/// falling back to case-insensitive).
fn check_columns(input: &InputFile, file_schema: &Schema, output: &Schema) -> Result<()> {
    let theirs = file_schema.fields();
    let ours = output.fields();
    if theirs.len() != ours.len() {
        return Err(read::corrupt(
            &input.path,
            format!(
                "schema does not match the table: {} columns, the table has {}",
                theirs.len(),
                ours.len()
            ),
        ));
    }
    for (t, o) in theirs.iter().zip(ours) {
        if t.name() != o.name() && !t.name().eq_ignore_ascii_case(o.name()) {
            return Err(read::corrupt(
                &input.path,
                format!(
                    "schema does not match the table: column '{}' where the table has '{}'",
                    t.name(),
                    o.name()
                ),
            ));
        }
    }
    Ok(())
}

/// The schema to read one file as: the file's own fields (names, nullability and field
/// metadata such as Parquet field ids, which Arrow requires to match the file) with the output's
/// data types, and `Dictionary(Int32, Utf8)` on the columns forwarded from this file.
fn read_schema(file: &Schema, output: &Schema, forward: &[bool]) -> SchemaRef {
    let fields: Vec<Field> = file
        .fields()
        .iter()
        .zip(output.fields())
        .enumerate()
        .map(|(i, (f, o))| {
            let data_type = if forward.get(i).copied().unwrap_or(false) {
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
            } else {
                o.data_type().clone()
            };
            f.as_ref().clone().with_data_type(data_type)
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// Gives a writer-side error (which knows no file) the name of the input being copied.
fn attribute(e: Error, input: &str) -> Error {
    match &e.kind {
        ErrorKind::CorruptInput { file: None } => {
            let why = e
                .message
                .strip_prefix("corrupt input: ")
                .unwrap_or(&e.message);
            Error::corrupt(Some(input), why)
        }
        _ => e,
    }
}

/// What the append rewrite records about each output file: its sequence numbers (renumbered
/// from the first input's), its manifest entry and statistics, and the writer's counters.
struct AppendFiles<'r> {
    req: &'r AppendRewrite,
    next_seq: i64,
    /// The dictionary writers' counters of forwarded columns, over every file.
    counters: DictWriterCounters,
    dictionary_arrays_decoded: u64,
    output_files: u64,
    output_bytes: u64,
    output_rows: u64,
    /// An empty file index, cloned for each new file.
    index: Option<FileIndexBuilder>,
    storage: Arc<dyn Storage>,
}

impl Recorder for AppendFiles<'_> {
    type File = Option<FileIndexBuilder>;
    type Done = RewrittenFile;

    fn start(&mut self) -> Option<FileIndexBuilder> {
        self.index.clone()
    }

    fn record(&mut self, file: &mut Option<FileIndexBuilder>, part: &RecordBatch) -> Result<()> {
        match file {
            Some(index) => index.add(part),
            None => Ok(()),
        }
    }

    fn flushed(&mut self, writer: &ParquetFileWriter) {
        self.counters.add(&writer.counters);
        self.dictionary_arrays_decoded += writer.dictionary_arrays_decoded;
    }

    fn finish(&mut self, file: FinishedFile<Option<FileIndexBuilder>>) -> Result<RewrittenFile> {
        let (rows, size) = (file.rows, file.size);
        let file_index = match file.state {
            Some(index) => Some(index.finish(self.storage.as_ref(), &file.path, &file.name)?),
            None => None,
        };
        let min_seq = self.next_seq;
        self.next_seq += rows as i64;
        let meta = CompactionFile {
            file_name: file.name,
            file_size: size,
            row_count: rows,
            min_key: Key::default(),
            max_key: Key::default(),
            min_sequence_number: SequenceNumber(min_seq),
            max_sequence_number: SequenceNumber(min_seq + rows as i64 - 1),
            level: self.req.output_level,
            delete_row_count: Some(0),
            creation_time_ms: self.req.creation_time_ms,
            file_source: FileSource::Compact,
            has_deletion_vector: false,
        };
        self.output_files += 1;
        self.output_bytes += size;
        self.output_rows += rows;
        Ok(RewrittenFile {
            path: file.path,
            meta,
            value_stats: self.req.collect_value_stats.then_some(file.column_stats),
            file_index,
        })
    }

    fn path(done: &RewrittenFile) -> &str {
        &done.path
    }

    fn extra_paths(done: &RewrittenFile) -> Vec<&str> {
        FileIndex::written_file(done.file_index.as_ref())
    }
}

/// The outputs of one rewrite: the rolling files and what the rewrite measured.
struct Outputs<'s, 'r> {
    storage: &'s Arc<dyn Storage>,
    settings: &'r Settings,
    schema: SchemaRef,
    descr: Arc<SchemaDescriptor>,
    files: RollingWriter<'s, AppendFiles<'r>>,
    metrics: RewriteMetrics,
}

impl Outputs<'_, '_> {
    fn write_batch(&mut self, batch: &RecordBatch, input: &str) -> Result<()> {
        self.files.write(batch, &|e| attribute(e, input))
    }

    fn copy_row_group(
        &mut self,
        rg: &parquet::file::metadata::RowGroupMetaData,
        window: &FileWindow,
        indexes: &parquet::file::metadata::page_index::RowGroupPageIndex,
        input: &str,
    ) -> Result<()> {
        self.files
            .splice(rg, window, indexes, &|e| attribute(e, input))
    }

    /// Undoes everything: aborts the open output, deletes the finished ones. Returns a note on
    /// anything that could not be cleaned up.
    fn abort(&mut self) -> Option<String> {
        let failures = self.files.abort();
        (!failures.is_empty()).then(|| failures.join("; "))
    }

    /// The finished files and the metrics, once every input is written.
    fn finish(self) -> (Vec<RewrittenFile>, RewriteMetrics) {
        let Outputs {
            files, mut metrics, ..
        } = self;
        let recorded = &files.recorder;
        let passthrough = &mut metrics.passthrough;
        passthrough.dictionaries_mapped += recorded.counters.dictionaries_mapped;
        passthrough.rows_mapped += recorded.counters.rows_mapped;
        passthrough.rows_hashed += recorded.counters.rows_hashed;
        passthrough.rows_plain += recorded.counters.rows_plain;
        passthrough.fallbacks_to_plain += recorded.counters.fallbacks;
        passthrough.dictionary_arrays_decoded += recorded.dictionary_arrays_decoded;
        metrics.output_files += recorded.output_files;
        metrics.output_bytes += recorded.output_bytes;
        metrics.output_rows += recorded.output_rows;
        metrics.storage_writes += files.storage_writes;
        metrics.spilled_bytes += files.spilled_bytes;
        (files.done, metrics)
    }
}

/// Opens an input: its size and footer, with the page index when fast copy may carry it over.
fn open_input(
    storage: &dyn Storage,
    path: &str,
    io: &mut IoCounters,
    fast_copy: bool,
) -> Result<InputFile> {
    let policy = if fast_copy {
        FooterPolicy::SPLICE
    } else {
        FooterPolicy::ROWS
    };
    read_footer(storage, path, policy, io)
}

/// The output schema and Parquet schema, from the table schema or the first input.
fn output_schema(
    req: &AppendRewrite,
    first: &InputFile,
) -> Result<(SchemaRef, Arc<SchemaDescriptor>)> {
    let first_schema = file_arrow_schema(first)?;
    let first_descr = first.metadata.file_metadata().schema_descr_ptr();
    match &req.table_schema {
        None => Ok((plain_schema(&first_schema), first_descr)),
        Some(table) => {
            let schema = plain_schema(table);
            // Keep the inputs' own Parquet schema (field ids, physical types) when the first
            // input has exactly the table's columns (types and nullability); otherwise derive
            // it from Arrow (field ids then come from `PARQUET:field_id` field metadata).
            let first_plain = plain_schema(&first_schema);
            let same_shape = check_columns(first, &first_schema, &schema).is_ok()
                && first_plain
                    .fields()
                    .iter()
                    .zip(schema.fields())
                    .all(|(a, b)| {
                        a.data_type() == b.data_type() && a.is_nullable() == b.is_nullable()
                    });
            if same_shape {
                Ok((schema, first_descr))
            } else {
                let descr = ArrowSchemaConverter::new()
                    .convert(&schema)
                    .map_err(|e| Error::unsupported(format!("table schema as Parquet: {e}")))?;
                Ok((schema, Arc::new(descr)))
            }
        }
    }
}

/// Rewrites the inputs into new files; see the module documentation. `storage`: see
/// [`crate::io`].
pub fn rewrite_append(
    storage: &dyn ToIo,
    req: &AppendRewrite,
    options: &CoreOptions,
) -> Result<AppendRewriteResult> {
    let shared = storage.to_io();
    let storage = &shared.storage;
    let format = options
        .file_format_for_level(req.output_level.get())
        .to_string();
    let settings = Settings::new(
        options,
        shared.host_codec.clone().map(CodecOffload::new),
        req,
        &format,
    )?;
    let mut metrics = RewriteMetrics::default();
    metrics.fast_copy.requested = settings.fast_copy;
    metrics.passthrough.requested = options.parquet.dictionary_passthrough;
    let Some(first) = req.inputs.first() else {
        return Ok(AppendRewriteResult {
            outputs: Vec::new(),
            requeue_last: false,
            metrics,
        });
    };
    let prefix = if req.output_dir.is_empty() {
        req.file_prefix.clone()
    } else {
        format!("{}/{}", req.output_dir, req.file_prefix)
    };
    if let Some(clash) = req.inputs.iter().find(|i| i.path.starts_with(&prefix)) {
        return Err(Error::illegal_state(format!(
            "output prefix '{prefix}' would name input '{}'",
            clash.path
        )));
    }

    let mut io = IoCounters::default();
    let first_input = open_input(storage.as_ref(), &first.path, &mut io, settings.fast_copy)?;
    let (schema, descr) = output_schema(req, &first_input)?;
    let policy = PassthroughPolicy::new(options, &format, &schema);
    metrics.passthrough.veto = policy.veto.clone();
    metrics.passthrough.writer = match settings.passthrough_writer {
        PassthroughWriter::Mapping => "mapping".into(),
        #[cfg(feature = "bench-comparisons")]
        PassthroughWriter::Arrow => "arrow".into(),
    };
    let leaves = field_leaves(&descr);
    for (f, field) in schema.fields().iter().enumerate() {
        if policy.mapped[f] {
            metrics.passthrough.columns.push(field.name().clone());
        }
        if policy.file_index[f] {
            metrics
                .passthrough
                .file_index_columns
                .push(field.name().clone());
        }
    }
    let forwarded = policy
        .mapped
        .iter()
        .map(|&mapped| match (mapped, settings.passthrough_writer) {
            (false, _) => Forwarded::No,
            (true, PassthroughWriter::Mapping) => Forwarded::Mapped,
            #[cfg(feature = "bench-comparisons")]
            (true, PassthroughWriter::Arrow) => Forwarded::Arrow,
        })
        .collect();
    let spec = FileSpec {
        forwarded,
        spill_budget: settings.spill_threshold,
        ..FileSpec::new(
            schema.clone(),
            descr.clone(),
            settings.props.clone(),
            settings.dict_cfg.clone(),
        )
    };
    let index = settings
        .file_index
        .as_ref()
        .map(|spec| spec.builder(&schema))
        .transpose()?
        .flatten();
    let recorder = AppendFiles {
        index,
        storage: storage.clone(),
        req,
        next_seq: first.meta.min_sequence_number.0,
        counters: DictWriterCounters::default(),
        dictionary_arrays_decoded: 0,
        output_files: 0,
        output_bytes: 0,
        output_rows: 0,
    };
    let output_format = match &settings.other_format {
        Some(OtherFormat::Orc(orc)) => OutputFormat::Orc {
            schema: schema.clone(),
            settings: orc.clone(),
        },
        Some(OtherFormat::Avro { codec, key }) => OutputFormat::Avro {
            schema: schema.clone(),
            spec: Arc::new(AvroSpec::new(
                options,
                &schema,
                &req.column_types,
                codec,
                key,
            )?),
        },
        None => OutputFormat::Parquet(Arc::new(spec)),
    };
    let files = RollingWriter::new(
        storage,
        output_format,
        &req.output_dir,
        &req.file_prefix,
        settings.target_file_size,
        recorder,
    )
    .with_extension(settings.extension.clone());
    let mut outputs = Outputs {
        storage,
        settings: &settings,
        schema: schema.clone(),
        descr: descr.clone(),
        files,
        metrics,
    };

    let mut first_input = Some(first_input);
    let run = (|| -> Result<()> {
        for input in &req.inputs {
            let file = match first_input.take() {
                Some(f) => f,
                None => open_input(
                    storage.as_ref(),
                    &input.path,
                    &mut io,
                    outputs.settings.fast_copy,
                )?,
            };
            rewrite_one(&mut outputs, &mut io, &policy, &leaves, input, &file)?;
        }
        outputs.files.roll()
    })();
    outputs.metrics.storage_reads = io.reads;
    outputs.metrics.storage_read_bytes = io.bytes;
    if let Err(e) = run {
        return Err(match outputs.abort() {
            None => e,
            Some(note) => e.with_note(format_args!("cleanup failed: {note}")),
        });
    }
    let (done, mut metrics) = outputs.finish();
    let requeue_last = done
        .last()
        .is_some_and(|f| should_requeue_last(f.meta.file_size, options.compaction_file_size));
    metrics.input_files = req.inputs.len() as u64;
    metrics.host_codec = crate::host_codec::metrics_of(settings.offload.as_ref());
    Ok(AppendRewriteResult {
        outputs: done,
        requeue_last,
        metrics,
    })
}

/// Rewrites a file written under an older schema version: decoded (never fast-copied or
/// passed through), projected onto the output schema.
fn rewrite_evolved(
    out: &mut Outputs<'_, '_>,
    io: &mut IoCounters,
    input: &RewriteInput,
    file: &InputFile,
    rows: u64,
    deleted: Option<&[u64]>,
    evolution: &Evolution,
) -> Result<()> {
    let path = input.path.as_str();
    if out.settings.fast_copy {
        out.metrics.fast_copy.refused.push(FastCopyRefusal {
            file: path.to_string(),
            reason: FastCopyRefusalReason::OlderSchema,
        });
    }
    let file_schema = file_arrow_schema(file)?;
    // Read every column of the file in its own types; the evolution keeps the mapped ones.
    let hint = plain_schema(&file_schema);
    decode_into(out, io, file, rows, deleted, hint, Some(evolution))
}

/// The batches of one input file: the push decoder's, or page by page when the host's zstd
/// decompresses (arrow-rs's push decoder decompresses with its own codec).
enum Decoder {
    Pushed(BatchStream),
    Paged(PageStream),
}

impl Decoder {
    fn next(
        &mut self,
        storage: &dyn Storage,
        path: &str,
        io: &mut IoCounters,
    ) -> Result<Option<RecordBatch>> {
        match self {
            Decoder::Pushed(s) => s.next(storage, path, io),
            Decoder::Paged(s) => {
                let batch = s.next_batch();
                let got = s.take_io();
                io.reads += got.reads;
                io.bytes += got.bytes;
                batch
            }
        }
    }
}

/// Decodes `file` (as `hint`, skipping `deleted` positions) into the outputs, through
/// `evolution` when the file is of an older schema version, and checks the row count.
fn decode_into(
    out: &mut Outputs<'_, '_>,
    io: &mut IoCounters,
    file: &InputFile,
    rows: u64,
    deleted: Option<&[u64]>,
    hint: SchemaRef,
    evolution: Option<&Evolution>,
) -> Result<()> {
    let path = file.path.as_str();
    let reader = read::reader_metadata(file, hint)?;
    let sel = match deleted {
        Some(d) => {
            read::check_deletion_vector(path, d, rows)?;
            Some(read::deletion_selection(d, rows, 0..rows))
        }
        None => None,
    };
    // The push decoder fetches a row group's column chunks in one storage call and holds them
    // all while it decodes. That is the cheapest read of an ordinary file, but a row group of
    // 128 MB would be held whole (twice in the component: the host's copy and the guest's).
    // A file with a column chunk larger than the read window is therefore read page by page,
    // each column in windows of that size. With the host's zstd and a zstd file, pages are
    // always read so, through page readers that hand zstd bodies to the host; a chunk within
    // the window is then still one call.
    let offload = (out.settings.offload.as_ref())
        .filter(|_| crate::parquet_io::host_decompression::has_zstd(reader.metadata()));
    let window = out.settings.read_window;
    let oversized = window.is_some_and(|w| largest_chunk(file) > w);
    let mut stream = if offload.is_some() || oversized {
        Decoder::Paged(PageStream::new(
            out.storage,
            file,
            reader,
            sel,
            window.unwrap_or(u64::MAX),
            offload,
        )?)
    } else {
        Decoder::Pushed(BatchStream::new(file, reader, sel)?)
    };
    let mut decoded = 0u64;
    let output = out.schema.clone();
    while let Some(batch) = stream.next(out.storage.as_ref(), path, io)? {
        decoded += batch.num_rows() as u64;
        out.metrics.batches += 1;
        match evolution {
            Some(e) => out.write_batch(&e.apply(&batch, &output, path)?, path)?,
            None => out.write_batch(&batch, path)?,
        }
    }
    let expected = rows - deleted.map_or(0, |d| d.len() as u64);
    if decoded != expected {
        return Err(read::corrupt(
            path,
            format!("decoded {decoded} rows where {expected} were expected"),
        ));
    }
    out.metrics.deleted_rows += rows - expected;
    out.metrics.row_groups_decoded += file.metadata.num_row_groups() as u64;
    Ok(())
}

/// The compressed size of `file`'s largest column chunk.
fn largest_chunk(file: &InputFile) -> u64 {
    file.metadata
        .row_groups()
        .iter()
        .flat_map(|rg| rg.columns())
        .map(|c| u64::try_from(c.compressed_size()).unwrap_or(0))
        .max()
        .unwrap_or(0)
}

/// Copies one input into the outputs: spliced row groups when fast copy takes it, else decoded.
fn rewrite_one(
    out: &mut Outputs<'_, '_>,
    io: &mut IoCounters,
    policy: &PassthroughPolicy,
    leaves: &[std::ops::Range<usize>],
    input: &RewriteInput,
    file: &InputFile,
) -> Result<()> {
    let path = input.path.as_str();
    let rows = file.metadata.file_metadata().num_rows().max(0) as u64;
    if input.meta.row_count != 0 && input.meta.row_count != rows {
        return Err(read::corrupt(
            path,
            format!(
                "the manifest says {} rows, the file has {rows}",
                input.meta.row_count
            ),
        ));
    }
    let file_schema = file_arrow_schema(file)?;
    let evolution = match input.columns.as_deref() {
        Some(map) => Some(Evolution::new(&file.path, &file_schema, &out.schema, map)?),
        None => {
            check_columns(file, &file_schema, &out.schema)?;
            // The same types spelled differently by another writer (a list's item field is
            // `item` for arrow-rs, `element` for parquet-mr and pyarrow; Parquet field ids as
            // nested metadata): read the file as it is and rebuild its arrays by position.
            let plain = plain_schema(&file_schema);
            let renamed_nested = plain
                .fields()
                .iter()
                .zip(out.schema.fields())
                .any(|(f, o)| {
                    f.data_type() != o.data_type()
                        && same_but_spelling(f.data_type(), o.data_type())
                });
            if renamed_nested {
                let map: Vec<Option<ColumnSource>> = plain
                    .fields()
                    .iter()
                    .map(|f| Some(ColumnSource::named(f.name())))
                    .collect();
                Some(Evolution::new(&file.path, &plain, &out.schema, &map)?)
            } else {
                None
            }
        }
    };
    out.metrics.input_bytes += file.size;
    out.metrics.input_rows += rows;

    let deleted = input.deleted_rows.as_deref().filter(|d| !d.is_empty());
    if let Some(evolution) = evolution {
        return rewrite_evolved(out, io, input, file, rows, deleted, &evolution);
    }
    if out.settings.fast_copy {
        match fast_copy::check(
            &file.metadata,
            &out.descr,
            out.settings.compression,
            out.settings.enable_dictionary,
            out.settings.block_size,
            deleted.is_some(),
        ) {
            Ok(()) => {
                for (i, rg) in file.metadata.row_groups().iter().enumerate() {
                    let range = fast_copy::row_group_range(rg);
                    let (_, mut buffers) =
                        read::fetch(out.storage.as_ref(), path, std::slice::from_ref(&range), io)?;
                    let window = FileWindow {
                        base: range.start,
                        bytes: buffers.pop().unwrap_or_default(),
                    };
                    let indexes = file.metadata.page_index_for_row_group(i);
                    out.copy_row_group(rg, &window, &indexes, path)?;
                    out.metrics.fast_copy.row_groups_copied += 1;
                    out.metrics.fast_copy.bytes_copied += range.end - range.start;
                }
                out.metrics.fast_copy.files_copied += 1;
                return Ok(());
            }
            Err(reason) => out.metrics.fast_copy.refused.push(FastCopyRefusal {
                file: path.to_string(),
                reason,
            }),
        }
    }

    // Decode: forwarded STRING columns are read as dictionaries, everything else as values.
    let leaf_of_field: Vec<Option<usize>> = leaves
        .iter()
        .map(|r| (r.len() == 1).then_some(r.start))
        .collect();
    let (forward, report) = policy.for_file(path, &file.metadata, &out.schema, &leaf_of_field);
    if policy.active() {
        out.metrics.passthrough.files.push(report);
    }
    let hint = read_schema(&file_schema, &out.schema, &forward);
    decode_into(out, io, file, rows, deleted, hint, None)
}
