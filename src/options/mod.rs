//! Table options, parsed once from Paimon's string keys into a typed struct (compaction.md §2).
//!
//! Paimon tables carry hundreds of options; this module reads the ones compaction depends on,
//! applies Paimon's defaults and derivations in one place, and keeps every other key verbatim in
//! [`CoreOptions::raw`] so nothing is lost when the options travel on. A malformed or
//! out-of-range value of a key we use is an [`Error`] naming the key and the value; so is an
//! unrecognised key in the compaction namespaces, where a typo would otherwise silently fall
//! back to a default.
//!
//! Every key is declared once, with its parser, range and default (`declare.rs`): the core's in
//! the table below, table maintenance's in [`maintenance`]. The keys known in the compaction
//! namespaces are derived from those tables. Parsed values that carry behaviour live here too
//! ([`OffPeakHours`]), so the planner depends on this module and not the other way round.

mod declare;
pub mod engine;
pub mod maintenance;
mod off_peak;
mod units;

use std::collections::BTreeMap;

pub use off_peak::OffPeakHours;
pub use units::{parse_duration_ms, parse_memory_size};

pub(crate) use declare::parse_bool;
use declare::{
    declare_options, duration_ms, float, int, lowercase, memory, positive_memory, string_enum,
    text, verbatim, I32_MAX,
};

use crate::error::{Error, Result};
use crate::meta::Level;

const MIB: u64 = 1 << 20;

/// Which implementation's decisions to reproduce where Java and C++ differ (compaction.md §16).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Flavor {
    /// Apache Paimon (Java) HEAD: the default.
    #[default]
    Java,
    /// paimon-cpp HEAD.
    Cpp,
}

/// Primary-key tables are LSM trees; append tables are queues of files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TableKind {
    /// A table with `primary-key`: an LSM tree per bucket, compacted by merging sorted runs
    /// (compaction.md §3–§12).
    PrimaryKey,
    /// A table without a primary key: files in write order, compacted by concatenating small
    /// ones (compaction.md §13, §14).
    Append,
}

string_enum!(
    /// `merge-engine`: how records with the same key combine.
    MergeEngine {
        /// The newest record of a key wins (Paimon's default).
        Deduplicate = "deduplicate",
        /// The newest non-null value of each field wins.
        PartialUpdate = "partial-update",
        /// Each field is combined by its `fields.<name>.aggregate-function`.
        Aggregation = "aggregation",
        /// The oldest record of a key wins; a lookup table (`CoreOptions::need_lookup`).
        FirstRow = "first-row",
    }
);
string_enum!(
    /// `bucket-function.type`: how a fixed-bucket table maps a bucket key to a bucket.
    BucketFunctionType {
        /// `abs(murmur3(bucket-key BinaryRow) % n)` (Paimon's default).
        Default = "default",
        /// `floorMod(value, n)` of a single INT or BIGINT bucket key.
        Mod = "mod",
        /// Hive's bucketing hash.
        Hive = "hive",
    }
);
string_enum!(
    /// `changelog-producer`.
    ChangelogProducer {
        /// No changelog files (Paimon's default).
        None = "none",
        /// Writers copy their input into changelog files; compaction produces none.
        Input = "input",
        /// Full compactions produce the changelog (compaction.md §10.3).
        FullCompaction = "full-compaction",
        /// Compactions of level 0 produce it by looking keys up; a lookup table
        /// (compaction.md §10.4).
        Lookup = "lookup",
    }
);
string_enum!(
    /// `lookup-compact`: how eagerly lookup tables push level 0 up.
    LookupCompactMode {
        /// Force level 0 up at every decision where universal compaction picks nothing
        /// (Paimon's default).
        Radical = "radical",
        /// Force level 0 up only at every `lookup-compact.max-interval`-th such decision
        /// (compaction.md §5).
        Gentle = "gentle",
    }
);
string_enum!(
    /// `sequence.field.sort-order` (Paimon's `CoreOptions.SortOrder`): which way the user
    /// `sequence.field` values order a key's records. It applies to those values only: the
    /// system `_SEQUENCE_NUMBER` that breaks their ties always ascends, and a null value is the
    /// oldest either way (Paimon's `UserDefinedSeqComparator` reverses non-null comparisons
    /// only).
    SequenceSortOrder {
        /// The largest `sequence.field` value is the newest record.
        Ascending = "ascending",
        /// The smallest `sequence.field` value is the newest record.
        Descending = "descending",
    }
);

impl Default for SequenceSortOrder {
    /// Paimon's default: the largest sequence value is the newest record.
    fn default() -> Self {
        SequenceSortOrder::Ascending
    }
}

/// Manifest merging at commit (Paimon's `ManifestFileMerger`): without it, every commit adds a
/// manifest that every later reader opens, and pypaimon writers never merge.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ManifestOptions {
    /// `manifest.merge-min-count`: fewer small manifests than this are left alone.
    pub merge_min_count: usize,
    /// `manifest.target-file-size`: manifests below it are "small"; merged files roll at it.
    pub target_file_size: u64,
    /// `manifest.full-compaction-threshold-size`: once the small manifests and those with
    /// DELETE entries reach this size, they are compacted fully (DELETE entries cancelled).
    pub full_compaction_threshold_size: u64,
}

impl Default for ManifestOptions {
    fn default() -> Self {
        ManifestOptions {
            merge_min_count: 30,
            target_file_size: 8 * MIB,
            full_compaction_threshold_size: 16 * MIB,
        }
    }
}

/// Record-level expiry (Paimon's `RecordLevelExpire`): how old a row's time field may be
/// before compaction drops the row (compaction.md, "Record-level expiry").
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecordLevelExpire {
    /// `record-level.expire-time` in whole seconds: Paimon compares seconds and drops the
    /// duration's fraction of a second.
    pub expire_seconds: i64,
    /// `record-level.time-field`: the column whose value is the row's time. Its type decides
    /// how it reads as seconds (INT: seconds; BIGINT: seconds, or milliseconds from 10^12 up;
    /// TIMESTAMP and TIMESTAMP_LTZ: their instant); another type is refused where the column
    /// is resolved. The 0.9 option `record-level.time-field-type` is ignored, as in Paimon
    /// since 1.0.
    pub time_field: String,
}

