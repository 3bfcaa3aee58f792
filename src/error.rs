//! The crate's one error type.
//!
//! Every failure is an [`Error`] with a [`ErrorKind`] a program can branch on and a one-line
//! message a person can act on. The kinds map one-to-one onto the WIT `error` variant, so a host
//! sees the same classification whichever engine (native or component) ran the core.
//!
//! The kinds carry the decisions a caller has to make, so no caller ever reads a message to
//! decide anything:
//! * [`ErrorKind::IllegalState`] is the caller's mistake, [`ErrorKind::Internal`] is ours;
//! * [`ErrorKind::CommitUnknown`] says a snapshot may exist, so the files it would reference
//!   must be kept;
//! * [`ErrorKind::NotCompactable`] carries its [`NotCompactable`] reason as data.
//!
//! A native caller also gets the underlying cause (a Parquet, Arrow, Avro or storage error)
//! through [`std::error::Error::source`]; it is not serialized and not compared, and the WIT
//! edge drops it (the message already says what it said).
//!
//! This module is the bottom of the crate: it imports nothing from it, so every layer may use
//! it. [`crate::storage`] re-exports [`StorageErrorKind`] and converts its errors into this one.

use std::fmt;
use std::sync::Arc;

/// What kind of storage failure happened; mirrors the WIT `storage-error` variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StorageErrorKind {
    /// The path does not exist. Callers rely on it to tell "absent" from "unreadable" (a
    /// missing hint file, a snapshot not yet written).
    NotFound,
    /// A create-if-absent write found the path taken: another writer got there first (how a
    /// lost snapshot commit shows up).
    AlreadyExists,
    /// The storage refused access.
    Permission,
    /// Any other failure; the message says what.
    Io,
}

/// Why a table or bucket is never compacted by this planner (compaction.md §15).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "why", rename_all = "kebab-case")]
pub enum NotCompactable {
    /// `write-only = true` in a writer's view: writers skip compaction and leave it to a
    /// dedicated compaction job (which runs with the option off).
    WriteOnly,
    /// A table option whose compaction is another job's, or that this build cannot compact
    /// correctly (`src/table/guards.rs`).
    TableOption {
        /// Paimon option key that rules compaction out, such as `row-tracking.enabled`.
        key: String,
        /// The table's value for `key`, as written in its options (empty if unset).
        value: String,
        /// Why the option rules compaction out, as a sentence fragment for the message.
        because: String,
    },
    /// `bucket = -1` append tables have no per-bucket auto compaction; the coordinator does it.
    UnawareBucketAutoCompaction,
    /// `data-evolution.enabled`: compacted by a different (row-id preserving) planner.
    DataEvolution {
        /// Whether `deletion-vectors.enabled` is on as well (it only changes the message).
        deletion_vectors: bool,
    },
    /// Tables with BLOB columns skip compaction.
    BlobTable,
    /// `bucket = -2`: files wait in a postpone bucket until a rescale job assigns them.
    PostponeBucket,
    /// The unaware-bucket coordinator applies to append tables with `bucket = -1` only.
    CoordinatorNeedsUnawareAppend,
}

impl fmt::Display for NotCompactable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotCompactable::WriteOnly => f.write_str(
                "the table is write-only ('write-only' = true): its writers skip compaction and \
                 leave it to a dedicated compaction job (`paimon-compact compact`)",
            ),
            NotCompactable::TableOption { key, value, because } => {
                write!(f, "'{key}' = '{value}': {because}")
            }
            NotCompactable::UnawareBucketAutoCompaction => f.write_str(
                "append tables with 'bucket' = -1 are compacted by the unaware-bucket coordinator, not per bucket",
            ),
            NotCompactable::DataEvolution { deletion_vectors } => write!(
                f,
                "data-evolution tables{} keep row ids stable and need the data-evolution compaction, which this planner does not do",
                if *deletion_vectors { " with deletion vectors" } else { "" }
            ),
            NotCompactable::BlobTable => f.write_str("tables with BLOB columns skip compaction"),
            NotCompactable::PostponeBucket => f.write_str(
                "'bucket' = -2 (postpone) tables are compacted by rescaling, not by this planner",
            ),
            NotCompactable::CoordinatorNeedsUnawareAppend => f.write_str(
                "the unaware-bucket coordinator only handles append tables with 'bucket' = -1",
            ),
        }
    }
}

