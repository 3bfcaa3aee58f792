//! IntervalPartition (spec §8): splits a compaction unit's files into key-disjoint sections, and
//! each section into the fewest sorted runs, so the merge reads as few files at once as possible.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use crate::meta::{DataFileMeta, Key, SortedRun};

/// Sections in key order; inside a section, runs ordered by their last file's max key (then
/// min key), which is paimon-cpp's deterministic order (Java's is heap order, and irrelevant to
/// correctness).
pub fn interval_partition(files: &[Arc<DataFileMeta>]) -> Vec<Vec<SortedRun>> {
    let mut sorted: Vec<Arc<DataFileMeta>> = files.to_vec();
    sorted.sort_by(|a, b| (&a.min_key, &a.max_key).cmp(&(&b.min_key, &b.max_key)));

    let mut sections = Vec::new();
    let mut section: Vec<Arc<DataFileMeta>> = Vec::new();
    let mut bound: Option<Key> = None;
    for file in sorted {
        // A new section starts only strictly after the bound: touching keys overlap.
        if let Some(b) = &bound {
            if !section.is_empty() && file.min_key > *b {
                sections.push(partition_section(std::mem::take(&mut section)));
                bound = None;
            }
        }
        bound = Some(match bound {
            Some(b) if b >= file.max_key => b,
            _ => file.max_key.clone(),
        });
        section.push(file);
    }
    if !section.is_empty() {
        sections.push(partition_section(section));
    }
    sections
}

/// Greedy: each file joins the run that ends earliest if it starts after that run's end,
/// otherwise it opens a new run.
fn partition_section(files: Vec<Arc<DataFileMeta>>) -> Vec<SortedRun> {
    // Heap entries: (last max key, last min key, creation index) → run files.
    type Entry = Reverse<(Key, Key, usize)>;
    let mut heap: BinaryHeap<Entry> = BinaryHeap::new();
    let mut runs: Vec<Vec<Arc<DataFileMeta>>> = Vec::new();
    for file in files {
        let top = heap.peek().map(|Reverse((max, _, idx))| (max.clone(), *idx));
        match top {
            Some((max, idx)) if file.min_key > max => {
                heap.pop();
                heap.push(Reverse((file.max_key.clone(), file.min_key.clone(), idx)));
                runs[idx].push(file);
            }
            _ => {
                heap.push(Reverse((file.max_key.clone(), file.min_key.clone(), runs.len())));
                runs.push(vec![file]);
            }
        }
    }
    let mut order: Vec<(Key, Key, usize)> = heap.into_iter().map(|Reverse(e)| e).collect();
    order.sort();
    let mut runs: Vec<Option<Vec<Arc<DataFileMeta>>>> = runs.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|(_, _, idx)| runs[idx].take())
        .map(SortedRun::from_sorted_trusted)
        .collect()
}