impl RecordLevelExpire {
    /// The setting of a table of `kind`: an expire time on a primary-key table needs a time
    /// field (Paimon refuses to write such a table). paimon-cpp has no record-level expiry,
    /// so the C++ flavor has none either (compaction.md §16 D4).
    fn derive(
        kind: TableKind,
        flavor: Flavor,
        expire_ms: Option<u64>,
        time_field: Option<String>,
        raw: &BTreeMap<String, String>,
    ) -> Result<Option<Self>> {
        let (TableKind::PrimaryKey, Flavor::Java, Some(ms)) = (kind, flavor, expire_ms) else {
            return Ok(None);
        };
        let Some(time_field) = time_field.filter(|f| !f.is_empty()) else {
            const KEY: &str = "record-level.expire-time";
            return Err(Error::invalid_option(
                KEY,
                raw.get(KEY).map_or("", String::as_str),
                "needs record-level.time-field, the column whose value is each row's time",
            ));
        };
        Ok(Some(RecordLevelExpire {
            expire_seconds: i64::try_from(ms / 1000).unwrap_or(i64::MAX),
            time_field,
        }))
    }

    /// Whether a row whose time is `seconds` has expired at `now_ms`: it is kept while
    /// `now <= time + expire` in whole seconds. The arithmetic is exact (Paimon 1.0 computed
    /// it in 32 bits and overflowed on times far in the future; later releases widened it).
    pub fn has_expired(&self, seconds: i64, now_ms: i64) -> bool {
        i128::from(seconds) + i128::from(self.expire_seconds) < i128::from(now_ms.div_euclid(1000))
    }

    /// The seconds of a BIGINT time: seconds below 10^12, milliseconds from it up (Paimon's
    /// rule: second 10^12 is in the year 33 658, millisecond 10^12 in 2001).
    pub fn bigint_seconds(v: i64) -> i64 {
        if v >= 1_000_000_000_000 {
            v / 1000
        } else {
            v
        }
    }

    /// The seconds of a TIMESTAMP given as epoch milliseconds (rounded down to the
    /// millisecond): Java's truncating division by 1000, as Paimon divides.
    pub fn millis_seconds(millis: i64) -> i64 {
        millis / 1000
    }
}

/// Parquet writer settings that compaction honours when it rewrites files.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ParquetOptions {
    /// `parquet.block.size` (128 MiB): bytes at which a row group is cut, as parquet-mr cuts
    /// them (by bytes only).
    pub block_size: u64,
    /// `parquet.page.size` (1 MiB): data page size limit in bytes.
    pub page_size: u64,
    /// `parquet.dictionary.page.size` (1 MiB): dictionary page size limit in bytes.
    pub dictionary_page_size: u64,
    /// `parquet.enable.dictionary` (true): write dictionary-encoded columns.
    pub enable_dictionary: bool,
    /// `parquet.read.enable-dictionary-passthrough` (false): forward fully dictionary-encoded
    /// STRING columns of the inputs without decoding them (`rewrite::dictionary_passthrough`).
    pub dictionary_passthrough: bool,
}

/// ORC writer settings that compaction honours when it writes ORC files (`file.format = orc`
/// or a level's `file.format.per.level`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OrcOptions {
    /// `orc.stripe.size` (64 MiB; Paimon also sets it from `file.block-size`): buffered
    /// bytes at which a stripe is written.
    pub stripe_size: u64,
    /// `orc.compress`: the codec, winning over `file.compression` as it does in Paimon's ORC
    /// writer.
    pub compress: Option<String>,
}

impl Default for OrcOptions {
    fn default() -> Self {
        OrcOptions {
            stripe_size: 64 * MIB,
            compress: None,
        }
    }
}

