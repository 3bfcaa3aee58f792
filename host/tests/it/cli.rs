//! The `paimon-compact` binary on real tables, on both engines: demo tables written, planned
//! (with the timeline the simulator replays), compacted, planned again; errors typed as JSON.

use std::path::Path;
use std::process::{Command, Output};

use paimon_compact::simulator::replay::TableReplay;

fn cli(engine: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_paimon-compact"))
        .arg("--engine")
        .arg(engine)
        .args(args)
        .output()
        .expect("run paimon-compact")
}

fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

/// Loads the component once (compiling it into the cache if no compiled artifact is there)
/// before a test starts a clock: on a cold machine the first `--engine wasm` command compiles
/// the component, which takes longer than the short lease TTLs these tests use.
fn warm_component() {
    static WARM: std::sync::Once = std::sync::Once::new();
    WARM.call_once(|| {
        json(&cli("wasm", &["info"]));
    });
}

fn engines() -> Vec<&'static str> {
    // The wasm engine needs the component (built by stage 05, embedded or found next to the
    // binary); the test fails rather than skips without it.
    vec!["native", "wasm"]
}

#[test]
fn demo_tables_plan_compact_and_replay_on_both_engines() {
    for engine in engines() {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("cli-{engine}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let d = dir.to_str().unwrap();
        let written = json(&cli(
            engine,
            &["demo", "--dir", d, "--no-compact", "--json"],
        ));
        assert_eq!(written["tables"].as_array().unwrap().len(), 3, "{engine}");
        let table = dir.join("demo.db/events");
        let t = table.to_str().unwrap();

        let plan = json(&cli(engine, &["plan", t, "--json"]));
        assert_eq!(plan["snapshot_id"], 6, "{engine}");
        assert!(plan["summary"]["buckets_with_work"].as_u64().unwrap() > 0);
        // The page loads the plan as it is and replays the table's snapshots.
        let replay =
            TableReplay::from_json(&plan.to_string()).expect("the simulator accepts the plan");
        assert_eq!(replay.snapshots.len(), 6, "{engine}");
        assert_eq!(
            replay.lanes().len(),
            plan["buckets"].as_array().unwrap().len()
        );

        let report = json(&cli(engine, &["compact", t, "--json"]));
        assert_eq!(report["snapshot_after"], 7, "{engine}: {report}");
        assert_eq!(
            report["totals"]["files_removed"],
            plan["summary"]["files_removed"]
        );
        let text = String::from_utf8(cli(engine, &["plan", t]).stdout).unwrap();
        assert!(text.contains("at snapshot 7"), "{engine}: {text}");
        let replay =
            TableReplay::from_json(&json(&cli(engine, &["plan", t, "--json"])).to_string())
                .unwrap();
        assert_eq!(replay.snapshots.last().unwrap().commit_kind, "COMPACT");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn errors_are_typed_json_with_exit_code_1() {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-err-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("not_a_table")).unwrap();
    for engine in engines() {
        let out = cli(
            engine,
            &["plan", dir.join("not_a_table").to_str().unwrap(), "--json"],
        );
        assert_eq!(out.status.code(), Some(1), "{engine}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["error"]["kind"], "corrupt-input", "{engine}: {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("not a Paimon table"),
            "{v}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A demo table in a fresh directory; returns the table's path.
fn demo_table(name: &str) -> std::path::PathBuf {
    demo_dir(name).join("demo.db/orders")
}

/// A fresh directory named after `name` holding the demo tables, written natively and not
/// compacted.
fn demo_dir(name: &str) -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    json(&cli(
        "native",
        &[
            "demo",
            "--dir",
            dir.to_str().unwrap(),
            "--no-compact",
            "--json",
        ],
    ));
    dir
}

fn leases(table: &Path) -> Vec<String> {
    std::fs::read_dir(table.join("compaction-lease"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default()
}

/// Every file under `dir` whose name is a writer's temporary file (`.<name>.<…>.tmp`).
#[cfg(unix)]
fn temp_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(temp_files(&p));
        } else if e.file_name().to_string_lossy().starts_with('.')
            && e.file_name().to_string_lossy().ends_with(".tmp")
        {
            out.push(p);
        }
    }
    out
}

/// A job that took its leases and died (here: `tasks` with a short TTL that nobody renews or
/// commits): a plain `compact` reports every leased partition and exits 3, never "nothing to
/// compact" with 0; `compact --wait` proceeds once the dead job's leases expire, within one
/// TTL and a poll; `--lease-ttl` below a second is refused.
#[test]
fn a_dead_jobs_leases_block_its_partitions_for_one_ttl_at_most() {
    warm_component();
    let table = demo_table("cli-dead-lease");
    let t = table.to_str().unwrap();
    let tasks = table.parent().unwrap().join("tasks");
    let planned = json(&cli(
        "native",
        &[
            "tasks",
            t,
            "--out",
            tasks.to_str().unwrap(),
            "--lease-ttl",
            "8s",
            "--json",
        ],
    ));
    let held = planned["leases"].as_u64().unwrap();
    assert!(held > 0, "{planned}");
    let blocked = cli("wasm", &["compact", t, "--json"]);
    assert_eq!(
        blocked.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&blocked.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&blocked.stdout).unwrap();
    assert_eq!(report["status"], "incomplete", "{report}");
    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(skipped.len() as u64, held, "{report}");
    assert!(skipped
        .iter()
        .all(|s| s["reason"].as_str().unwrap().contains("leased by")));
    let started = std::time::Instant::now();
    let waited = json(&cli("wasm", &["compact", t, "--wait", "--json"]));
    assert_eq!(waited["status"], "complete", "{waited}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(25),
        "waited {:?} for an 8 s lease",
        started.elapsed()
    );
    assert!(leases(&table).is_empty(), "the job released what it took");
    let refused = cli("native", &["compact", t, "--lease-ttl", "10ms"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("at least 1 s")
            || String::from_utf8_lossy(&refused.stderr).contains("from 1 s")
    );
}

/// SIGKILL a `compact` once it holds its leases, many times: each rerun with `--wait`
/// completes within the killed job's lease TTL (2 s here) plus a poll, and every table reads
/// as before the kill (the same snapshot, or the killed job's whole COMPACT commit).
#[cfg(unix)]
#[test]
fn a_killed_compact_frees_its_partitions_within_one_ttl() {
    warm_component();
    let mut outcomes: std::collections::BTreeMap<&str, usize> = Default::default();
    for round in 0..6 {
        let table = demo_table(&format!("cli-kill-{round}"));
        let t = table.to_str().unwrap().to_string();
        let before = json(&cli("native", &["plan", &t, "--json"]))["snapshot_id"].clone();
        let mut child = Command::new(env!("CARGO_BIN_EXE_paimon-compact"))
            .args([
                "--engine",
                "wasm",
                "compact",
                &t,
                "--lease-ttl",
                "2s",
                "--parallelism",
                "1",
                "--json",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Kill as soon as the job holds a lease (or note that it finished first).
        let killed = loop {
            if child.try_wait().unwrap().is_some() {
                break false;
            }
            if !leases(&table).is_empty() {
                // Spread the kill over the job: a few hundred microseconds per round.
                std::thread::sleep(std::time::Duration::from_micros(300 * round as u64));
                child.kill().unwrap();
                break true;
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        };
        let _ = child.wait();
        let after_kill = json(&cli("native", &["plan", &t, "--json"]))["snapshot_id"].clone();
        let outcome = match (killed, after_kill == before) {
            (false, _) => "finished before the kill",
            (true, true) => "killed before its commit",
            (true, false) => "killed after its commit",
        };
        *outcomes.entry(outcome).or_default() += 1;
        let started = std::time::Instant::now();
        let rerun = json(&cli("wasm", &["compact", &t, "--wait", "--json"]));
        let status = rerun["status"].as_str().unwrap().to_string();
        assert!(
            status == "complete" || status == "nothing-to-do",
            "round {round} ({outcome}): {rerun}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(12),
            "round {round}: the rerun waited {:?}",
            started.elapsed()
        );
        assert!(
            leases(&table).is_empty(),
            "round {round}: leases left: {:?}",
            leases(&table)
        );
        // Whatever the kill left is unreferenced: orphan removal finds it, the killed
        // writers' temporary files included.
        json(&cli(
            "native",
            &["remove-orphan-files", &t, "--older-than", "1ms", "--json"],
        ));
        assert!(
            temp_files(&table).is_empty(),
            "round {round}: {:?}",
            temp_files(&table)
        );
        let plan = json(&cli("native", &["plan", &t, "--json"]));
        assert!(
            plan["snapshot_id"].as_i64() >= before.as_i64(),
            "round {round}: {plan}"
        );
    }
    eprintln!("kills: {outcomes:?}");
    assert!(
        outcomes
            .get("killed before its commit")
            .copied()
            .unwrap_or(0)
            > 0,
        "{outcomes:?}"
    );
}

/// The component's limits on every command: the native engine refuses them (it has nothing to
/// enforce them with), a zero memory limit is refused, and a job stopped at its time limit
/// says so (exit 2) and leaves its partitions free: the next `compact` runs at once instead
/// of waiting out a lease.
#[test]
fn limits_are_refused_natively_and_a_job_stopped_at_its_limit_frees_its_partitions() {
    warm_component();
    let table = demo_table("cli-limits");
    let t = table.to_str().unwrap();
    let tasks = table.parent().unwrap().join("limit-tasks");
    let out = tasks.to_str().unwrap();
    let commands: [&[&str]; 6] = [
        &["compact", t],
        &["plan", t],
        &["tasks", t, "--out", out],
        &["expire-snapshots", t],
        &["remove-orphan-files", t],
        &[
            "compact-database",
            table.parent().unwrap().parent().unwrap().to_str().unwrap(),
        ],
    ];
    let refused = |engine: &str, flags: &[&str], command: &[&str], says: &str| {
        let args: Vec<&str> = flags.iter().chain(command).copied().collect();
        let o = cli(engine, &args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    };
    for command in commands {
        for flags in [&["--timeout", "10 min"][..], &["--max-memory", "1 gb"]] {
            refused(
                "native",
                flags,
                command,
                "bound the component (--engine wasm)",
            );
        }
        refused(
            "wasm",
            &["--max-memory", "0"],
            command,
            "must be greater than zero",
        );
    }
    assert!(!tasks.exists(), "refused commands wrote nothing");
    let stopped = cli("wasm", &["--timeout", "1ms", "compact", t, "--json"]);
    let stderr = String::from_utf8_lossy(&stopped.stderr);
    assert_eq!(stopped.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("exceeded its time limit of 0.001 s") && stderr.contains("--timeout"),
        "{stderr}"
    );
    assert!(leases(&table).is_empty(), "{:?}", leases(&table));
    let next = json(&cli("wasm", &["compact", t, "--json"]));
    assert_eq!(next["status"], "complete", "{next}");
}

/// `--wait` over several rounds reports every commit it made: the first round compacts the
/// partitions no one holds, the next one (after the other job's lease lapsed) the rest, and
/// the final report names both snapshots.
#[test]
fn wait_reports_the_commits_of_every_round() {
    warm_component();
    let dir = demo_dir("cli-wait-rounds");
    let table = dir.join("demo.db/events");
    let t = table.to_str().unwrap();
    let before = json(&cli("native", &["plan", t, "--json"]))["snapshot_id"]
        .as_i64()
        .unwrap();
    let tasks = dir.join("held");
    let held = json(&cli(
        "native",
        &[
            "tasks",
            t,
            "--out",
            tasks.to_str().unwrap(),
            "--partition",
            "dt=2025-01-01",
            // Long enough that the next command (a component start, a plan) begins while it
            // holds, on a loaded machine too.
            "--lease-ttl",
            "8s",
            "--json",
        ],
    ));
    assert_eq!(held["leases"], 1, "{held}");
    let report = json(&cli("wasm", &["compact", t, "--wait", "--json"]));
    assert_eq!(report["status"], "complete", "{report}");
    let (first, second) = (before + 1, before + 2);
    assert_eq!(report["snapshot_after"], second, "{report}");
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains(&format!("committed COMPACT snapshots {first}, {second}")),
        "{report}"
    );
    assert!(leases(&table).is_empty(), "{:?}", leases(&table));
}
