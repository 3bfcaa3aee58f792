//! What can go wrong on the host side of a call.

use std::fmt;

use paimon_compact::Error as CoreError;

/// A failed call: the core's own typed error (the same whichever engine ran it), or the guest
/// stopped by the host.
#[derive(Debug)]
pub enum HostError {
    /// The core reported an error (invalid option, corrupt input, storage failure, ...).
    Core(CoreError),
    /// The guest tried to grow its memory past the limit and was stopped.
    MemoryLimit {
        /// The limit the guest hit ([`crate::wasm::Limits::max_memory_bytes`]), in bytes.
        bytes: usize,
    },
    /// The guest ran past its time limit and was interrupted.
    TimeLimit {
        /// The limit the call ran past ([`crate::wasm::Limits::timeout`]), in seconds.
        seconds: f64,
    },
    /// The guest trapped for another reason (a bug: please report it).
    Trap(String),
    /// The host could not load or link the component.
    Setup(String),
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::Core(e) => write!(f, "{e}"),
            HostError::MemoryLimit { bytes } => write!(
                f,
                "the component exceeded its memory limit of {} MiB and was stopped (raise it with --max-memory)",
                bytes >> 20
            ),
            HostError::TimeLimit { seconds } => write!(
                f,
                "the component exceeded its time limit of {seconds} s and was stopped (raise it with --timeout)"
            ),
            HostError::Trap(m) => write!(f, "the component trapped: {m}"),
            HostError::Setup(m) => write!(f, "cannot start the component: {m}"),
        }
    }
}

/// A core error's cause (a Parquet, Avro or storage error, natively) is this error's: the core
/// error itself is what `Display` prints, so it is not repeated as a source.
impl std::error::Error for HostError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HostError::Core(e) => std::error::Error::source(e),
            _ => None,
        }
    }
}

impl HostError {
    /// Whether the host stopped the component in the middle of a call (its memory or time
    /// limit, or a trap). The guest's storage calls are the host's and return before the guest
    /// runs on, so none was in flight: what storage holds then is final, and a clean-up may
    /// read it to decide (was the job committed?) where after a core error it could not.
    pub fn stopped_the_component(&self) -> bool {
        matches!(
            self,
            HostError::MemoryLimit { .. } | HostError::TimeLimit { .. } | HostError::Trap(_)
        )
    }
}

impl From<CoreError> for HostError {
    fn from(e: CoreError) -> Self {
        HostError::Core(e)
    }
}

impl From<wasmtime::Error> for HostError {
    fn from(e: wasmtime::Error) -> Self {
        HostError::Setup(format!("{e:?}"))
    }
}