/// Every option compaction uses, typed, with Paimon's defaults and derivations applied.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CoreOptions {
    /// The table's kind, given by the caller (it is not an option): picks the defaults that
    /// depend on it, such as `target_file_size`.
    pub table_kind: TableKind,
    /// Which implementation's rules to reproduce, given by the caller (compaction.md §16).
    pub flavor: Flavor,
    /// `bucket`: `-1` is an unaware-bucket (append) or dynamic-bucket table, `-2` postponed.
    pub bucket: i32,
    /// `target-file-size` in bytes: where rewrites roll to a new file. Default 128 MiB for
    /// primary-key tables, 256 MiB for append tables.
    pub target_file_size: u64,
    /// `compaction.small-file-ratio` (0.0–1.0, default 0.7): `compaction_file_size` as a
    /// fraction of `target_file_size`; the C++ flavor ignores it.
    pub small_file_ratio: f64,
    /// Files below this size are "small" (rewritten rather than upgraded, re-queued...).
    pub compaction_file_size: u64,
    /// `num-sorted-run.compaction-trigger` (default 5): sorted runs at which universal
    /// compaction starts picking (compaction.md §4.1).
    pub num_sorted_run_compaction_trigger: usize,
    /// Effective: at least the compaction trigger.
    pub num_sorted_run_stop_trigger: usize,
    /// Configured number of levels (restored files may raise it, see `Levels`).
    pub num_levels: u32,
    /// `compaction.max-size-amplification-percent` (default 200): all runs are merged once
    /// the newer runs exceed this percentage of the oldest one (compaction.md §4.3).
    pub max_size_amplification_percent: u64,
    /// `compaction.size-ratio` in percent (default 1): how much larger than the candidate a
    /// run may be and still join it (compaction.md §4.4).
    pub size_ratio: u32,
    /// The off-peak window and its extra size ratio; `None` when the feature is off
    /// (compaction.md §4.7).
    pub off_peak: Option<OffPeakHours>,
    /// `compaction.optimization-interval` in milliseconds: a full compaction at least this
    /// often; `None` when unset (compaction.md §4.2).
    pub optimization_interval_ms: Option<u64>,
    /// `compaction.total-size-threshold` in bytes: a bucket whose runs total less than this is
    /// fully compacted; `None` when unset (compaction.md §4.2).
    pub total_size_threshold: Option<u64>,
    /// `compaction.incremental-size-threshold` in bytes: a full compaction once the runs
    /// below the max level exceed this; `None` when unset (compaction.md §4.2).
    pub incremental_size_threshold: Option<u64>,
    /// `compaction.force-up-level-0`: keep level 0 empty even without lookup (compaction.md
    /// §3, §5).
    pub force_up_level0: bool,
    /// `compaction.force-rewrite-all-files`: rewrite files a compaction would otherwise
    /// upgrade or leave alone (compaction.md §6, §9, §13).
    pub force_rewrite_all_files: bool,
    /// `compaction.min.file-num` (default 5): files an append pick needs (compaction.md §13,
    /// §14).
    pub min_file_num: usize,
    /// `compaction.file-num-limit` (default 100 000): parsed and reported, but not applied
    /// (compaction.md §14.1).
    pub file_num_limit: usize,
    /// `compaction.delete-ratio-threshold` (0.0–1.0, default 0.2): an unaware-bucket file
    /// whose deleted rows exceed this fraction is a compaction candidate (compaction.md §14.1).
    pub delete_ratio_threshold: f64,
    /// `source.split.open-file-cost` in bytes (default 4 MiB): added to each file's size when
    /// the coordinator packs bins (compaction.md §14.1).
    pub open_file_cost: u64,
    /// `write-only` (older key `write.compaction-skip`): writers leave compaction to a
    /// dedicated job; only writer-role decisions refuse it (compaction.md §3).
    pub write_only: bool,
    /// `changelog-producer`: chooses the rewriter and what an upgrade costs (compaction.md
    /// §3, §10).
    pub changelog_producer: ChangelogProducer,
    /// `merge-engine`: how the merge combines the records of one key.
    pub merge_engine: MergeEngine,
    /// `deletion-vectors.enabled`: compaction marks superseded rows in deletion vectors
    /// instead of readers merging levels (compaction.md §11); makes a lookup table.
    pub deletion_vectors_enabled: bool,
    /// `force-lookup`: a lookup table even without a lookup changelog or deletion vectors.
    pub force_lookup: bool,
    /// `lookup-wait` (older key `changelog-producer.lookup-wait`, default true): a lookup
    /// table's writer waits for compaction before committing
    /// ([`CoreOptions::prepare_commit_wait_compaction`]).
    pub lookup_wait: bool,
    /// `lookup-compact` (default `radical`): how eagerly lookup tables push level 0 up.
    pub lookup_compact: LookupCompactMode,
    /// Effective: at least the compaction trigger.
    pub lookup_compact_max_interval: usize,
    /// `full-compaction.delta-commits`: a writer's sink runs a full compaction every this
    /// many commits; only the simulator models it (compaction.md §12).
    pub full_compaction_delta_commits: Option<u32>,
    /// `commit.force-compact`: a writer waits for compaction at every commit; only the
    /// simulator models it (compaction.md §12).
    pub commit_force_compact: bool,
    /// `data-evolution.enabled`: such tables are refused (compaction.md §15).
    pub data_evolution_enabled: bool,
    /// `sequence.field`: comma-separated columns that order a key's records before the
    /// system sequence number; `None` when unset or empty.
    pub sequence_field: Option<String>,
    /// `sequence.field.sort-order`: with `descending`, the smallest `sequence.field` value is
    /// the newest record. Defaulted when absent from serialized options of older builds.
    #[serde(default)]
    pub sequence_field_sort_order: SequenceSortOrder,
    /// `ignore-delete`: the merge drops retract records instead of applying them.
    pub ignore_delete: bool,
    /// `partial-update.remove-record-on-delete`: with `partial-update`, a `-D` record removes
    /// the key's row instead of failing the merge.
    pub partial_update_remove_record_on_delete: bool,
    /// `partial-update.remove-record-on-sequence-group`: comma-separated sequence fields of
    /// `fields.<f>.sequence-group`s; a `-D` that wins such a group removes the key's row.
    #[serde(default)]
    pub partial_update_remove_record_on_sequence_group: Vec<String>,
    /// `sort-spill-threshold`: Paimon's bound on the sorted runs a merge reads at once (its
    /// writers spill beyond it); the merge honours it with
    /// `paimon-compact.merge.max-runs`.
    #[serde(default)]
    pub sort_spill_threshold: Option<usize>,
    /// `aggregation.remove-record-on-delete`: with `aggregation`, a `-D` record replaces the
    /// key's row with its own values and makes the result a `-D` until a later record.
    #[serde(default)]
    pub aggregation_remove_record_on_delete: bool,
    /// `changelog-producer.row-deduplicate`: a lookup or full-compaction changelog leaves out
    /// the `-U`/`+U` pair of a key whose value did not change.
    #[serde(default)]
    pub changelog_row_deduplicate: bool,
    /// `changelog-producer.row-deduplicate-ignore-fields`: columns that do not count as a
    /// change (names that are not columns are ignored, as Paimon ignores them).
    #[serde(default)]
    pub changelog_row_deduplicate_ignore_fields: Vec<String>,
    /// `record-level.expire-time` with `record-level.time-field`, on primary-key tables:
    /// compaction drops the rows it rewrites whose time field has expired. `None` when no
    /// expire time is set, and on append tables (Paimon applies it to primary-key tables only).
    #[serde(default)]
    pub record_level_expire: Option<RecordLevelExpire>,
    /// `file.format` (default `parquet`), lower case: the format files are written in unless
    /// `file_format_per_level` names another for their level.
    pub file_format: String,
    /// `file.format.per.level`: level → format.
    pub file_format_per_level: BTreeMap<u32, String>,
    /// `file.compression` (default `zstd`), lower case: the Parquet codec of written files
    /// unless `file_compression_per_level` (or, for changelog files,
    /// `changelog_file_compression`) names another ([`CoreOptions::compression_for`]).
    pub file_compression: String,
    /// `file.compression.per.level`: level → codec, for primary-key files of that level.
    #[serde(default)]
    pub file_compression_per_level: BTreeMap<u32, String>,
    /// `changelog-file.compression`: the codec of changelog files, when set.
    #[serde(default)]
    pub changelog_file_compression: Option<String>,
    /// `changelog-file.format`: the format of changelog files, when set (else the level's).
    #[serde(default)]
    pub changelog_file_format: Option<String>,
    /// `metadata.stats-mode.per.level`: level → the default `stats-mode` of primary-key files
    /// of that level (a column's `fields.<f>.stats-mode` still wins).
    #[serde(default)]
    pub stats_mode_per_level: BTreeMap<u32, String>,
    /// `changelog-file.stats-mode`: the default `stats-mode` of changelog files, when set.
    #[serde(default)]
    pub changelog_file_stats_mode: Option<String>,
    /// `data-file.prefix` (default `data-`): new data files are
    /// `<prefix><uuid>-<n><extension>` ([`CoreOptions::file_extension`]).
    #[serde(default = "default_data_prefix")]
    pub data_file_prefix: String,
    /// `changelog-file.prefix` (default `changelog-`), likewise for changelog files.
    #[serde(default = "default_changelog_prefix")]
    pub changelog_file_prefix: String,
    /// `file.suffix.include.compression`: the extension names the codec too.
    #[serde(default)]
    pub file_suffix_include_compression: bool,
    /// `file.compression.zstd-level` (1–22, default 1).
    pub zstd_level: i32,
    /// The `parquet.*` writer settings.
    pub parquet: ParquetOptions,
    /// The `orc.*` writer settings.
    #[serde(default)]
    pub orc: OrcOptions,
    /// How the commit merges small manifests (`manifest.*`).
    #[serde(default)]
    pub manifest: ManifestOptions,
    /// `bucket-key`: the columns a fixed-bucket table hashes (default: the primary key
    /// without the partition keys); empty when not set.
    #[serde(default)]
    pub bucket_key: Vec<String>,
    /// `bucket-function.type` (default `default`).
    #[serde(default = "default_bucket_function")]
    pub bucket_function: BucketFunctionType,
    /// How a postpone-bucket (`bucket = -2`) table's partition gets its bucket count when
    /// its postpone files are first compacted (compaction.md §11.2).
    #[serde(default)]
    pub postpone: PostponeOptions,
    /// The `paimon-compact.*` engine options.
    #[serde(default)]
    pub engine: engine::EngineOptions,
    /// Every key as given, including the ones not interpreted here.
    pub raw: BTreeMap<String, String>,
}

