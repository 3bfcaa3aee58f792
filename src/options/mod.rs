//! Table options, parsed once from Paimon's string keys into a typed struct (spec §2).
//!
//! Paimon tables carry hundreds of options; this module reads the ones compaction depends on,
//! applies Paimon's defaults and derivations in one place, and keeps every other key verbatim in
//! [`CoreOptions::raw`] so nothing is lost when the options travel on. A malformed or
//! out-of-range value of a key we use is an [`Error`] naming the key and the value; so is an
//! unrecognised key in the compaction namespaces, where a typo would otherwise silently fall
//! back to a default.

pub mod engine;
mod units;

use std::collections::BTreeMap;
use std::fmt;

pub use units::{parse_duration_ms, parse_memory_size};

use crate::plan::OffPeakHours;

use crate::error::{Error, Result};

const MIB: u64 = 1 << 20;

/// Which implementation's decisions to reproduce where Java and C++ differ (spec §16).
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
    PrimaryKey,
    Append,
}

macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        pub enum $name { $(#[serde(rename = $text)] $variant),+ }
        impl $name {
            pub fn as_str(self) -> &'static str { match self { $($name::$variant => $text),+ } }
            fn parse(key: &str, value: &str) -> Result<Self> {
                match value.trim().to_ascii_lowercase().as_str() {
                    $($text => Ok($name::$variant),)+
                    _ => Err(Error::invalid_option(key, value,
                        format!("expected one of: {}", [$($text),+].join(", ")))),
                }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
    };
}

string_enum!(
    /// `merge-engine`: how records with the same key combine.
    MergeEngine { Deduplicate = "deduplicate", PartialUpdate = "partial-update", Aggregation = "aggregation", FirstRow = "first-row" }
);
string_enum!(
    /// `changelog-producer`.
    ChangelogProducer { None = "none", Input = "input", FullCompaction = "full-compaction", Lookup = "lookup" }
);
string_enum!(
    /// `lookup-compact`: how eagerly lookup tables push level 0 up.
    LookupCompactMode { Radical = "radical", Gentle = "gentle" }
);
string_enum!(
    /// `sequence.field.sort-order` (Paimon's `CoreOptions.SortOrder`): which way the user
    /// `sequence.field` values order a key's records. It applies to those values only: the
    /// system `_SEQUENCE_NUMBER` that breaks their ties always ascends, and a null value is the
    /// oldest either way (Paimon's `UserDefinedSeqComparator` reverses non-null comparisons
    /// only).
    SequenceSortOrder { Ascending = "ascending", Descending = "descending" }
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

/// Parquet writer settings that compaction honours when it rewrites files.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ParquetOptions {
    pub block_size: u64,
    pub page_size: u64,
    pub dictionary_page_size: u64,
    pub enable_dictionary: bool,
    /// `parquet.read.enable-dictionary-passthrough`.
    pub dictionary_passthrough: bool,
}

/// Every option compaction uses, typed, with Paimon's defaults and derivations applied.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CoreOptions {
    pub table_kind: TableKind,
    pub flavor: Flavor,
    /// `bucket`: `-1` is an unaware-bucket (append) or dynamic-bucket table, `-2` postponed.
    pub bucket: i32,
    pub target_file_size: u64,
    pub small_file_ratio: f64,
    /// Files below this size are "small" (rewritten rather than upgraded, re-queued...).
    pub compaction_file_size: u64,
    pub num_sorted_run_compaction_trigger: usize,
    /// Effective: at least the compaction trigger.
    pub num_sorted_run_stop_trigger: usize,
    /// Configured number of levels (restored files may raise it, see `Levels`).
    pub num_levels: u32,
    pub max_size_amplification_percent: u64,
    pub size_ratio: u32,
    pub off_peak: Option<OffPeakHours>,
    pub optimization_interval_ms: Option<u64>,
    pub total_size_threshold: Option<u64>,
    pub incremental_size_threshold: Option<u64>,
    pub force_up_level0: bool,
    pub force_rewrite_all_files: bool,
    pub min_file_num: usize,
    pub file_num_limit: usize,
    pub delete_ratio_threshold: f64,
    pub open_file_cost: u64,
    pub write_only: bool,
    pub changelog_producer: ChangelogProducer,
    pub merge_engine: MergeEngine,
    pub deletion_vectors_enabled: bool,
    pub force_lookup: bool,
    pub lookup_wait: bool,
    pub lookup_compact: LookupCompactMode,
    /// Effective: at least the compaction trigger.
    pub lookup_compact_max_interval: usize,
    pub full_compaction_delta_commits: Option<u32>,
    pub commit_force_compact: bool,
    pub data_evolution_enabled: bool,
    pub sequence_field: Option<String>,
    /// `sequence.field.sort-order`: with `descending`, the smallest `sequence.field` value is
    /// the newest record. Defaulted when absent from serialized options of older builds.
    #[serde(default)]
    pub sequence_field_sort_order: SequenceSortOrder,
    pub ignore_delete: bool,
    pub partial_update_remove_record_on_delete: bool,
    pub file_format: String,
    /// `file.format.per.level`: level → format.
    pub file_format_per_level: BTreeMap<u32, String>,
    pub file_compression: String,
    pub zstd_level: i32,
    pub parquet: ParquetOptions,
    /// How the commit merges small manifests (`manifest.*`).
    #[serde(default)]
    pub manifest: ManifestOptions,
    /// The `paimon-compact.*` engine options.
    #[serde(default)]
    pub engine: engine::EngineOptions,
    /// Every key as given, including the ones not interpreted here.
    pub raw: BTreeMap<String, String>,
}

/// Paimon keys in the compaction namespaces (`compaction.`, `num-sorted-run.`,
/// `lookup-compact`, `num-levels`). A key there that is not in this list is almost certainly a
/// typo, so it is rejected instead of being ignored.
const KNOWN_COMPACTION_KEYS: &[&str] = &[
    "compaction.delete-ratio-threshold",
    "compaction.file-num-limit",
    "compaction.force-rewrite-all-files",
    "compaction.force-up-level-0",
    "compaction.incremental-size-threshold",
    "compaction.max-size-amplification-percent",
    "compaction.min.file-num",
    "compaction.offpeak-ratio",
    "compaction.offpeak.end.hour",
    "compaction.offpeak.start.hour",
    "compaction.optimization-interval",
    "compaction.size-ratio",
    "compaction.skip-expired-partitions",
    "compaction.small-file-ratio",
    "compaction.total-size-threshold",
    "num-sorted-run.compaction-trigger",
    "num-sorted-run.stop-trigger",
    "num-levels",
    "lookup-compact",
    "lookup-compact.max-interval",
];

/// Keys that existed in older Paimon releases: accepted and ignored, as Paimon does.
const RETIRED_COMPACTION_KEYS: &[&str] =
    &["compaction.max.file-num", "compaction.early-max.file-num"];

fn in_compaction_namespace(key: &str) -> bool {
    key.starts_with("compaction.")
        || key.starts_with("num-sorted-run.")
        || key.starts_with("lookup-compact")
        || key.starts_with("num-levels")
}

/// Reads typed values out of the raw map, remembering the key for error messages.
struct Reader<'a> {
    raw: &'a BTreeMap<String, String>,
}

