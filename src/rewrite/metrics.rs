//! What a rewrite did and why, as a plain serde struct the host can log or persist.
//!
//! Every optional fast path (fast copy, dictionary passthrough) reports whether it was asked
//! for, where it applied, and for each place it did not apply, the reason: "it was on but did
//! nothing" is otherwise indistinguishable from "it was off".

/// Counters and decisions of one append rewrite.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RewriteMetrics {
    pub input_files: u64,
    pub input_bytes: u64,
    pub input_rows: u64,
    /// Rows dropped because the input's deletion vector marked them.
    pub deleted_rows: u64,
    pub output_files: u64,
    pub output_bytes: u64,
    pub output_rows: u64,
    /// Input row groups decoded into Arrow and re-encoded.
    pub row_groups_decoded: u64,
    pub batches: u64,
    /// Storage calls (a ranged read fetches every column chunk of a row group at once).
    pub storage_reads: u64,
    pub storage_read_bytes: u64,
    pub storage_writes: u64,
    /// Encoded page bytes that went through spill objects (the output row group outgrew
    /// `paimon-compact.write.spill-threshold`).
    #[serde(default)]
    pub spilled_bytes: u64,
    /// Pages the host's zstd compressed and decompressed ([`crate::host_codec`]).
    #[serde(default)]
    pub host_codec: crate::host_codec::HostCodecMetrics,
    pub fast_copy: FastCopyMetrics,
    pub passthrough: PassthroughMetrics,
}

/// Fast copy: input row groups spliced into the output without decoding.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FastCopyMetrics {
    /// `paimon-compact.append.fast-copy` was on.
    pub requested: bool,
    pub files_copied: u64,
    pub row_groups_copied: u64,
    pub bytes_copied: u64,
    /// Input files that were rewritten instead, each with the first reason found.
    pub refused: Vec<FastCopyRefusal>,
}

/// One input file that fast copy could not take.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FastCopyRefusal {
    pub file: String,
    pub reason: FastCopyRefusalReason,
}

/// Why an input file could not be copied as is.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum FastCopyRefusalReason {
    /// The file's Parquet schema differs from the output's (names, types, ids or repetition).
    SchemaDiffers { column: String },
    /// A column chunk uses another codec than `file.compression`.
    CodecDiffers {
        column: String,
        file: String,
        table: String,
    },
    /// `parquet.enable.dictionary=false` but the file has dictionary pages.
    DictionaryDisabled { column: String },
    /// A row group is larger than `parquet.block.size`.
    RowGroupTooLarge {
        row_group: usize,
        bytes: u64,
        block_size: u64,
    },
    /// Rows must be dropped (deletion vector), so the file has to be decoded.
    HasDeletions,
    /// The file has no row groups to copy (nothing to gain).
    Empty,
    /// The file was written under an older schema version: its columns are mapped onto the
    /// table's (schema evolution), which needs decoding.
    OlderSchema,
}

/// Dictionary passthrough (`parquet.read.enable-dictionary-passthrough`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PassthroughMetrics {
    pub requested: bool,
    /// Set when the option was overridden back to off for the whole rewrite.
    pub veto: Option<PassthroughVeto>,
    /// The writer forwarded dictionaries went to: `mapping` (default) or `arrow`.
    pub writer: String,
    /// Columns written by the mapping dictionary writer.
    pub columns: Vec<String>,
    /// Columns excluded because a file index is configured on them (materialised instead).
    pub file_index_columns: Vec<String>,
    /// Per input file: which STRING columns were read dictionary-encoded, which were not and why.
    pub files: Vec<PassthroughFile>,
    /// Dictionary arrays a reader handed over that were decoded because passthrough was off
    /// or vetoed (the writer must never see them then).
    pub dictionary_arrays_decoded: u64,
    pub dictionaries_mapped: u64,
    pub rows_mapped: u64,
    pub rows_hashed: u64,
    pub rows_plain: u64,
    /// Output column chunks whose dictionary outgrew `parquet.dictionary.page.size`.
    pub fallbacks_to_plain: u64,
}

/// Why passthrough was switched off for the whole rewrite.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "veto", rename_all = "kebab-case")]
pub enum PassthroughVeto {
    /// The output level is written in another format than Parquet.
    NotParquet { format: String },
    /// `parquet.enable.dictionary=false`: the writer would expand the values again.
    DictionaryDisabled,
    /// Variant/map shredding is configured: those writers reshape each batch.
    Shredding { key: String },
}

/// One input file's passthrough decisions.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PassthroughFile {
    pub file: String,
    /// STRING columns read as dictionaries.
    pub forwarded: Vec<String>,
    /// Columns read as values, with the reason.
    pub not_forwarded: Vec<NotForwarded>,
}

/// A column of an input file that was read as values.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NotForwarded {
    pub column: String,
    pub reason: NotForwardedReason,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum NotForwardedReason {
    /// BINARY shares STRING's physical type but is never forwarded.
    Binary,
    /// Some data page of this row group is not dictionary-encoded (the writer fell back).
    NotDictionaryEncoded { row_group: usize },
    /// The file does not record page encoding statistics, so "every page" cannot be known.
    NoEncodingStats { row_group: usize },
    /// A file index is configured on the column.
    FileIndex,
}