declare_options! {
    /// Every key [`CoreOptions`] reads, declared once: key, parser and range, default. Read in
    /// this order; defaults that depend on other options are derived in
    /// [`CoreOptions::parse_with`].
    struct Declared {
        bucket: i32 = "bucket" => bucket_number, default -1;
        /// Default by table kind.
        target_file_size: Option<u64> = "target-file-size" => positive_memory;
        small_file_ratio: f64 = "compaction.small-file-ratio" => float(0.0, 1.0), default 0.7;
        trigger: usize = "num-sorted-run.compaction-trigger" => int(1, I32_MAX), default 5;
        /// Default: trigger + 3.
        stop_trigger: Option<usize> = "num-sorted-run.stop-trigger" => int(1, I32_MAX);
        /// Default: trigger + 1, which must stay within the level limit.
        num_levels: Option<u32> = "num-levels" => int(2, Level::LIMIT as i64),
            then derived_levels_fit(trigger, num_levels);
        /// Default: trigger × 2.
        lookup_compact_max_interval: Option<usize> =
            "lookup-compact.max-interval" => int(1, I32_MAX);
        offpeak_start_hour: i32 = "compaction.offpeak.start.hour" => int(-1, 23), default -1;
        offpeak_end_hour: i32 = "compaction.offpeak.end.hour" => int(-1, 23), default -1;
        offpeak_ratio: u32 = "compaction.offpeak-ratio" => int(0, I32_MAX), default 0;
        write_only: bool = "write-only" | "write.compaction-skip" => parse_bool, default false;
        lookup_wait: bool =
            "lookup-wait" | "changelog-producer.lookup-wait" => parse_bool, default true;
        file_format_per_level: BTreeMap<u32, String> =
            "file.format.per.level" => formats_per_level, default BTreeMap::new();
        enable_dictionary: bool = "parquet.enable.dictionary" => parse_bool, default true;
        max_size_amplification_percent: u64 =
            "compaction.max-size-amplification-percent" => int(0, I32_MAX), default 200;
        size_ratio: u32 = "compaction.size-ratio" => int(0, I32_MAX), default 1;
        optimization_interval_ms: Option<u64> =
            "compaction.optimization-interval" => duration_ms;
        total_size_threshold: Option<u64> = "compaction.total-size-threshold" => memory;
        incremental_size_threshold: Option<u64> =
            "compaction.incremental-size-threshold" => memory;
        force_up_level0: bool = "compaction.force-up-level-0" => parse_bool, default false;
        force_rewrite_all_files: bool =
            "compaction.force-rewrite-all-files" => parse_bool, default false;
        min_file_num: usize = "compaction.min.file-num" => int(1, I32_MAX), default 5;
        file_num_limit: usize = "compaction.file-num-limit" => int(1, I32_MAX), default 100_000;
        delete_ratio_threshold: f64 =
            "compaction.delete-ratio-threshold" => float(0.0, 1.0), default 0.2;
        open_file_cost: u64 = "source.split.open-file-cost" => memory, default 4 * MIB;
        changelog_producer: ChangelogProducer =
            "changelog-producer" => ChangelogProducer::parse, default ChangelogProducer::None;
        merge_engine: MergeEngine =
            "merge-engine" => MergeEngine::parse, default MergeEngine::Deduplicate;
        deletion_vectors_enabled: bool =
            "deletion-vectors.enabled" => parse_bool, default false;
        force_lookup: bool = "force-lookup" => parse_bool, default false;
        lookup_compact: LookupCompactMode =
            "lookup-compact" => LookupCompactMode::parse, default LookupCompactMode::Radical;
        full_compaction_delta_commits: Option<u32> =
            "full-compaction.delta-commits" => int(1, I32_MAX);
        commit_force_compact: bool = "commit.force-compact" => parse_bool, default false;
        data_evolution_enabled: bool = "data-evolution.enabled" => parse_bool, default false;
        /// Empty means none.
        sequence_field: Option<String> = "sequence.field" => text;
        sequence_field_sort_order: SequenceSortOrder =
            "sequence.field.sort-order" => SequenceSortOrder::parse,
            default SequenceSortOrder::Ascending;
        ignore_delete: bool = "ignore-delete" => parse_bool, default false;
        partial_update_remove_record_on_delete: bool =
            "partial-update.remove-record-on-delete" => parse_bool, default false;
        partial_update_remove_record_on_sequence_group: Option<String> =
            "partial-update.remove-record-on-sequence-group" => text;
        sort_spill_threshold: Option<usize> = "sort-spill-threshold" => int(0, I32_MAX);
        aggregation_remove_record_on_delete: bool =
            "aggregation.remove-record-on-delete" => parse_bool, default false;
        changelog_row_deduplicate: bool =
            "changelog-producer.row-deduplicate" => parse_bool, default false;
        changelog_row_deduplicate_ignore_fields: Option<String> =
            "changelog-producer.row-deduplicate-ignore-fields" => text;
        /// Needs `record-level.time-field` (primary-key tables).
        record_level_expire_ms: Option<u64> = "record-level.expire-time" => duration_ms;
        record_level_time_field: Option<String> = "record-level.time-field" => text;
        file_format: String = "file.format" => lowercase, default "parquet".to_string();
        file_compression: String = "file.compression" => lowercase, default "zstd".to_string();
        file_compression_per_level: BTreeMap<u32, String> =
            "file.compression.per.level" => values_per_level, default BTreeMap::new();
        changelog_file_compression: Option<String> = "changelog-file.compression" => lowercase;
        changelog_file_format: Option<String> = "changelog-file.format" => lowercase;
        stats_mode_per_level: BTreeMap<u32, String> =
            "metadata.stats-mode.per.level" => values_per_level, default BTreeMap::new();
        changelog_file_stats_mode: Option<String> = "changelog-file.stats-mode" => text;
        data_file_prefix: String = "data-file.prefix" => verbatim, default default_data_prefix();
        changelog_file_prefix: String =
            "changelog-file.prefix" => verbatim, default default_changelog_prefix();
        file_suffix_include_compression: bool =
            "file.suffix.include.compression" => parse_bool, default false;
        zstd_level: i32 = "file.compression.zstd-level" => int(1, 22), default 1;
        manifest_merge_min_count: usize =
            "manifest.merge-min-count" => int(1, I32_MAX), default 30;
        manifest_target_file_size: u64 =
            "manifest.target-file-size" => positive_memory, default 8 * MIB;
        manifest_full_compaction_threshold_size: u64 =
            "manifest.full-compaction-threshold-size" => positive_memory, default 16 * MIB;
        parquet_block_size: u64 = "parquet.block.size" => positive_memory, default 128 * MIB;
        orc_stripe_size: u64 =
            "orc.stripe.size" | "file.block-size" => positive_memory, default 64 * MIB;
        orc_compress: Option<String> = "orc.compress" => lowercase;
        parquet_page_size: u64 = "parquet.page.size" => positive_memory, default MIB;
        parquet_dictionary_page_size: u64 =
            "parquet.dictionary.page.size" => positive_memory, default MIB;
        dictionary_passthrough: bool =
            "parquet.read.enable-dictionary-passthrough" => parse_bool, default false;
        bucket_key: Option<String> = "bucket-key" => text;
        bucket_function: BucketFunctionType =
            "bucket-function.type" => BucketFunctionType::parse,
            default BucketFunctionType::Default;
        postpone_default_bucket_num: Option<i32> =
            "postpone.default-bucket-num" => int(1, I32_MAX);
        postpone_target_rows: Option<u64> =
            "postpone.target-row-num-per-bucket" => int(1, i64::MAX);
        postpone_target_size: u64 =
            "postpone.target-size-per-bucket" => positive_memory, default 1024 * MIB;
    }
}

