//! Property tests of the primary-key merge rewrite: random LSM buckets (level-0 files and
//! level runs split into several files, with updates, deletes and deletion vectors) are
//! compacted by `rewrite_merge_tree` and compared with a straightforward reference model —
//! group every record by key, sort by sequence, apply the engine — for every merge engine,
//! with and without drop-delete, deletion vectors and each changelog producer. The LSM
//! invariants of the result are checked too: key-disjoint output files in key order, one row
//! per key, exact metadata, and (deletion vectors) each key live in at most one file.
#![cfg(feature = "rewrite")]

use crate::merge_support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use proptest::prelude::*;

use merge_support::*;
use paimon_compact::meta::{CompactionFile, Level, SortedRun};
use paimon_compact::plan::interval_partition;
use paimon_compact::rewrite::merge::{
    rewrite_merge_tree, ChangelogMode, MergeTreeRewrite, RowKind,
};
use paimon_compact::rewrite::RewriteInput;
use paimon_compact::storage::MemoryStorage;

const MAX_LEVEL: u32 = 4;

/// SplitMix64: deterministic scenario generation from one proptest-chosen seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Plain,
    Full,
    Lookup { produce: bool, dv: bool },
}

/// A file of the generated bucket.
struct GenFile {
    name: String,
    level: u32,
    rows: Vec<Rec>,
    deleted: Vec<u64>,
}

fn gen_kind(rng: &mut Rng, cfg: &Config, level: u32, dv: bool) -> RowKind {
    let retract_ok = cfg.accepts_retracts()
        || (cfg.engine == Engine::PartialUpdate && cfg.remove_record_on_delete);
    let roll = rng.below(100);
    if roll < 50 {
        RowKind::Insert
    } else if roll < 80 || !retract_ok || (dv && level > 0) {
        RowKind::UpdateAfter
    } else if roll < 90 && (cfg.accepts_retracts() || !(cfg.engine == Engine::PartialUpdate)) {
        RowKind::UpdateBefore
    } else {
        RowKind::Delete
    }
}

/// A bucket: level runs (oldest data at the highest level), then level-0 files, newest last.
fn gen_bucket(rng: &mut Rng, cfg: &Config, dv: bool) -> Vec<GenFile> {
    let keys = 4 + rng.below(40) as i64;
    let mut seq = 0i64;
    let mut files = Vec::new();
    let row = |rng: &mut Rng, key: i64, level: u32, seq: &mut i64| -> Rec {
        *seq += 1;
        let kind = gen_kind(rng, cfg, level, dv);
        Rec {
            key,
            seq: *seq,
            kind,
            v: (!rng.chance(20)).then(|| format!("v{}", rng.below(5))),
            n: (!rng.chance(20)).then(|| rng.below(7) as i64 - 2),
            b: (!rng.chance(20)).then(|| rng.chance(50)),
        }
    };
    for level in (1..=MAX_LEVEL).rev() {
        if rng.chance(30) {
            continue;
        }
        let ks: Vec<i64> = (0..keys).filter(|_| rng.chance(50)).collect();
        if ks.is_empty() {
            continue;
        }
        let parts = 1 + rng.below(3) as usize;
        let chunk = ks.len().div_ceil(parts);
        for (i, c) in ks.chunks(chunk).enumerate() {
            let rows: Vec<Rec> = c.iter().map(|&k| row(rng, k, level, &mut seq)).collect();
            files.push(GenFile {
                name: format!("data-l{level}-{i}.parquet"),
                level,
                rows,
                deleted: Vec::new(),
            });
        }
    }
    let l0 = 1 + rng.below(4);
    for i in 0..l0 {
        let ks: Vec<i64> = (0..keys).filter(|_| rng.chance(40)).collect();
        if ks.is_empty() {
            continue;
        }
        let rows: Vec<Rec> = ks.iter().map(|&k| row(rng, k, 0, &mut seq)).collect();
        files.push(GenFile {
            name: format!("data-l0-{i}.parquet"),
            level: 0,
            rows,
            deleted: Vec::new(),
        });
    }
    for f in &mut files {
        if rng.chance(20) {
            f.deleted = (0..f.rows.len() as u64)
                .filter(|_| rng.chance(30))
                .collect();
        }
    }
    if dv {
        // A deletion-vector bucket keeps each key live in at most one file of levels >= 1:
        // older copies (higher levels) were marked when the newer one was written.
        let mut seen = BTreeSet::new();
        for level in 1..=MAX_LEVEL {
            for f in files.iter_mut().filter(|f| f.level == level) {
                for (pos, r) in f.rows.iter().enumerate() {
                    let pos = pos as u64;
                    if f.deleted.contains(&pos) {
                        continue;
                    }
                    if !seen.insert(r.key) {
                        f.deleted.push(pos);
                    }
                }
                f.deleted.sort_unstable();
            }
        }
    }
    files
}

