//! A bounded number of sorted runs per merge (compaction.md §10.1, "Many sorted runs").
//!
//! The merge holds a decoded batch and a read window of every run it reads side by side, so
//! its memory grows with the number of runs. A bucket whose writers run `write-only` piles up
//! level-0 runs until the dedicated job comes; hundreds of them would take the merge past any
//! fixed memory budget. As Paimon's `sort-spill-threshold` does for its writers, a section
//! with more runs than the bound first merges groups of its level-0 runs into temporary runs:
//! every record is kept, unmerged and in (key, sequence) order, in one Parquet file of the
//! merge's schema at level 0, next to the outputs. The final merge then reads at most the
//! bound, and the table's merge engine, changelog and record expiry see every record exactly
//! as they would have (level-0 records stay level-0 records; runs at higher levels, which the
//! changelog and lookup modes tell apart by level, are never grouped).
//!
//! The temporary files are deleted when the final merge ends, successful or not; a killed job
//! leaves them as orphans in the bucket directory, which no snapshot references and
//! `remove-orphan-files` reclaims.

use std::sync::Arc;

use super::merge_tree::{merge, Keep};
use super::{MergeTreeRewrite, MergeTreeRewriteResult};
use crate::error::Result;
use crate::meta::Level;
use crate::options::CoreOptions;
use crate::rewrite::RewriteInput;
use crate::storage::Storage;

/// A request whose oversized sections were reduced, and the temporary files it reads.
pub(super) struct Spilled {
    pub req: MergeTreeRewrite,
    pub temps: Vec<String>,
    /// Original runs merged into temporary ones.
    pub runs: u64,
}

impl Spilled {
    /// Deletes the temporary files (every one is tried; the first failure is returned).
    pub(super) fn delete(&self, storage: &Arc<dyn Storage>) -> Result<()> {
        let mut first = Ok(());
        for path in &self.temps {
            if let Err(e) = storage.delete(path) {
                if first.is_ok() {
                    first = Err(e.into());
                }
            }
        }
        first
    }
}

/// The most runs one merge reads: `paimon-compact.merge.max-runs`, lowered by Paimon's
/// `sort-spill-threshold` when that is set (a threshold below 2 counts as 2).
pub(super) fn max_runs(options: &CoreOptions) -> Result<usize> {
    let ours = options.engine.max_runs.get()?;
    Ok(match options.sort_spill_threshold {
        Some(t) => ours.min(t.max(2)),
        None => ours,
    })
}

/// `None` when every section has at most [`max_runs`] runs (or too few level-0 runs to
/// group); else the request with groups of level-0 runs replaced by temporary runs.
pub(super) fn spill_runs(
    storage: &dyn crate::io::ToIo,
    req: &MergeTreeRewrite,
    options: &CoreOptions,
) -> Result<Option<Spilled>> {
    let bound = max_runs(options)?;
    if req.sections.iter().all(|s| s.len() <= bound) {
        return Ok(None);
    }
    // Temporary runs are single files: a rolled run could split a key's records between two
    // files, which a run may not do.
    let mut one_file = options.clone();
    one_file.target_file_size = u64::MAX;
    // Temporary runs are read once, by the final merge: no file index, and Parquet (the
    // format the merge reads) with a fast codec whatever the table writes.
    one_file.raw.retain(|k, _| !k.starts_with("file-index."));
    one_file
        .file_format_per_level
        .insert(0, "parquet".to_string());
    one_file
        .file_compression_per_level
        .insert(0, "lz4_raw".to_string());
    let mut spilled = Spilled {
        req: MergeTreeRewrite {
            sections: Vec::with_capacity(req.sections.len()),
            ..req.clone_without_sections()
        },
        temps: Vec::new(),
        runs: 0,
    };
    let result = reduce_sections(storage, req, &one_file, bound, &mut spilled);
    if let Err(e) = result {
        // Nothing of a failed spill survives it; the request's error is the one reported.
        let _ = spilled.delete(&storage.to_io().storage);
        return Err(e);
    }
    Ok(Some(spilled))
}

fn reduce_sections(
    storage: &dyn crate::io::ToIo,
    req: &MergeTreeRewrite,
    options: &CoreOptions,
    bound: usize,
    spilled: &mut Spilled,
) -> Result<()> {
    for (s, section) in req.sections.iter().enumerate() {
        let is_level0 = |run: &Vec<RewriteInput>| run.iter().all(|f| f.meta.level.get() == 0);
        let (mut level0, mut others): (Vec<Vec<RewriteInput>>, Vec<Vec<RewriteInput>>) =
            section.iter().cloned().partition(is_level0);
        let mut pass = 0usize;
        // Each group of `bound` level-0 runs becomes one: stop once the section fits, or when
        // fewer than two level-0 runs are left to group.
        while level0.len() + others.len() > bound && level0.len() >= 2 {
            let excess = level0.len() + others.len() - bound;
            let take = (excess + 1).min(bound).min(level0.len());
            let group: Vec<Vec<RewriteInput>> = level0.drain(..take).collect();
            // Not under the output prefix: no output name may start like an input's.
            let prefix = format!("sort-spill-{}{s}-{pass}-", req.file_prefix);
            let sub = MergeTreeRewrite {
                sections: vec![group],
                higher_levels: Vec::new(),
                changelog_prefix: format!("{prefix}changelog-"),
                file_prefix: prefix,
                output_level: Level::new(0),
                drop_delete: false,
                write_data: true,
                ..req.clone_without_sections()
            };
            let out: MergeTreeRewriteResult = merge(storage, &sub, options, Keep::All)?;
            spilled.runs += take as u64;
            for f in &out.outputs {
                spilled.temps.push(f.path.clone());
            }
            let run: Vec<RewriteInput> = out
                .outputs
                .into_iter()
                .map(|f| RewriteInput {
                    path: f.path,
                    meta: Arc::new(f.meta),
                    deleted_rows: None,
                    columns: None,
                })
                .collect();
            if !run.is_empty() {
                level0.push(run);
            }
            pass += 1;
        }
        let mut runs = level0;
        runs.append(&mut others);
        spilled.req.sections.push(runs);
    }
    Ok(())
}
