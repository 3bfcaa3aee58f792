//! Compaction of append tables with fixed buckets (compaction.md §13).
//!
//! Files queue in sequence order. The auto picker slides a contiguous window over the queue
//! until it holds `compaction.min.file-num` files, releasing the oldest file whenever the window
//! already weighs two target files (large files need no compaction). Full compaction rewrites
//! the queue when small files outnumber large ones.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use super::{Idle, Reason};
use crate::error::{Error, Result};
use crate::meta::{CompactionFile, SequenceNumber};
use crate::options::CoreOptions;

/// What an append bucket should compact now.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AppendDecision {
    /// The files to rewrite together, in sequence order (empty: nothing to do).
    pub files: Vec<Arc<CompactionFile>>,
    /// Files that left the queue without being compacted (large enough already).
    pub released: Vec<Arc<CompactionFile>>,
    /// The rule that picked `files`, or why nothing was picked ([`Reason::Idle`]).
    pub reason: Reason,
}

/// Queue order: min sequence number, then max, then name (Paimon breaks ties arbitrarily).
type QueueKey = (SequenceNumber, SequenceNumber, String);

fn key(f: &CompactionFile) -> QueueKey {
    (
        f.min_sequence_number,
        f.max_sequence_number,
        f.file_name.clone(),
    )
}

/// The planner state of one fixed bucket of an append table.
#[derive(Clone, Debug)]
pub struct BucketedAppendCompactManager {
    queue: BTreeMap<QueueKey, Arc<CompactionFile>>,
    min_file_num: usize,
    target_file_size: u64,
    compaction_file_size: u64,
    force_rewrite_all: bool,
    dv_enabled: bool,
    task_running: bool,
}

impl BucketedAppendCompactManager {
    /// A manager for one bucket, with `files` (the bucket's live files) queued and no task
    /// running. Reads `compaction.min.file-num`, `target-file-size`, the compaction file size,
    /// `compaction.force-rewrite-all-files` and `deletion-vectors.enabled`.
    pub fn new(options: &CoreOptions, files: Vec<Arc<CompactionFile>>) -> Self {
        let mut m = BucketedAppendCompactManager {
            queue: BTreeMap::new(),
            min_file_num: options.min_file_num,
            target_file_size: options.target_file_size,
            compaction_file_size: options.compaction_file_size,
            force_rewrite_all: options.force_rewrite_all_files,
            dv_enabled: options.deletion_vectors_enabled,
            task_running: false,
        };
        for f in files {
            m.add_new_file(f);
        }
        m
    }

    /// Queues a file (a writer's new file, or a small last output, compaction.md §13.3) in
    /// sequence order. A file with the same sequence range and name replaces the queued one.
    pub fn add_new_file(&mut self, file: Arc<CompactionFile>) {
        self.queue.insert(key(&file), file);
    }

    /// Queued files in sequence order.
    pub fn queue(&self) -> impl ExactSizeIterator<Item = &Arc<CompactionFile>> {
        self.queue.values()
    }

    /// Records whether a task of this bucket is running: while one is, [`Self::pick_auto`]
    /// picks nothing and [`Self::trigger_full`] is an error. The manager never sets it itself.
    pub fn set_task_running(&mut self, running: bool) {
        self.task_running = running;
    }

    /// The automatic pick (compaction.md §13.1). Picked and released files leave the queue.
    pub fn pick_auto(&mut self) -> AppendDecision {
        if self.task_running {
            return idle(Idle::TaskRunning, Vec::new());
        }
        if self.queue.is_empty() {
            return idle(Idle::Empty, Vec::new());
        }
        let mut window: VecDeque<Arc<CompactionFile>> = VecDeque::new();
        let mut released = Vec::new();
        let mut total: u64 = 0;
        let two_targets = self.target_file_size.saturating_mul(2);
        while let Some((_, file)) = self.queue.pop_first() {
            total += file.file_size;
            window.push_back(file);
            if window.len() >= self.min_file_num {
                let files: Vec<_> = window.into_iter().collect();
                return AppendDecision {
                    reason: Reason::AppendAuto {
                        files: files.len(),
                        bytes: total,
                        min_file_num: self.min_file_num,
                    },
                    files,
                    released,
                };
            } else if total >= two_targets {
                if let Some(head) = window.pop_front() {
                    total -= head.file_size;
                    released.push(head);
                }
            }
        }
        let (queued_files, queued_bytes) = (window.len(), total);
        for f in window {
            self.add_new_file(f);
        }
        let reason = Idle::AppendWaiting {
            queued_files,
            queued_bytes,
            min_file_num: self.min_file_num,
            released: released.len(),
        };
        idle(reason, released)
    }

    /// Forced full compaction (compaction.md §13.2). The whole queue goes into the task; leading
    /// large files without deletion vectors are kept as they are and leave the queue.
    pub fn trigger_full(&mut self) -> Result<AppendDecision> {
        if self.task_running {
            return Err(Error::illegal_state(
                "a full compaction was requested while a compaction task is still running",
            ));
        }
        if !self.force_rewrite_all
            && (self.queue.is_empty() || (!self.dv_enabled && self.queue.len() < 3))
        {
            return Ok(idle(
                Idle::AppendFullTooFew {
                    queued_files: self.queue.len(),
                },
                Vec::new(),
            ));
        }
        let files: Vec<_> = std::mem::take(&mut self.queue).into_values().collect();
        Ok(full_compact_task(
            files,
            self.compaction_file_size,
            self.dv_enabled,
            self.force_rewrite_all,
        ))
    }

    /// A finished task: a small last output goes back into the queue (compaction.md §13.3).
    pub fn on_result(&mut self, after: &[Arc<CompactionFile>]) {
        if let Some(last) = after.last() {
            if should_requeue_last(last.file_size, self.compaction_file_size) {
                self.add_new_file(last.clone());
            }
        }
    }
}

fn idle(idle: Idle, released: Vec<Arc<CompactionFile>>) -> AppendDecision {
    AppendDecision {
        files: Vec::new(),
        released,
        reason: Reason::Idle(idle),
    }
}

/// The full-compaction task over `files` (in sequence order).
pub fn full_compact_task(
    files: Vec<Arc<CompactionFile>>,
    compaction_file_size: u64,
    dv_enabled: bool,
    force_rewrite_all: bool,
) -> AppendDecision {
    let mut stripped = 0;
    let mut rest: &[Arc<CompactionFile>] = &files;
    if !force_rewrite_all {
        while let Some((head, tail)) = rest.split_first() {
            if head.file_size >= compaction_file_size && !head.has_deletion_vector {
                stripped += 1;
                rest = tail;
            } else {
                break;
            }
        }
    }
    let mut released: Vec<_> = files[..stripped].to_vec();
    // With deletion vectors every remaining file is rewritten (their vectors must go); otherwise
    // only when small files outnumber large ones, at least three in all.
    if !dv_enabled && !force_rewrite_all {
        let big = rest
            .iter()
            .filter(|f| f.file_size >= compaction_file_size)
            .count();
        let small = rest.len() - big;
        if !(small > big && rest.len() >= 3) {
            released.extend(rest.iter().cloned());
            return idle(Idle::AppendFullNotWorthIt { small, big }, released);
        }
    }
    AppendDecision {
        reason: Reason::AppendFull {
            files: rest.len(),
            stripped_large: stripped,
        },
        files: rest.to_vec(),
        released,
    }
}

/// Only the last output file of a task can be small; it rejoins the queue.
pub fn should_requeue_last(last_output_size: u64, compaction_file_size: u64) -> bool {
    last_output_size < compaction_file_size
}
