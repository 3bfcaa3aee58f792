//! The `compactor` interface: rewriting an append bucket's Parquet files into new ones.

use std::sync::Arc;

use super::{planner::options_map, to_json, Options, Services};
use crate::meta::Level;
use crate::options::{CoreOptions, TableKind};
use crate::rewrite::{rewrite_append, AppendRewrite, RewriteInput};
use crate::storage::Storage;
use crate::Result;

/// One input file of an append rewrite, as its manifest entry describes it (the WIT
/// `input-file`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AppendInputFile {
    /// Path of the Parquet file, relative to the storage root.
    pub path: String,
    /// Rows in the file; 0 when unknown (then not checked).
    pub row_count: u64,
    /// Smallest sequence number of the file's rows, as its manifest entry records it. The
    /// first input's is where the outputs' renumbering starts.
    pub min_sequence_number: i64,
    /// Largest sequence number of the file's rows, as its manifest entry records it.
    pub max_sequence_number: i64,
    /// Row positions its deletion vector marks as deleted, ascending.
    pub deleted_rows: Option<Vec<u64>>,
}

/// What to rewrite and where (the WIT `append-request`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AppendRequest {
    /// The files, in sequence order.
    pub inputs: Vec<AppendInputFile>,
    /// Directory of the bucket, relative to the storage root.
    pub output_dir: String,
    /// New files are `<file_prefix><n>.parquet`; the caller makes the prefix unique.
    pub file_prefix: String,
    /// The table's options (`target-file-size`, `file.compression`, ...); parsed as an append
    /// table's, so a malformed one fails the call before anything is read.
    pub options: Options,
    /// Stamped into the outputs' metadata.
    pub creation_time_ms: i64,
}

/// One new file (the WIT `output-file`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OutputFile {
    /// Relative to the storage root.
    pub path: String,
    /// File size in bytes.
    pub size: u64,
    /// Rows written, after dropping the rows the inputs' deletion vectors mark.
    pub row_count: u64,
    /// First sequence number of the file: rows are renumbered consecutively from the first
    /// input's minimum, so each output continues where the previous one ended.
    pub min_sequence_number: i64,
    /// Last sequence number of the file: `min_sequence_number + row_count - 1`.
    pub max_sequence_number: i64,
    /// LSM level of the file; always 0 here (append tables keep their files at level 0).
    pub level: u32,
}

/// What an append rewrite wrote (the WIT `append-result`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AppendResult {
    /// The new files, in sequence order (each one's sequence range follows the previous one's).
    pub outputs: Vec<OutputFile>,
    /// The last output is small and rejoins the compaction queue.
    pub requeue_last: bool,
    /// The rewrite's metrics ([`crate::rewrite::RewriteMetrics`]) as JSON.
    pub metrics_json: String,
}

/// Rewrites an append bucket's Parquet files into new files rolled at `target-file-size`,
/// reading and writing only through `storage`. Outside the table layer there is no table
/// schema: the first input's columns are the output's, the files go to level 0, and no
/// per-column statistics are collected. Reports the start and the end on `services.progress`
/// (phase `rewrite`, unit `files`). On any error every output written so far is deleted and
/// the inputs are untouched.
///
/// ```rust
/// use std::sync::Arc;
/// use arrow_array::Int64Array;
/// use arrow_schema::{DataType, Field, Schema};
/// use arrow_array::RecordBatch;
/// use paimon_compact::api::{compact_append_files, AppendInputFile, AppendRequest, Services};
/// use paimon_compact::storage::{MemoryStorage, Storage};
///
/// // Two small Parquet files of one Int64 column.
/// let storage = Arc::new(MemoryStorage::new());
/// let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
/// let mut inputs = Vec::new();
/// for f in 0..2i64 {
///     let ids = Int64Array::from_iter_values(f * 100..f * 100 + 100);
///     let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(ids)])?;
///     let mut bytes = Vec::new();
///     let mut w = parquet::arrow::ArrowWriter::try_new(&mut bytes, schema.clone(), None)?;
///     w.write(&batch)?;
///     w.close()?;
///     let path = format!("t/bucket-0/data-in-{f}.parquet");
///     storage.put(&path, bytes);
///     inputs.push(AppendInputFile {
///         path,
///         row_count: 100,
///         min_sequence_number: f * 100,
///         max_sequence_number: f * 100 + 99,
///         deleted_rows: None,
///     });
/// }
/// let request = AppendRequest {
///     inputs,
///     output_dir: "t/bucket-0".into(),
///     file_prefix: "data-out-".into(),
///     options: vec![("file.compression".into(), "zstd".into())],
///     creation_time_ms: 1_700_000_000_000,
/// };
/// let result = compact_append_files(storage.clone(), &request, &Services::none())?;
/// assert_eq!(result.outputs.len(), 1);
/// assert_eq!(result.outputs[0].row_count, 200);
/// assert!(storage.size(&result.outputs[0].path)? > 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn compact_append_files(
    storage: Arc<dyn Storage>,
    request: &AppendRequest,
    services: &Services<'_>,
) -> Result<AppendResult> {
    // The file-level API reports paths, sizes and sequence ranges, not manifest fields: a file
    // index would have nowhere to go (an index file beside an output would be unreported),
    // so its outputs have none, which readers treat as "read the file". Table jobs write them.
    let mut options = options_map(&request.options);
    options.retain(|k, _| !k.starts_with("file-index."));
    let options = CoreOptions::parse(TableKind::Append, &options)?;
    let req = AppendRewrite {
        inputs: request
            .inputs
            .iter()
            .map(|f| {
                RewriteInput::from_parts(
                    f.path.clone(),
                    f.row_count,
                    f.min_sequence_number,
                    f.max_sequence_number,
                    f.deleted_rows.clone(),
                )
            })
            .collect(),
        table_schema: None,
        output_dir: request.output_dir.clone(),
        file_prefix: request.file_prefix.clone(),
        output_level: Level::ZERO,
        creation_time_ms: request.creation_time_ms,
        collect_value_stats: false,
        column_types: Vec::new(),
    };
    let total = req.inputs.len() as u64;
    services.report(
        "rewrite",
        0,
        total,
        "files",
        format!("rewriting {total} files into {}", req.output_dir),
    );
    let result = rewrite_append(&services.io(storage), &req, &options)?;
    services.report(
        "rewrite",
        total,
        total,
        "files",
        format!(
            "wrote {} files ({} bytes)",
            result.outputs.len(),
            result.outputs.iter().map(|o| o.meta.file_size).sum::<u64>()
        ),
    );
    Ok(AppendResult {
        outputs: result
            .outputs
            .iter()
            .map(|o| OutputFile {
                path: o.path.clone(),
                size: o.meta.file_size,
                row_count: o.meta.row_count,
                min_sequence_number: o.meta.min_sequence_number.0,
                max_sequence_number: o.meta.max_sequence_number.0,
                level: o.meta.level.get(),
            })
            .collect(),
        requeue_last: result.requeue_last,
        metrics_json: to_json(&result.metrics)?,
    })
}
