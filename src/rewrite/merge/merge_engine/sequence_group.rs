//! Partial-update sequence groups (format.md §9): `fields.<s1,s2>.sequence-group =
//! <f1,f2>` makes the columns `f1, f2` change only with a record whose sequence fields
//! `(s1, s2)` are at least the row's, so several streams can each own a set of columns and
//! arrive in any order.
//!
//! This module reads and validates the groups as Paimon HEAD's partial-update factory does;
//! every configuration Paimon refuses when it creates its merge function is an
//! `invalid-option` here, because no Paimon writer could have written the table.

use std::cmp::Ordering;

use super::aggregate::datum_cmp;
use crate::error::{Error, Result};
use crate::options::CoreOptions;
use crate::value::Datum;

/// One `fields.<seq>.sequence-group` option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SequenceGroup {
    /// The option key, for messages.
    pub key: String,
    /// Column indexes of the ordering fields, in the order the key lists them.
    pub seq: Vec<usize>,
    /// Column indexes of the fields the group protects.
    pub protected: Vec<usize>,
    /// Whether a `-D` that wins this group removes the row
    /// (`partial-update.remove-record-on-sequence-group` names one of its ordering fields).
    pub removes_row: bool,
}

/// The sequence groups of a partial-update table, with the group of each column.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SequenceGroups {
    pub groups: Vec<SequenceGroup>,
    /// Per column: the group it orders or is protected by.
    pub group_of: Vec<Option<usize>>,
    /// Per column: whether it is an ordering field of a group (no aggregate function).
    pub is_seq: Vec<bool>,
}

const PREFIX: &str = "fields.";
const SUFFIX: &str = ".sequence-group";

impl SequenceGroups {
    /// The groups the options declare over `columns`; empty when there are none.
    pub(crate) fn parse(
        options: &CoreOptions,
        columns: &[String],
        primary_keys: &[String],
    ) -> Result<Self> {
        let n = columns.len();
        let mut out = SequenceGroups {
            groups: Vec::new(),
            group_of: vec![None; n],
            is_seq: vec![false; n],
        };
        let index = |key: &str, value: &str, name: &str| -> Result<usize> {
            columns.iter().position(|c| c == name).ok_or_else(|| {
                Error::invalid_option(
                    key,
                    value,
                    format!("field '{name}' can not be found in the table schema"),
                )
            })
        };
        // BTreeMap order: deterministic, and the same groups whatever the order.
        for (key, value) in &options.raw {
            // Paimon treats any key that starts with `fields` and ends with `sequence-group`
            // as a group and fails on the ones without the dots.
            if !(key.starts_with("fields") && key.ends_with("sequence-group")) {
                continue;
            }
            if !(key.starts_with(PREFIX)
                && key.ends_with(SUFFIX)
                && key.len() > PREFIX.len() + SUFFIX.len())
            {
                return Err(Error::invalid_option(
                    key,
                    value,
                    "a sequence group is 'fields.<sequence fields>.sequence-group'",
                ));
            }
            let names = &key[PREFIX.len()..key.len() - SUFFIX.len()];
            let g = out.groups.len();
            let mut group = SequenceGroup {
                key: key.clone(),
                seq: Vec::new(),
                protected: Vec::new(),
                removes_row: false,
            };
            for name in names.split(',') {
                let i = index(key, value, name)?;
                if primary_keys.iter().any(|p| p == name) {
                    return Err(pk_in_group(key, value, name));
                }
                if out.is_seq[i] || out.group_of[i].is_some_and(|o| o != g) {
                    return Err(Error::invalid_option(
                        key,
                        value,
                        format!("field '{name}' is defined repeatedly by several groups"),
                    ));
                }
                out.is_seq[i] = true;
                out.group_of[i] = Some(g);
                group.seq.push(i);
            }
            for name in value.split(',') {
                let i = index(key, value, name)?;
                if primary_keys.iter().any(|p| p == name) {
                    return Err(pk_in_group(key, value, name));
                }
                if out.is_seq[i] && out.group_of[i] == Some(g) {
                    // The group's own ordering field listed again: Paimon accepts it.
                    continue;
                }
                if out.group_of[i].is_some() {
                    return Err(Error::invalid_option(
                        key,
                        value,
                        format!("field '{name}' is defined repeatedly by several groups"),
                    ));
                }
                out.group_of[i] = Some(g);
                group.protected.push(i);
            }
            out.groups.push(group);
        }
        let removal = &options.partial_update_remove_record_on_sequence_group;
        if !removal.is_empty() {
            let key = "partial-update.remove-record-on-sequence-group";
            let value = removal.join(",");
            if options.ignore_delete {
                return Err(Error::invalid_option(
                    key,
                    &value,
                    "conflicts with 'ignore-delete' = true",
                ));
            }
            for name in removal {
                let seq = columns
                    .iter()
                    .position(|c| c == name)
                    .filter(|&i| out.is_seq[i]);
                let Some(i) = seq else {
                    return Err(Error::invalid_option(
                        key,
                        &value,
                        format!("field '{name}' is not a sequence field of a sequence group"),
                    ));
                };
                if let Some(g) = out.group_of[i] {
                    out.groups[g].removes_row = true;
                }
            }
        }
        if !out.groups.is_empty() && options.partial_update_remove_record_on_delete {
            return Err(Error::invalid_option(
                "partial-update.remove-record-on-delete",
                "true",
                "conflicts with sequence groups (use \
                 'partial-update.remove-record-on-sequence-group')",
            ));
        }
        Ok(out)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Whether column `i` is protected by a group (not one of its ordering fields).
    pub(crate) fn protects(&self, i: usize) -> bool {
        self.group_of[i].is_some() && !self.is_seq[i]
    }
}

fn pk_in_group(key: &str, value: &str, name: &str) -> Error {
    Error::invalid_option(
        key,
        value,
        format!("primary key field '{name}' cannot be in a sequence group"),
    )
}

/// Paimon's sequence comparator over one group's fields: field by field, ascending, a null
/// before every value.
pub(crate) fn compare(a: &[Datum], b: &[Datum]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => datum_cmp(x, y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}
