//! Invariants of the planner that must hold on any input (proptest).

use std::collections::BTreeSet;
use std::sync::Arc;

use paimon_compact::meta::{CompactionFile, Key, Level, Levels};
use paimon_compact::options::{CoreOptions, Flavor, TableKind};
use paimon_compact::plan::*;
use proptest::prelude::*;

fn file(name: String, level: u32, size: u64, min: i64, max: i64, seq: i64) -> Arc<CompactionFile> {
    Arc::new(CompactionFile::new(
        name,
        Level::new(level),
        size,
        Key::from_i64(min),
        Key::from_i64(max),
        seq,
        seq,
    ))
}

/// A flushed file: any key range, a fresh sequence number.
fn flush_strategy() -> impl Strategy<Value = (i64, i64, u64)> {
    (0i64..1000, 0i64..200, 1u64..5000).prop_map(|(min, len, size)| (min, min + len, size))
}

#[derive(Debug, Clone)]
struct Config {
    trigger: usize,
    size_ratio: u32,
    max_amp: u64,
    num_levels: Option<u32>,
    flavor: Flavor,
    force_up_level0: bool,
    compaction_file_size: u64,
}

fn config_strategy() -> impl Strategy<Value = Config> {
    (
        1usize..8,
        0u32..20,
        0u64..400,
        prop::option::of(2u32..8),
        any::<bool>(),
        any::<bool>(),
        1u64..4000,
    )
        .prop_map(
            |(trigger, size_ratio, max_amp, num_levels, cpp, force, cfs)| Config {
                trigger,
                size_ratio,
                max_amp,
                num_levels,
                flavor: if cpp { Flavor::Cpp } else { Flavor::Java },
                force_up_level0: force,
                compaction_file_size: cfs,
            },
        )
}

fn options(c: &Config) -> CoreOptions {
    let trigger = c.trigger.to_string();
    let ratio = c.size_ratio.to_string();
    let amp = c.max_amp.to_string();
    let levels = c.num_levels.map(|n| n.to_string());
    let mut pairs = vec![
        ("num-sorted-run.compaction-trigger", trigger.as_str()),
        ("compaction.size-ratio", ratio.as_str()),
        ("compaction.max-size-amplification-percent", amp.as_str()),
        (
            "compaction.force-up-level-0",
            if c.force_up_level0 { "true" } else { "false" },
        ),
    ];
    if let Some(l) = &levels {
        pairs.push(("num-levels", l.as_str()));
    }
    let mut o = CoreOptions::from_pairs(TableKind::PrimaryKey, c.flavor, pairs).unwrap();
    o.compaction_file_size = c.compaction_file_size;
    o
}

