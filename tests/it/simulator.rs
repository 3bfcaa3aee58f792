//! The simulator: deterministic per seed, its decisions are exactly the planner's, stalls
//! appear when sorted runs exceed the stop trigger, scrubbing back shows what the run showed.

use std::sync::Arc;

use paimon_compact::meta::CompactionFile;
use paimon_compact::plan::{
    AppendCompactCoordinator, BucketedAppendCompactManager, CoordinatorFile,
    MergeTreeCompactManager,
};
use paimon_compact::simulator::{
    EventKind, KeyDistribution, PlannerCall, SimConfig, SimTable, Simulation, TableReplay,
};
use paimon_compact::ErrorKind;

fn run(config: SimConfig) -> Simulation {
    let mut sim = Simulation::new(config).expect("valid config");
    sim.run().expect("run");
    sim
}

fn pk(pairs: &[(&str, &str)]) -> SimConfig {
    let mut c = SimConfig::default();
    for (k, v) in pairs {
        c.options.insert(k.to_string(), v.to_string());
    }
    c
}

/// The configs the browser test also runs (same JSON), so both sides compare digests.
fn shared_configs() -> Vec<(String, SimConfig)> {
    let text = include_str!("../e2e/digest-configs.json");
    let list: Vec<serde_json::Value> = serde_json::from_str(text).unwrap();
    list.into_iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap().to_string(),
                serde_json::from_value(v["config"].clone()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn same_seed_same_run_other_seed_other_run() {
    for (name, config) in shared_configs() {
        let a = run(config.clone());
        let b = run(config.clone());
        assert_eq!(a.digest(), b.digest(), "{name}");
        assert_eq!(a.events, b.events, "{name}");
        assert_eq!(a.series.write_amp, b.series.write_amp, "{name}");
        assert!(!a.decisions.is_empty(), "{name}: no decision at all");
        let c = run(SimConfig {
            seed: config.seed + 1,
            ..config
        });
        assert_ne!(a.digest(), c.digest(), "{name}: the seed changes nothing");
    }
}

/// Writes the native digests where the browser test (tests/e2e) reads them.
#[test]
fn digests_for_the_browser_test() {
    let digests: serde_json::Map<String, serde_json::Value> = shared_configs()
        .into_iter()
        .map(|(name, config)| (name, run(config).digest().into()))
        .collect();
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("sim-digests.json");
    std::fs::write(&path, serde_json::to_string_pretty(&digests).unwrap()).unwrap();
}

/// Replays the recorded planner calls through fresh planners and checks every answer.
fn replay_trace(sim: &Simulation) -> usize {
    let options = sim.env.config.core_options().unwrap();
    let lanes = sim.env.lanes.len();
    let mut mt: Vec<MergeTreeCompactManager> = (0..lanes)
        .map(|_| MergeTreeCompactManager::new(&options, Vec::new()).unwrap())
        .collect();
    let mut ap: Vec<BucketedAppendCompactManager> = (0..lanes)
        .map(|_| BucketedAppendCompactManager::new(&options, Vec::new()))
        .collect();
    let mut coord = (sim.env.config.table == SimTable::AppendUnaware)
        .then(|| AppendCompactCoordinator::new(&options).unwrap());
    let mut picks = Vec::new();
    let arc = |f: &CompactionFile| Arc::new(f.clone());
    for call in &sim.trace {
        match call {
            PlannerCall::Add { lane, file } => match sim.env.config.table {
                SimTable::PrimaryKey => mt[*lane as usize].add_new_file(arc(file)).unwrap(),
                _ => ap[*lane as usize].add_new_file(arc(file)),
            },
            PlannerCall::Trigger {
                lane,
                full,
                ctx,
                decision,
            } => {
                let m = &mut mt[*lane as usize];
                let mine = m.trigger(*full, ctx).unwrap();
                assert_eq!(&mine, decision.as_ref(), "lane {lane} at {ctx:?}");
                if mine.unit.is_some() {
                    m.set_task_running(true);
                    picks.push(mine.reason);
                }
            }
            PlannerCall::AppendPick {
                lane,
                full,
                decision,
            } => {
                let a = &mut ap[*lane as usize];
                let mine = if *full {
                    a.trigger_full().unwrap()
                } else {
                    a.pick_auto()
                };
                assert_eq!(&mine, decision);
                if !mine.files.is_empty() {
                    a.set_task_running(true);
                    picks.push(mine.reason);
                }
            }
            PlannerCall::Apply {
                lane,
                before,
                after,
            } => {
                let before: Vec<_> = before.iter().map(arc).collect();
                let after: Vec<_> = after.iter().map(arc).collect();
                match sim.env.config.table {
                    SimTable::PrimaryKey => {
                        let m = &mut mt[*lane as usize];
                        m.apply(&before, &after).unwrap();
                        m.set_task_running(false);
                    }
                    SimTable::AppendBucketed => {
                        let a = &mut ap[*lane as usize];
                        a.set_task_running(false);
                        a.on_result(&after);
                    }
                    SimTable::AppendUnaware => {}
                }
            }
            PlannerCall::CoordinatorNotify { files } => {
                let files = files.iter().map(|f| CoordinatorFile {
                    file: arc(f),
                    deletion_file: None,
                });
                coord.as_mut().unwrap().notify("", files);
            }
            PlannerCall::CoordinatorPlan { tasks } => {
                let mine = coord.as_mut().unwrap().plan();
                let names: Vec<Vec<String>> = mine
                    .iter()
                    .map(|t| t.files.iter().map(|f| f.file_name.clone()).collect())
                    .collect();
                assert_eq!(&names, tasks);
                picks.extend(mine.into_iter().map(|t| t.reason));
            }
        }
    }
    // What the timeline (and so the page) shows is exactly the planner's picks, in order.
    let shown: Vec<_> = sim
        .decisions
        .iter()
        .filter(|d| !d.advice)
        .map(|d| d.reason.clone())
        .collect();
    assert_eq!(shown, picks);
    picks.len()
}

#[test]
fn simulated_decisions_equal_the_planners() {
    let mut configs = shared_configs();
    configs.push((
        "dv radical".into(),
        pk(&[("deletion-vectors.enabled", "true")]),
    ));
    configs.push((
        "full-compaction changelog".into(),
        SimConfig {
            workload: paimon_compact::simulator::Workload {
                commit_interval_s: 30.0,
                ..Default::default()
            },
            ..pk(&[("changelog-producer", "full-compaction")])
        },
    ));
    configs.push((
        "size thresholds".into(),
        pk(&[
            ("compaction.total-size-threshold", "600 mb"),
            ("compaction.incremental-size-threshold", "400 mb"),
        ]),
    ));
    configs.push((
        "first-row, force lookup".into(),
        pk(&[("merge-engine", "first-row"), ("lookup-wait", "false")]),
    ));
    for (name, mut config) in configs {
        config.record_trace = true;
        let sim = run(config);
        let picks = replay_trace(&sim);
        assert!(picks > 3, "{name}: only {picks} picks");
    }
}

#[test]
fn stalls_appear_when_runs_exceed_the_stop_trigger() {
    // Compaction far slower than writes: runs pile up past the stop trigger and flushes wait.
    let mut slow = pk(&[("num-sorted-run.stop-trigger", "6")]);
    slow.cost.rewrite_mb_per_s = 4.0;
    slow.flushes = 150;
    let mut sim = run(slow);
    let stalls: Vec<usize> = sim
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == EventKind::Stall)
        .map(|(i, _)| i)
        .collect();
    assert!(stalls.len() > 5, "{} stalls", stalls.len());
    for &i in &stalls {
        let v = sim.view(i as u64 + 1).unwrap();
        let lane = &v.lanes[0];
        assert!(
            lane.sorted_runs > 6,
            "stalled with {} runs",
            lane.sorted_runs
        );
        assert!(lane.stalled.is_some());
        assert!(lane.task.is_some(), "a stall waits for a running task");
    }
    let end = sim.view(sim.len()).unwrap();
    assert!(end.metrics.stall_ms > 0);

    // Fast compaction: same workload, no stall.
    let mut fast = pk(&[("num-sorted-run.stop-trigger", "6")]);
    fast.cost.rewrite_mb_per_s = 2000.0;
    fast.flushes = 150;
    let sim = run(fast);
    assert!(sim.events.iter().all(|e| e.kind != EventKind::Stall));
    let max_runs = *sim.series.runs.iter().max().unwrap();
    assert!(max_runs <= 7, "{max_runs}");
}

#[test]
fn scrubbing_back_shows_what_the_run_showed() {
    let mut config = pk(&[]);
    config.flushes = 3000;
    let mut sim = run(config.clone());
    let n = sim.len();
    let mut fresh = Simulation::new(config).unwrap();
    for p in [n / 2, 3, n - 1, 1000, 1001, 0, n] {
        let back = serde_json::to_value(sim.view(p).unwrap()).unwrap();
        fresh = Simulation::new(fresh.env.config.clone()).unwrap();
        fresh.advance(p).unwrap();
        let mut want = serde_json::to_value(fresh.view(p).unwrap()).unwrap();
        // `events` counts what was computed, which differs by construction.
        want["events"] = back["events"].clone();
        want["finished"] = back["finished"].clone();
        assert_eq!(back, want, "position {p}");
    }
}

#[test]
fn sequential_keys_upgrade_instead_of_rewriting() {
    let mut seq = pk(&[]);
    seq.workload.distribution = KeyDistribution::Sequential;
    let seq = run(seq);
    let uni = run(pk(&[]));
    let ups = |s: &Simulation| s.decisions.iter().map(|d| d.upgrades).sum::<u32>();
    let rws = |s: &Simulation| s.decisions.iter().map(|d| d.rewrites).sum::<u32>();
    assert!(
        ups(&seq) > rws(&seq),
        "sequential: {} upgrades, {} rewrites",
        ups(&seq),
        rws(&seq)
    );
    assert_eq!(ups(&uni), 0);
    let wa = |s: &Simulation| *s.series.write_amp.last().unwrap();
    assert!(wa(&seq) < wa(&uni), "{} vs {}", wa(&seq), wa(&uni));
}

#[test]
fn write_only_never_compacts() {
    let mut sim = run(pk(&[("write-only", "true")]));
    assert!(sim.decisions.is_empty());
    let v = sim.view(sim.len()).unwrap();
    assert!(
        v.lanes[0].status.contains("write-only"),
        "{}",
        v.lanes[0].status
    );
    assert_eq!(v.lanes[0].sorted_runs as u64, v.metrics.flushes);
    assert!(v.lanes[0].stalled.is_none());
}

#[test]
fn bad_options_are_typed_errors() {
    let e = Simulation::new(pk(&[("num-sorted-run.compaction-trigger", "zero")]))
        .err()
        .unwrap();
    assert!(
        matches!(e.kind, ErrorKind::InvalidOption { ref key, .. } if key == "num-sorted-run.compaction-trigger"),
        "{e}"
    );
    let mut c = pk(&[]);
    c.workload.update_ratio = 0.8;
    c.workload.delete_ratio = 0.5;
    assert!(Simulation::new(c).is_err());
}

#[test]
fn replays_a_table_then_the_planner_continues() {
    let file = |name: &str, level: u32, size_mb: u64, min: i64, max: i64, seq: i64| {
        serde_json::json!({
            "file_name": name, "file_size": size_mb << 20, "row_count": (size_mb << 20) / 128,
            "min_key": hex(min), "max_key": hex(max),
            "min_sequence_number": seq, "max_sequence_number": seq + 10, "level": level,
            "delete_row_count": 0, "creation_time_ms": 1_767_225_600_000i64 + seq,
        })
    };
    let doc = serde_json::json!({
        "format": "paimon-compact-table", "version": 1, "table": "db.t", "table_kind": "primary-key",
        "options": { "num-sorted-run.compaction-trigger": "3" },
        "snapshots": [
            { "id": 1, "commit_kind": "APPEND", "time_ms": 1_767_225_600_000i64,
              "changes": [ { "bucket": 0, "added": [ file("a", 0, 40, 0, 1_000_000, 1) ] } ] },
            { "id": 2, "commit_kind": "APPEND", "time_ms": 1_767_225_660_000i64,
              "changes": [ { "bucket": 0, "added": [ file("b", 0, 40, 0, 1_000_000, 20) ] },
                           { "bucket": 1, "added": [ file("c", 0, 10, 5, 900, 1) ] } ] },
            { "id": 3, "commit_kind": "COMPACT", "time_ms": 1_767_225_720_000i64,
              "changes": [ { "bucket": 0, "added": [ file("ab", 2, 70, 0, 1_000_000, 1) ], "deleted": ["a", "b"] } ] },
            { "id": 4, "commit_kind": "APPEND", "time_ms": 1_767_225_780_000i64,
              "changes": [ { "bucket": 0, "added": [ file("d", 0, 40, 0, 1_000_000, 40), file("e", 0, 40, 0, 1_000_000, 60) ] } ] }
        ]
    });
    let replay = TableReplay::from_json(&doc.to_string()).unwrap();
    let mut config = SimConfig {
        replay: Some(replay),
        flushes: 40,
        ..SimConfig::default()
    };
    config.workload.key_space = 2_000_000;
    let mut sim = run(config);
    assert_eq!(sim.env.lanes, vec!["bucket 0", "bucket 1"]);
    let kinds: Vec<_> = sim.events.iter().take(4).map(|e| e.kind).collect();
    assert_eq!(kinds, vec![EventKind::Snapshot; 4]);
    let after3 = sim.view(3).unwrap();
    let names: Vec<_> = after3.lanes[0]
        .runs
        .iter()
        .flat_map(|r| r.files.iter().map(|f| f.name.clone()))
        .collect();
    assert_eq!(names, vec!["ab"]);
    let after4 = sim.view(4).unwrap();
    assert_eq!(after4.lanes[0].sorted_runs, 3);
    // The clock starts at the first replayed snapshot: three minutes later at the fourth.
    assert_eq!(sim.view(1).unwrap().elapsed_s, 0.0);
    assert_eq!(after4.elapsed_s, 180.0);
    // Three runs reach the trigger: the planner's advice is recorded, not executed.
    let advice: Vec<_> = sim.decisions.iter().filter(|d| d.advice).collect();
    assert_eq!(advice.len(), 1, "{advice:?}");
    assert!(
        advice[0].text().starts_with("the planner would pick:"),
        "{}",
        advice[0].text()
    );
    // Then writers and the planner take over from the replayed files.
    assert!(sim.decisions.iter().any(|d| !d.advice));
    assert!(sim
        .events
        .iter()
        .skip(4)
        .any(|e| e.kind == EventKind::Flush));

    // The input of `paimon-compact plan` replays as one snapshot.
    let req =
        serde_json::json!({ "table_kind": "primary-key", "files": [ file("x", 0, 5, 1, 9, 1) ] });
    let r = TableReplay::from_json(&req.to_string()).unwrap();
    assert_eq!(r.snapshots.len(), 1);
    assert!(TableReplay::from_json("{\"nothing\": 1}").is_err());
}

fn hex(v: i64) -> String {
    paimon_compact::meta::Key::from_i64(v)
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
