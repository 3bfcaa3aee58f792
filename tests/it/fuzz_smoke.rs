//! The fuzz targets' CI smoke run (`fuzz/README.md`): every target of
//! `paimon_compact::fuzz_targets` on its committed corpus and on a fixed, seeded set of
//! mutations of every corpus file, on stable, in seconds. A target without a corpus fails
//! instead of passing silently; an input that panics is written under the target directory
//! and named in the failure, ready to be committed to the target's corpus as a regression.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

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

/// Runs `input`; on a panic, writes it where the failure names it.
fn run_one(target: &Target, input: &[u8], label: &str) -> Option<String> {
    let outcome = catch_unwind(AssertUnwindSafe(|| (target.run)(input)));
    let payload = outcome.err()?;
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-smoke-failures");
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{}-{label}", target.name));
    let _ = std::fs::write(&path, input);
    Some(format!(
        "{} panicked on {label} ({}): {message}",
        target.name,
        path.display()
    ))
}

/// Every target's corpus and mutations; the failures, if any.
fn smoke(target: &Target) -> Vec<String> {
    let corpus = corpus(target.name);
    assert!(
        !corpus.is_empty(),
        "fuzz target {} has no corpus in {}",
        target.name,
        corpus_dir(target.name).display()
    );
    let mut failures = Vec::new();
    for (name, input) in &corpus {
        failures.extend(run_one(target, input, name));
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ target.name.len() as u64);
    for i in 0..MUTATIONS_PER_TARGET {
        let (name, seed) = &corpus[i % corpus.len()];
        let input = mutate(seed, &mut rng);
        failures.extend(run_one(target, &input, &format!("{name}-mutation-{i}")));
    }
    failures
}

#[test]
fn every_fuzz_target_survives_its_corpus_and_mutations_of_it() {
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = TARGETS.iter().map(|t| s.spawn(|| smoke(t))).collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a smoke thread"))
            .collect()
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
