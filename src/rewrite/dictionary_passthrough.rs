//! Dictionary passthrough (`parquet.read.enable-dictionary-passthrough`): which columns of which
//! input files are read still dictionary-encoded, and when the option is overridden.
//!
//! The rules follow the seed behaviour (paimon-cpp's append compaction):
//! * eligibility is decided **per input file**: a non-nested STRING column is forwarded when
//!   every data page of every row group of that file is dictionary-encoded, read from the
//!   column chunks' page encoding statistics. The chunk's `encodings` list is not enough: it
//!   names a dictionary encoding also for chunks that fell back to PLAIN midway. A file without
//!   page encoding statistics is not forwarded (the answer is unknown);
//! * BINARY is never forwarded although Parquet stores it the same way;
//! * the whole option is vetoed when the output level is not Parquet, when
//!   `parquet.enable.dictionary=false` (the writer would expand the values again) or when
//!   variant/map shredding is configured (those writers reshape every batch);
//! * a column with a file index configured is materialised alone, so an index sees values.
//!
//! Nothing here can fail: at worst a column is read as values, so the option never makes a
//! rewrite fail.

use std::collections::BTreeSet;

use arrow_schema::{DataType, Field, Schema};
use parquet::basic::{Encoding, PageType};
use parquet::file::metadata::ParquetMetaData;

use super::metrics::{NotForwarded, NotForwardedReason, PassthroughFile, PassthroughVeto};
use crate::options::CoreOptions;

/// The passthrough decisions that hold for the whole rewrite.
#[derive(Clone, Debug)]
pub(crate) struct PassthroughPolicy {
    pub requested: bool,
    pub veto: Option<PassthroughVeto>,
    /// Per top-level output field: STRING, non-nested, forwarded when a file allows it.
    pub mapped: Vec<bool>,
    /// Per top-level output field: would be mapped, but a file index is configured on it.
    pub file_index: Vec<bool>,
    /// Per top-level output field: BINARY (reported, never forwarded).
    pub binary: Vec<bool>,
}

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

fn is_binary(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView
    )
}

/// Columns named by `file-index.<type>.columns` options.
fn file_index_columns(options: &CoreOptions) -> BTreeSet<String> {
    options
        .raw
        .iter()
        .filter(|(k, _)| k.starts_with("file-index.") && k.ends_with(".columns"))
        .flat_map(|(_, v)| v.split(','))
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect()
}

/// A configured shredding option (variant or map): any key mentioning shredding whose value is
/// neither empty nor `false`.
fn shredding_key(options: &CoreOptions) -> Option<String> {
    options
        .raw
        .iter()
        .find(|(k, v)| {
            let v = v.trim();
            k.to_ascii_lowercase().contains("shredding")
                && !v.is_empty()
                && !v.eq_ignore_ascii_case("false")
        })
        .map(|(k, _)| k.clone())
}

impl PassthroughPolicy {
    pub(crate) fn new(options: &CoreOptions, output_format: &str, schema: &Schema) -> Self {
        let requested = options.parquet.dictionary_passthrough;
        let veto = if !requested {
            None
        } else if output_format != "parquet" {
            Some(PassthroughVeto::NotParquet {
                format: output_format.to_string(),
            })
        } else if !options.parquet.enable_dictionary {
            Some(PassthroughVeto::DictionaryDisabled)
        } else {
            shredding_key(options).map(|key| PassthroughVeto::Shredding { key })
        };
        let active = requested && veto.is_none();
        let indexed = file_index_columns(options);
        let fields: &[std::sync::Arc<Field>] = schema.fields();
        let has_index = |f: &Field| indexed.iter().any(|c| c.eq_ignore_ascii_case(f.name()));
        PassthroughPolicy {
            requested,
            veto,
            mapped: fields
                .iter()
                .map(|f| active && is_string(f.data_type()) && !has_index(f))
                .collect(),
            file_index: fields
                .iter()
                .map(|f| active && is_string(f.data_type()) && has_index(f))
                .collect(),
            binary: fields.iter().map(|f| is_binary(f.data_type())).collect(),
        }
    }

    pub(crate) fn active(&self) -> bool {
        self.requested && self.veto.is_none()
    }

    /// Which mapped fields `file` may hand over as dictionaries. `leaf_of_field[f]` is the leaf
    /// column of top-level field `f` (all mapped fields are non-nested).
    pub(crate) fn for_file(
        &self,
        file: &str,
        metadata: &ParquetMetaData,
        schema: &Schema,
        leaf_of_field: &[Option<usize>],
    ) -> (Vec<bool>, PassthroughFile) {
        let mut report = PassthroughFile {
            file: file.to_string(),
            ..Default::default()
        };
        let mut forward = vec![false; self.mapped.len()];
        if !self.active() {
            return (forward, report);
        }
        for (f, field) in schema.fields().iter().enumerate() {
            let name = field.name().clone();
            if self.binary[f] {
                report.not_forwarded.push(NotForwarded {
                    column: name,
                    reason: NotForwardedReason::Binary,
                });
                continue;
            }
            if self.file_index[f] {
                report.not_forwarded.push(NotForwarded {
                    column: name,
                    reason: NotForwardedReason::FileIndex,
                });
                continue;
            }
            if !self.mapped[f] {
                continue;
            }
            let Some(leaf) = leaf_of_field.get(f).copied().flatten() else {
                continue;
            };
            match fully_dictionary_encoded(metadata, leaf) {
                Ok(()) => {
                    forward[f] = true;
                    report.forwarded.push(name);
                }
                Err(reason) => report.not_forwarded.push(NotForwarded {
                    column: name,
                    reason,
                }),
            }
        }
        (forward, report)
    }
}

/// Whether every data page of leaf column `leaf` is dictionary-encoded in every row group,
/// judged from the page encoding statistics: in full, or as the mask of data-page encodings
/// parquet-rs decodes them into unless asked for the full list.
pub(crate) fn fully_dictionary_encoded(
    metadata: &ParquetMetaData,
    leaf: usize,
) -> Result<(), NotForwardedReason> {
    let dictionary =
        |e: Encoding| matches!(e, Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY);
    for (rg, row_group) in metadata.row_groups().iter().enumerate() {
        let chunk = row_group.column(leaf);
        let all_dictionary = if let Some(stats) = chunk.page_encoding_stats() {
            stats
                .iter()
                .filter(|s| matches!(s.page_type, PageType::DATA_PAGE | PageType::DATA_PAGE_V2))
                .filter(|s| s.count > 0)
                .all(|s| dictionary(s.encoding))
        } else if let Some(mask) = chunk.page_encoding_stats_mask() {
            mask.encodings().all(dictionary)
        } else {
            return Err(NotForwardedReason::NoEncodingStats { row_group: rg });
        };
        if !all_dictionary {
            return Err(NotForwardedReason::NotDictionaryEncoded { row_group: rg });
        }
    }
    Ok(())
}