#[derive(Debug)]
struct Case {
    cfg: Config,
    mode: Mode,
    out: u32,
    drop_delete: bool,
    seed: u64,
    rg: usize,
    target: u64,
}

fn config_strategy() -> impl Strategy<Value = Config> {
    // sf: no sequence field, `n` ascending, `n` descending
    (0..4u8, any::<bool>(), any::<bool>(), 0..3u8).prop_map(|(e, ign, rm, sf)| {
        let engine = match e {
            0 => Engine::Deduplicate,
            1 => Engine::FirstRow,
            2 => Engine::PartialUpdate,
            _ => Engine::Aggregation,
        };
        Config {
            engine,
            ignore_delete: ign,
            remove_record_on_delete: engine == Engine::PartialUpdate && rm && !ign,
            // first-row orders by sequence number only
            sequence_field: sf > 0 && engine != Engine::FirstRow,
            seq_descending: sf == 2 && engine != Engine::FirstRow,
        }
    })
}

fn case_strategy() -> impl Strategy<Value = Case> {
    (
        config_strategy(),
        0..5u8,
        1..=MAX_LEVEL,
        any::<bool>(),
        any::<u64>(),
        1..6usize,
        prop_oneof![Just(1u64 << 30), Just(2_000u64)],
    )
        .prop_map(|(cfg, m, out, drop, seed, rg, target)| {
            let mut mode = match m {
                0 | 1 => Mode::Plain,
                2 => Mode::Full,
                3 => Mode::Lookup {
                    produce: true,
                    dv: false,
                },
                _ => Mode::Lookup {
                    produce: seed % 2 == 0,
                    dv: true,
                },
            };
            if cfg.engine == Engine::FirstRow {
                // First-row tables always compact with the lookup rewriter; with deletion
                // vectors they are refused (tested in merge_errors).
                if mode == Mode::Plain {
                    mode = Mode::Lookup {
                        produce: false,
                        dv: false,
                    };
                }
                if let Mode::Lookup { dv: true, .. } = mode {
                    mode = Mode::Lookup {
                        produce: true,
                        dv: false,
                    };
                }
            }
            let (out, drop_delete) = match mode {
                Mode::Plain => (out, drop),
                Mode::Full => (MAX_LEVEL, true),
                Mode::Lookup { dv, .. } => (out.min(MAX_LEVEL - 1), drop || dv),
            };
            Case {
                cfg,
                mode,
                out,
                drop_delete,
                seed,
                rg,
                target,
            }
        })
}

/// The records of a file that survive its deletion vector, with their positions.
fn live(f: &GenFile) -> Vec<(u64, Rec)> {
    f.rows
        .iter()
        .enumerate()
        .filter(|(i, _)| !f.deleted.contains(&(*i as u64)))
        .map(|(i, r)| (i as u64, r.clone()))
        .collect()
}

struct Expected {
    data: Vec<Rec>,
    changelog: Vec<Rec>,
    marks: BTreeMap<String, Vec<u64>>,
}

fn with_kind(r: &Rec, kind: RowKind) -> Rec {
    Rec { kind, ..r.clone() }
}