/// A comma-separated list of column names, trimmed, empty items dropped (none when unset).
fn name_list(value: Option<String>) -> Vec<String> {
    value
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|f| !f.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn default_bucket_function() -> BucketFunctionType {
    BucketFunctionType::Default
}

/// The bucket count of a postpone-bucket partition that has no real buckets yet, as Paimon
/// HEAD chooses it: `postpone.default-bucket-num` when set, else the partition's postpone rows
/// over `postpone.target-row-num-per-bucket` when that is set, else their bytes over
/// `postpone.target-size-per-bucket` (1 GiB), rounded up, at least 1.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PostponeOptions {
    /// `postpone.default-bucket-num`.
    pub default_bucket_num: Option<i32>,
    /// `postpone.target-row-num-per-bucket`.
    pub target_rows_per_bucket: Option<u64>,
    /// `postpone.target-size-per-bucket`.
    pub target_size_per_bucket: u64,
}

impl Default for PostponeOptions {
    fn default() -> Self {
        PostponeOptions {
            default_bucket_num: None,
            target_rows_per_bucket: None,
            target_size_per_bucket: 1024 * MIB,
        }
    }
}

impl PostponeOptions {
    /// The bucket count of a new partition whose postpone files hold `rows` rows in `bytes`
    /// bytes.
    pub fn bucket_count(&self, rows: u64, bytes: u64) -> Result<i32> {
        if let Some(n) = self.default_bucket_num {
            return Ok(n);
        }
        let (value, target, key) = match self.target_rows_per_bucket {
            Some(t) => (rows, t, "postpone.target-row-num-per-bucket"),
            None => (
                bytes,
                self.target_size_per_bucket,
                "postpone.target-size-per-bucket",
            ),
        };
        let n = if value == 0 {
            1
        } else {
            (value - 1) / target + 1
        };
        i32::try_from(n).map_err(|_| {
            Error::invalid_option(
                key,
                &target.to_string(),
                format!("gives {n} buckets, more than a table may have"),
            )
        })
    }
}

/// `bucket`: -2 (postpone), -1 (unaware or dynamic) or a positive count.
fn bucket_number(key: &str, v: &str) -> Result<i32> {
    match int(-2, I32_MAX)(key, v)? {
        0 => Err(Error::invalid_option(
            key,
            "0",
            "must be -1, -2 or positive",
        )),
        n => Ok(n),
    }
}

fn default_data_prefix() -> String {
    "data-".to_string()
}

fn default_changelog_prefix() -> String {
    "changelog-".to_string()
}

/// `file.format.per.level`: `level:format,...`.
fn formats_per_level(key: &str, v: &str) -> Result<BTreeMap<u32, String>> {
    values_per_level(key, v)
}

/// A per-level option (`file.format.per.level`, `file.compression.per.level`,
/// `metadata.stats-mode.per.level`): `level:value,...`, values in lower case.
fn values_per_level(key: &str, v: &str) -> Result<BTreeMap<u32, String>> {
    let mut formats = BTreeMap::new();
    for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (lvl, fmt) = part
            .split_once(':')
            .ok_or_else(|| Error::invalid_option(key, v, "expected level:value,..."))?;
        let lvl: u32 = lvl
            .trim()
            .parse()
            .map_err(|_| Error::invalid_option(key, v, "level must be a number"))?;
        formats.insert(lvl, fmt.trim().to_ascii_lowercase());
    }
    Ok(formats)
}

/// Without `num-levels`, the trigger derives `trigger + 1` levels, which must stay within
/// [`Level::LIMIT`] (an explicit `num-levels` is range-checked by its parser).
fn derived_levels_fit(trigger: usize, num_levels: Option<u32>) -> Result<()> {
    let levels = num_levels.unwrap_or_else(|| (trigger as u32).saturating_add(1));
    if levels > Level::LIMIT {
        return Err(Error::invalid_option(
            "num-sorted-run.compaction-trigger",
            &trigger.to_string(),
            format!(
                "derives {levels} levels; set num-levels explicitly (at most {})",
                Level::LIMIT
            ),
        ));
    }
    Ok(())
}

