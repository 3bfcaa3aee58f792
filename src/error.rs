//! The crate's one error type.
//!
//! Every failure is an [`Error`] with a [`ErrorKind`] a program can branch on and a one-line
//! message a person can act on. The kinds map one-to-one onto the WIT `error` variant, so a host
//! sees the same classification whichever engine (native or component) ran the core.

use std::fmt;

/// What went wrong, at the granularity a caller can react to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ErrorKind {
    /// An option is unknown, malformed or out of range.
    InvalidOption { key: String, value: String },
    /// The table or bucket cannot be compacted by design (write-only, data evolution, ...).
    NotCompactable { reason: crate::plan::NotCompactable },
    /// Input that claims an invariant it does not hold (overlapping sorted run, level out of
    /// range, unparsable metadata or data file).
    CorruptInput { file: Option<String> },
    /// A storage call failed.
    Io {
        storage: crate::storage::StorageErrorKind,
        path: String,
    },
    /// Another writer changed what this job depends on.
    Conflict,
    /// A valid request this build does not support.
    Unsupported,
    /// The caller broke the API's contract (for example, a full compaction while a task runs).
    IllegalState,
}

/// An error with its kind and a message for people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub struct Error {
    #[serde(flatten)]
    pub kind: ErrorKind,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error {
    pub fn invalid_option(key: &str, value: &str, why: impl fmt::Display) -> Self {
        Error {
            kind: ErrorKind::InvalidOption {
                key: key.to_string(),
                value: value.to_string(),
            },
            message: format!("invalid option '{key}' = '{value}': {why}"),
        }
    }

    pub fn not_compactable(reason: crate::plan::NotCompactable) -> Self {
        let message = format!("not compactable: {reason}");
        Error {
            kind: ErrorKind::NotCompactable { reason },
            message,
        }
    }

    pub fn corrupt(file: Option<&str>, why: impl fmt::Display) -> Self {
        let message = match file {
            Some(f) => format!("corrupt input '{f}': {why}"),
            None => format!("corrupt input: {why}"),
        };
        Error {
            kind: ErrorKind::CorruptInput {
                file: file.map(str::to_string),
            },
            message,
        }
    }

    pub fn storage(e: crate::storage::StorageError) -> Self {
        Error {
            message: e.to_string(),
            kind: ErrorKind::Io {
                storage: e.kind,
                path: e.path,
            },
        }
    }

    pub fn conflict(why: impl fmt::Display) -> Self {
        Error {
            kind: ErrorKind::Conflict,
            message: format!("conflict: {why}"),
        }
    }

    pub fn illegal_state(why: impl fmt::Display) -> Self {
        Error {
            kind: ErrorKind::IllegalState,
            message: format!("illegal state: {why}"),
        }
    }

    pub fn unsupported(why: impl fmt::Display) -> Self {
        Error {
            kind: ErrorKind::Unsupported,
            message: format!("unsupported: {why}"),
        }
    }
}

impl From<crate::storage::StorageError> for Error {
    fn from(e: crate::storage::StorageError) -> Self {
        Error::storage(e)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