fn expected(case: &Case, inputs: &[&GenFile], higher: &[&GenFile]) -> Expected {
    let cfg = &case.cfg;
    let mut level_of: BTreeMap<(i64, i64), u32> = BTreeMap::new();
    let mut all = Vec::new();
    for f in inputs {
        for (_, r) in live(f) {
            level_of.insert((r.key, r.seq), f.level);
            all.push(r);
        }
    }
    let groups = by_key(cfg, &all);
    let mut e = Expected {
        data: Vec::new(),
        changelog: Vec::new(),
        marks: BTreeMap::new(),
    };
    let keep = |r: &Rec| !(case.drop_delete && r.kind.is_retract());
    for (key, recs) in groups {
        let lvl = |r: &Rec| level_of[&(r.key, r.seq)];
        match case.mode {
            Mode::Plain => {
                if let Some(m) = plain_model(cfg, &recs) {
                    if keep(&m) {
                        e.data.push(m);
                    }
                }
            }
            Mode::Full => {
                let top = recs.iter().find(|r| lvl(r) == MAX_LEVEL).cloned();
                if recs.len() == 1 {
                    let r = &recs[0];
                    if lvl(r) != MAX_LEVEL && r.kind.is_add() {
                        e.changelog.push(with_kind(r, RowKind::Insert));
                    }
                    if keep(r) {
                        e.data.push(r.clone());
                    }
                    continue;
                }
                let merged = merge_model(cfg, &recs);
                match (&top, &merged) {
                    (None, Some(m)) if m.kind.is_add() => {
                        e.changelog.push(with_kind(m, RowKind::Insert))
                    }
                    (None, _) => {}
                    (Some(t), Some(m)) if m.kind.is_add() => {
                        e.changelog.push(with_kind(t, RowKind::UpdateBefore));
                        e.changelog.push(with_kind(m, RowKind::UpdateAfter));
                    }
                    (Some(t), _) => {
                        if t.kind.is_add() {
                            e.changelog.push(with_kind(t, RowKind::Delete))
                        }
                    }
                }
                if let Some(m) = merged.filter(|m| keep(m)) {
                    e.data.push(m);
                }
            }
            Mode::Lookup { produce, dv } => {
                // Java decides by the files' levels (`rewriteLookupChangelog`), so a level-0
                // file whose rows are all deleted still makes this a lookup rewrite.
                let any_l0 = inputs.iter().any(|f| f.level == 0);
                if !any_l0 {
                    // No level-0 input: the plain merge (compaction.md §10.4, rewrite_changelog).
                    if let Some(m) = plain_model(cfg, &recs) {
                        if keep(&m) {
                            e.data.push(m);
                        }
                    }
                    continue;
                }
                let has_l0 = recs.iter().any(|r| lvl(r) == 0);
                let mut high = recs
                    .iter()
                    .filter(|r| lvl(r) > 0)
                    .min_by_key(|r| lvl(r))
                    .cloned();
                let mut found = None;
                if high.is_none() && has_l0 {
                    let mut hs: Vec<&&GenFile> = higher.iter().collect();
                    hs.sort_by_key(|f| f.level);
                    'levels: for f in hs {
                        for (pos, r) in live(f) {
                            if r.key == key {
                                found = Some((f.name.clone(), pos, r));
                                break 'levels;
                            }
                        }
                    }
                }
                if cfg.engine == Engine::FirstRow {
                    if high.is_some() || !has_l0 {
                        if let Some(m) = plain_model(cfg, &recs).filter(|m| keep(m)) {
                            e.data.push(m);
                        }
                        continue;
                    }
                    if found.is_some() {
                        continue;
                    }
                    if let Some(m) = plain_model(cfg, &recs) {
                        if produce && m.kind.is_add() {
                            e.changelog.push(with_kind(&m, RowKind::Insert));
                        }
                        if keep(&m) {
                            e.data.push(m);
                        }
                    }
                    continue;
                }
                if let Some((name, pos, r)) = found {
                    if dv {
                        e.marks.entry(name).or_default().push(pos);
                    }
                    high = Some(r);
                }
                let mut cands: Vec<Rec> = recs.iter().filter(|r| lvl(r) == 0).cloned().collect();
                if let Some(h) = &high {
                    cands.push(h.clone());
                }
                cands.sort_by(|a, b| seq_order(cfg, a, b));
                let merged = merge_model(cfg, &cands);
                if has_l0 && produce {
                    match (high.as_ref().filter(|h| h.kind.is_add()), &merged) {
                        (None, Some(m)) if m.kind.is_add() => {
                            e.changelog.push(with_kind(m, RowKind::Insert))
                        }
                        (None, _) => {}
                        (Some(h), Some(m)) if m.kind.is_add() => {
                            e.changelog.push(with_kind(h, RowKind::UpdateBefore));
                            e.changelog.push(with_kind(m, RowKind::UpdateAfter));
                        }
                        (Some(h), _) => e.changelog.push(with_kind(h, RowKind::Delete)),
                    }
                }
                if let Some(m) = merged.filter(|m| keep(m)) {
                    e.data.push(m);
                }
            }
        }
    }
    for v in e.marks.values_mut() {
        v.sort_unstable();
    }
    e
}

