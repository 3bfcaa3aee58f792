//! Levels and sequence numbers as their own types, so a size is never passed as a level.

use std::fmt;

/// A level of the LSM tree. Level 0 holds flushed files, each its own sorted run; every level
/// above holds at most one sorted run.
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Debug,
    Default,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct Level(u32);

impl Level {
    /// Level 0, where writers flush and append tables keep every file.
    pub const ZERO: Level = Level(0);
    /// Far above any real configuration (Paimon's default is `trigger + 1`); a bound that keeps
    /// a corrupt level from sizing allocations.
    pub const LIMIT: u32 = 1024;

    /// Level `level`, unchecked here: [`crate::meta::Levels::new`] refuses files beyond
    /// [`Level::LIMIT`].
    pub const fn new(level: u32) -> Self {
        Level(level)
    }
    /// The level as a number, as the manifest's `_LEVEL` stores it.
    pub const fn get(self) -> u32 {
        self.0
    }
    /// Whether this is level 0, whose files are each their own sorted run.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A record's sequence number: its position in the bucket's write order.
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Debug,
    Default,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct SequenceNumber(pub i64);

impl fmt::Display for SequenceNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
