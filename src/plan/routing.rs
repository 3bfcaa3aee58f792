//! Which compaction a table gets, and which tables get none (spec §3 step 1, §13, §14, §15).

use super::NotCompactable;
use crate::error::{Error, Result};
use crate::options::{CoreOptions, TableKind};

/// The compaction machinery that applies to a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompactionMode {
    /// Primary-key table: an LSM tree per bucket.
    MergeTree,
    /// Append table with fixed buckets: a file queue per bucket.
    BucketedAppend,
    /// Append table with `bucket = -1`: one coordinator over all partitions.
    UnawareBucketCoordinator,
}

/// Routes a table as its writers see it, or says why they do not compact it: a writer of a
/// `write-only` table skips compaction (the simulator and `plan-bucket` model writers).
pub fn route(options: &CoreOptions, has_blob_column: bool) -> Result<CompactionMode> {
    if options.write_only {
        return Err(Error::not_compactable(NotCompactable::WriteOnly));
    }
    let mode = route_job(options, has_blob_column)?;
    if options.bucket == -2 {
        // A writer of a postpone-bucket table only ever writes to the postpone bucket.
        return Err(Error::not_compactable(NotCompactable::PostponeBucket));
    }
    Ok(mode)
}

/// Routes a table as a dedicated compaction job sees it: `write-only` is ignored (the job runs
/// with it off, as Paimon's compact action forces it), and a postpone-bucket primary-key table
/// (`bucket = -2`) is compacted in its real buckets like a fixed-bucket one (the files still
/// in the postpone bucket are left to the rescale, per bucket, by the table job).
pub fn route_job(options: &CoreOptions, has_blob_column: bool) -> Result<CompactionMode> {
    if options.data_evolution_enabled {
        return Err(Error::not_compactable(NotCompactable::DataEvolution {
            deletion_vectors: options.deletion_vectors_enabled,
        }));
    }
    if has_blob_column {
        return Err(Error::not_compactable(NotCompactable::BlobTable));
    }
    if options.bucket == -2 && options.table_kind != TableKind::PrimaryKey {
        return Err(Error::not_compactable(NotCompactable::PostponeBucket));
    }
    Ok(match (options.table_kind, options.bucket) {
        (TableKind::PrimaryKey, _) => CompactionMode::MergeTree,
        (TableKind::Append, -1) => CompactionMode::UnawareBucketCoordinator,
        (TableKind::Append, _) => CompactionMode::BucketedAppend,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Flavor;
    use crate::ErrorKind;

    fn opts(kind: TableKind, pairs: &[(&str, &str)]) -> CoreOptions {
        CoreOptions::from_pairs(kind, Flavor::Java, pairs.iter().copied()).unwrap()
    }

    fn rejected(o: &CoreOptions, blob: bool) -> NotCompactable {
        match route(o, blob).unwrap_err().kind {
            ErrorKind::NotCompactable { reason } => reason,
            other => panic!("expected not-compactable, got {other:?}"),
        }
    }

    #[test]
    fn routes() {
        assert_eq!(
            route(&opts(TableKind::PrimaryKey, &[("bucket", "4")]), false).unwrap(),
            CompactionMode::MergeTree
        );
        assert_eq!(
            route(&opts(TableKind::Append, &[("bucket", "4")]), false).unwrap(),
            CompactionMode::BucketedAppend
        );
        assert_eq!(
            route(&opts(TableKind::Append, &[]), false).unwrap(),
            CompactionMode::UnawareBucketCoordinator
        );
    }

    #[test]
    fn rejections_carry_their_reason() {
        assert_eq!(
            rejected(
                &opts(TableKind::PrimaryKey, &[("write-only", "true")]),
                false
            ),
            NotCompactable::WriteOnly
        );
        assert_eq!(
            rejected(
                &opts(TableKind::Append, &[("data-evolution.enabled", "true")]),
                false
            ),
            NotCompactable::DataEvolution {
                deletion_vectors: false
            }
        );
        assert_eq!(
            rejected(
                &opts(
                    TableKind::Append,
                    &[
                        ("data-evolution.enabled", "true"),
                        ("deletion-vectors.enabled", "true")
                    ]
                ),
                false
            ),
            NotCompactable::DataEvolution {
                deletion_vectors: true
            }
        );
        assert_eq!(
            rejected(&opts(TableKind::Append, &[]), true),
            NotCompactable::BlobTable
        );
        assert_eq!(
            rejected(&opts(TableKind::PrimaryKey, &[("bucket", "-2")]), false),
            NotCompactable::PostponeBucket
        );
    }
}