fn run_case(case: &Case) -> Result<(), TestCaseError> {
    let mut rng = Rng(case.seed);
    let dv = matches!(case.mode, Mode::Lookup { dv: true, .. });
    let files = gen_bucket(&mut rng, &case.cfg, dv);
    let st = MemoryStorage::new();
    let mut metas: Vec<Arc<CompactionFile>> = Vec::new();
    let mut by_name: BTreeMap<String, RewriteInput> = BTreeMap::new();
    for f in &files {
        // Half the cases without an offset index: pages are then found by their headers.
        let mut inp = put_file_with(&st, &f.name, f.level, &f.rows, case.rg, case.seed % 2 == 0);
        if !f.deleted.is_empty() {
            inp.deleted_rows = Some(f.deleted.clone());
        }
        metas.push(inp.meta.clone());
        by_name.insert(f.name.clone(), inp);
    }
    let is_input = |f: &GenFile| f.level <= case.out;
    let inputs: Vec<&GenFile> = files.iter().filter(|f| is_input(f)).collect();
    let higher: Vec<&GenFile> = files.iter().filter(|f| !is_input(f)).collect();
    let input_metas: Vec<Arc<CompactionFile>> = metas
        .iter()
        .filter(|m| m.level.get() <= case.out)
        .cloned()
        .collect();
    let sections: Vec<Vec<Vec<RewriteInput>>> = interval_partition(&input_metas)
        .into_iter()
        .map(|sec| {
            sec.iter()
                .map(|run| {
                    run.files()
                        .iter()
                        .map(|m| by_name[&m.file_name].clone())
                        .collect()
                })
                .collect()
        })
        .collect();
    let mut extra: Vec<(&str, &str)> = vec![("target-file-size", "")];
    let target = case.target.to_string();
    extra[0].1 = &target;
    match case.mode {
        Mode::Plain => {}
        Mode::Full => extra.push(("changelog-producer", "full-compaction")),
        Mode::Lookup { produce, dv } => {
            if produce {
                extra.push(("changelog-producer", "lookup"));
            }
            if dv {
                extra.push(("deletion-vectors.enabled", "true"));
            }
            if !produce && !dv {
                extra.push(("force-lookup", "true"));
            }
        }
    }
    // A quarter of the cases order every row with the heap alone (no sorted chunks).
    if (case.seed >> 2) % 4 == 0 {
        extra.push(("paimon-compact.merge.sorted-chunks", "false"));
    }
    let options = case.cfg.options(&extra);
    let req = MergeTreeRewrite {
        sections,
        higher_levels: higher.iter().map(|f| by_name[&f.name].clone()).collect(),
        output_dir: DIR.into(),
        file_prefix: "data-out-".into(),
        changelog_prefix: "changelog-out-".into(),
        output_level: Level::new(case.out),
        max_level: Level::new(MAX_LEVEL),
        drop_delete: case.drop_delete,
        write_data: true,
        column_types: Vec::new(),
        creation_time_ms: 7,
        schema: None,
    };
    let before: BTreeSet<String> = files_in(&st).into_iter().collect();
    let result = rewrite_merge_tree(&st, &req, &options)
        .map_err(|e| TestCaseError::fail(format!("rewrite failed: {e}")))?;
    let want = expected(case, &inputs, &higher);

    // Data: rows in key order, one per key, exactly the model's.
    let mut got = Vec::new();
    for f in &result.outputs {
        got.extend(check_meta(&st, f, case.out));
    }
    prop_assert_eq!(&got, &want.data, "data of {:?} {:?}", case.cfg, case.mode);
    let keys: Vec<i64> = got.iter().map(|r| r.key).collect();
    prop_assert!(
        keys.windows(2).all(|w| w[0] < w[1]),
        "one row per key, in order"
    );
    if case.out > 0 {
        let run = SortedRun::from_unsorted(
            result
                .outputs
                .iter()
                .map(|f| Arc::new(f.meta.clone()))
                .collect(),
        );
        prop_assert!(run.is_ok(), "outputs overlap: {:?}", run.err());
    }
    if case.drop_delete {
        prop_assert!(got.iter().all(|r| r.kind.is_add()));
    }
    // Changelog.
    let mut cl = Vec::new();
    for f in &result.changelog {
        assert!(f.path.contains("changelog-out-"));
        cl.extend(read_rows(&st, &f.path));
    }
    prop_assert_eq!(
        &cl,
        &want.changelog,
        "changelog of {:?} {:?}",
        case.cfg,
        case.mode
    );
    // Each row group's `k` chunk, data and changelog, is its `_KEY_k` chunk written again.
    let row_groups: usize = result
        .outputs
        .iter()
        .chain(&result.changelog)
        .map(|f| {
            let bytes = bytes::Bytes::from(st.get(&f.path).unwrap().to_vec());
            parquet::file::metadata::ParquetMetaDataReader::new()
                .parse_and_finish(&bytes)
                .unwrap()
                .num_row_groups()
        })
        .sum();
    prop_assert_eq!(result.metrics.mirrored_key_chunks, row_groups as u64);
    // Deletion-vector marks, and the DV invariant: each key live in at most one file.
    prop_assert_eq!(&result.deletion_vector_marks, &want.marks);
    if dv {
        let mut seen: BTreeMap<i64, String> = BTreeMap::new();
        for f in &result.outputs {
            for r in read_rows(&st, &f.path) {
                prop_assert!(seen.insert(r.key, f.path.clone()).is_none());
            }
        }
        for f in &higher {
            let marks = want.marks.get(&f.name).cloned().unwrap_or_default();
            for (pos, r) in live(f) {
                if !marks.contains(&pos) {
                    let other = seen.insert(r.key, f.name.clone());
                    prop_assert!(
                        other.is_none(),
                        "key {} live in {:?} and {}",
                        r.key,
                        other,
                        f.name
                    );
                }
            }
        }
    }
    match case.mode {
        Mode::Full => prop_assert_eq!(result.changelog_mode, ChangelogMode::FullCompaction),
        Mode::Plain => prop_assert_eq!(result.changelog_mode, ChangelogMode::None),
        Mode::Lookup { .. } => {}
    }
    // Nothing but the outputs was added; inputs are untouched.
    let after: BTreeSet<String> = files_in(&st).into_iter().collect();
    let added: BTreeSet<String> = after.difference(&before).cloned().collect();
    let reported: BTreeSet<String> = result
        .outputs
        .iter()
        .chain(&result.changelog)
        .map(|f| f.path.clone())
        .collect();
    prop_assert_eq!(added, reported);
    prop_assert!(before.is_subset(&after));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn merge_matches_the_reference_model(case in case_strategy()) {
        run_case(&case)?;
    }
}

