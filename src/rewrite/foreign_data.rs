//! Data files in formats the rewriters do not decode themselves: Avro
//! ([`super::avro_data`]) and ORC ([`crate::orc_io`]). They are read as Arrow batches of the
//! file's data-file schema; the postpone replay takes the batches, and the merge and the
//! append rewrite read a temporary Parquet copy ([`transcode_to_parquet`]), since everything
//! downstream of them (deletion vectors by position, dictionary reads, fast copy) reads
//! Parquet.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::error::{Error, Result};
use crate::storage::Storage;

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
/// input. The copy is built in memory (a data file is one writer's file, rolled at
/// `target-file-size`) with a fast codec and no statistics: it is read once and deleted.
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
/// the merge's copies of Avro inputs): a fast codec and no statistics, built in memory and
/// stored whole. `fill` writes the batches. (`ArrowWriter<&mut Vec<u8>>`, as the demo writer
/// instantiates it: another writer type would link a second copy into the component.)
pub(crate) fn write_temporary_parquet(
    storage: &dyn Storage,
    path: &str,
    schema: &SchemaRef,
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
    fill(&mut |batch| writer.write(batch).map_err(fail))?;
    writer.close().map_err(fail)?;
    storage.write_all(path, &bytes)?;
    Ok(())
}