impl Reader<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.raw.get(key).map(String::as_str)
    }

    fn bool(&self, key: &str, default: bool) -> Result<bool> {
        self.get(key).map_or(Ok(default), |v| parse_bool(key, v))
    }

    fn int<T: TryFrom<i64>>(&self, key: &str, min: i64, max: i64) -> Result<Option<T>> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let n: i64 = v
            .trim()
            .parse()
            .map_err(|_| Error::invalid_option(key, v, "expected a whole number"))?;
        if n < min || n > max {
            return Err(Error::invalid_option(
                key,
                v,
                format!("must be between {min} and {max}"),
            ));
        }
        T::try_from(n)
            .map(Some)
            .map_err(|_| Error::invalid_option(key, v, "out of range"))
    }

    fn float(&self, key: &str, default: f64, min: f64, max: f64) -> Result<f64> {
        let Some(v) = self.get(key) else {
            return Ok(default);
        };
        let x: f64 = v
            .trim()
            .parse()
            .map_err(|_| Error::invalid_option(key, v, "expected a number"))?;
        if !(min..=max).contains(&x) {
            return Err(Error::invalid_option(
                key,
                v,
                format!("must be between {min} and {max}"),
            ));
        }
        Ok(x)
    }

    fn memory(&self, key: &str) -> Result<Option<u64>> {
        self.get(key)
            .map(|v| parse_memory_size(v).map_err(|why| Error::invalid_option(key, v, why)))
            .transpose()
    }

    fn positive_memory(&self, key: &str) -> Result<Option<u64>> {
        match self.memory(key)? {
            Some(0) => Err(Error::invalid_option(key, "0", "must be greater than zero")),
            other => Ok(other),
        }
    }

    fn duration_ms(&self, key: &str) -> Result<Option<u64>> {
        self.get(key)
            .map(|v| parse_duration_ms(v).map_err(|why| Error::invalid_option(key, v, why)))
            .transpose()
    }

    fn string(&self, key: &str, default: &str) -> String {
        self.get(key)
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| default.to_string())
    }
}