/// Large files merge exactly like small ones, deletion vectors included, whichever way they are
/// read: page by page with or without an offset index, or in push-decoder windows.
#[test]
fn large_files_merge_alike_with_every_reader() {
    for (offset_index, window) in [(true, None), (false, None), (true, Some("65536"))] {
        large_files_merge(offset_index, window, None);
    }
    // Page reads with and without read-ahead (a window smaller than a page too): the same rows,
    // fewer calls the larger the window, and no byte fetched twice (these files have pages of
    // a few dozen bytes, so exact reads also fetch 4 KiB for every header).
    for offset_index in [true, false] {
        let calls = |read_ahead| large_files_merge(offset_index, None, Some(read_ahead));
        let (exact, tiny, default, large) =
            (calls("0"), calls("1kb"), calls("256kb"), calls("4mb"));
        assert!(tiny.0 <= exact.0, "{tiny:?} {exact:?}");
        assert!(default.0 * 3 < exact.0, "{default:?} {exact:?}");
        assert!(large.0 < default.0, "{large:?} {default:?}");
        for (what, reads) in [("default", default), ("large", large)] {
            assert!(reads.1 <= exact.1, "{what}: {reads:?} {exact:?}");
            // Footers and page indexes are read too: a few percent over the files' size.
            assert!(reads.1 * 100 < reads.2 * 106, "{what}: {reads:?}");
        }
    }
}

