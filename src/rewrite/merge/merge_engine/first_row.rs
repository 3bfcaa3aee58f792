//! `merge-engine = first-row`: the record with the lowest sequence wins and later ones are
//! ignored. The engine keeps no deletes: a retract record is skipped with `ignore-delete` and
//! refused otherwise, as Paimon does (it cannot "un-first" a key).

use super::{Columns, Merged, Record};
use crate::error::{Error, Result};
use crate::options::CoreOptions;

pub(crate) struct FirstRow {
    ignore_delete: bool,
}

impl FirstRow {
    pub(crate) fn new(options: &CoreOptions) -> Self {
        FirstRow {
            ignore_delete: options.ignore_delete,
        }
    }

    /// Every record is checked, not only those before the first: Paimon's engine sees them
    /// all and refuses a retraction wherever it is.
    pub(crate) fn merge(&self, records: &[Record], cols: &dyn Columns) -> Result<Option<Merged>> {
        let mut first = None;
        for r in records {
            if r.kind.is_retract() {
                if self.ignore_delete {
                    continue;
                }
                return Err(Error::unsupported(format!(
                    "'{}' holds a {:?} record: the first-row merge engine cannot accept \
                     DELETE/UPDATE_BEFORE records unless 'ignore-delete' is set",
                    cols.file_of(r),
                    r.kind
                )));
            }
            first = first.or(Some(r));
        }
        Ok(first.map(|r| Merged::of(r, r.kind)))
    }
}
