//! Planner state that Paimon keeps in the memory of its long-running compaction job, kept
//! between runs of a one-shot job in a small file of ours per partition
//! (`compaction-state/<partition key>.json`, beside `compaction-lease/`).
//!
//! Two pieces of state would otherwise restart with every run (`docs/dedicated-job.md`, "State
//! across runs"):
//! * the gentle lookup counter (`lookup-compact = gentle`): checks of a bucket since level 0 was
//!   last forced up; each job run is one check;
//! * the unaware-bucket coordinator's partition age: plans without a packed task since new
//!   files last arrived. A streaming coordinator resets it when a scan brings new files; a run
//!   restores it only when the partition's candidate files are exactly those it was computed
//!   over (a fingerprint of their names), else it starts at zero as the reset would.
//!
//! Early full compaction's clock is not kept here: it is derived from the table (the newest
//! file on the highest level), as Paimon's writers derive it when they restart.
//!
//! The file is advisory. A missing or unreadable one reads as fresh state (never an error: a
//! job must not fail on its own bookkeeping), it is written only after the job's commit, and a
//! lost write only costs the state of one run.

use std::collections::BTreeMap;

use super::path::TablePaths;
use crate::error::Result;
use crate::storage::Storage;

/// The directory of the state files, under the table root.
pub const STATE_DIR: &str = "compaction-state";

/// The state of one partition.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PartitionState {
    /// Always 1.
    #[serde(default)]
    pub version: u32,
    /// Gentle lookup counters by bucket.
    #[serde(default)]
    pub gentle_counters: BTreeMap<i32, usize>,
    /// The coordinator's age of the partition, with the fingerprint of the files it counted.
    #[serde(default)]
    pub coordinator: Option<CoordinatorAge>,
}

/// The coordinator's memory of one partition.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CoordinatorAge {
    /// Plans in a row without a packed task since new files last arrived in the partition
    /// (`compaction.md` §14.1).
    pub age: u32,
    /// [`fingerprint`] of the candidate files' names.
    pub files: String,
}

/// The state file of a partition (by its lease key).
pub fn state_path(paths: &TablePaths, partition_key: &str) -> String {
    format!("{}/{STATE_DIR}/{partition_key}.json", paths.root())
}

/// Reads a partition's state; anything missing or unreadable is fresh state.
pub fn load(storage: &dyn Storage, paths: &TablePaths, partition_key: &str) -> PartitionState {
    storage
        .read_all(&state_path(paths, partition_key))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<PartitionState>(&bytes).ok())
        .filter(|s| s.version == 1)
        .unwrap_or_default()
}

/// Writes a partition's state (replacing it).
pub fn save(
    storage: &dyn Storage,
    paths: &TablePaths,
    partition_key: &str,
    state: &PartitionState,
) -> Result<()> {
    let mut state = state.clone();
    state.version = 1;
    let bytes = serde_json::to_vec(&state).unwrap_or_default();
    storage.write_all(&state_path(paths, partition_key), &bytes)?;
    Ok(())
}

/// A stable fingerprint of a set of file names (FNV-1a over the sorted names), so that a run
/// can tell whether a partition received new files since the last one.
pub fn fingerprint<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut sorted: Vec<&str> = names.into_iter().collect();
    sorted.sort_unstable();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for n in sorted {
        for b in n.bytes().chain(std::iter::once(b'\n')) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStorage;

    #[test]
    fn state_round_trips_and_garbage_reads_as_fresh() {
        let st = MemoryStorage::new();
        let paths = TablePaths::new("t");
        assert_eq!(load(&st, &paths, "00"), PartitionState::default());
        let s = PartitionState {
            version: 1,
            gentle_counters: [(3, 7)].into(),
            coordinator: Some(CoordinatorAge {
                age: 4,
                files: fingerprint(["b", "a"]),
            }),
        };
        save(&st, &paths, "00", &s).unwrap();
        assert_eq!(load(&st, &paths, "00"), s);
        st.write_all(&state_path(&paths, "00"), b"{not json")
            .unwrap();
        assert_eq!(load(&st, &paths, "00"), PartitionState::default());
        assert_eq!(fingerprint(["a", "b"]), fingerprint(["b", "a"]));
        assert_ne!(fingerprint(["a", "b"]), fingerprint(["ab"]));
    }
}
