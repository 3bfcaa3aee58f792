//! Looking keys up in the levels above the output (compaction.md §10.4, "lookup scope").
//!
//! Keys arrive in ascending order, so each level keeps a forward-only cursor over its sorted
//! run: a file is opened when a key falls in its `[min_key, max_key]` and read sequentially;
//! files no looked-up key falls into are never read. Levels are searched from the lowest
//! (newest) up and the first hit wins. Rows already deleted by the file's deletion vector
//! are not hits. Found rows live in the merge's arena like any input row, so the engine can
//! merge with them and changelog can emit them.

use std::cmp::Ordering;

use roaring::RoaringBitmap;

use super::arena::Arena;
use super::merge_engine::{Origin, Record};
use super::reader::Reader;
use crate::error::Result;
use crate::meta::Key;
use crate::parquet_io::read::BatchStream;
use crate::rewrite::RewriteInput;

struct OpenFile {
    /// Index into the higher-level inputs.
    file: usize,
    stream: BatchStream,
    /// Arena slot of the current batch, and the cursor in it.
    slot: Option<usize>,
    row: usize,
    len: usize,
    /// Physical position of row 0 of the current batch.
    base: u64,
    deleted: Option<RoaringBitmap>,
    exhausted: bool,
}

struct LevelCursor {
    level: u32,
    /// Files of the level in key order (indices into the higher-level inputs).
    files: Vec<usize>,
    open: Option<OpenFile>,
}

/// Forward-only lookup over the levels above the output.
pub(crate) struct LookupLevels {
    levels: Vec<LevelCursor>,
}

impl LookupLevels {
    pub(crate) fn new(higher: &[RewriteInput]) -> Self {
        let mut by_level: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
        for (i, f) in higher.iter().enumerate() {
            by_level.entry(f.meta.level.get()).or_default().push(i);
        }
        let levels = by_level
            .into_iter()
            .map(|(level, mut files)| {
                files.sort_by(|&a, &b| higher[a].meta.min_key.cmp(&higher[b].meta.min_key));
                LevelCursor {
                    level,
                    files,
                    open: None,
                }
            })
            .collect();
        LookupLevels { levels }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }

    /// Arena slots the cursors still read from (kept when the arena is compacted).
    pub(crate) fn live_slots(&mut self) -> impl Iterator<Item = &mut usize> {
        self.levels
            .iter_mut()
            .filter_map(|l| l.open.as_mut().and_then(|o| o.slot.as_mut()))
    }

    /// The first record of `key` (whose typed planner key is `planner`) in the levels, by
    /// level; `group_key` is the arena position of the key being looked up.
    pub(crate) fn find(
        &mut self,
        reader: &mut Reader<'_>,
        arena: &mut Arena,
        higher: &[RewriteInput],
        group_key: (usize, usize),
        planner: &Key,
    ) -> Result<Option<Record>> {
        for level in &mut self.levels {
            let at = level
                .files
                .partition_point(|&f| higher[f].meta.max_key < *planner);
            let Some(&file) = level.files.get(at) else {
                continue;
            };
            if higher[file].meta.min_key > *planner {
                continue;
            }
            if level.open.as_ref().is_none_or(|o| o.file != file) {
                let input = &higher[file];
                let stream = reader.open_stream(input, None)?;
                let deleted = input
                    .deleted_rows
                    .as_ref()
                    .map(|d| d.iter().filter_map(|&p| u32::try_from(p).ok()).collect());
                level.open = Some(OpenFile {
                    file,
                    stream,
                    slot: None,
                    row: 0,
                    len: 0,
                    base: 0,
                    deleted,
                    exhausted: false,
                });
            }
            let Some(open) = level.open.as_mut() else {
                continue;
            };
            // Advance to the first row whose key is not below the looked-up key.
            loop {
                if open.exhausted {
                    break;
                }
                if open.slot.is_none() || open.row >= open.len {
                    open.base += open.len as u64;
                    match reader.next_batch(&mut open.stream, &higher[file].path)? {
                        Some(batch) => {
                            let slot = arena.push(reader.slot_of(
                                batch,
                                &higher[file].path,
                                Some(file),
                            )?);
                            open.len = arena.slots[slot].len();
                            open.slot = Some(slot);
                            open.row = 0;
                            continue;
                        }
                        None => {
                            open.exhausted = true;
                            break;
                        }
                    }
                }
                let Some(slot) = open.slot else { break };
                match arena.cmp_keys((slot, open.row), group_key) {
                    Ordering::Less => open.row += 1,
                    Ordering::Equal => {
                        let pos = open.base + open.row as u64;
                        let gone = open
                            .deleted
                            .as_ref()
                            .is_some_and(|d| u32::try_from(pos).is_ok_and(|p| d.contains(p)));
                        if gone {
                            open.row += 1;
                            continue;
                        }
                        let s = &arena.slots[slot];
                        let rec = Record {
                            slot,
                            row: open.row,
                            seq: s.seq(open.row),
                            kind: s.kinds[open.row],
                            level: level.level,
                            origin: Origin::Lookup { file, pos },
                        };
                        return Ok(Some(rec));
                    }
                    Ordering::Greater => break,
                }
            }
        }
        Ok(None)
    }
}