/// Merges two large files and checks the result; returns the storage calls, the bytes read
/// and the inputs' size.
fn large_files_merge(
    offset_index: bool,
    window: Option<&str>,
    read_ahead: Option<&str>,
) -> (u64, u64, u64) {
    let cfg = Config {
        engine: Engine::Deduplicate,
        ignore_delete: false,
        remove_record_on_delete: false,
        sequence_field: false,
        seq_descending: false,
    };
    let st = MemoryStorage::new();
    let mk = |key: i64, seq: i64, kind: RowKind| Rec {
        key,
        seq,
        kind,
        v: Some(format!("v{}", seq % 17)),
        n: Some(seq),
        b: None,
    };
    let old: Vec<Rec> = (0..150_000)
        .map(|k| mk(k * 2, k, RowKind::Insert))
        .collect();
    let new: Vec<Rec> = (0..140_000)
        .map(|k| {
            let kind = if k % 10 == 0 {
                RowKind::Delete
            } else {
                RowKind::UpdateAfter
            };
            mk(k * 3, 1_000_000 + k, kind)
        })
        .collect();
    let mut a = put_file_with(&st, "data-old.parquet", 1, &old, 100_000, offset_index);
    let deleted: Vec<u64> = (0..150_000u64).filter(|p| p % 7 == 3).collect();
    a.deleted_rows = Some(deleted.clone());
    let b = put_file_with(&st, "data-new.parquet", 0, &new, 100_000, offset_index);
    let req = MergeTreeRewrite {
        sections: vec![vec![vec![b], vec![a]]],
        higher_levels: Vec::new(),
        output_dir: DIR.into(),
        file_prefix: "data-out-".into(),
        changelog_prefix: "changelog-out-".into(),
        output_level: Level::new(2),
        max_level: Level::new(MAX_LEVEL),
        drop_delete: true,
        write_data: true,
        column_types: Vec::new(),
        creation_time_ms: 0,
        schema: None,
    };
    let mut extra: Vec<(&str, &str)> = window
        .map(|w| vec![("paimon-compact.merge.read-window-rows", w)])
        .unwrap_or_default();
    if let Some(r) = read_ahead {
        extra.push(("paimon-compact.merge.read-ahead", r));
    }
    let r = rewrite_merge_tree(&st, &req, &cfg.options(&extra)).unwrap();
    let live_old: Vec<Rec> = old
        .iter()
        .enumerate()
        .filter(|(i, _)| !deleted.contains(&(*i as u64)))
        .map(|(_, r)| r.clone())
        .collect();
    let all: Vec<Rec> = live_old.into_iter().chain(new).collect();
    let want: Vec<Rec> = by_key(&cfg, &all)
        .values()
        .filter_map(|recs| plain_model(&cfg, recs))
        .filter(|r| r.kind.is_add())
        .collect();
    let mut got = Vec::new();
    for f in &r.outputs {
        got.extend(check_meta(&st, f, 2));
    }
    assert_eq!(got.len(), want.len());
    assert!(
        got == want,
        "merge ({offset_index}, {window:?}, {read_ahead:?}) differs from the model"
    );
    assert_eq!(r.metrics.deleted_rows, deleted.len() as u64);
    (
        r.metrics.storage_reads,
        r.metrics.storage_read_bytes,
        r.metrics.input_bytes,
    )
}
