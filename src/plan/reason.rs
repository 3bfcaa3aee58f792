//! Why the planner decided what it did, as data.
//!
//! Every decision carries a [`Reason`]: the rule that fired (or why none did) and the numbers
//! that made it fire. The CLI prints it, the simulator shows it, and tests assert on it. The
//! `Display` form is one sentence a person can check by hand.

use std::fmt;

use crate::meta::Level;

/// The numbers of one walk of the size-ratio loop (compaction.md §4.4).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RatioWalk {
    /// Runs accumulated by the walk, before the output-level rule may swallow more.
    pub runs: usize,
    /// Their total size.
    pub candidate_bytes: u64,
    /// `compaction.size-ratio` plus the off-peak ratio in force.
    pub ratio_pct: u32,
    /// The run whose size stopped the walk; `None` when the walk reached the last run.
    pub stopped_at: Option<RatioStop>,
}

/// The run that failed the size-ratio test and ended the walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RatioStop {
    /// Size in bytes of that run: the `size(next)` that exceeded the candidate grown by the
    /// ratio.
    pub next_bytes: u64,
    /// Its level. Under the Java flavor a triggered walk only stops at a run above level 1
    /// (compaction.md §4.4).
    pub level: Level,
}

/// Why nothing was picked.
///
/// Serialized with an `idle` tag holding the kebab-case variant name; fields keep their names.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "idle", rename_all = "kebab-case")]
pub enum Idle {
    /// No files to compact: the bucket has no sorted runs, the append queue is empty, or the
    /// pick held no files (compaction.md §7.1, §13.1).
    Empty,
    /// A compaction task of this bucket is still running; a manager plans one task at a time
    /// (compaction.md §7.1, §13.1).
    TaskRunning,
    /// Fewer sorted runs than the trigger, so universal compaction's size rules do not apply
    /// (compaction.md §4.1).
    BelowTrigger {
        /// Sorted runs of the bucket: level-0 files plus non-empty levels ≥ 1 (compaction.md §1.3).
        sorted_runs: usize,
        /// `num-sorted-run.compaction-trigger`.
        trigger: usize,
    },
    /// Enough runs to be considered, but neither size amplification nor the size ratio fired;
    /// carries the numbers of both tests (compaction.md §4.1 step 4).
    NoRuleFired {
        /// Sorted runs of the bucket, at least `trigger` (with more, the file-number rule
        /// would have picked).
        sorted_runs: usize,
        /// `num-sorted-run.compaction-trigger`.
        trigger: usize,
        /// Total size in bytes of every run but the oldest: size amplification's numerator
        /// (compaction.md §4.3).
        candidate_bytes: u64,
        /// Size in bytes of the oldest run: size amplification's denominator.
        earliest_bytes: u64,
        /// `compaction.max-size-amplification-percent`.
        max_size_amp_pct: u64,
        /// The size-ratio walk from the newest run alone (compaction.md §4.4), which did not
        /// trigger.
        walk: RatioWalk,
    },
    /// `lookup-compact = gentle`: level 0 holds files, but the forced level-0 pick is only due
    /// once the counter reaches the interval (compaction.md §5 step 3).
    GentleWaiting {
        /// The gentle counter: checks since the last forced pick, this one included.
        calls: usize,
        /// Effective `lookup-compact.max-interval` (at least the compaction trigger).
        interval: usize,
    },
    /// A forced level-0 pick (compaction.md §4.6) found level 0 empty. The strategies do not
    /// currently produce it: with level 0 empty they report universal compaction's reason.
    NoLevel0,
    /// The postpone bucket of a `bucket = -2` table: its files wait for the rescale that
    /// assigns them to real buckets, which a bucket compaction does not do.
    PostponeBucket {
        /// Data files in the postpone bucket, left as they are.
        files: usize,
    },
    /// The pick was a single file already at the output level: nothing would change.
    AlreadyAtOutputLevel {
        /// That file's name, as in the manifest.
        file: String,
        /// The level it sits on, which is also the pick's output level.
        level: Level,
    },
    /// Full compaction of a single max-level run with nothing to rewrite: no file has a
    /// deletion vector or expired records, and `force-rewrite-all-files` is off (compaction.md
    /// §6 step 2).
    MaxLevelClean {
        /// Files in that run.
        files: usize,
    },
    /// Append bucket: the queue ran out before the window held `compaction.min.file-num` files,
    /// so the window went back into the queue (compaction.md §13.1).
    AppendWaiting {
        /// Files in the queue after the pick (the returned window; released files excluded).
        queued_files: usize,
        /// Their total size in bytes.
        queued_bytes: u64,
        /// `compaction.min.file-num`.
        min_file_num: usize,
        /// Files released during the walk because the window already weighed twice
        /// `target-file-size`; they left the queue for good (`AppendDecision::released`).
        released: usize,
    },
    /// Append full compaction not started: the queue is empty, or deletion vectors are off and
    /// fewer than three files are queued (compaction.md §13.2 step 2). Never with
    /// `force-rewrite-all-files`. The queue is left untouched.
    AppendFullTooFew {
        /// Files in the queue.
        queued_files: usize,
    },
    /// Append full compaction (without deletion vectors or `force-rewrite-all-files`) whose
    /// files after the large leading ones are not worth a rewrite: small files do not outnumber
    /// large ones, or fewer than three remain (compaction.md §13.2 step 5). They are released.
    AppendFullNotWorthIt {
        /// Remaining files below the compaction file size.
        small: usize,
        /// Remaining files at or above the compaction file size.
        big: usize,
    },
    /// Unaware-bucket coordinator: the partition's candidates filled no bin and have not waited
    /// long enough to be compacted together (compaction.md §14.1).
    CoordinatorWaiting {
        /// Candidate files the coordinator holds for the partition.
        files: usize,
        /// Plans in a row without a packed task; the files go together once it exceeds
        /// `COMPACT_AGE`.
        age: u32,
    },
}

