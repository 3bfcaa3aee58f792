//! The engine's own options: the `paimon-compact.*` keys, which tune how this project rewrites
//! files (never what it writes or what Paimon decides).
//!
//! Each key is declared once, in the table of `engine_options!` below: its constant, its
//! field in [`EngineOptions`], its default and its parser. [`CoreOptions::parse_with`]
//! parses them once, with the table's other options, and rejects a key in the
//! `paimon-compact.` namespace that is not in the table (a typo would otherwise be ignored),
//! as it does for the compaction namespaces.
//!
//! A malformed *value* is kept as the error it is and reported when the engine reads the
//! setting ([`Setting::get`]): a table whose options carry a bad engine value can still be
//! planned (the planner reads none of them), and the rewrite that would use the value fails
//! before writing anything, naming the key.
//!
//! The `arrow` writer choices exist only to measure this project's writers against
//! arrow-rs's; they are compiled in with the `bench-comparisons` feature and rejected as
//! invalid values without it.
//!
//! [`CoreOptions::parse_with`]: super::CoreOptions::parse_with

use std::collections::BTreeMap;

use super::{parse_bool, parse_memory_size};
use crate::error::{Error, Result};

/// An engine setting: its parsed value, or the error its value is (see the module
/// documentation).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Setting<T>(std::result::Result<T, Error>);

impl<T: Clone> Setting<T> {
    /// The value, or the typed invalid-option error of a malformed one.
    pub fn get(&self) -> Result<T> {
        self.0.clone()
    }

    fn read(
        raw: &BTreeMap<String, String>,
        key: &str,
        default: T,
        parse: fn(&str, &str) -> Result<T>,
    ) -> Self {
        Setting(raw.get(key).map_or(Ok(default), |v| parse(key, v)))
    }
}

/// Which writer takes forwarded dictionaries (dictionary passthrough).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PassthroughWriter {
    /// Keys mapped to output ids once per input dictionary (`mapping`).
    #[default]
    Mapping,
    /// arrow-rs's writer, which hashes every row again (`arrow`): a comparison point only.
    #[cfg(feature = "bench-comparisons")]
    Arrow,
}

/// Which writer dictionary-encodes a kind of column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DictionaryWriter {
    /// This project's (`paimon-compact`): one probe of its own table per row, page statistics
    /// from the dictionary entries a page uses.
    #[default]
    PaimonCompact,
    /// arrow-rs's (`arrow`): its interner and a min/max comparison per row; a comparison point
    /// only.
    #[cfg(feature = "bench-comparisons")]
    Arrow,
}

impl DictionaryWriter {
    /// Whether this project's writer takes the columns.
    pub fn is_ours(self) -> bool {
        self == DictionaryWriter::PaimonCompact
    }
}

