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