/// The rule that fired, with its numbers.
///
/// Serialized with a `rule` tag holding the kebab-case variant name; fields keep their names.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "rule", rename_all = "kebab-case")]
pub enum Reason {
    /// Early full compaction by `compaction.optimization-interval`: no full compaction known
    /// yet, or more than the interval has passed since the last (compaction.md §4.2 rule 1).
    EarlyFullInterval {
        /// Runs picked: every run of the bucket, for the max level.
        runs: usize,
        /// `compaction.optimization-interval`, in milliseconds.
        interval_ms: u64,
        /// Epoch ms of the previous full compaction; `None` when the clock was unset.
        last_full_ms: Option<i64>,
        /// Epoch ms of this decision (`PlanContext::now_ms`), the clock's new value.
        now_ms: i64,
    },
    /// Early full compaction because the bucket's total size is below
    /// `compaction.total-size-threshold` (compaction.md §4.2 rule 2).
    EarlyFullTotalSize {
        /// Runs picked: every run of the bucket, for the max level.
        runs: usize,
        /// Total size of all runs, in bytes.
        total_bytes: u64,
        /// `compaction.total-size-threshold`, in bytes.
        threshold_bytes: u64,
    },
    /// Early full compaction because the data above the max level exceeds
    /// `compaction.incremental-size-threshold` (compaction.md §4.2 rule 3).
    EarlyFullIncrementalSize {
        /// Runs picked: every run of the bucket, for the max level.
        runs: usize,
        /// Total size in bytes of the runs not on the max level.
        incremental_bytes: u64,
        /// `compaction.incremental-size-threshold`, in bytes.
        threshold_bytes: u64,
    },
    /// Size amplification (compaction.md §4.3): `candidate_bytes × 100 > max_size_amp_pct ×
    /// earliest_bytes`, so every run goes to the max level.
    SizeAmplification {
        /// Runs picked: all of them.
        runs: usize,
        /// Total size in bytes of every run but the oldest.
        candidate_bytes: u64,
        /// Size in bytes of the oldest run.
        earliest_bytes: u64,
        /// `compaction.max-size-amplification-percent`.
        max_size_amp_pct: u64,
    },
    /// The gated size-ratio rule (compaction.md §4.1 step 2): the walk from the newest run
    /// triggered.
    SizeRatio {
        /// The walk. The pick can cover more runs than `walk.runs` when the output-level rule
        /// swallows following runs (compaction.md §4.5).
        walk: RatioWalk,
    },
    /// The file-number rule (compaction.md §4.1 step 3): more sorted runs than the trigger, so
    /// the walk started from the `sorted_runs − trigger + 1` newest runs.
    FileNum {
        /// Sorted runs of the bucket, more than `trigger`.
        sorted_runs: usize,
        /// `num-sorted-run.compaction-trigger`.
        trigger: usize,
        /// The walk from those runs (before the output-level rule, compaction.md §4.5).
        walk: RatioWalk,
    },
    /// The forced level-0 pick of force-up-level-0 (compaction.md §4.6, §5): every level-0 run,
    /// plus what the forced walk absorbs.
    ForceUpLevel0 {
        /// Leading level-0 runs the forced walk started from.
        level0_runs: usize,
        /// The interval that came due under `lookup-compact = gentle`; `None` for `radical`
        /// and for `compaction.force-up-level-0`.
        gentle_interval: Option<usize>,
        /// The forced walk (before the output-level rule, compaction.md §4.5).
        walk: RatioWalk,
    },
    /// A forced full compaction of all runs (compaction.md §6 step 3).
    FullCompaction {
        /// Runs of the bucket, all merged into the max level.
        runs: usize,
        /// Files in those runs.
        files: usize,
    },
    /// A forced full compaction of a single max-level run: only files that need it
    /// (compaction.md §6 step 2).
    FullRewriteMaxLevel {
        /// Files rewritten, each on its own.
        files: usize,
        /// `compaction.force-rewrite-all-files`: every file of the run is rewritten, and the
        /// two counts below stay 0.
        forced: bool,
        /// Files chosen because they have a deletion vector (and no expired records).
        with_deletion_vector: usize,
        /// Files chosen because they hold expired records (Java flavor with an expiry
        /// predicate only, compaction.md §16 D4).
        expired: usize,
    },
    /// Append bucket automatic pick (compaction.md §13.1): the window reached
    /// `compaction.min.file-num` files.
    AppendAuto {
        /// Files picked, in sequence order.
        files: usize,
        /// Their total size in bytes.
        bytes: u64,
        /// `compaction.min.file-num`.
        min_file_num: usize,
    },
    /// Append bucket full compaction (compaction.md §13.2).
    AppendFull {
        /// Files rewritten together.
        files: usize,
        /// Leading files at least the compaction file size and without a deletion vector, kept
        /// as they are and released (compaction.md §13.2 step 4).
        stripped_large: usize,
    },
    /// Unaware-bucket coordinator: a packed bin becomes a task (compaction.md §14.1).
    CoordinatorPacked {
        /// Files in the bin.
        files: usize,
        /// The bin's weight in bytes: file sizes plus one `source.split.open-file-cost` per
        /// file.
        bytes: u64,
    },
    /// Unaware-bucket coordinator: the partition's candidates filled no bin for more than
    /// `COMPACT_AGE` plans and are compacted together (compaction.md §14.1). The table job's
    CoordinatorAged {
        /// Files compacted together.
        files: usize,
        /// Plans in a row the partition went without a packed task.
        age: u32,
    },
    /// A full compaction of an unaware-bucket partition (the table job's `--strategy full`):
    /// the files left over after the coordinator's packs are compacted together, whatever
    /// their age.
    CoordinatorFull {
        /// Files compacted together.
        files: usize,
    },
    /// The postpone bucket of a `bucket = -2` table: its files are replayed into the
    /// partition's real buckets, which are then compacted (compaction.md, "Postpone
    /// buckets").
    PostponeReplay {
        /// Files in the postpone bucket.
        files: usize,
        /// The partition's bucket count (kept, or chosen for a new partition).
        buckets: i32,
    },
    /// Nothing was picked, and why.
    Idle(Idle),
}

