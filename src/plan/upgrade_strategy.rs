//! How a changelog-producing rewriter handles a file the task would only upgrade (compaction.md
//! §10.2–§10.4).
//!
//! Moving a level-0 file up is free for a plain rewriter, but a lookup table must still look
//! its keys up in older levels to emit changelog or mark deletion vectors, and some merge
//! engines must rewrite the file with the merged values.

use crate::meta::Level;
use crate::options::{ChangelogProducer, CoreOptions, MergeEngine};

/// What moving a file up a level costs under the table's rewriter (compaction.md §10.2).
/// Serialized in SCREAMING_SNAKE_CASE, as Paimon's enum constants are named.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum UpgradeStrategy {
    /// Metadata-only upgrade.
    NoChangelogNoRewrite,
    /// Run the changelog merge over the file (changelog, deletion-vector marks) but keep it.
    ChangelogNoRewrite,
    /// Run the merge and write a new file.
    ChangelogWithRewrite,
}

/// Everything the lookup rule looks at, so it can be evaluated (and tested) on its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LookupUpgradeFacts<'a> {
    /// Level the file is on now; only level-0 files are looked up (compaction.md §10.4 rule 1).
    pub file_level: Level,
    /// Level the task moves it to.
    pub output_level: Level,
    /// The bucket's max level (`num_levels − 1`).
    pub max_level: Level,
    /// `deletion-vectors.enabled`.
    pub dv_enabled: bool,
    /// The file's recorded retract count; `None` (unknown) counts as possibly non-zero.
    pub delete_row_count: Option<u64>,
    /// `merge-engine`.
    pub merge_engine: MergeEngine,
    /// Whether `sequence.field` is set.
    pub has_sequence_field: bool,
    /// File format configured for level 0 (`file.format.per.level`, else `file.format`).
    pub level0_format: &'a str,
    /// File format configured for the output level; compared case-insensitively with
    /// `level0_format`.
    pub output_format: &'a str,
    /// Java's primary-key vector index (forces a rewrite); always false for C++.
    pub vector_index: bool,
}

/// The lookup rewriter's rule; first match wins.
pub fn lookup_upgrade_strategy(f: &LookupUpgradeFacts<'_>) -> UpgradeStrategy {
    use UpgradeStrategy::*;
    if !f.file_level.is_zero() {
        return NoChangelogNoRewrite;
    }
    if f.vector_index {
        return ChangelogWithRewrite;
    }
    if !f.level0_format.eq_ignore_ascii_case(f.output_format) {
        return ChangelogWithRewrite;
    }
    if f.dv_enabled && f.delete_row_count.is_none_or(|n| n > 0) {
        return ChangelogWithRewrite;
    }
    if f.output_level == f.max_level {
        return ChangelogNoRewrite;
    }
    if f.merge_engine == MergeEngine::Deduplicate && !f.has_sequence_field {
        return ChangelogNoRewrite;
    }
    ChangelogWithRewrite
}

/// The full-compaction changelog rewriter's rule: changelog only when reaching the max level.
pub fn full_changelog_upgrade_strategy(output_level: Level, max_level: Level) -> UpgradeStrategy {
    if output_level == max_level {
        UpgradeStrategy::ChangelogNoRewrite
    } else {
        UpgradeStrategy::NoChangelogNoRewrite
    }
}

/// The upgrade strategy of the rewriter the options select (compaction.md §3 step 3).
pub fn upgrade_strategy_for(
    options: &CoreOptions,
    file_level: Level,
    delete_row_count: Option<u64>,
    output_level: Level,
    max_level: Level,
) -> UpgradeStrategy {
    UpgradeRule::new(options).strategy(file_level, delete_row_count, output_level, max_level)
}

/// What [`upgrade_strategy_for`] reads from the options, taken once: the planner keeps it per
/// bucket and puts each upgrade's strategy in its plan, so executors never derive it again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpgradeRule(RuleOf);

#[derive(Clone, Debug, PartialEq, Eq)]
enum RuleOf {
    /// No changelog rewriter: every upgrade is metadata only.
    MetadataOnly,
    /// `changelog-producer = full-compaction`.
    FullChangelog,
    /// A lookup table (lookup changelog, deletion vectors, first-row, `force-lookup`).
    Lookup(LookupOptions),
}

/// The options the lookup rule reads.
#[derive(Clone, Debug, PartialEq, Eq)]
struct LookupOptions {
    dv_enabled: bool,
    merge_engine: MergeEngine,
    has_sequence_field: bool,
    file_format: String,
    file_format_per_level: std::collections::BTreeMap<u32, String>,
}

impl UpgradeRule {
    /// Captures the rule the options select: full-compaction changelog, else lookup (for
    /// `need_lookup` tables), else metadata only (compaction.md §3 step 3).
    pub fn new(options: &CoreOptions) -> Self {
        UpgradeRule(
            if options.changelog_producer == ChangelogProducer::FullCompaction {
                RuleOf::FullChangelog
            } else if options.need_lookup() {
                RuleOf::Lookup(LookupOptions {
                    dv_enabled: options.deletion_vectors_enabled,
                    merge_engine: options.merge_engine,
                    has_sequence_field: options.sequence_field.is_some(),
                    file_format: options.file_format.clone(),
                    file_format_per_level: options.file_format_per_level.clone(),
                })
            } else {
                RuleOf::MetadataOnly
            },
        )
    }

    /// The strategy of moving a file of `file_level` to `output_level`.
    pub fn strategy(
        &self,
        file_level: Level,
        delete_row_count: Option<u64>,
        output_level: Level,
        max_level: Level,
    ) -> UpgradeStrategy {
        match &self.0 {
            RuleOf::MetadataOnly => UpgradeStrategy::NoChangelogNoRewrite,
            RuleOf::FullChangelog => full_changelog_upgrade_strategy(output_level, max_level),
            RuleOf::Lookup(o) => {
                // `CoreOptions::file_format_for_level`, on the captured options.
                let format = |level: u32| {
                    o.file_format_per_level
                        .get(&level)
                        .map_or(o.file_format.as_str(), String::as_str)
                };
                lookup_upgrade_strategy(&LookupUpgradeFacts {
                    file_level,
                    output_level,
                    max_level,
                    dv_enabled: o.dv_enabled,
                    delete_row_count,
                    merge_engine: o.merge_engine,
                    has_sequence_field: o.has_sequence_field,
                    level0_format: format(0),
                    output_format: format(output_level.get()),
                    vector_index: false,
                })
            }
        }
    }
}
