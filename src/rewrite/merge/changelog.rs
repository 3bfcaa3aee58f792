//! Changelog production during compaction (compaction.md §10.2–§10.4).
//!
//! * `changelog-producer = full-compaction`: when the output is the max level, each key's
//!   merged value is compared with the value it had in the max level before (`top`): a new key
//!   is `+I`, a removed one `-D(top)`, a changed one `-U(top)` `+U(new)`.
//! * `lookup` (and every table that needs lookups: deletion vectors, first-row,
//!   `force-lookup`): when level-0 records move up, each key's previous value is the record of
//!   the lowest level above 0 among the inputs, or else is looked up in the levels above the
//!   output. The result merges the level-0 records with that value only, the changelog is
//!   derived from it, and in deletion-vector mode the looked-up row is marked deleted.
//!
//! With `changelog-producer.row-deduplicate`, an update that leaves the value as it was
//! ([`RowDeduplicate`]) writes no `-U`/`+U` pair in either mode.
//!
//! The `input` producer is the writers' business; `none` produces nothing.

use super::kv_format::RowKind;
use super::merge_engine::{Cell, Columns, MergeFunction, Merged, Record, Values};
use crate::error::{Error, Result};
use crate::meta::Level;
use crate::options::{ChangelogProducer, CoreOptions};

/// How a merge produces changelog and deletion-vector marks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "mode", rename_all = "kebab-case")]
pub enum ChangelogMode {
    /// A plain merge of every record of a key.
    #[default]
    None,
    /// Full-compaction changelog against the old max-level values.
    FullCompaction,
    /// The lookup merge: level-0 records merged with the key's previous value only.
    Lookup {
        /// `changelog-producer = lookup`: write changelog files.
        produce_changelog: bool,
        /// `deletion-vectors.enabled`: mark superseded rows of higher-level files.
        deletion_vectors: bool,
    },
}

impl ChangelogMode {
    /// Whether a merge in this mode writes changelog files.
    pub fn produces_changelog(self) -> bool {
        matches!(
            self,
            ChangelogMode::FullCompaction
                | ChangelogMode::Lookup {
                    produce_changelog: true,
                    ..
                }
        )
    }
}

/// The mode of a merge writing to `output_level`, given its inputs' levels (compaction.md §10.3,
/// §10.4). Refuses what the rewriters refuse.
pub fn changelog_mode(
    options: &CoreOptions,
    output_level: Level,
    max_level: Level,
    drop_delete: bool,
    mut input_levels: impl Iterator<Item = Level>,
) -> Result<ChangelogMode> {
    let producer = options.changelog_producer;
    if options.is_first_row() && options.deletion_vectors_enabled {
        return Err(Error::unsupported(
            "the first-row merge engine with deletion vectors (Paimon rejects this combination)",
        ));
    }
    if producer == ChangelogProducer::FullCompaction {
        if output_level != max_level {
            return Ok(ChangelogMode::None);
        }
        if !drop_delete {
            return Err(Error::illegal_state(
                "a full-compaction changelog merge into the max level must drop deletes",
            ));
        }
        return Ok(ChangelogMode::FullCompaction);
    }
    if options.need_lookup() && !output_level.is_zero() && input_levels.any(|l| l.is_zero()) {
        return Ok(ChangelogMode::Lookup {
            produce_changelog: producer == ChangelogProducer::Lookup,
            deletion_vectors: options.deletion_vectors_enabled,
        });
    }
    Ok(ChangelogMode::None)
}

/// `changelog-producer.row-deduplicate`: an update whose value equals the key's previous value
/// (in every column but the ignored ones) writes no `-U`/`+U` pair, as Paimon's changelog
/// wrappers compare them with a record equaliser.
#[derive(Clone, Debug)]
pub(crate) struct RowDeduplicate {
    /// The value columns compared (indices among the table columns).
    compared: Vec<usize>,
}

impl RowDeduplicate {
    /// The deduplication of a merge over `columns` (the table's, by name), if the table asks
    /// for it.
    pub(crate) fn new(options: &CoreOptions, columns: &[String]) -> Option<Self> {
        options.changelog_row_deduplicate.then(|| RowDeduplicate {
            compared: (0..columns.len())
                .filter(|&j| {
                    !options
                        .changelog_row_deduplicate_ignore_fields
                        .contains(&columns[j])
                })
                .collect(),
        })
    }

