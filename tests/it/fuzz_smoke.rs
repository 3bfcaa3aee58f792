//! The fuzz targets' CI smoke run (`fuzz/README.md`): every target of
//! `paimon_compact::fuzz_targets` on its committed corpus and on a fixed, seeded set of
//! mutations of every corpus file, on stable, in seconds. A target without a corpus fails
//! instead of passing silently; an input that panics is written under the target directory
//! and named in the failure, ready to be committed to the target's corpus as a regression.
//! An input that runs past [`INPUT_TIME_LIMIT`], or a process grown past [`RSS_LIMIT_BYTES`],
//! ends the run the same way (a watchdog names the inputs running and exits): a hang or a
//! runaway allocation fails CI instead of stalling it.

use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use paimon_compact::fuzz_targets::{seeds, Target, TARGETS};

/// Mutated inputs run per target, spread over its corpus files.
const MUTATIONS_PER_TARGET: usize = 1500;

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target)
}

/// The target's committed corpus, in name order.
fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir(target))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).expect("read a corpus file"))
        })
        .collect()
}

/// xorshift64*: the mutations are the same in every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    /// A position in `len` bytes, half the time among the last 512 (where Parquet footers,
    /// Avro blocks' ends and JSON's closing brackets are).
    fn position(&mut self, len: usize) -> usize {
        if len > 512 && self.next() % 2 == 0 {
            len - 512 + self.below(512)
        } else {
            self.below(len)
        }
    }
}

/// One to four random edits of `seed`: a bit flipped, a byte or a 4-byte word set to a
/// boundary value, the end cut off, a slice repeated or removed.
fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut m = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        if m.is_empty() {
            m.push(rng.next() as u8);
            continue;
        }
        let at = rng.position(m.len());
        match rng.below(6) {
            0 => m[at] ^= 1 << rng.below(8),
            1 => m[at] = [0u8, 1, 0x7f, 0x80, 0xff][rng.below(5)],
            2 => {
                let words = [0i32, -1, 1, i32::MAX, i32::MIN, m.len() as i32];
                let w = words[rng.below(words.len())];
                let bytes = if rng.next() % 2 == 0 {
                    w.to_be_bytes()
                } else {
                    w.to_le_bytes()
                };
                for (i, b) in bytes.iter().enumerate() {
                    if let Some(x) = m.get_mut(at + i) {
                        *x = *b;
                    }
                }
            }
            3 => m.truncate(at),
            4 => {
                let end = (at + 1 + rng.below(64)).min(m.len());
                let slice = m[at..end].to_vec();
                let to = rng.below(m.len());
                m.splice(to..to, slice);
            }
            _ => {
                let end = (at + 1 + rng.below(64)).min(m.len());
                m.drain(at..end);
            }
        }
    }
    m
}

/// How long one input may run. libFuzzer's runs use 10 s on a debug-assertions build
/// (`fuzz/run.sh`); this is a release build sharing the cores with the other test binaries, so
/// the bound is wider: only a hang should reach it.
const INPUT_TIME_LIMIT: Duration = Duration::from_secs(60);
/// The process's resident memory the smoke run may reach (every target at once, each input
/// bounded by the targets' own limits); libFuzzer's runs use 2 GB per target.
const RSS_LIMIT_BYTES: u64 = 6 << 30;

/// The input each smoke thread runs now: target, label, bytes and start.
type Slot = Mutex<Option<(&'static str, String, Vec<u8>, Instant)>>;

/// Writes `input` where a failure names it; returns the path.
fn keep_failure(target: &str, label: &str, input: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-smoke-failures");
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{target}-{label}"));
    let _ = std::fs::write(&path, input);
    path
}

/// Runs `input`, announced in `slot` for the watchdog; on a panic, writes it where the
/// failure names it.
fn run_one(target: &Target, input: &[u8], label: &str, slot: &Slot) -> Option<String> {
    if let Ok(mut s) = slot.lock() {
        *s = Some((
            target.name,
            label.to_string(),
            input.to_vec(),
            Instant::now(),
        ));
    }
    let outcome = catch_unwind(AssertUnwindSafe(|| (target.run)(input)));
    if let Ok(mut s) = slot.lock() {
        *s = None;
    }
    let payload = outcome.err()?;
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    let path = keep_failure(target.name, label, input);
    Some(format!(
        "{} panicked on {label} ({}): {message}",
        target.name,
        path.display()
    ))
}

/// The process's resident memory, from `/proc/self/statm` (Linux; `None` elsewhere).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Watches the smoke threads' slots until `done`: an input past [`INPUT_TIME_LIMIT`], or the
/// process past [`RSS_LIMIT_BYTES`], is written out and named, and the process exits with a
/// failure (a thread stuck in a hang cannot be stopped any other way).
fn watchdog(slots: &[Slot], done: &AtomicBool) {
    while !done.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(250));
        let rss = resident_bytes().unwrap_or(0);
        let mut stuck = Vec::new();
        for slot in slots {
            let Ok(s) = slot.lock() else { continue };
            if let Some((target, label, input, started)) = s.as_ref() {
                if started.elapsed() > INPUT_TIME_LIMIT || rss > RSS_LIMIT_BYTES {
                    let path = keep_failure(target, label, input);
                    stuck.push(format!(
                        "{target} on {label} ({}), running for {:?}",
                        path.display(),
                        started.elapsed()
                    ));
                }
            }
        }
        if !stuck.is_empty() {
            // Straight to stderr: the test harness captures `eprintln!` and would drop it at
            // the exit.
            let _ = writeln!(
                std::io::stderr(),
                "fuzz smoke run stopped: {} (resident memory {} MiB of {} MiB allowed)\n  {}",
                if rss > RSS_LIMIT_BYTES {
                    "the process outgrew its memory bound"
                } else {
                    "an input ran past its time bound"
                },
                rss >> 20,
                RSS_LIMIT_BYTES >> 20,
                stuck.join("\n  ")
            );
            std::process::exit(101);
        }
    }
}