/// Declares the engine options: one line per key (see the module documentation).
macro_rules! engine_options {
    ($(
        $(#[doc = $doc:literal])*
        $field:ident: $ty:ty = $konst:ident($key:literal), default $default:expr, parse $parse:expr;
    )*) => {
        $(
            #[doc = concat!("The key of [`EngineOptions::", stringify!($field), "`].")]
            pub const $konst: &str = $key;
        )*

        /// The `paimon-compact.*` options of a table, parsed (see the module documentation).
        #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        pub struct EngineOptions {
            $(
                $(#[doc = $doc])*
                pub $field: Setting<$ty>,
            )*
        }

        /// Every engine key (the typo check's list).
        const KEYS: &[&str] = &[$($key),*];

        impl EngineOptions {
            fn read(raw: &BTreeMap<String, String>) -> Self {
                EngineOptions {
                    $($field: Setting::read(raw, $key, $default, $parse),)*
                }
            }
        }
    };
}

engine_options! {
    /// Splice input row groups that already match the table's schema and codec instead of
    /// re-encoding them (default `false`).
    fast_copy: bool = FAST_COPY_OPTION("paimon-compact.append.fast-copy"),
        default false, parse parse_bool;
    /// Which writer takes forwarded dictionaries: `mapping` (default) or, with the
    /// `bench-comparisons` feature, `arrow`.
    passthrough_writer: PassthroughWriter =
        PASSTHROUGH_WRITER_OPTION("paimon-compact.append.passthrough-writer"),
        default PassthroughWriter::Mapping, parse passthrough_writer;
    /// Encoded pages of an output file held in memory before the rest spills to a temporary
    /// object next to it (a memory size, default `48 mb`; `0`: never spill, `None`).
    spill_threshold: Option<usize> = SPILL_THRESHOLD_OPTION("paimon-compact.write.spill-threshold"),
        default Some(DEFAULT_SPILL_THRESHOLD), parse spill_threshold;
    /// Which writer dictionary-encodes STRING columns that arrive as plain strings
    /// (`paimon-compact`, the default, or, with `bench-comparisons`, `arrow`).
    string_dictionary_writer: DictionaryWriter =
        STRING_DICTIONARY_OPTION("paimon-compact.write.string-dictionary-writer"),
        default DictionaryWriter::PaimonCompact, parse dictionary_writer;
    /// Which writer dictionary-encodes INT32, INT64, FLOAT and DOUBLE columns
    /// (`paimon-compact`, the default, or, with `bench-comparisons`, `arrow`).
    primitive_dictionary_writer: DictionaryWriter =
        PRIMITIVE_DICTIONARY_OPTION("paimon-compact.write.primitive-dictionary-writer"),
        default DictionaryWriter::PaimonCompact, parse dictionary_writer;
    /// The most bytes of an input column chunk the append rewrite fetches in one storage call
    /// (a memory size, default `8 mb`): a file whose column chunks all fit is read as before, a
    /// row group per call, and a file with a larger chunk is read column by column in windows
    /// of this size (a page larger than that is one read), so a huge row group is never held
    /// whole (`0`: no limit, whole row groups).
    append_read_window: u64 = APPEND_READ_WINDOW_OPTION("paimon-compact.append.read-window"),
        default DEFAULT_APPEND_READ_WINDOW, parse memory_size;
    /// Bytes of a column chunk one storage call fetches for the merge's page reads (a memory
    /// size, default `256 kb`; `0`: exactly the bytes asked for, one call per page).
    read_ahead: u64 = READ_AHEAD_OPTION("paimon-compact.merge.read-ahead"),
        default DEFAULT_READ_AHEAD, parse memory_size;
    /// The merge reads its inputs with the push decoder in windows of this many rows (`0`:
    /// whole row groups) instead of page by page (`None`, the default): a measurement knob.
    read_window_rows: Option<u64> = READ_WINDOW_OPTION("paimon-compact.merge.read-window-rows"),
        default None, parse rows;
    /// The most sorted runs one merge reads side by side (default 32, at least 2): a bucket
    /// with more level-0 runs (a write-only backlog) first merges groups of them into
    /// temporary runs, so the merge's memory does not grow with the backlog. Paimon's
    /// `sort-spill-threshold`, when set lower, applies too.
    max_runs: usize = MAX_RUNS_OPTION("paimon-compact.merge.max-runs"),
        default DEFAULT_MAX_RUNS, parse max_runs;
    /// Decoded rows a postpone replay holds before it sorts them and writes each bucket's as
    /// a temporary run (a memory size, default `64 mb`; `0`: a run per batch read). Smaller
    /// lowers the replay's peak memory and makes more runs per bucket (compaction.md §11.2).
    replay_buffer: u64 = REPLAY_BUFFER_OPTION("paimon-compact.postpone.replay-buffer"),
        default DEFAULT_REPLAY_BUFFER, parse memory_size;
    /// Dictionary-encoded STRING value columns merged as dictionary arrays (default `true`).
    read_dictionaries: bool = READ_DICTIONARIES_OPTION("paimon-compact.merge.read-dictionaries"),
        default true, parse parse_bool;
    /// Rows ordered a sorted chunk at a time (default `true`) instead of one heap step per row.
    sorted_chunks: bool = SORTED_CHUNKS_OPTION("paimon-compact.merge.sorted-chunks"),
        default true, parse parse_bool;
    /// A deliberate panic when a rewrite starts (default `false`): fault injection, so a host
    /// can test that a bug in the engine reaches it as an `internal` error carrying the panic's
    /// message (the component reports it through `progress.panicked` before it traps).
    fault_panic: bool = FAULT_PANIC_OPTION("paimon-compact.fault.panic"),
        default false, parse parse_bool;
}

/// The default spill budget: what keeps a merge of 2 GB of sorted runs under 256 MB with
/// everything else it holds (the row group's flush sends each chunk on to storage as it
/// passes, so the budget is the flush's peak too).
pub const DEFAULT_SPILL_THRESHOLD: usize = 48 * 1024 * 1024;

/// The default bound on the runs one merge reads side by side (see
/// [`EngineOptions::max_runs`]; the memory per run is measured in benches/README.md).
pub const DEFAULT_MAX_RUNS: usize = 32;

/// The default replay buffer ([`EngineOptions::replay_buffer`]): small enough to stay well
/// inside the job's memory budget beside a batch being read, large enough that a bucket's
/// runs stay few (benches/README.md, "Postpone buckets").
const DEFAULT_REPLAY_BUFFER: u64 = 64 * 1024 * 1024;

/// The default read-ahead of the merge's page reads.
const DEFAULT_READ_AHEAD: u64 = 256 * 1024;

/// The default window of the append rewrite's reads: large enough that the column chunks of
/// ordinary row groups are one call each, small enough that a 128 MB chunk is not held whole.
const DEFAULT_APPEND_READ_WINDOW: u64 = 8 * 1024 * 1024;

impl EngineOptions {
    /// The engine options among `raw`; a key in the `paimon-compact.` namespace that is not one
    /// of them is an invalid option, with a hint when it is close to one.
    pub(crate) fn parse(raw: &BTreeMap<String, String>) -> Result<Self> {
        for (key, value) in raw {
            if key.starts_with("paimon-compact.") && !KEYS.contains(&key.as_str()) {
                let hint = KEYS
                    .iter()
                    .min_by_key(|k| super::edit_distance(k, key))
                    .filter(|k| super::edit_distance(k, key) <= 3)
                    .map(|k| format!(" (did you mean '{k}'?)"))
                    .unwrap_or_default();
                return Err(Error::invalid_option(
                    key,
                    value,
                    format!("unknown paimon-compact option{hint}"),
                ));
            }
        }
        Ok(Self::read(raw))
    }
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self::read(&BTreeMap::new())
    }
}

