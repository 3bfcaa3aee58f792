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
    pub next_bytes: u64,
    pub level: Level,
}

/// Why nothing was picked.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "idle", rename_all = "kebab-case")]
pub enum Idle {
    Empty,
    TaskRunning,
    BelowTrigger {
        sorted_runs: usize,
        trigger: usize,
    },
    NoRuleFired {
        sorted_runs: usize,
        trigger: usize,
        candidate_bytes: u64,
        earliest_bytes: u64,
        max_size_amp_pct: u64,
        walk: RatioWalk,
    },
    GentleWaiting {
        calls: usize,
        interval: usize,
    },
    NoLevel0,
    /// The postpone bucket of a `bucket = -2` table: its files wait for the rescale that
    /// assigns them to real buckets, which a bucket compaction does not do.
    PostponeBucket {
        files: usize,
    },
    /// The pick was a single file already at the output level: nothing would change.
    AlreadyAtOutputLevel {
        file: String,
        level: Level,
    },
    /// Full compaction of a single max-level run with nothing to rewrite.
    MaxLevelClean {
        files: usize,
    },
    AppendWaiting {
        queued_files: usize,
        queued_bytes: u64,
        min_file_num: usize,
        released: usize,
    },
    AppendFullTooFew {
        queued_files: usize,
    },
    AppendFullNotWorthIt {
        small: usize,
        big: usize,
    },
    CoordinatorWaiting {
        files: usize,
        age: u32,
    },
}

/// The rule that fired, with its numbers.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "rule", rename_all = "kebab-case")]
pub enum Reason {
    EarlyFullInterval {
        runs: usize,
        interval_ms: u64,
        last_full_ms: Option<i64>,
        now_ms: i64,
    },
    EarlyFullTotalSize {
        runs: usize,
        total_bytes: u64,
        threshold_bytes: u64,
    },
    EarlyFullIncrementalSize {
        runs: usize,
        incremental_bytes: u64,
        threshold_bytes: u64,
    },
    SizeAmplification {
        runs: usize,
        candidate_bytes: u64,
        earliest_bytes: u64,
        max_size_amp_pct: u64,
    },
    SizeRatio {
        walk: RatioWalk,
    },
    FileNum {
        sorted_runs: usize,
        trigger: usize,
        walk: RatioWalk,
    },
    ForceUpLevel0 {
        level0_runs: usize,
        gentle_interval: Option<usize>,
        walk: RatioWalk,
    },
    /// A forced full compaction of all runs.
    FullCompaction {
        runs: usize,
        files: usize,
    },
    /// A forced full compaction of a single max-level run: only files that need it.
    FullRewriteMaxLevel {
        files: usize,
        forced: bool,
        with_deletion_vector: usize,
        expired: usize,
    },
    AppendAuto {
        files: usize,
        bytes: u64,
        min_file_num: usize,
    },
    AppendFull {
        files: usize,
        stripped_large: usize,
    },
    CoordinatorPacked {
        files: usize,
        bytes: u64,
    },
    CoordinatorAged {
        files: usize,
        age: u32,
    },
    Idle(Idle),
}

impl Reason {
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
            Reason::Idle(idle) => idle.fmt(f),
        }
    }
}
