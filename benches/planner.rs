//! Planner speed: one decision on a bucket of 10 000 level-0 files (goal: under 1 ms).
//!
//! Run: `cargo bench --bench planner`. Figures are recorded in benches/README.md.
#![allow(
    missing_docs,
    reason = "criterion_group! generates the undocumented `benches` entry point"
)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use paimon_compact::meta::{CompactionFile, Key, Level};
use paimon_compact::options::{CoreOptions, Flavor, TableKind};
use paimon_compact::plan::{
    AppendCompactCoordinator, BucketedAppendCompactManager, CoordinatorFile,
    MergeTreeCompactManager, PlanContext,
};

const FILES: usize = 10_000;

/// Level-0 files as flushes make them: overlapping key ranges, rising sequence numbers.
fn level0_files(n: usize) -> Vec<Arc<CompactionFile>> {
    (0..n)
        .map(|i| {
            let min = ((i * 7919) % 100_000) as i64;
            Arc::new(CompactionFile::new(
                format!("data-{i:06}.parquet"),
                Level::ZERO,
                1_000_000 + (i as u64 % 97) * 10_000,
                Key::from_i64(min),
                Key::from_i64(min + 5_000),
                i as i64 * 100,
                i as i64 * 100 + 99,
            ))
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let ctx = PlanContext::default();
    let pk = CoreOptions::defaults(TableKind::PrimaryKey);

    // Size amplification fires: every run is picked and the whole task is planned.
    let mut manager = MergeTreeCompactManager::new(&pk, level0_files(FILES)).unwrap();
    c.bench_function("merge_tree_trigger_10k_level0_full_task", |b| {
        b.iter(|| black_box(manager.trigger(false, &ctx).unwrap()))
    });

    // The strategy alone over the run sizes (what the simulator calls per flush).
    let stats = manager.levels().run_stats();
    let mut strategy = manager.strategy().clone();
    c.bench_function("universal_pick_10k_runs", |b| {
        b.iter(|| black_box(strategy.pick(6, black_box(&stats), &ctx)))
    });

    // Nothing fires (sizes grow geometrically, so size ratio and size amp both hold back)
    // but the file-number rule does: the common steady state of a busy bucket.
    let lookup = CoreOptions::from_pairs(
        TableKind::PrimaryKey,
        Flavor::Java,
        [("compaction.max-size-amplification-percent", "1000000000")],
    )
    .unwrap();
    let mut busy = MergeTreeCompactManager::new(&lookup, level0_files(FILES)).unwrap();
    c.bench_function("merge_tree_trigger_10k_level0_file_num", |b| {
        b.iter(|| black_box(busy.trigger(false, &ctx).unwrap()))
    });

    let mut append =
        CoreOptions::from_pairs(TableKind::Append, Flavor::Java, [("bucket", "4")]).unwrap();
    append.min_file_num = FILES;
    c.bench_function("append_pick_10k_queue", |b| {
        b.iter_batched(
            || BucketedAppendCompactManager::new(&append, level0_files(FILES)),
            |mut m| black_box(m.pick_auto()),
            criterion::BatchSize::LargeInput,
        )
    });

    let unaware =
        CoreOptions::from_pairs(TableKind::Append, Flavor::Java, [("bucket", "-1")]).unwrap();
    c.bench_function("coordinator_plan_10k_files", |b| {
        b.iter_batched(
            || {
                let mut co = AppendCompactCoordinator::new(&unaware).unwrap();
                co.notify(
                    "p",
                    level0_files(FILES).into_iter().map(|file| CoordinatorFile {
                        file,
                        deletion_file: None,
                    }),
                );
                co
            },
            |mut co| black_box(co.plan()),
            criterion::BatchSize::LargeInput,
        )
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