/// Runs the manager's decision through a stub rewriter (one output file per rewrite spanning
/// its inputs' keys) and applies it; returns the picked unit.
fn step(
    m: &mut MergeTreeCompactManager,
    full: bool,
    counter: &mut usize,
) -> Option<(CompactUnit, Vec<usize>)> {
    let runs_before: Vec<Vec<String>> = m
        .levels()
        .level_sorted_runs()
        .iter()
        .map(|r| r.files.iter().map(|f| f.file_name.clone()).collect())
        .collect();
    let d = m.trigger(full, &PlanContext::default()).unwrap();
    let unit = d.unit.clone()?;
    let (before, after) = d.task.stand_in_result(|i| {
        *counter += 1;
        format!("c{counter}-{i}")
    });
    // Every level >= 1 must stay a valid sorted run: `apply` validates and errors otherwise.
    m.apply(&before, &after)
        .expect("levels stay valid sorted runs after applying a plan");
    // Which runs (by index) contributed files to the unit.
    let names: BTreeSet<&str> = unit.files.iter().map(|f| f.file_name.as_str()).collect();
    let touched = runs_before
        .iter()
        .enumerate()
        .filter(|(_, r)| r.iter().any(|n| names.contains(n.as_str())))
        .map(|(i, _)| i)
        .collect();
    Some((unit, touched))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Flush, pick, apply, over and over: picks are prefixes, outputs go up, never to level 0,
    /// a unit of every run goes to the max level, and levels stay valid.
    #[test]
    fn merge_tree_invariants(config in config_strategy(), flushes in prop::collection::vec(flush_strategy(), 1..60), fulls in prop::collection::vec(any::<bool>(), 60)) {
        let o = options(&config);
        let mut m = MergeTreeCompactManager::new(&o, Vec::new()).unwrap();
        let mut counter = 0;
        for (i, (min, max, size)) in flushes.into_iter().enumerate() {
            m.add_new_file(file(format!("f{i}"), 0, size, min, max, i as i64 + 1_000_000)).unwrap();
            let runs_total = m.levels().level_sorted_runs().len();
            let max_level = m.levels().max_level();
            let full = fulls[i] && i % 7 == 6;
            if let Some((unit, touched)) = step(&mut m, full, &mut counter) {
                prop_assert!(!unit.output_level.is_zero(), "output level 0");
                for f in &unit.files {
                    prop_assert!(f.level <= unit.output_level, "output level {} below input level {}", unit.output_level, f.level);
                }
                if !full {
                    // A prefix of the runs.
                    prop_assert_eq!(&touched, &(0..touched.len()).collect::<Vec<_>>());
                }
                if touched.len() == runs_total && !unit.file_rewrite {
                    prop_assert_eq!(unit.output_level, max_level);
                }
            }
        }
    }

    /// The append picker's window is a contiguous slice of the sequence-ordered queue, and it
    /// holds exactly `compaction.min.file-num` files.
    #[test]
    fn append_window_is_contiguous(min_file_num in 1usize..8, target in 1u64..3000, sizes in prop::collection::vec(1u64..4000, 0..40)) {
        let mut o = CoreOptions::from_pairs(TableKind::Append, Flavor::Java, [("bucket", "2")]).unwrap();
        o.min_file_num = min_file_num;
        o.target_file_size = target;
        let files: Vec<_> = sizes.iter().enumerate().map(|(i, s)| file(format!("a{i:03}"), 0, *s, 0, 0, i as i64)).collect();
        let mut m = BucketedAppendCompactManager::new(&o, files.clone());
        let d = m.pick_auto();
        if !d.files.is_empty() {
            prop_assert_eq!(d.files.len(), min_file_num);
            let first = files.iter().position(|f| f.file_name == d.files[0].file_name).unwrap();
            let expected: Vec<_> = files[first..first + d.files.len()].iter().map(|f| &f.file_name).collect();
            let got: Vec<_> = d.files.iter().map(|f| &f.file_name).collect();
            prop_assert_eq!(got, expected);
        }
        // Nothing is lost: picked + released + still queued = everything.
        prop_assert_eq!(d.files.len() + d.released.len() + m.queue().len(), files.len());
    }

    /// The coordinator never emits a file twice, however files arrive and plans run.
    #[test]
    fn coordinator_emits_each_file_once(batches in prop::collection::vec(prop::collection::vec(1u64..300_000_000, 0..30), 1..15), min_file_num in 1usize..6) {
        let mut o = CoreOptions::from_pairs(TableKind::Append, Flavor::Java, [("bucket", "-1")]).unwrap();
        o.min_file_num = min_file_num;
        let mut c = AppendCompactCoordinator::new(&o).unwrap();
        let mut seen = BTreeSet::new();
        let mut n = 0;
        for batch in batches {
            let files: Vec<_> = batch.iter().map(|s| { n += 1; CoordinatorFile { file: file(format!("d{n}"), 0, *s, 0, 0, n), deletion_file: None } }).collect();
            c.notify(if n % 2 == 0 { "p=1" } else { "p=2" }, files);
            for task in c.plan() {
                prop_assert!(task.files.len() > 1, "a task of one file without deletion vectors");
                for f in task.files {
                    prop_assert!(seen.insert(f.file_name.clone()), "file {} emitted twice", f.file_name);
                }
            }
        }
    }
}

#[test]
fn levels_beyond_the_range_are_rejected_on_update() {
    let o = CoreOptions::from_pairs(TableKind::PrimaryKey, Flavor::Java, [("num-levels", "3")])
        .unwrap();
    let mut m = MergeTreeCompactManager::new(&o, vec![file("a".into(), 0, 10, 1, 5, 1)]).unwrap();
    let err = m
        .apply(&[], &[file("b".into(), 7, 10, 1, 5, 2)])
        .unwrap_err();
    assert!(
        matches!(err.kind, paimon_compact::ErrorKind::CorruptInput { .. }),
        "{err}"
    );
    assert_eq!(m.levels().number_of_sorted_runs(), 1);
}

#[test]
fn overlapping_files_claimed_as_one_run_are_rejected_on_restore() {
    let o = CoreOptions::defaults(TableKind::PrimaryKey);
    let err = MergeTreeCompactManager::new(
        &o,
        vec![
            file("a".into(), 2, 10, 1, 5, 1),
            file("b".into(), 2, 10, 5, 9, 2),
        ],
    )
    .err()
    .unwrap();
    assert!(
        matches!(err.kind, paimon_compact::ErrorKind::CorruptInput { file: Some(ref f) } if f == "b"),
        "{err}"
    );
}

#[test]
fn restored_levels_extend_the_configured_range() {
    let o = CoreOptions::from_pairs(TableKind::PrimaryKey, Flavor::Java, [("num-levels", "3")])
        .unwrap();
    let l = Levels::new(o.num_levels, vec![file("x".into(), 6, 1, 1, 1, 1)]).unwrap();
    assert_eq!(l.max_level(), Level::new(6));
}
