//! Data files in formats the rewriters do not decode themselves: Avro
//! ([`super::avro_data`]) and ORC ([`crate::orc_io`]). They are read as Arrow batches of the
//! file's data-file schema; the postpone replay takes the batches, and the merge and the
//! append rewrite read a temporary Parquet copy ([`transcode_to_parquet`]), since everything
//! downstream of them (deletion vectors by position, dictionary reads, fast copy) reads
//! Parquet.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::error::{Error, Result};
use crate::storage::{Storage, StorageWriter};

/// The format of a data file, from its name (Paimon names every data file with its format's
/// extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DataFormat {
    Parquet,
    Orc,
    Avro,
}

impl DataFormat {
    /// The format of `name`, `None` for an extension this build does not read.
    pub(crate) fn of(name: &str) -> Option<Self> {
        if name.ends_with(".parquet") {
            Some(DataFormat::Parquet)
        } else if name.ends_with(".orc") {
            Some(DataFormat::Orc)
        } else if name.ends_with(".avro") {
            Some(DataFormat::Avro)
        } else {
            None
        }
    }

    /// Read through a Parquet copy by the merge and the append rewrite.
    pub(crate) fn is_foreign(name: &str) -> bool {
        matches!(
            DataFormat::of(name),
            Some(DataFormat::Orc | DataFormat::Avro)
        )
    }
}

/// Reads the Avro or ORC data file `path` as batches of `schema` (columns by name), handing
/// each to `each`; the file must hold `rows` rows, as its metadata records.
pub(crate) fn read_batches(
    storage: &dyn Storage,
    path: &str,
    schema: &SchemaRef,
    rows: u64,
    each: impl FnMut(RecordBatch) -> Result<()>,
) -> Result<()> {
    match DataFormat::of(path) {
        Some(DataFormat::Avro) => {
            super::avro_data::read_avro_batches(storage, path, schema, rows, each)
        }
        Some(DataFormat::Orc) => {
            crate::orc_io::read::read_orc_batches(storage, path, schema, Some(rows), each)
        }
        _ => Err(Error::internal(format!(
            "'{path}' is not an Avro or ORC data file"
        ))),
    }
}

/// Copies the Avro or ORC data file `input` (of `rows` rows, read as `schema`) into the
/// Parquet file `out`: the same rows in the same order, so deletion-vector positions and a
/// sorted run's order carry over, and the rewriters read the copy as they read any Parquet
/// input. The copy streams to storage as the input is decoded ([`write_temporary_parquet`]),
/// with a fast codec and no statistics: it is read once and deleted. Neither file is held
/// whole, so an input larger than the job's memory is copied within a bounded one.
pub(crate) fn transcode_to_parquet(
    storage: &dyn Storage,
    input: &str,
    out: &str,
    schema: &SchemaRef,
    rows: u64,
) -> Result<()> {
    write_temporary_parquet(storage, out, schema, |write| {
        read_batches(storage, input, schema, rows, |batch| write(&batch))
    })
}

/// Writes a Parquet file that only this job reads back, once, soon (the replay's sorted runs,
/// the merge's copies of Avro and ORC inputs): a fast codec and no statistics. `fill` writes
/// the batches. The file streams to storage as it is written, in row groups of at most
/// [`TEMPORARY_ROW_GROUP_BYTES`] of encoded pages, so what it holds does not grow with the
/// input (a foreign data file may be larger than the job's memory). On failure the storage
/// writer is aborted: nothing is left at `path`. (`ArrowWriter<&mut Vec<u8>>`, as the demo
/// writer instantiates it, drained after every batch: another writer type would link a second
/// copy of arrow-rs's writer into the component. Draining is sound because the writer counts
/// the bytes it wrote itself and never reads its output back.)
pub(crate) fn write_temporary_parquet(
    storage: &dyn Storage,
    path: &str,
    schema: &SchemaRef,
    fill: impl FnOnce(&mut dyn FnMut(&RecordBatch) -> Result<()>) -> Result<()>,
) -> Result<()> {
    let mut out = storage.create_writer(path)?;
    let written =
        stream_temporary_parquet(out.as_mut(), path, schema, TEMPORARY_ROW_GROUP_BYTES, fill);
    match written {
        Ok(()) => {
            out.finish()?;
            Ok(())
        }
        Err(e) => {
            // The copy is the job's own file: abort it and report what failed.
            let _ = out.abort();
            Err(e)
        }
    }
}