/// What went wrong, at the granularity a caller can react to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ErrorKind {
    /// An option is unknown, malformed or out of range.
    InvalidOption {
        /// Paimon option key as given by the caller, such as `target-file-size`.
        key: String,
        /// The rejected value, verbatim.
        value: String,
    },
    /// The table or bucket cannot be compacted by design (write-only, data evolution, ...).
    NotCompactable {
        /// Which rule refused it, as data a caller can branch on.
        reason: NotCompactable,
    },
    /// Input that claims an invariant it does not hold (overlapping sorted run, level out of
    /// range, unparsable metadata or data file).
    CorruptInput {
        /// Path of the file at fault as the storage names it; `None` when no one file is at
        /// fault (an in-memory input such as a plan request or replay JSON, or an invariant
        /// broken across files).
        file: Option<String>,
    },
    /// A storage call failed.
    Io {
        /// Which kind of storage failure it was.
        storage: StorageErrorKind,
        /// Path the failed call was about, as passed to the storage.
        path: String,
    },
    /// Creating the snapshot at `path` failed, and so did checking whether it exists: the
    /// commit may have happened. The files the snapshot would reference are kept (deleting
    /// them could break a published snapshot); look at `path` before retrying or cleaning up.
    /// `storage` is the failure of the check.
    CommitUnknown {
        /// The failure of the existence check (not of the create).
        storage: StorageErrorKind,
        /// Path of the snapshot file that may or may not exist.
        path: String,
    },
    /// Another writer changed what this job depends on; nothing was committed.
    Conflict,
    /// A valid request this build does not support.
    Unsupported,
    /// The caller broke the API's contract (for example, a full compaction requested while a
    /// task runs, or an output prefix that names an input).
    IllegalState,
    /// A bug in this crate: a state its own code should never reach, or an encoder that
    /// rejected what the crate built. Not the caller's fault; please report it.
    Internal,
}

/// The underlying cause of an [`Error`], for native callers (see the module docs).
pub type Cause = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// An error with its kind and a message for people.
///
/// Equality and serialization look at the kind and the message only: the cause is for
/// diagnosis, and it does not cross the WIT edge.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct Error {
    /// What went wrong, for programs to branch on.
    #[serde(flatten)]
    pub kind: ErrorKind,
    /// One line for people, starting with the kind's prefix (`invalid option`, `corrupt
    /// input`, `unsupported`, ...); never parsed by this crate.
    pub message: String,
    #[serde(skip)]
    source: Option<Cause>,
}

impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.message == other.message
    }
}

impl Eq for Error {}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.kind).field("message", &self.message);
        if let Some(source) = &self.source {
            d.field("source", source);
        }
        d.finish()
    }
}

/// One line: the message. The cause is reachable through `source()`, never printed twice.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

impl Error {
    /// An error of `kind` with `message` as it is (the constructors below add the usual
    /// prefixes); for conversions from another representation, such as the WIT error.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// The same error, keeping `cause` as its [`source`](std::error::Error::source) for
    /// native callers. On WebAssembly the cause is dropped here: the component's and the
    /// browser's edges do not carry it, and keeping it would link the cause type's whole
    /// `Debug` into the module (a trait object's table holds it whether or not it is called).
    pub fn with_source(self, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        #[cfg(target_family = "wasm")]
        {
            drop(cause);
            self
        }
        #[cfg(not(target_family = "wasm"))]
        self.keeping(cause)
    }

