//! The `paimon-compact.*` engine options the rewriters read, parsed into the typed settings of
//! the Parquet layer ([`crate::parquet_io`]).

use crate::error::{Error, Result};
use crate::options::CoreOptions;
use crate::parquet_io::dictionary::DictWriters;

/// Key of the spill budget (a memory size; `0` never spills).
pub const SPILL_THRESHOLD_OPTION: &str = "paimon-compact.write.spill-threshold";

/// The default budget of encoded pages held in memory per output file; it is also the peak of
/// a row group's flush, which sends each chunk on to storage as it passes. Chosen from peak RSS
/// and bytes spilled per budget: benches/README.md, "Then: each primary-key column encoded
/// once".
pub const DEFAULT_SPILL_THRESHOLD: usize = 48 * 1024 * 1024;

/// The spill budget the options ask for (`None`: never spill).
pub(crate) fn spill_threshold(options: &CoreOptions) -> Result<Option<usize>> {
    let Some(text) = options.raw.get(SPILL_THRESHOLD_OPTION) else {
        return Ok(Some(DEFAULT_SPILL_THRESHOLD));
    };
    let bytes = crate::options::parse_memory_size(text)
        .map_err(|e| Error::invalid_option(SPILL_THRESHOLD_OPTION, text, e))?;
    Ok(match usize::try_from(bytes) {
        Ok(0) => None,
        Ok(b) => Some(b),
        Err(_) => None,
    })
}

/// How many bytes of a column chunk one storage call fetches for the merge's page reads (a
/// memory size; `0`: exactly the bytes asked for, one call per page).
pub const READ_AHEAD_OPTION: &str = "paimon-compact.merge.read-ahead";
const DEFAULT_READ_AHEAD: u64 = 256 * 1024;

/// The read-ahead the options ask for.
pub(crate) fn read_ahead(options: &CoreOptions) -> Result<u64> {
    match options.raw.get(READ_AHEAD_OPTION) {
        None => Ok(DEFAULT_READ_AHEAD),
        Some(text) => crate::options::parse_memory_size(text)
            .map_err(|e| Error::invalid_option(READ_AHEAD_OPTION, text, e)),
    }
}

/// Which writer dictionary-encodes STRING columns that arrive as plain strings:
/// `paimon-compact` (default: this project's, one probe of its own table per row and no
/// per-row statistics; the page min/max come from the dictionary entries a page uses) or
/// `arrow` (arrow-rs's writer: its interner, and a min/max comparison per row).
pub const STRING_DICTIONARY_OPTION: &str = "paimon-compact.write.string-dictionary-writer";

/// Chooses the dictionary writer of INT32, INT64, FLOAT and DOUBLE columns: `paimon-compact`
/// (this project's, the default) or `arrow` (arrow-rs's own, to measure the difference or to
/// step around this one).
pub const PRIMITIVE_DICTIONARY_OPTION: &str = "paimon-compact.write.primitive-dictionary-writer";

/// The column writers the options ask for.
pub(crate) fn dict_writers(options: &CoreOptions) -> Result<DictWriters> {
    Ok(DictWriters {
        primitives: ours_or_arrow(options, PRIMITIVE_DICTIONARY_OPTION)?,
        strings: ours_or_arrow(options, STRING_DICTIONARY_OPTION)?,
    })
}

/// A writer choice `key` = `paimon-compact` (the default: `true`) or `arrow` (`false`).
fn ours_or_arrow(options: &CoreOptions, key: &str) -> Result<bool> {
    match options.raw.get(key).map(|v| v.trim()) {
        None | Some("paimon-compact") => Ok(true),
        Some("arrow") => Ok(false),
        Some(other) => Err(Error::invalid_option(
            key,
            other,
            "expected paimon-compact or arrow",
        )),
    }
}