/// `mapping`, or `arrow` with the `bench-comparisons` feature.
fn passthrough_writer(key: &str, v: &str) -> Result<PassthroughWriter> {
    match v.trim() {
        "mapping" => Ok(PassthroughWriter::Mapping),
        #[cfg(feature = "bench-comparisons")]
        "arrow" => Ok(PassthroughWriter::Arrow),
        #[cfg(not(feature = "bench-comparisons"))]
        other @ "arrow" => Err(comparison_only(key, other)),
        other => Err(Error::invalid_option(
            key,
            other,
            "expected mapping or arrow",
        )),
    }
}

/// `paimon-compact`, or `arrow` with the `bench-comparisons` feature.
fn dictionary_writer(key: &str, v: &str) -> Result<DictionaryWriter> {
    match v.trim() {
        "paimon-compact" => Ok(DictionaryWriter::PaimonCompact),
        #[cfg(feature = "bench-comparisons")]
        "arrow" => Ok(DictionaryWriter::Arrow),
        #[cfg(not(feature = "bench-comparisons"))]
        other @ "arrow" => Err(comparison_only(key, other)),
        other => Err(Error::invalid_option(
            key,
            other,
            "expected paimon-compact or arrow",
        )),
    }
}

/// The error of a comparison writer asked for in a build without them.
#[cfg(not(feature = "bench-comparisons"))]
fn comparison_only(key: &str, v: &str) -> Error {
    Error::invalid_option(
        key,
        v,
        "arrow-rs's writer is a comparison point, built only with the `bench-comparisons` \
         feature",
    )
}

