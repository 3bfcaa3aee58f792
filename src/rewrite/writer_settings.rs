//! The writer settings a table's options ask for: Paimon's names for codecs
//! (`file.compression`, `file.compression.zstd-level`) and the `parquet.*` options, as arrow-rs
//! `WriterProperties`; the `orc.*` options as [`OrcWriteSettings`].

use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::{WriterProperties, WriterVersion};

use crate::error::{Error, Result};
use crate::options::CoreOptions;
use crate::orc_io::proto::{CompressionKind, TypeKind};
use crate::orc_io::write::{ColumnHint, OrcWriteSettings};
use crate::parquet_io::dictionary::DictWriters;

/// The columns this project's dictionary writers take (the engine options'
/// `paimon-compact.write.*-dictionary-writer`).
pub(crate) fn dict_writers(options: &CoreOptions) -> Result<DictWriters> {
    Ok(DictWriters {
        primitives: options.engine.primitive_dictionary_writer.get()?.is_ours(),
        strings: options.engine.string_dictionary_writer.get()?.is_ours(),
    })
}

/// The Parquet codec for `file.compression` (Paimon's names; `lz4` is Hadoop-framed LZ4 as in
/// parquet-mr, `lz4_raw` the raw block format).
pub(crate) fn compression(options: &CoreOptions) -> Result<Compression> {
    codec(options, &options.file_compression, "file.compression")
}

/// The Parquet codec Paimon's name `name` stands for, `key` being the option that named it.
pub(crate) fn codec(options: &CoreOptions, name: &str, key: &str) -> Result<Compression> {
    Ok(match name {
        "none" | "uncompressed" => Compression::UNCOMPRESSED,
        "snappy" => Compression::SNAPPY,
        "gzip" => Compression::GZIP(GzipLevel::default()),
        "lz4" => Compression::LZ4,
        "lz4_raw" | "lz4-raw" => Compression::LZ4_RAW,
        "zstd" => Compression::ZSTD(ZstdLevel::try_new(options.zstd_level).map_err(|e| {
            Error::invalid_option(
                "file.compression.zstd-level",
                &options.zstd_level.to_string(),
                e,
            )
        })?),
        "brotli" | "lzo" => {
            return Err(Error::unsupported(format!(
                "{key} '{name}' cannot be written by this build"
            )))
        }
        _ => {
            return Err(Error::invalid_option(
                key,
                name,
                "expected one of: none, snappy, gzip, lz4, lz4_raw, zstd",
            ))
        }
    })
}

fn usize_option(key: &str, v: u64) -> Result<usize> {
    usize::try_from(v).map_err(|_| Error::invalid_option(key, &v.to_string(), "too large"))
}

/// Writer settings from the `parquet.*` options, with `codec` (the caller's reading of
/// `file.compression` and its per-level and changelog variants). Row groups are cut by bytes
/// only (`parquet.block.size`), as parquet-mr does.
pub(crate) fn writer_properties(
    options: &CoreOptions,
    codec: Compression,
) -> Result<WriterProperties> {
    // Every rewrite starts here, so this is where the fault-injection option panics.
    if options.engine.fault_panic.get()? {
        panic!("fault injection: 'paimon-compact.fault.panic' is set");
    }
    let p = &options.parquet;
    Ok(WriterProperties::builder()
        .set_writer_version(WriterVersion::PARQUET_1_0)
        .set_compression(codec)
        .set_max_row_group_row_count(None)
        .set_max_row_group_bytes(Some(usize_option("parquet.block.size", p.block_size)?))
        .set_data_page_size_limit(usize_option("parquet.page.size", p.page_size)?)
        .set_dictionary_page_size_limit(usize_option(
            "parquet.dictionary.page.size",
            p.dictionary_page_size,
        )?)
        .set_dictionary_enabled(p.enable_dictionary)
        .build())
}

/// The ORC codec Paimon's name `name` stands for (`key` named it); `orc.compress` wins over
/// the `file.compression` family, as in Paimon's ORC writer.
fn orc_codec(options: &CoreOptions, name: &str, key: &str) -> Result<CompressionKind> {
    let (name, key) = match &options.orc.compress {
        Some(c) => (c.as_str(), "orc.compress"),
        None => (name, key),
    };
    Ok(match name {
        "none" => CompressionKind::None,
        "zlib" => CompressionKind::Zlib,
        "snappy" => CompressionKind::Snappy,
        "lz4" => CompressionKind::Lz4,
        "zstd" => CompressionKind::Zstd,
        // No LZO encoder here: such a file stores its chunks uncompressed (orc_io::compression).
        "lzo" => CompressionKind::Lzo,
        _ => {
            return Err(Error::invalid_option(
                key,
                name,
                "an ORC file's codec is one of: none, zlib, snappy, lzo, lz4, zstd",
            ))
        }
    })
}

/// ORC writer settings with codec `name` (from `key`) and the stripe size of
/// `orc.stripe.size`. `types` are Paimon's types of the columns by position, when known: a
/// `CHAR(n)` or `VARCHAR(n)` column is declared as such, as Paimon's writer declares it
/// (without them, strings are ORC `string`s).
pub(crate) fn orc_settings(
    options: &CoreOptions,
    name: &str,
    key: &str,
    types: &[crate::types::DataType],
) -> Result<OrcWriteSettings> {
    use crate::types::{TypeRoot, MAX_LENGTH};
    let columns = types
        .iter()
        .map(|t| ColumnHint {
            string_kind: match t.root {
                TypeRoot::Char { length } => Some((TypeKind::Char, u64::from(length))),
                TypeRoot::VarChar { length } if length != MAX_LENGTH => {
                    Some((TypeKind::Varchar, u64::from(length)))
                }
                _ => None,
            },
            attributes: Vec::new(),
        })
        .collect();
    Ok(OrcWriteSettings {
        compression: orc_codec(options, name, key)?,
        stripe_bytes: usize_option("orc.stripe.size", options.orc.stripe_size)?,
        columns,
    })
}