/// The prefixes of the compaction namespaces, in the order their keys are listed in hints.
/// A key there that no table declares is almost certainly a typo, so it is rejected instead
/// of being ignored.
const COMPACTION_NAMESPACES: &[&str] = &[
    "compaction.",
    "num-sorted-run.",
    "num-levels",
    "lookup-compact",
];

/// Keys that existed in older Paimon releases: accepted and ignored, as Paimon does.
const RETIRED_COMPACTION_KEYS: &[&str] =
    &["compaction.max.file-num", "compaction.early-max.file-num"];

fn namespace_of(key: &str) -> Option<usize> {
    COMPACTION_NAMESPACES
        .iter()
        .position(|p| key.starts_with(p))
}

/// The declared keys in the compaction namespaces (the core's and maintenance's), grouped by
/// namespace and sorted within each; derived once from the declarations.
fn known_compaction_keys() -> &'static [&'static str] {
    static KNOWN: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    KNOWN.get_or_init(|| {
        let mut keys: Vec<(usize, &'static str)> = Declared::KEYS
            .iter()
            .copied()
            .chain(maintenance::keys())
            .filter_map(|k| namespace_of(k).map(|n| (n, k)))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys.into_iter().map(|(_, k)| k).collect()
    })
}

/// Rejects a key in the compaction namespaces that nothing declares, with the nearest declared
/// key as a hint.
fn reject_unknown_compaction_keys(raw: &BTreeMap<String, String>) -> Result<()> {
    let known = known_compaction_keys();
    let unknown = raw.keys().find(|key| {
        namespace_of(key).is_some()
            && !known.contains(&key.as_str())
            && !RETIRED_COMPACTION_KEYS.contains(&key.as_str())
    });
    let Some(key) = unknown else {
        return Ok(());
    };
    let hint = known
        .iter()
        .min_by_key(|k| edit_distance(k, key))
        .filter(|k| edit_distance(k, key) <= 3)
        .map(|k| format!(" (did you mean '{k}'?)"))
        .unwrap_or_default();
    Err(Error::invalid_option(
        key,
        &raw[key],
        format!("unknown compaction option{hint}"),
    ))
}

impl CoreOptions {
    /// Parses with Java semantics.
    pub fn parse(table_kind: TableKind, raw: &BTreeMap<String, String>) -> Result<Self> {
        Self::parse_with(table_kind, Flavor::Java, raw)
    }

    /// Parses from an iterator of pairs (convenient in tests and bindings).
    pub fn from_pairs<'a>(
        table_kind: TableKind,
        flavor: Flavor,
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self> {
        let raw = pairs
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Self::parse_with(table_kind, flavor, &raw)
    }

    /// Parses `raw`: rejects unknown compaction keys, reads the declared keys, then applies
    /// the defaults that depend on other options (Paimon's derivations).
    pub fn parse_with(
        table_kind: TableKind,
        flavor: Flavor,
        raw: &BTreeMap<String, String>,
    ) -> Result<Self> {
        reject_unknown_compaction_keys(raw)?;
        let d = Declared::read(raw)?;
        let target_file_size = d.target_file_size.unwrap_or(match table_kind {
            TableKind::PrimaryKey => 128 * MIB,
            TableKind::Append => 256 * MIB,
        });
        let compaction_file_size = match flavor {
            Flavor::Java => (target_file_size as f64 * d.small_file_ratio) as u64,
            Flavor::Cpp => target_file_size / 10 * 7,
        };
        let trigger = d.trigger;
        let stop = d
            .stop_trigger
            .unwrap_or_else(|| trigger.saturating_add(3).min(i32::MAX as usize));
        let lookup_interval = d
            .lookup_compact_max_interval
            .unwrap_or_else(|| trigger.saturating_mul(2).min(i32::MAX as usize));
        Ok(CoreOptions {
            table_kind,
            flavor,
            bucket: d.bucket,
            target_file_size,
            small_file_ratio: d.small_file_ratio,
            compaction_file_size,
            num_sorted_run_compaction_trigger: trigger,
            num_sorted_run_stop_trigger: stop.max(trigger),
            num_levels: d
                .num_levels
                .unwrap_or_else(|| (trigger as u32).saturating_add(1)),
            max_size_amplification_percent: d.max_size_amplification_percent,
            size_ratio: d.size_ratio,
            off_peak: OffPeakHours::create(
                d.offpeak_start_hour,
                d.offpeak_end_hour,
                d.offpeak_ratio,
            ),
            optimization_interval_ms: d.optimization_interval_ms,
            total_size_threshold: d.total_size_threshold,
            incremental_size_threshold: d.incremental_size_threshold,
            force_up_level0: d.force_up_level0,
            force_rewrite_all_files: d.force_rewrite_all_files,
            min_file_num: d.min_file_num,
            file_num_limit: d.file_num_limit,
            delete_ratio_threshold: d.delete_ratio_threshold,
            open_file_cost: d.open_file_cost,
            write_only: d.write_only,
            changelog_producer: d.changelog_producer,
            merge_engine: d.merge_engine,
            deletion_vectors_enabled: d.deletion_vectors_enabled,
            force_lookup: d.force_lookup,
            lookup_wait: d.lookup_wait,
            lookup_compact: d.lookup_compact,
            lookup_compact_max_interval: lookup_interval.max(trigger),
            full_compaction_delta_commits: d.full_compaction_delta_commits,
            commit_force_compact: d.commit_force_compact,
            data_evolution_enabled: d.data_evolution_enabled,
            sequence_field: d.sequence_field.filter(|s| !s.is_empty()),
            sequence_field_sort_order: d.sequence_field_sort_order,
            ignore_delete: d.ignore_delete,
            partial_update_remove_record_on_delete: d.partial_update_remove_record_on_delete,
            sort_spill_threshold: d.sort_spill_threshold,
            partial_update_remove_record_on_sequence_group: d
                .partial_update_remove_record_on_sequence_group
                .map(|s| s.split(',').map(|f| f.to_string()).collect())
                .unwrap_or_default(),
            aggregation_remove_record_on_delete: d.aggregation_remove_record_on_delete,
            changelog_row_deduplicate: d.changelog_row_deduplicate,
            changelog_row_deduplicate_ignore_fields: name_list(
                d.changelog_row_deduplicate_ignore_fields,
            ),
            record_level_expire: RecordLevelExpire::derive(
                table_kind,
                flavor,
                d.record_level_expire_ms,
                d.record_level_time_field,
                raw,
            )?,
            file_format: d.file_format,
            file_format_per_level: d.file_format_per_level,
            file_compression: d.file_compression,
            file_compression_per_level: d.file_compression_per_level,
            changelog_file_compression: d.changelog_file_compression.filter(|c| !c.is_empty()),
            changelog_file_format: d.changelog_file_format.filter(|f| !f.is_empty()),
            stats_mode_per_level: d.stats_mode_per_level,
            changelog_file_stats_mode: d.changelog_file_stats_mode.filter(|m| !m.is_empty()),
            data_file_prefix: d.data_file_prefix,
            changelog_file_prefix: d.changelog_file_prefix,
            file_suffix_include_compression: d.file_suffix_include_compression,
            zstd_level: d.zstd_level,
            manifest: ManifestOptions {
                merge_min_count: d.manifest_merge_min_count,
                target_file_size: d.manifest_target_file_size,
                full_compaction_threshold_size: d.manifest_full_compaction_threshold_size,
            },
            parquet: ParquetOptions {
                block_size: d.parquet_block_size,
                page_size: d.parquet_page_size,
                dictionary_page_size: d.parquet_dictionary_page_size,
                enable_dictionary: d.enable_dictionary,
                dictionary_passthrough: d.dictionary_passthrough,
            },
            orc: OrcOptions {
                stripe_size: d.orc_stripe_size,
                compress: d.orc_compress.filter(|c| !c.is_empty()),
            },
            bucket_key: name_list(d.bucket_key),
            bucket_function: d.bucket_function,
            postpone: PostponeOptions {
                default_bucket_num: d.postpone_default_bucket_num,
                target_rows_per_bucket: d.postpone_target_rows,
                target_size_per_bucket: d.postpone_target_size,
            },
            engine: engine::EngineOptions::parse(raw)?,
            raw: raw.clone(),
        })
    }

    /// Defaults for a table kind.
    pub fn defaults(table_kind: TableKind) -> Self {
        Self::parse(table_kind, &BTreeMap::new()).expect("defaults parse")
    }

    /// Whether the merge engine is `first-row`.
    pub fn is_first_row(&self) -> bool {
        self.merge_engine == MergeEngine::FirstRow
    }

    /// Lookup tables keep level 0 empty so reads can look keys up level by level (compaction.md
    /// §2).
    pub fn need_lookup(&self) -> bool {
        self.changelog_producer == ChangelogProducer::Lookup
            || self.deletion_vectors_enabled
            || self.is_first_row()
            || self.force_lookup
    }

    /// Whether a writer waits for its compaction before committing: lookup tables with
    /// `lookup-wait` (compaction.md §2, §7.5).
    pub fn prepare_commit_wait_compaction(&self) -> bool {
        self.need_lookup() && self.lookup_wait
    }

    /// The file format written at `level` (`file.format.per.level` overrides `file.format`).
    pub fn file_format_for_level(&self, level: u32) -> &str {
        self.file_format_per_level
            .get(&level)
            .map(String::as_str)
            .unwrap_or(&self.file_format)
    }

    /// The codec of a primary-key file written at `level` (`changelog`: a changelog file
    /// of a compaction into `level`), with the key that chose it: `changelog-file.compression`
    /// for changelog files, else `file.compression.per.level`, else `file.compression`, as
    /// Paimon's key-value writers choose. Append tables use `file.compression` alone.
    pub fn compression_for(&self, level: u32, changelog: bool) -> (&str, &'static str) {
        if let Some(c) = self
            .changelog_file_compression
            .as_deref()
            .filter(|_| changelog)
        {
            return (c, "changelog-file.compression");
        }
        match self.file_compression_per_level.get(&level) {
            Some(c) => (c, "file.compression.per.level"),
            None => (&self.file_compression, "file.compression"),
        }
    }

    /// The format of a primary-key file written at `level` (`changelog`, as in
    /// [`CoreOptions::compression_for`]).
    pub fn format_for(&self, level: u32, changelog: bool) -> &str {
        match self.changelog_file_format.as_deref().filter(|_| changelog) {
            Some(f) => f,
            None => self.file_format_for_level(level),
        }
    }

    /// The default `stats-mode` of a primary-key file written at `level` (`changelog`, as in
    /// [`CoreOptions::compression_for`]), when an option sets one for it; `None` leaves
    /// `metadata.stats-mode`.
    pub fn stats_mode_for(&self, level: u32, changelog: bool) -> Option<&str> {
        match self
            .changelog_file_stats_mode
            .as_deref()
            .filter(|_| changelog)
        {
            Some(m) => Some(m),
            None => self.stats_mode_per_level.get(&level).map(String::as_str),
        }
    }

    /// The extension of new data and changelog files of `format` (`parquet`, `orc`):
    /// `.<format>`, or with `file.suffix.include.compression` the table codec's extension
    /// before it (`.zst.parquet`, `.gz.parquet`; none for `none`), as Paimon names them. The
    /// name always carries `file.compression`, whatever codec a level uses.
    pub fn file_extension(&self, format: &str) -> String {
        let codec = match self.file_compression.as_str() {
            "" | "none" => None,
            "zstd" => Some("zst"),
            "gzip" => Some("gz"),
            "bzip2" => Some("bz2"),
            other => Some(other),
        };
        match codec.filter(|_| self.file_suffix_include_compression) {
            Some(c) => format!(".{c}.{format}"),
            None => format!(".{format}"),
        }
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn pk(pairs: &[(&str, &str)]) -> Result<CoreOptions> {
        CoreOptions::from_pairs(TableKind::PrimaryKey, Flavor::Java, pairs.iter().copied())
    }

    #[test]
    fn defaults_and_derivations() {
        let o = pk(&[]).unwrap();
        assert_eq!(o.target_file_size, 128 * MIB);
        assert_eq!(o.compaction_file_size, 93_952_409);
        assert_eq!(o.num_sorted_run_stop_trigger, 8);
        assert_eq!(o.num_levels, 6);
        assert_eq!(o.lookup_compact_max_interval, 10);
        assert_eq!(o.file_compression, "zstd");
        let cpp = CoreOptions::from_pairs(TableKind::PrimaryKey, Flavor::Cpp, []).unwrap();
        assert_eq!(cpp.compaction_file_size, 93_952_404);
        let a = CoreOptions::defaults(TableKind::Append);
        assert_eq!(a.compaction_file_size, 187_904_819);
    }

    #[test]
    fn stop_trigger_never_below_trigger() {
        let o = pk(&[
            ("num-sorted-run.compaction-trigger", "10"),
            ("num-sorted-run.stop-trigger", "4"),
        ])
        .unwrap();
        assert_eq!(o.num_sorted_run_stop_trigger, 10);
    }

    #[test]
    fn malformed_values_name_key_and_value() {
        for (k, v) in [
            ("target-file-size", "big"),
            ("num-sorted-run.compaction-trigger", "0"),
            ("compaction.size-ratio", "-3"),
            ("compaction.optimization-interval", "1 fortnight"),
            ("merge-engine", "last-writer-wins"),
            ("deletion-vectors.enabled", "yes"),
            ("compaction.offpeak.start.hour", "24"),
            ("num-levels", "1"),
            ("bucket", "0"),
            ("sequence.field.sort-order", "desc"),
        ] {
            let e = pk(&[(k, v)]).unwrap_err();
            assert_eq!(
                e.kind,
                ErrorKind::InvalidOption {
                    key: k.into(),
                    value: v.into()
                },
                "{k}={v}: {e}"
            );
            assert!(e.message.contains(k) && e.message.contains(v), "{e}");
        }
    }

    #[test]
    fn typo_in_compaction_namespace_is_rejected_with_a_hint() {
        let e = pk(&[("compaction.min-file-num", "3")]).unwrap_err();
        assert!(
            e.message.contains("did you mean 'compaction.min.file-num'"),
            "{e}"
        );
    }

    #[test]
    fn manifest_options() {
        let d = pk(&[]).unwrap().manifest;
        assert_eq!(d, ManifestOptions::default());
        assert_eq!(
            (
                d.merge_min_count,
                d.target_file_size,
                d.full_compaction_threshold_size
            ),
            (30, 8 * MIB, 16 * MIB)
        );
        let o = pk(&[
            ("manifest.merge-min-count", "2"),
            ("manifest.target-file-size", "1 kb"),
            ("manifest.full-compaction-threshold-size", "3mb"),
        ])
        .unwrap()
        .manifest;
        assert_eq!(
            (
                o.merge_min_count,
                o.target_file_size,
                o.full_compaction_threshold_size
            ),
            (2, 1024, 3 * MIB)
        );
        for (k, v) in [
            ("manifest.merge-min-count", "0"),
            ("manifest.target-file-size", "0"),
            ("manifest.full-compaction-threshold-size", "lots"),
        ] {
            let e = pk(&[(k, v)]).unwrap_err();
            assert!(e.to_string().contains(k), "{e}");
        }
    }

    #[test]
    fn unknown_paimon_keys_are_kept() {
        let o = pk(&[
            ("snapshot.num-retained.min", "10"),
            ("fields.v.aggregate-function", "sum"),
        ])
        .unwrap();
        assert_eq!(
            o.raw.get("snapshot.num-retained.min").map(String::as_str),
            Some("10")
        );
    }

    #[test]
    fn fallback_keys() {
        assert!(pk(&[("write.compaction-skip", "true")]).unwrap().write_only);
        assert!(
            !pk(&[("write-only", "false"), ("write.compaction-skip", "true")])
                .unwrap()
                .write_only
        );
        assert!(
            !pk(&[("changelog-producer.lookup-wait", "false")])
                .unwrap()
                .lookup_wait
        );
    }

    #[test]
    fn need_lookup_derivation() {
        assert!(!pk(&[]).unwrap().need_lookup());
        assert!(pk(&[("changelog-producer", "lookup")])
            .unwrap()
            .need_lookup());
        assert!(pk(&[("deletion-vectors.enabled", "true")])
            .unwrap()
            .need_lookup());
        assert!(pk(&[("merge-engine", "first-row")]).unwrap().need_lookup());
        assert!(pk(&[("force-lookup", "true")]).unwrap().need_lookup());
    }

    #[test]
    fn sequence_field_sort_order() {
        assert_eq!(
            pk(&[]).unwrap().sequence_field_sort_order,
            SequenceSortOrder::Ascending
        );
        // Paimon matches enum values case-insensitively.
        for (v, want) in [
            ("ascending", SequenceSortOrder::Ascending),
            ("DESCENDING", SequenceSortOrder::Descending),
            ("Descending", SequenceSortOrder::Descending),
        ] {
            let o = pk(&[("sequence.field.sort-order", v)]).unwrap();
            assert_eq!(o.sequence_field_sort_order, want, "{v}");
        }
        for v in ["", "asc", "reverse"] {
            let e = pk(&[("sequence.field.sort-order", v)]).unwrap_err();
            assert_eq!(
                e.kind,
                ErrorKind::InvalidOption {
                    key: "sequence.field.sort-order".into(),
                    value: v.into()
                },
                "{v}: {e}"
            );
            assert!(e.message.contains("ascending, descending"), "{e}");
        }
    }

    #[test]
    fn per_level_format() {
        let o = pk(&[("file.format.per.level", "0:avro, 3:orc")]).unwrap();
        assert_eq!(o.file_format_for_level(0), "avro");
        assert_eq!(o.file_format_for_level(1), "parquet");
        assert_eq!(o.file_format_for_level(3), "orc");
    }

    #[test]
    fn postpone_bucket_count_follows_paimon_heads_order() {
        let parse = |pairs: &[(&str, &str)]| {
            CoreOptions::from_pairs(TableKind::PrimaryKey, Flavor::Java, pairs.iter().copied())
                .unwrap()
                .postpone
        };
        // The default: bytes over 1 GiB, rounded up, at least 1.
        let p = parse(&[]);
        assert_eq!(p.bucket_count(10, 0).unwrap(), 1);
        assert_eq!(p.bucket_count(10, 1 << 30).unwrap(), 1);
        assert_eq!(p.bucket_count(10, (1 << 30) + 1).unwrap(), 2);
        // Rows over the target when it is set; the default count wins over both.
        let p = parse(&[("postpone.target-row-num-per-bucket", "10")]);
        assert_eq!(p.bucket_count(35, 1 << 40).unwrap(), 4);
        assert_eq!(p.bucket_count(0, 0).unwrap(), 1);
        let p = parse(&[
            ("postpone.target-row-num-per-bucket", "10"),
            ("postpone.default-bucket-num", "3"),
        ]);
        assert_eq!(p.bucket_count(35, 0).unwrap(), 3);
        let p = parse(&[("postpone.target-row-num-per-bucket", "1")]);
        assert!(p.bucket_count(u64::MAX, 0).is_err());
        let bad = |k, v| CoreOptions::from_pairs(TableKind::PrimaryKey, Flavor::Java, [(k, v)]);
        assert!(bad("postpone.default-bucket-num", "0").is_err());
        assert!(bad("bucket-function.type", "crc").is_err());
    }
}