    /// [`Self::with_source`] on every target: for a cause the component's edge reads (a
    /// storage failure's own words travel in the WIT `io-error`).
    pub(crate) fn keeping(mut self, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(cause));
        self
    }

    /// The same error with ` (note)` appended to its message; kind and cause are kept.
    pub fn with_note(mut self, note: impl fmt::Display) -> Self {
        self.message = format!("{} ({note})", self.message);
        self
    }

    /// The same error naming the files a cleanup after it could not delete (they are left as
    /// orphans); unchanged when there are none.
    pub fn with_cleanup_failures(self, failed: &[String]) -> Self {
        if failed.is_empty() {
            self
        } else {
            self.with_note(format!("cleanup could not delete: {}", failed.join("; ")))
        }
    }

    /// An [`ErrorKind::InvalidOption`] for `key` = `value`, with `why` it was rejected.
    pub fn invalid_option(key: &str, value: &str, why: impl fmt::Display) -> Self {
        Error::new(
            ErrorKind::InvalidOption {
                key: key.to_string(),
                value: value.to_string(),
            },
            format!("invalid option '{key}' = '{value}': {why}"),
        )
    }

    /// An [`ErrorKind::NotCompactable`] whose message is `reason`'s description.
    pub fn not_compactable(reason: NotCompactable) -> Self {
        let message = format!("not compactable: {reason}");
        Error::new(ErrorKind::NotCompactable { reason }, message)
    }

    /// An [`ErrorKind::CorruptInput`] naming `file` when the fault is known to be in one.
    pub fn corrupt(file: Option<&str>, why: impl fmt::Display) -> Self {
        let message = match file {
            Some(f) => format!("corrupt input '{f}': {why}"),
            None => format!("corrupt input: {why}"),
        };
        Error::new(
            ErrorKind::CorruptInput {
                file: file.map(str::to_string),
            },
            message,
        )
    }

    /// A failed storage call on `path`; `message` is the whole line (the storage error's own
    /// `Display`, which [`crate::storage`] passes in).
    pub fn io(storage: StorageErrorKind, path: &str, message: impl Into<String>) -> Self {
        Error::new(
            ErrorKind::Io {
                storage,
                path: path.to_string(),
            },
            message,
        )
    }

    /// A commit whose snapshot at `path` may or may not exist ([`ErrorKind::CommitUnknown`]).
    pub fn commit_unknown(
        storage: StorageErrorKind,
        path: &str,
        message: impl Into<String>,
    ) -> Self {
        Error::new(
            ErrorKind::CommitUnknown {
                storage,
                path: path.to_string(),
            },
            message,
        )
    }

    /// A concurrent change this job cannot commit over ([`ErrorKind::Conflict`]).
    pub fn conflict(why: impl fmt::Display) -> Self {
        Error::new(ErrorKind::Conflict, format!("conflict: {why}"))
    }

    /// The caller broke the API's contract ([`ErrorKind::IllegalState`]).
    pub fn illegal_state(why: impl fmt::Display) -> Self {
        Error::new(ErrorKind::IllegalState, format!("illegal state: {why}"))
    }

    /// A bug in this crate ([`ErrorKind::Internal`]).
    pub fn internal(why: impl fmt::Display) -> Self {
        Error::new(ErrorKind::Internal, format!("internal error: {why}"))
    }

    /// A valid request or input this build does not handle ([`ErrorKind::Unsupported`]).
    pub fn unsupported(why: impl fmt::Display) -> Self {
        Error::new(ErrorKind::Unsupported, format!("unsupported: {why}"))
    }

    /// Whether a commit may have published a snapshot despite this error: the files written
    /// for it must then be kept.
    pub fn commit_may_have_happened(&self) -> bool {
        matches!(self.kind, ErrorKind::CommitUnknown { .. })
    }
}

/// The crate's result type, with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Cause;

    impl fmt::Display for Cause {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("the cause")
        }
    }

    impl std::error::Error for Cause {}

    #[test]
    fn the_cause_is_kept_but_neither_printed_compared_nor_serialized() {
        use std::error::Error as _;
        let plain = Error::internal("encoding");
        let caused = Error::internal("encoding").with_source(Cause);
        assert_eq!(caused.to_string(), "internal error: encoding");
        assert_eq!(
            caused.source().map(|s| s.to_string()).as_deref(),
            Some("the cause")
        );
        assert!(plain.source().is_none());
        assert_eq!(plain, caused);
        assert_eq!(
            serde_json::to_string(&caused).unwrap(),
            r#"{"kind":"internal","message":"internal error: encoding"}"#
        );
        let back: Error = serde_json::from_str(&serde_json::to_string(&caused).unwrap()).unwrap();
        assert_eq!(back, caused);
        let noted = caused.clone().with_note("cleanup failed: x");
        assert_eq!(
            noted.message,
            "internal error: encoding (cleanup failed: x)"
        );
        assert!(noted.source().is_some());
    }

    #[test]
    fn only_an_unknown_commit_keeps_the_files() {
        let unknown = Error::commit_unknown(StorageErrorKind::Io, "t/snapshot/snapshot-3", "x");
        assert!(unknown.commit_may_have_happened());
        assert!(!Error::io(StorageErrorKind::Io, "p", "x").commit_may_have_happened());
        assert!(!Error::conflict("x").commit_may_have_happened());
    }
}
