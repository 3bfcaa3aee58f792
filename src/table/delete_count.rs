//! Verifying a primary-key file's retract-row count from its Parquet footer.
//!
//! Readers trust `_DELETE_ROW_COUNT`: a level ≥ 1 file that claims 0 retract rows is read
//! without merging, and the planner upgrades it into the max level without rewriting. Some
//! writers record 0 for files that do contain `-U`/`-D` rows (pypaimon does), so before the
//! planner sees a level-0 file that claims 0, the column statistics of `_VALUE_KIND` are
//! checked: all row groups with max kind 0 (+I), or all kinds 2 (+U), prove the claim;
//! anything else makes the count unknown, which the planner treats as "may contain deletes".

use std::sync::Arc;

use parquet::file::statistics::Statistics;

use crate::error::{Error, Result};
use crate::parquet_io::footer::{self, FooterPolicy};
use crate::parquet_io::read::IoCounters;
use crate::rewrite::merge::kv_format::VALUE_KIND;
use crate::storage::Storage;

/// Reads the Parquet footer of a file through ranged reads (its column statistics; no page
/// index).
pub fn read_footer(
    storage: &dyn Storage,
    path: &str,
) -> Result<parquet::file::metadata::ParquetMetaData> {
    let mut io = IoCounters::default();
    let input = footer::read_footer(storage, path, FooterPolicy::STATISTICS, &mut io)?;
    Ok(Arc::try_unwrap(input.metadata).unwrap_or_else(|shared| (*shared).clone()))
}

/// `Some(0)` when the footer proves the file has no `-U`/`-D` rows, else `None` (unknown).
pub fn proven_no_retracts(storage: &dyn Storage, path: &str) -> Result<Option<u64>> {
    let meta = read_footer(storage, path)?;
    let schema = meta.file_metadata().schema_descr();
    let Some(col) = (0..schema.num_columns()).find(|&i| schema.column(i).name() == VALUE_KIND)
    else {
        return Err(Error::corrupt(
            Some(path),
            "a primary-key data file without the _VALUE_KIND column",
        ));
    };
    for rg in meta.row_groups() {
        if rg.num_rows() == 0 {
            continue;
        }
        let (min, max) = match rg.column(col).statistics() {
            Some(Statistics::Int32(s)) => match (s.min_opt(), s.max_opt()) {
                (Some(a), Some(b)) => (*a, *b),
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        let only_inserts = max <= 0;
        let only_update_after = min == 2 && max == 2;
        if !(only_inserts || only_update_after) {
            return Ok(None);
        }
    }
    Ok(Some(0))
}
