//! `merge-engine = deduplicate` (the default): the record with the highest sequence wins,
//! whatever its kind, so a newer `-D` removes the key.

use super::{Merged, Record};
use crate::options::CoreOptions;

pub(crate) struct Deduplicate {
    /// `ignore-delete`: retract records are skipped as if never written.
    ignore_delete: bool,
}

impl Deduplicate {
    pub(crate) fn new(options: &CoreOptions) -> Self {
        Deduplicate {
            ignore_delete: options.ignore_delete,
        }
    }

    pub(crate) fn merge(&self, records: &[Record]) -> Option<Merged> {
        records
            .iter()
            .rev()
            .find(|r| !(self.ignore_delete && r.kind.is_retract()))
            .map(|r| Merged::of(r, r.kind))
    }
}
