//! Which compaction a table gets, and which tables get none (compaction.md §3 step 1, §13, §14,
//! §15).

use crate::error::{Error, NotCompactable, Result};
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

/// What routing decided: the compaction a table gets, or why it gets none. A refusal is a
/// normal outcome of planning, not a failure, so it is a value here; callers whose API reports
/// it as an error (a bucket plan, the simulator's setup) turn it into one with
/// [`Route::into_result`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// The table is compacted by this machinery.
    Compact(CompactionMode),
    /// The table is not compacted here, with the reason (compaction.md §15).
    NotCompactable(NotCompactable),
}

impl Route {
    /// The mode, or `None` when the table is not compacted.
    pub fn mode(&self) -> Option<CompactionMode> {
        match self {
            Route::Compact(mode) => Some(*mode),
            Route::NotCompactable(_) => None,
        }
    }

    /// The mode, or an [`ErrorKind::NotCompactable`](crate::ErrorKind::NotCompactable) error
    /// carrying the reason.
    pub fn into_result(self) -> Result<CompactionMode> {
        match self {
            Route::Compact(mode) => Ok(mode),
            Route::NotCompactable(reason) => Err(Error::not_compactable(reason)),
        }
    }
}

/// Routes a table as its writers see it, or says why they do not compact it: a writer of a
/// `write-only` table skips compaction (the simulator and `plan-bucket` model writers).
pub fn route(options: &CoreOptions, has_blob_column: bool) -> Route {
    if options.write_only {
        return Route::NotCompactable(NotCompactable::WriteOnly);
    }
    let route = route_job(options, has_blob_column);
    if options.bucket == -2 && route.mode().is_some() {
        // A writer of a postpone-bucket table only ever writes to the postpone bucket.
        return Route::NotCompactable(NotCompactable::PostponeBucket);
    }
    route
}

/// Routes a table as a dedicated compaction job sees it: `write-only` is ignored (the job runs
/// with it off, as Paimon's compact action forces it), and a postpone-bucket primary-key table
/// (`bucket = -2`) is compacted in its real buckets like a fixed-bucket one (the files still
/// in the postpone bucket are left to the rescale, per bucket, by the table job).
pub fn route_job(options: &CoreOptions, has_blob_column: bool) -> Route {
    if options.data_evolution_enabled {
        return Route::NotCompactable(NotCompactable::DataEvolution {
            deletion_vectors: options.deletion_vectors_enabled,
        });
    }
    if has_blob_column {
        return Route::NotCompactable(NotCompactable::BlobTable);
    }
    if options.bucket == -2 && options.table_kind != TableKind::PrimaryKey {
        return Route::NotCompactable(NotCompactable::PostponeBucket);
    }
    Route::Compact(match (options.table_kind, options.bucket) {
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
        match route(o, blob).into_result().unwrap_err().kind {
            ErrorKind::NotCompactable { reason } => reason,
            other => panic!("expected not-compactable, got {other:?}"),
        }
    }

    #[test]
    fn routes() {
        assert_eq!(
            route(&opts(TableKind::PrimaryKey, &[("bucket", "4")]), false)
                .into_result()
                .unwrap(),
            CompactionMode::MergeTree
        );
        assert_eq!(
            route(&opts(TableKind::Append, &[("bucket", "4")]), false)
                .into_result()
                .unwrap(),
            CompactionMode::BucketedAppend
        );
        assert_eq!(
            route(&opts(TableKind::Append, &[]), false)
                .into_result()
                .unwrap(),
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