/// Every target's corpus and mutations; the failures, if any.
fn smoke(target: &Target, slot: &Slot) -> Vec<String> {
    let corpus = corpus(target.name);
    assert!(
        !corpus.is_empty(),
        "fuzz target {} has no corpus in {}",
        target.name,
        corpus_dir(target.name).display()
    );
    let mut failures = Vec::new();
    for (name, input) in &corpus {
        failures.extend(run_one(target, input, name, slot));
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ target.name.len() as u64);
    for i in 0..MUTATIONS_PER_TARGET {
        let (name, seed) = &corpus[i % corpus.len()];
        let input = mutate(seed, &mut rng);
        failures.extend(run_one(
            target,
            &input,
            &format!("{name}-mutation-{i}"),
            slot,
        ));
    }
    failures
}

#[test]
fn every_fuzz_target_survives_its_corpus_and_mutations_of_it() {
    let slots: Vec<Slot> = TARGETS.iter().map(|_| Mutex::new(None)).collect();
    let done = AtomicBool::new(false);
    let failures: Vec<String> = std::thread::scope(|s| {
        s.spawn(|| watchdog(&slots, &done));
        let handles: Vec<_> = TARGETS
            .iter()
            .zip(&slots)
            .map(|(t, slot)| s.spawn(move || smoke(t, slot)))
            .collect();
        let failures = handles
            .into_iter()
            .flat_map(|h| h.join().expect("a smoke thread"))
            .collect();
        done.store(true, Ordering::SeqCst);
        failures
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every target named in `fuzz/Cargo.toml` is one of the library's, and the other way round.
#[test]
fn the_libfuzzer_harness_has_a_binary_for_every_target() {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/Cargo.toml"))
            .unwrap();
    for t in TARGETS {
        assert!(
            manifest.contains(&format!("path = \"fuzz_targets/{}.rs\"", t.name)),
            "fuzz/Cargo.toml has no binary for {}",
            t.name
        );
    }
    assert_eq!(manifest.matches("[[bin]]").count(), TARGETS.len());
}

/// Writes the starting corpus (`paimon_compact::fuzz_targets::seeds`, plus the first cases of
/// the conformance vectors) into `fuzz/corpus/`; run by hand when the seeds change:
/// `cargo test --release --test it fuzz_smoke::write_fuzz_seeds -- --ignored`.
#[test]
#[ignore = "writes the committed corpus; run by hand"]
fn write_fuzz_seeds() {
    let mut seeds = seeds();
    let vectors: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/compaction-vectors.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut few = vectors.clone();
    if let Some(cases) = few.get_mut("cases").and_then(|c| c.as_array_mut()) {
        cases.truncate(3);
    }
    seeds.push((
        "plan_request",
        [vec![1u8], serde_json::to_vec(&few).unwrap()].concat(),
    ));
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    for (target, bytes) in seeds {
        let n = counts.entry(target).or_default();
        let dir = corpus_dir(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("seed-{n}")), bytes).unwrap();
        *n += 1;
    }
    for t in TARGETS {
        assert!(counts.contains_key(t.name), "no seed for {}", t.name);
    }
}

/// Runs one input through one target, for a backtrace of a failure the smoke run or libFuzzer
/// reported: `PAIMON_COMPACT_FUZZ_REPLAY=<target>=<file> RUST_BACKTRACE=1 cargo test --release
/// --test it fuzz_smoke::replay -- --ignored --nocapture`.
#[test]
#[ignore = "replays one input named by PAIMON_COMPACT_FUZZ_REPLAY"]
fn replay() {
    let spec = std::env::var("PAIMON_COMPACT_FUZZ_REPLAY").expect("PAIMON_COMPACT_FUZZ_REPLAY");
    let (name, file) = spec.split_once('=').expect("<target>=<file>");
    let target = TARGETS.iter().find(|t| t.name == name).expect("a target");
    (target.run)(&std::fs::read(file).expect("the input"));
}