impl Reason {
    /// Whether this is [`Reason::Idle`], i.e. the decision compacts nothing.
    pub fn is_idle(&self) -> bool {
        matches!(self, Reason::Idle(_))
    }

    /// A short name for the rule (what the simulator colours by).
    pub fn rule(&self) -> &'static str {
        match self {
            Reason::EarlyFullInterval { .. } => "early-full-interval",
            Reason::EarlyFullTotalSize { .. } => "early-full-total-size",
            Reason::EarlyFullIncrementalSize { .. } => "early-full-incremental-size",
            Reason::SizeAmplification { .. } => "size-amplification",
            Reason::SizeRatio { .. } => "size-ratio",
            Reason::FileNum { .. } => "file-num",
            Reason::ForceUpLevel0 { .. } => "force-up-level-0",
            Reason::FullCompaction { .. } => "full",
            Reason::FullRewriteMaxLevel { .. } => "full-rewrite-max-level",
            Reason::AppendAuto { .. } => "append-auto",
            Reason::AppendFull { .. } => "append-full",
            Reason::CoordinatorPacked { .. } => "coordinator-packed",
            Reason::CoordinatorAged { .. } => "coordinator-aged",
            Reason::CoordinatorFull { .. } => "coordinator-full",
            Reason::PostponeReplay { .. } => "postpone-replay",
            Reason::Idle(_) => "nothing-to-do",
        }
    }
}