/// Encoded pages of the row group being written that make a temporary copy flush it.
pub(crate) const TEMPORARY_ROW_GROUP_BYTES: usize = 8 << 20;

fn stream_temporary_parquet(
    out: &mut dyn StorageWriter,
    path: &str,
    schema: &SchemaRef,
    row_group_bytes: usize,
    fill: impl FnOnce(&mut dyn FnMut(&RecordBatch) -> Result<()>) -> Result<()>,
) -> Result<()> {
    use parquet::basic::Compression;
    use parquet::file::properties::{EnabledStatistics, WriterProperties};
    let props = WriterProperties::builder()
        .set_compression(Compression::LZ4_RAW)
        .set_statistics_enabled(EnabledStatistics::None)
        .build();
    let fail = |e: parquet::errors::ParquetError| Error::internal(format!("writing '{path}': {e}"));
    let mut bytes = Vec::new();
    let mut writer = parquet::arrow::ArrowWriter::try_new(&mut bytes, schema.clone(), Some(props))
        .map_err(fail)?;
    fill(&mut |batch| {
        writer.write(batch).map_err(fail)?;
        if writer.in_progress_size() >= row_group_bytes {
            writer.flush().map_err(fail)?;
        }
        let written = writer.inner_mut();
        if !written.is_empty() {
            out.write(written)?;
            written.clear();
        }
        Ok(())
    })?;
    writer.close().map_err(fail)?;
    out.write(&bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{Field, Schema};
    use parquet::file::reader::FileReader;
    use parquet::file::serialized_reader::SerializedFileReader;

    use super::*;
    use crate::storage::MemoryStorage;

    fn batch(schema: &SchemaRef, from: i64) -> RecordBatch {
        let keys: Vec<i64> = (from..from + 500).collect();
        let values: Vec<String> = keys.iter().map(|k| format!("value {k}")).collect();
        RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(keys)),
                Arc::new(StringArray::from(values)),
            ],
        )
        .unwrap()
    }

    #[test]
    fn a_temporary_copy_streams_in_row_groups_and_a_failed_one_leaves_nothing() {
        let schema: SchemaRef = Arc::new(Schema::new(vec![
            Field::new("k", arrow_schema::DataType::Int64, false),
            Field::new("v", arrow_schema::DataType::Utf8, false),
        ]));
        let storage = MemoryStorage::new();
        let batches: Vec<RecordBatch> = (0..3).map(|i| batch(&schema, i * 500)).collect();
        // A threshold of one byte: every batch closes a row group, sent on before the next.
        let mut out = storage.create_writer("copy.parquet").unwrap();
        stream_temporary_parquet(out.as_mut(), "copy.parquet", &schema, 1, |write| {
            batches.iter().try_for_each(write)
        })
        .unwrap();
        out.finish().unwrap();
        let bytes = bytes::Bytes::from(storage.get("copy.parquet").unwrap().to_vec());
        let reader = SerializedFileReader::new(bytes.clone()).unwrap();
        assert_eq!(reader.metadata().num_row_groups(), 3);
        let read: Vec<RecordBatch> =
            parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(bytes, 10_000)
                .unwrap()
                .collect::<std::result::Result<_, _>>()
                .unwrap();
        let read = arrow_select::concat::concat_batches(&schema, &read).unwrap();
        let all = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
        assert_eq!(read, all, "the same rows in the same order");

        // A fill that fails half-way: the error comes back and nothing is left at the path.
        let e = write_temporary_parquet(&storage, "failed.parquet", &schema, |write| {
            write(&batches[0])?;
            Err(Error::corrupt(Some("input.avro"), "a bad block"))
        })
        .unwrap_err();
        assert!(e.to_string().contains("a bad block"), "{e}");
        assert!(storage.get("failed.parquet").is_none());
    }
}