    /// Whether `after` holds `before`'s value in every compared column.
    pub(crate) fn same(&self, cols: &dyn Columns, before: &Record, after: &Merged) -> Result<bool> {
        for &j in &self.compared {
            let b = Cell::of(before);
            let a = match &after.values {
                Values::Row(slot, row) => Cell::Src(*slot, *row),
                Values::Cells(cells) => match cells.get(j) {
                    Some(c) => c.clone(),
                    None => return Ok(false),
                },
            };
            let equal = match (&b, &a) {
                (Cell::Src(..), Cell::Src(..) | Cell::Nested(_)) => {
                    match (b.nested(cols, j), a.nested(cols, j)) {
                        (Some(x), Some(y)) => x.as_ref() == y.as_ref(),
                        (x, y) => x.is_none() && y.is_none(),
                    }
                }
                _ => b.datum(cols, j)? == a.datum(cols, j)?,
            };
            if !equal {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Where a merged row goes.
pub(crate) trait Emit {
    fn data(&mut self, row: Merged) -> Result<()>;
    fn changelog(&mut self, row: Merged) -> Result<()>;
}

/// The plain merge of a key (compaction.md §10.1): a single record passes through unmerged, as
/// Paimon's reducing wrapper does; several go through the merge function.
pub(crate) fn plain_key(
    group: &[Record],
    mf: &mut MergeFunction,
    cols: &dyn Columns,
    out: &mut dyn Emit,
) -> Result<()> {
    // Each branch hands its result straight to `out`: built into an `Option` first, the
    // merged row was copied twice more, in pieces whose reloads stalled on store forwarding.
    match group {
        [only] => out.data(Merged::of(only, only.kind)),
        _ if matches!(mf, MergeFunction::KeepAll) => {
            for r in group {
                out.data(Merged::of(r, r.kind))?;
            }
            Ok(())
        }
        _ => match mf.merge(group, cols)? {
            Some(m) => out.data(m),
            None => Ok(()),
        },
    }
}

/// Full-compaction changelog of one key (compaction.md §10.3).
pub(crate) fn full_compaction_key(
    group: &[Record],
    max_level: Level,
    mf: &mut MergeFunction,
    cols: &dyn Columns,
    dedup: Option<&RowDeduplicate>,
    out: &mut dyn Emit,
) -> Result<()> {
    let top = group.iter().find(|r| r.level == max_level.get());
    if let [only] = group {
        if only.level != max_level.get() && only.kind.is_add() {
            out.changelog(Merged::of(only, RowKind::Insert))?;
        }
        return out.data(Merged::of(only, only.kind));
    }
    let merged = mf.merge(group, cols)?;
    match (top, &merged) {
        (None, Some(m)) if m.kind.is_add() => {
            out.changelog(Merged {
                kind: RowKind::Insert,
                ..m.clone()
            })?;
        }
        (None, _) => {}
        (Some(t), Some(m)) if m.kind.is_add() => {
            if !unchanged(dedup, cols, t, m)? {
                out.changelog(Merged::of(t, RowKind::UpdateBefore))?;
                out.changelog(Merged {
                    kind: RowKind::UpdateAfter,
                    ..m.clone()
                })?;
            }
        }
        (Some(t), _) => {
            if t.kind.is_add() {
                out.changelog(Merged::of(t, RowKind::Delete))?;
            }
        }
    }
    if let Some(m) = merged {
        out.data(m)?;
    }
    Ok(())
}

/// What the lookup merge found for a key.
pub(crate) struct LookupOutcome {
    /// The previous value from a higher level outside the task, when one was looked up.
    pub found: Option<Record>,
}

/// The lookup merge of one key (compaction.md §10.4). `lookup` searches the levels above the output
/// (marking the row in deletion-vector mode) and is called only when no input above level 0
/// holds the key; `order` is the sequence order of records.
#[allow(
    clippy::too_many_arguments,
    reason = "the lookup merge of one key reads the group, the merge engine, the columns and the levels above, and fills the caller's buffers"
)]
pub(crate) fn lookup_key(
    group: &[Record],
    produce_changelog: bool,
    first_row: bool,
    mf: &mut MergeFunction,
    cols: &dyn Columns,
    lookup: &mut dyn FnMut() -> Result<LookupOutcome>,
    order: &dyn Fn(&Record, &Record) -> std::cmp::Ordering,
    candidates: &mut Vec<Record>,
    dedup: Option<&RowDeduplicate>,
    out: &mut dyn Emit,
) -> Result<()> {
    let has_l0 = group.iter().any(|r| r.level == 0);
    let mut high = group
        .iter()
        .filter(|r| r.level > 0)
        .min_by_key(|r| r.level)
        .copied();
    if first_row {
        // The earliest record wins; an existing first row above the output keeps winning.
        if high.is_some() || !has_l0 {
            return plain_key(group, mf, cols, out);
        }
        if lookup()?.found.is_some() {
            return Ok(());
        }
        let merged = match group {
            [only] => Some(Merged::of(only, only.kind)),
            _ => mf.merge(group, cols)?,
        };
        if let Some(m) = merged {
            if produce_changelog && m.kind.is_add() {
                out.changelog(Merged {
                    kind: RowKind::Insert,
                    ..m.clone()
                })?;
            }
            out.data(m)?;
        }
        return Ok(());
    }
    if high.is_none() && has_l0 {
        high = lookup()?.found;
    }
    candidates.clear();
    candidates.extend(group.iter().filter(|r| r.level == 0).copied());
    if let Some(h) = high {
        candidates.push(h);
    }
    // Candidates in sequence order (user sequence fields first, in `sequence.field.sort-order`,
    // then sequence number ascending; `order` is the merge's own comparator): a looked-up value
    // is normally the oldest, but the order decides, as in Paimon's
    // `LookupChangelogMergeFunctionWrapper`.
    candidates.sort_by(|a, b| order(a, b));
    let merged = mf.merge(candidates, cols)?;
    if has_l0 && produce_changelog {
        match (high.filter(|h| h.kind.is_add()), &merged) {
            (None, Some(m)) if m.kind.is_add() => out.changelog(Merged {
                kind: RowKind::Insert,
                ..m.clone()
            })?,
            (None, _) => {}
            (Some(h), Some(m)) if m.kind.is_add() => {
                if !unchanged(dedup, cols, &h, m)? {
                    out.changelog(Merged::of(&h, RowKind::UpdateBefore))?;
                    out.changelog(Merged {
                        kind: RowKind::UpdateAfter,
                        ..m.clone()
                    })?;
                }
            }
            (Some(h), _) => out.changelog(Merged::of(&h, RowKind::Delete))?,
        }
    }
    if let Some(m) = merged {
        out.data(m)?;
    }
    Ok(())
}

/// Whether row deduplication, when on, finds the update unchanged.
fn unchanged(
    dedup: Option<&RowDeduplicate>,
    cols: &dyn Columns,
    before: &Record,
    after: &Merged,
) -> Result<bool> {
    match dedup {
        Some(d) => d.same(cols, before, after),
        None => Ok(false),
    }
}