/// A memory size, `0` for none (and a size beyond the address space is none too: there is
/// no budget to keep).
fn spill_threshold(key: &str, v: &str) -> Result<Option<usize>> {
    let bytes = memory_size(key, v)?;
    Ok(match usize::try_from(bytes) {
        Ok(0) | Err(_) => None,
        Ok(b) => Some(b),
    })
}

fn memory_size(key: &str, v: &str) -> Result<u64> {
    parse_memory_size(v).map_err(|e| Error::invalid_option(key, v, e))
}

fn max_runs(key: &str, v: &str) -> Result<usize> {
    match v.trim().parse::<usize>() {
        Ok(n) if n >= 2 => Ok(n),
        _ => Err(Error::invalid_option(
            key,
            v,
            "expected a number of sorted runs, at least 2",
        )),
    }
}

fn rows(key: &str, v: &str) -> Result<Option<u64>> {
    v.trim()
        .parse::<u64>()
        .map(Some)
        .map_err(|_| Error::invalid_option(key, v, "expected a number of rows"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pairs: &[(&str, &str)]) -> Result<EngineOptions> {
        EngineOptions::parse(
            &pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn defaults() {
        let o = parse(&[]).unwrap();
        assert_eq!(o, EngineOptions::default());
        assert_eq!(o.fast_copy.get(), Ok(false));
        assert_eq!(o.passthrough_writer.get(), Ok(PassthroughWriter::Mapping));
        assert_eq!(o.spill_threshold.get(), Ok(Some(48 << 20)));
        assert_eq!(o.read_ahead.get(), Ok(256 << 10));
        assert_eq!(o.append_read_window.get(), Ok(8 << 20));
        assert_eq!(o.read_window_rows.get(), Ok(None));
        assert!(o.string_dictionary_writer.get().unwrap().is_ours());
        assert!(o.primitive_dictionary_writer.get().unwrap().is_ours());
        assert_eq!(o.read_dictionaries.get(), Ok(true));
        assert_eq!(o.sorted_chunks.get(), Ok(true));
    }

    #[test]
    fn values_are_parsed_and_a_bad_one_is_its_error() {
        let o = parse(&[
            (SPILL_THRESHOLD_OPTION, "0"),
            (READ_AHEAD_OPTION, "1 kb"),
            (APPEND_READ_WINDOW_OPTION, "0"),
            (READ_WINDOW_OPTION, "7"),
            (SORTED_CHUNKS_OPTION, "lots"),
        ])
        .unwrap();
        assert_eq!(o.spill_threshold.get(), Ok(None));
        assert_eq!(o.read_ahead.get(), Ok(1024));
        assert_eq!(o.append_read_window.get(), Ok(0));
        assert_eq!(o.read_window_rows.get(), Ok(Some(7)));
        let e = o.sorted_chunks.get().unwrap_err();
        assert_eq!(
            e.kind,
            crate::ErrorKind::InvalidOption {
                key: SORTED_CHUNKS_OPTION.into(),
                value: "lots".into()
            }
        );
    }

    #[test]
    fn a_misspelt_key_is_rejected_with_a_hint() {
        let e = parse(&[("paimon-compact.merge.sorted-chunk", "false")]).unwrap_err();
        assert!(
            matches!(&e.kind, crate::ErrorKind::InvalidOption { key, .. }
                if key == "paimon-compact.merge.sorted-chunk"),
            "{e}"
        );
        assert!(
            e.message
                .contains("did you mean 'paimon-compact.merge.sorted-chunks'"),
            "{e}"
        );
    }

    #[cfg(not(feature = "bench-comparisons"))]
    #[test]
    fn comparison_writers_need_their_feature() {
        let o = parse(&[(PASSTHROUGH_WRITER_OPTION, "arrow")]).unwrap();
        assert!(o.passthrough_writer.get().is_err());
    }
}
