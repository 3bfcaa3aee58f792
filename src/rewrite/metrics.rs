//! What a rewrite did and why, as a plain serde struct the host can log or persist.
//!
//! Every optional fast path (fast copy, dictionary passthrough) reports whether it was asked
//! for, where it applied, and for each place it did not apply, the reason: "it was on but did
//! nothing" is otherwise indistinguishable from "it was off".

/// Counters and decisions of one append rewrite.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RewriteMetrics {
    /// Input files of the request, whether decoded or fast-copied.
    pub input_files: u64,
    /// Sum of the input files' sizes in bytes, as storage reports them (whole files, footer
    /// included), whether they were decoded or fast-copied.
    pub input_bytes: u64,
    /// Rows the inputs' footers hold, before deletion vectors are applied.
    pub input_rows: u64,
    /// Rows dropped because the input's deletion vector marked them.
    pub deleted_rows: u64,
    /// New files written (the length of [`crate::rewrite::AppendRewriteResult::outputs`]).
    pub output_files: u64,
    /// Sum of the new files' sizes in bytes.
    pub output_bytes: u64,
    /// Rows written: `input_rows - deleted_rows` (each input's decoded row count is checked).
    pub output_rows: u64,
    /// Input row groups decoded into Arrow and re-encoded.
    pub row_groups_decoded: u64,
    /// Arrow record batches decoded from the inputs and handed to the writer (fast-copied row
    /// groups produce none).
    pub batches: u64,
    /// Storage calls (a ranged read fetches every column chunk of a row group at once).
    pub storage_reads: u64,
    /// Bytes those reads returned, including the small gaps read when neighbouring ranges are
    /// coalesced into one call.
    pub storage_read_bytes: u64,
    /// Write calls on the output files' storage writers (one per piece of a file handed over).
    pub storage_writes: u64,
    /// Encoded page bytes that went through spill objects (the output row group outgrew
    /// `paimon-compact.write.spill-threshold`).
    #[serde(default)]
    pub spilled_bytes: u64,
    /// Pages the host's zstd compressed and decompressed ([`crate::host_codec`]).
    #[serde(default)]
    pub host_codec: crate::host_codec::HostCodecMetrics,
    /// What fast copy (`paimon-compact.append.fast-copy`) did; counters stay zero and nothing
    /// is refused when it was off.
    pub fast_copy: FastCopyMetrics,
    /// What dictionary passthrough did; its counters and lists stay empty when it was off or
    /// vetoed.
    pub passthrough: PassthroughMetrics,
}

/// Fast copy: input row groups spliced into the output without decoding.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FastCopyMetrics {
    /// `paimon-compact.append.fast-copy` was on.
    pub requested: bool,
    /// Input files copied entirely by splicing their row groups.
    pub files_copied: u64,
    /// Row groups spliced, over all copied files.
    pub row_groups_copied: u64,
    /// Bytes of the spliced row groups (their column chunks, from the first chunk's start to the
    /// last chunk's end), as read from the inputs.
    pub bytes_copied: u64,
    /// Input files that were rewritten instead, each with the first reason found.
    pub refused: Vec<FastCopyRefusal>,
}

/// One input file that fast copy could not take.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FastCopyRefusal {
    /// Path of the input file, relative to the storage root.
    pub file: String,
    /// The first check it failed (later ones are not evaluated).
    pub reason: FastCopyRefusalReason,
}

/// Why an input file could not be copied as is.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum FastCopyRefusalReason {
    /// The file's Parquet schema differs from the output's (names, types, ids or repetition).
    SchemaDiffers {
        /// Dotted path of the first differing leaf column, or a note such as
        /// `"3 columns instead of 4"` when the column counts differ.
        column: String,
    },
    /// A column chunk uses another codec than `file.compression`.
    CodecDiffers {
        /// Dotted path of the leaf column whose chunk was found first.
        column: String,
        /// The chunk's codec, lower case (`snappy`, `zstd`, `none`, …).
        file: String,
        /// The codec the table's options ask for, spelled the same way.
        table: String,
    },
    /// `parquet.enable.dictionary=false` but the file has dictionary pages.
    DictionaryDisabled {
        /// Dotted path of the first leaf column found with a dictionary page.
        column: String,
    },
    /// A row group is larger than `parquet.block.size`.
    RowGroupTooLarge {
        /// Index of the first oversized row group in the file (0-based).
        row_group: usize,
        /// Its total compressed size in bytes, from the footer.
        bytes: u64,
        /// `parquet.block.size` in bytes.
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
    /// `parquet.read.enable-dictionary-passthrough` was on (even if then vetoed).
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
    /// Distinct input dictionaries the mapping writer built a key → id table for (a new table
    /// per input column chunk whose dictionary differs from the previous one).
    pub dictionaries_mapped: u64,
    /// Rows written through such a table, without hashing their values.
    pub rows_mapped: u64,
    /// Rows of mapped columns that arrived as plain values (a file that could not forward the
    /// column) and were hashed into the output dictionary one by one.
    pub rows_hashed: u64,
    /// Rows of mapped columns written PLAIN after their column chunk's dictionary fell back.
    pub rows_plain: u64,
    /// Output column chunks whose dictionary outgrew `parquet.dictionary.page.size`.
    pub fallbacks_to_plain: u64,
}

/// Why passthrough was switched off for the whole rewrite.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "veto", rename_all = "kebab-case")]
pub enum PassthroughVeto {
    /// The output level is written in another format than Parquet.
    NotParquet {
        /// The format configured for the output level (`file.format`, or
        /// `file.format.per.level` for that level).
        format: String,
    },
    /// `parquet.enable.dictionary=false`: the writer would expand the values again.
    DictionaryDisabled,
    /// Variant/map shredding is configured: those writers reshape each batch.
    Shredding {
        /// The first option key found that configures shredding.
        key: String,
    },
}

/// One input file's passthrough decisions.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PassthroughFile {
    /// Path of the input file, relative to the storage root.
    pub file: String,
    /// STRING columns read as dictionaries.
    pub forwarded: Vec<String>,
    /// Columns read as values, with the reason.
    pub not_forwarded: Vec<NotForwarded>,
}

/// A column of an input file that was read as values.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NotForwarded {
    /// Name of the top-level output column.
    pub column: String,
    /// Why it was read as values.
    pub reason: NotForwardedReason,
}

/// Why a STRING or BINARY column of an input file was read as values rather than forwarded as
/// a dictionary.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum NotForwardedReason {
    /// BINARY shares STRING's physical type but is never forwarded.
    Binary,
    /// Some data page of this row group is not dictionary-encoded (the writer fell back).
    NotDictionaryEncoded {
        /// Index of the first such row group in the file (0-based).
        row_group: usize,
    },
    /// The file does not record page encoding statistics, so "every page" cannot be known.
    NoEncodingStats {
        /// Index of the first row group without them (0-based).
        row_group: usize,
    },
    /// A file index is configured on the column.
    FileIndex,
}