/// `true` or `false` (any case, trimmed), else a typed invalid-option error naming `key`.
pub(crate) fn parse_bool(key: &str, v: &str) -> Result<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(Error::invalid_option(key, v, "expected true or false")),
    }
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

    pub fn parse_with(
        table_kind: TableKind,
        flavor: Flavor,
        raw: &BTreeMap<String, String>,
    ) -> Result<Self> {
        for key in raw.keys() {
            if in_compaction_namespace(key)
                && !KNOWN_COMPACTION_KEYS.contains(&key.as_str())
                && !RETIRED_COMPACTION_KEYS.contains(&key.as_str())
            {
                let hint = KNOWN_COMPACTION_KEYS
                    .iter()
                    .min_by_key(|k| edit_distance(k, key))
                    .filter(|k| edit_distance(k, key) <= 3)
                    .map(|k| format!(" (did you mean '{k}'?)"))
                    .unwrap_or_default();
                return Err(Error::invalid_option(
                    key,
                    &raw[key],
                    format!("unknown compaction option{hint}"),
                ));
            }
        }
        let r = Reader { raw };

        let bucket: i32 = r.int("bucket", -2, i32::MAX as i64)?.unwrap_or(-1);
        if bucket == 0 {
            return Err(Error::invalid_option(
                "bucket",
                "0",
                "must be -1, -2 or positive",
            ));
        }
        let default_target = match table_kind {
            TableKind::PrimaryKey => 128 * MIB,
            TableKind::Append => 256 * MIB,
        };
        let target_file_size = r
            .positive_memory("target-file-size")?
            .unwrap_or(default_target);
        let small_file_ratio = r.float("compaction.small-file-ratio", 0.7, 0.0, 1.0)?;
        let compaction_file_size = match flavor {
            Flavor::Java => (target_file_size as f64 * small_file_ratio) as u64,
            Flavor::Cpp => target_file_size / 10 * 7,
        };

        let trigger: usize = r
            .int("num-sorted-run.compaction-trigger", 1, i32::MAX as i64)?
            .unwrap_or(5);
        let stop: usize = r
            .int("num-sorted-run.stop-trigger", 1, i32::MAX as i64)?
            .unwrap_or_else(|| trigger.saturating_add(3).min(i32::MAX as usize));
        let num_levels: u32 = r
            .int("num-levels", 2, Level::LIMIT as i64)?
            .unwrap_or_else(|| (trigger as u32).saturating_add(1));
        if num_levels > Level::LIMIT {
            return Err(Error::invalid_option(
                "num-sorted-run.compaction-trigger",
                &trigger.to_string(),
                format!(
                    "derives {num_levels} levels; set num-levels explicitly (at most {})",
                    Level::LIMIT
                ),
            ));
        }
        let lookup_interval: usize = r
            .int("lookup-compact.max-interval", 1, i32::MAX as i64)?
            .unwrap_or_else(|| trigger.saturating_mul(2).min(i32::MAX as usize));

        let start: i32 = r
            .int("compaction.offpeak.start.hour", -1, 23)?
            .unwrap_or(-1);
        let end: i32 = r.int("compaction.offpeak.end.hour", -1, 23)?.unwrap_or(-1);
        let offpeak_ratio: u32 = r
            .int("compaction.offpeak-ratio", 0, i32::MAX as i64)?
            .unwrap_or(0);

        let write_only = match r.get("write-only") {
            Some(v) => parse_bool("write-only", v)?,
            None => r.bool("write.compaction-skip", false)?,
        };
        let lookup_wait = match r.get("lookup-wait") {
            Some(v) => parse_bool("lookup-wait", v)?,
            None => r.bool("changelog-producer.lookup-wait", true)?,
        };

        let mut file_format_per_level = BTreeMap::new();
        if let Some(v) = r.get("file.format.per.level") {
            for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let (lvl, fmt) = part.split_once(':').ok_or_else(|| {
                    Error::invalid_option("file.format.per.level", v, "expected level:format,...")
                })?;
                let lvl: u32 = lvl.trim().parse().map_err(|_| {
                    Error::invalid_option("file.format.per.level", v, "level must be a number")
                })?;
                file_format_per_level.insert(lvl, fmt.trim().to_ascii_lowercase());
            }
        }

        let enable_dictionary = match r.get("parquet.enable.dictionary") {
            Some(v) => parse_bool("parquet.enable.dictionary", v)?,
            None => true,
        };

        Ok(CoreOptions {
            table_kind,
            flavor,
            bucket,
            target_file_size,
            small_file_ratio,
            compaction_file_size,
            num_sorted_run_compaction_trigger: trigger,
            num_sorted_run_stop_trigger: stop.max(trigger),
            num_levels,
            max_size_amplification_percent: r
                .int(
                    "compaction.max-size-amplification-percent",
                    0,
                    i32::MAX as i64,
                )?
                .unwrap_or(200),
            size_ratio: r
                .int("compaction.size-ratio", 0, i32::MAX as i64)?
                .unwrap_or(1),
            off_peak: OffPeakHours::create(start, end, offpeak_ratio),
            optimization_interval_ms: r.duration_ms("compaction.optimization-interval")?,
            total_size_threshold: r.memory("compaction.total-size-threshold")?,
            incremental_size_threshold: r.memory("compaction.incremental-size-threshold")?,
            force_up_level0: r.bool("compaction.force-up-level-0", false)?,
            force_rewrite_all_files: r.bool("compaction.force-rewrite-all-files", false)?,
            min_file_num: r
                .int("compaction.min.file-num", 1, i32::MAX as i64)?
                .unwrap_or(5),
            file_num_limit: r
                .int("compaction.file-num-limit", 1, i32::MAX as i64)?
                .unwrap_or(100_000),
            delete_ratio_threshold: r.float("compaction.delete-ratio-threshold", 0.2, 0.0, 1.0)?,
            open_file_cost: r.memory("source.split.open-file-cost")?.unwrap_or(4 * MIB),
            write_only,
            changelog_producer: r
                .get("changelog-producer")
                .map(|v| ChangelogProducer::parse("changelog-producer", v))
                .transpose()?
                .unwrap_or(ChangelogProducer::None),
            merge_engine: r
                .get("merge-engine")
                .map(|v| MergeEngine::parse("merge-engine", v))
                .transpose()?
                .unwrap_or(MergeEngine::Deduplicate),
            deletion_vectors_enabled: r.bool("deletion-vectors.enabled", false)?,
            force_lookup: r.bool("force-lookup", false)?,
            lookup_wait,
            lookup_compact: r
                .get("lookup-compact")
                .map(|v| LookupCompactMode::parse("lookup-compact", v))
                .transpose()?
                .unwrap_or(LookupCompactMode::Radical),
            lookup_compact_max_interval: lookup_interval.max(trigger),
            full_compaction_delta_commits: r.int(
                "full-compaction.delta-commits",
                1,
                i32::MAX as i64,
            )?,
            commit_force_compact: r.bool("commit.force-compact", false)?,
            data_evolution_enabled: r.bool("data-evolution.enabled", false)?,
            sequence_field: r
                .get("sequence.field")
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty()),
            sequence_field_sort_order: r
                .get("sequence.field.sort-order")
                .map(|v| SequenceSortOrder::parse("sequence.field.sort-order", v))
                .transpose()?
                .unwrap_or_default(),
            ignore_delete: r.bool("ignore-delete", false)?,
            partial_update_remove_record_on_delete: r
                .bool("partial-update.remove-record-on-delete", false)?,
            file_format: r.string("file.format", "parquet").to_ascii_lowercase(),
            file_format_per_level,
            file_compression: r.string("file.compression", "zstd").to_ascii_lowercase(),
            zstd_level: r.int("file.compression.zstd-level", 1, 22)?.unwrap_or(1),
            manifest: ManifestOptions {
                merge_min_count: r
                    .int("manifest.merge-min-count", 1, i32::MAX as i64)?
                    .unwrap_or(30),
                target_file_size: r
                    .positive_memory("manifest.target-file-size")?
                    .unwrap_or(8 * MIB),
                full_compaction_threshold_size: r
                    .positive_memory("manifest.full-compaction-threshold-size")?
                    .unwrap_or(16 * MIB),
            },
            parquet: ParquetOptions {
                block_size: r
                    .positive_memory("parquet.block.size")?
                    .unwrap_or(128 * MIB),
                page_size: r.positive_memory("parquet.page.size")?.unwrap_or(MIB),
                dictionary_page_size: r
                    .positive_memory("parquet.dictionary.page.size")?
                    .unwrap_or(MIB),
                enable_dictionary,
                dictionary_passthrough: r
                    .bool("parquet.read.enable-dictionary-passthrough", false)?,
            },
            engine: engine::EngineOptions::parse(raw)?,
            raw: raw.clone(),
        })
    }

    /// Defaults for a table kind.
    pub fn defaults(table_kind: TableKind) -> Self {
        Self::parse(table_kind, &BTreeMap::new()).expect("defaults parse")
    }

    pub fn is_first_row(&self) -> bool {
        self.merge_engine == MergeEngine::FirstRow
    }

    /// Lookup tables keep level 0 empty so reads can look keys up level by level (spec §2).
    pub fn need_lookup(&self) -> bool {
        self.changelog_producer == ChangelogProducer::Lookup
            || self.deletion_vectors_enabled
            || self.is_first_row()
            || self.force_lookup
    }

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
}

use crate::meta::Level;

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
}
