//! How a changelog-producing rewriter handles a file the task would only upgrade (spec §10.2–§10.4).
//!
//! Moving a level-0 file up is free for a plain rewriter, but a lookup table must still look
//! its keys up in older levels to emit changelog or mark deletion vectors, and some merge
//! engines must rewrite the file with the merged values.

use crate::meta::Level;
use crate::options::{ChangelogProducer, CoreOptions, MergeEngine};

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
    pub file_level: Level,
    pub output_level: Level,
    pub max_level: Level,
    pub dv_enabled: bool,
    pub delete_row_count: Option<u64>,
    pub merge_engine: MergeEngine,
    pub has_sequence_field: bool,
    pub level0_format: &'a str,
    pub output_format: &'a str,
    /// Java's primary-key vector index (forces a rewrite); always false for C++.
    pub vector_index: bool,
}

impl<'a> LookupUpgradeFacts<'a> {
    pub fn new(
        options: &'a CoreOptions,
        file_level: Level,
        delete_row_count: Option<u64>,
        output_level: Level,
        max_level: Level,
    ) -> Self {
        LookupUpgradeFacts {
            file_level,
            output_level,
            max_level,
            dv_enabled: options.deletion_vectors_enabled,
            delete_row_count,
            merge_engine: options.merge_engine,
            has_sequence_field: options.sequence_field.is_some(),
            level0_format: options.file_format_for_level(0),
            output_format: options.file_format_for_level(output_level.get()),
            vector_index: false,
        }
    }
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

/// The upgrade strategy of the rewriter the options select (spec §3 step 3).
pub fn upgrade_strategy_for(
    options: &CoreOptions,
    file_level: Level,
    delete_row_count: Option<u64>,
    output_level: Level,
    max_level: Level,
) -> UpgradeStrategy {
    if options.changelog_producer == ChangelogProducer::FullCompaction {
        full_changelog_upgrade_strategy(output_level, max_level)
    } else if options.need_lookup() {
        lookup_upgrade_strategy(&LookupUpgradeFacts::new(
            options,
            file_level,
            delete_row_count,
            output_level,
            max_level,
        ))
    } else {
        UpgradeStrategy::NoChangelogNoRewrite
    }
}