/// Bytes for people: exact below 1 KiB, else one decimal in binary units.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["KB", "MB", "GB", "TB", "PB"];
    if b < 1024 {
        return format!("{b} B");
    }
    let mut v = b as f64 / 1024.0;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    format!("{v:.1} {}", UNITS[i])
}

impl fmt::Display for RatioWalk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} run{}, {}",
            self.runs,
            plural(self.runs),
            human_bytes(self.candidate_bytes)
        )?;
        match self.stopped_at {
            Some(stop) => write!(
                f,
                " × {}% < next {} stopped at level {}",
                100 + self.ratio_pct,
                human_bytes(stop.next_bytes),
                stop.level
            ),
            None => f.write_str(", every run absorbed"),
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn pct(num: u64, den: u64) -> String {
    if den == 0 {
        "∞".into()
    } else {
        format!("{}", (num as u128 * 100 / den as u128))
    }
}

impl fmt::Display for Idle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Idle::Empty => f.write_str("nothing to do: no files"),
            Idle::TaskRunning => f.write_str("nothing to do: a compaction is still running"),
            Idle::BelowTrigger { sorted_runs, trigger } => write!(
                f,
                "nothing to do: {sorted_runs} sorted run{} < trigger {trigger}",
                plural(*sorted_runs)
            ),
            Idle::NoRuleFired { sorted_runs, trigger, candidate_bytes, earliest_bytes, max_size_amp_pct, walk } => write!(
                f,
                "nothing to do: {sorted_runs} sorted runs (trigger {trigger}); size amplification {}% ≤ {max_size_amp_pct}%; size ratio: {walk}",
                pct(*candidate_bytes, *earliest_bytes)
            ),
            Idle::GentleWaiting { calls, interval } => write!(
                f,
                "nothing to do: gentle lookup compaction forces level 0 up every {interval} checks ({calls} so far)"
            ),
            Idle::NoLevel0 => f.write_str("nothing to do: no level-0 files to force up"),
            Idle::PostponeBucket { files } => write!(
                f,
                "left alone: {files} file{} in the postpone bucket wait for the rescale that assigns them to buckets",
                plural(*files)
            ),
            Idle::AlreadyAtOutputLevel { file, level } => write!(
                f,
                "nothing to do: the only candidate '{file}' is already at level {level}"
            ),
            Idle::MaxLevelClean { files } => write!(
                f,
                "nothing to do: a single max-level run of {files} file{} with no deletion vectors or expired records",
                plural(*files)
            ),
            Idle::AppendWaiting { queued_files, queued_bytes, min_file_num, released } => {
                write!(
                    f,
                    "nothing to do: {queued_files} queued file{} ({}) < compaction.min.file-num {min_file_num}",
                    plural(*queued_files),
                    human_bytes(*queued_bytes)
                )?;
                if *released > 0 {
                    write!(f, "; {released} large file{} released", plural(*released))?;
                }
                Ok(())
            }
            Idle::AppendFullTooFew { queued_files } => write!(
                f,
                "nothing to do: full compaction needs at least 3 queued files, {queued_files} queued"
            ),
            Idle::AppendFullNotWorthIt { small, big } => write!(
                f,
                "nothing to do: {small} small vs {big} large file{}; full compaction needs more small than large files and at least 3",
                plural(*big)
            ),
            Idle::CoordinatorWaiting { files, age } => write!(
                f,
                "nothing to do: {files} small file{} waiting (age {age})",
                plural(*files)
            ),
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::EarlyFullInterval { runs, interval_ms, last_full_ms, now_ms } => match last_full_ms {
                Some(last) => write!(
                    f,
                    "early full compaction: {} ms since the last full compaction > interval {interval_ms} ms ({runs} runs)",
                    now_ms - last
                ),
                None => write!(
                    f,
                    "early full compaction: no full compaction seen yet, interval {interval_ms} ms ({runs} runs)"
                ),
            },
            Reason::EarlyFullTotalSize { runs, total_bytes, threshold_bytes } => write!(
                f,
                "early full compaction: total size {} < threshold {} ({runs} runs)",
                human_bytes(*total_bytes),
                human_bytes(*threshold_bytes)
            ),
            Reason::EarlyFullIncrementalSize { runs, incremental_bytes, threshold_bytes } => write!(
                f,
                "early full compaction: {} above the max level > threshold {} ({runs} runs)",
                human_bytes(*incremental_bytes),
                human_bytes(*threshold_bytes)
            ),
            Reason::SizeAmplification { runs, candidate_bytes, earliest_bytes, max_size_amp_pct } => write!(
                f,
                "size amplification: {runs} runs, newer {} is {}% of oldest {} > {max_size_amp_pct}%",
                human_bytes(*candidate_bytes),
                pct(*candidate_bytes, *earliest_bytes),
                human_bytes(*earliest_bytes)
            ),
            Reason::SizeRatio { walk } => write!(f, "size ratio: {walk}"),
            Reason::FileNum { sorted_runs, trigger, walk } => write!(
                f,
                "file number: {sorted_runs} sorted runs > trigger {trigger}; {walk}"
            ),
            Reason::ForceUpLevel0 { level0_runs, gentle_interval, walk } => {
                write!(f, "force up level 0: {level0_runs} level-0 run{}", plural(*level0_runs))?;
                if let Some(i) = gentle_interval {
                    write!(f, " (gentle, every {i} checks)")?;
                }
                write!(f, "; {walk}")
            }
            Reason::FullCompaction { runs, files } => write!(
                f,
                "full compaction: {runs} run{}, {files} file{}",
                plural(*runs),
                plural(*files)
            ),
            Reason::FullRewriteMaxLevel { files, forced, with_deletion_vector, expired } => {
                write!(f, "full compaction of the max level: rewrite {files} file{}", plural(*files))?;
                if *forced {
                    f.write_str(" (compaction.force-rewrite-all-files)")
                } else {
                    write!(f, " ({with_deletion_vector} with deletion vectors, {expired} with expired records)")
                }
            }
            Reason::AppendAuto { files, bytes, min_file_num } => write!(
                f,
                "append auto compaction: {files} consecutive files ({}) reached compaction.min.file-num {min_file_num}",
                human_bytes(*bytes)
            ),
            Reason::AppendFull { files, stripped_large } => write!(
                f,
                "append full compaction: rewrite {files} file{}, {stripped_large} large leading file{} kept",
                plural(*files),
                plural(*stripped_large)
            ),
            Reason::CoordinatorPacked { files, bytes } => write!(
                f,
                "unaware-bucket coordinator: packed {files} files ({} with open-file cost)",
                human_bytes(*bytes)
            ),
            Reason::CoordinatorAged { files, age } => write!(
                f,
                "unaware-bucket coordinator: {files} files waited {age} plans, compacted together"
            ),
            Reason::CoordinatorFull { files } => write!(
                f,
                "unaware-bucket full compaction: the {files} files left after packing compacted together"
            ),
            Reason::PostponeReplay { files, buckets } => write!(
                f,
                "postpone compaction: {files} postpone file{} replayed into {buckets} bucket{}, which are then compacted",
                if *files == 1 { "" } else { "s" },
                if *buckets == 1 { "" } else { "s" }
            ),
            Reason::Idle(idle) => idle.fmt(f),
        }
    }
}
