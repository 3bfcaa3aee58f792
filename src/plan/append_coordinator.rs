//! The unaware-bucket (`bucket = -1`) append compaction coordinator (compaction.md §14).
//!
//! Writers of such tables never compact; a coordinator collects small files per partition and
//! packs them into tasks of about two target files each (counting an open-file cost per file, so
//! many tiny files also make a task). Files that never fill a bin age: after
//! [`COMPACT_AGE`] fruitless plans they are compacted together anyway, and a partition that has
//! waited [`REMOVE_AGE`] plans is forgotten until the next scan brings it back.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{NotCompactable, Reason};
use crate::error::{Error, Result};
use crate::meta::CompactionFile;
use crate::options::{CoreOptions, Flavor, TableKind};

/// Plans without a packed task after which a partition's files are compacted together.
pub const COMPACT_AGE: u32 = 5;
/// Plans after which an idle partition is dropped from memory.
pub const REMOVE_AGE: u32 = 10;

/// A data file's deletion vector, as the coordinator sees it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeletionFileRef {
    /// The DV index file holding the vector; files sharing one are compacted together.
    pub index_file: String,
    /// Deleted rows, when known.
    pub cardinality: Option<u64>,
}

/// A candidate file of an unaware-bucket table.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CoordinatorFile {
    /// The data file's metadata (size, row count and name are what the coordinator reads).
    pub file: Arc<CompactionFile>,
    /// Its deletion vector; `None` when it has none (or the table has no deletion vectors).
    pub deletion_file: Option<DeletionFileRef>,
}

/// One compaction task: files of one partition rewritten together (committed as bucket 0).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AppendCompactTask {
    /// The partition key the files were notified under ([`AppendCompactCoordinator::notify`]);
    /// opaque to the coordinator.
    pub partition: String,
    /// Files to rewrite together: in packing order for a packed bin (smallest first, or by
    /// deletion-vector index group), by name for an aged task. Their deletion vectors, if any,
    /// are applied and dropped.
    pub files: Vec<Arc<CompactionFile>>,
    /// [`Reason::CoordinatorPacked`] or [`Reason::CoordinatorAged`].
    pub reason: Reason,
}

#[derive(Clone, Debug, Default)]
struct SubCoordinator {
    to_compact: BTreeMap<String, CoordinatorFile>,
    age: u32,
}

/// The coordinator's settings and its per-partition state.
#[derive(Clone, Debug)]
pub struct AppendCompactCoordinator {
    target_file_size: u64,
    compaction_file_size: u64,
    open_file_cost: u64,
    min_file_num: usize,
    dv_enabled: bool,
    delete_ratio_threshold: f64,
    flavor: Flavor,
    partitions: BTreeMap<String, SubCoordinator>,
}

impl AppendCompactCoordinator {
    /// Only append tables with `bucket = -1`; the C++ flavor also refuses deletion vectors.
    pub fn new(options: &CoreOptions) -> Result<Self> {
        if options.table_kind != TableKind::Append || options.bucket != -1 {
            return Err(Error::not_compactable(
                NotCompactable::CoordinatorNeedsUnawareAppend,
            ));
        }
        if options.flavor == Flavor::Cpp && options.deletion_vectors_enabled {
            return Err(Error::unsupported(
                "the C++ unaware-bucket coordinator does not compact tables with deletion vectors",
            ));
        }
        Ok(AppendCompactCoordinator {
            target_file_size: options.target_file_size,
            compaction_file_size: options.compaction_file_size,
            open_file_cost: options.open_file_cost,
            min_file_num: options.min_file_num,
            dv_enabled: options.deletion_vectors_enabled,
            delete_ratio_threshold: options.delete_ratio_threshold,
            flavor: options.flavor,
            partitions: BTreeMap::new(),
        })
    }

    /// Small files, and (with deletion vectors) files with too many deleted rows.
    pub fn should_compact(&self, f: &CoordinatorFile) -> bool {
        if f.file.file_size < self.compaction_file_size {
            return true;
        }
        match (&f.deletion_file, self.dv_enabled) {
            (Some(dv), true) => dv
                .cardinality
                .is_none_or(|c| c as f64 > f.file.row_count as f64 * self.delete_ratio_threshold),
            _ => false,
        }
    }

    /// New files of a partition (from a scan). Resets the partition's age, even if no file
    /// passes the filter.
    pub fn notify(&mut self, partition: &str, files: impl IntoIterator<Item = CoordinatorFile>) {
        let keep: Vec<CoordinatorFile> = files
            .into_iter()
            .filter(|f| self.should_compact(f))
            .collect();
        let sub = self.partitions.entry(partition.to_string()).or_default();
        sub.age = 0;
        for f in keep {
            sub.to_compact.insert(f.file.file_name.clone(), f);
        }
    }

    /// Plans tasks for every partition, then forgets partitions that are empty or too old.
    pub fn plan(&mut self) -> Vec<AppendCompactTask> {
        let mut tasks = Vec::new();
        let params = Packer {
            two_targets: self.target_file_size.saturating_mul(2),
            open_file_cost: self.open_file_cost,
            min_file_num: self.min_file_num,
        };
        for (partition, sub) in self.partitions.iter_mut() {
            let packed = if self.dv_enabled {
                params.pack_dv(&mut sub.to_compact)
            } else {
                params.pack(&mut sub.to_compact)
            };
            if packed.is_empty() {
                if self.flavor == Flavor::Cpp {
                    continue;
                }
                sub.age += 1;
                if sub.age > COMPACT_AGE && sub.to_compact.len() > 1 {
                    let files: Vec<_> = std::mem::take(&mut sub.to_compact)
                        .into_values()
                        .map(|f| f.file)
                        .collect();
                    tasks.push(AppendCompactTask {
                        partition: partition.clone(),
                        reason: Reason::CoordinatorAged {
                            files: files.len(),
                            age: sub.age,
                        },
                        files,
                    });
                }
                continue;
            }
            for (files, bytes) in packed {
                tasks.push(AppendCompactTask {
                    partition: partition.clone(),
                    reason: Reason::CoordinatorPacked {
                        files: files.len(),
                        bytes,
                    },
                    files,
                });
            }
        }
        self.partitions
            .retain(|_, sub| !sub.to_compact.is_empty() && sub.age <= REMOVE_AGE);
        tasks
    }

    /// Sets a tracked partition's age, as a long-running coordinator would have it after
    /// earlier plans in which no new file arrived (a one-shot job restores it between runs).
    /// Call after [`Self::notify`], which resets it.
    pub fn restore_age(&mut self, partition: &str, age: u32) {
        if let Some(sub) = self.partitions.get_mut(partition) {
            sub.age = age;
        }
    }

    /// A partition's queue size and age, if it is still tracked.
    pub fn partition_state(&self, partition: &str) -> Option<(usize, u32)> {
        self.partitions
            .get(partition)
            .map(|s| (s.to_compact.len(), s.age))
    }
}

struct Packer {
    two_targets: u64,
    open_file_cost: u64,
    min_file_num: usize,
}

/// A bin of files and its weight (sizes plus one open-file cost per file).
#[derive(Default)]
struct Bin {
    files: Vec<String>,
    weight: u64,
}

type Packed = Vec<(Vec<Arc<CompactionFile>>, u64)>;

impl Packer {
    fn add(&self, bin: &mut Bin, f: &CoordinatorFile) {
        bin.weight = bin
            .weight
            .saturating_add(f.file.file_size.saturating_add(self.open_file_cost));
        bin.files.push(f.file.file_name.clone());
    }

    fn enough_content(&self, bin: &Bin) -> bool {
        bin.files.len() > 1 && bin.weight >= self.two_targets
    }

    fn drain(bin: &mut Bin, to_compact: &mut BTreeMap<String, CoordinatorFile>, out: &mut Packed) {
        let files = bin
            .files
            .drain(..)
            .filter_map(|name| to_compact.remove(&name).map(|f| f.file))
            .collect();
        out.push((files, std::mem::take(&mut bin.weight)));
    }

    /// Smallest files first, so bins fill with as many small files as possible.
    fn pack(&self, to_compact: &mut BTreeMap<String, CoordinatorFile>) -> Packed {
        self.pack_names(to_compact, None)
    }

    fn pack_names(
        &self,
        to_compact: &mut BTreeMap<String, CoordinatorFile>,
        only: Option<&[String]>,
    ) -> Packed {
        let mut order: Vec<(u64, String)> = match only {
            Some(names) => names
                .iter()
                .filter_map(|n| to_compact.get(n).map(|f| (f.file.file_size, n.clone())))
                .collect(),
            None => to_compact
                .values()
                .map(|f| (f.file.file_size, f.file.file_name.clone()))
                .collect(),
        };
        order.sort();
        let mut out = Vec::new();
        let mut bin = Bin::default();
        for (_, name) in order {
            if let Some(f) = to_compact.get(&name) {
                self.add(&mut bin, f);
            }
            if self.enough_content(&bin) {
                Self::drain(&mut bin, to_compact, &mut out);
            }
        }
        // Paimon emits the rest when it holds `min_file_num` files; with `min_file_num = 1`
        // that is a one-file task, which Paimon's own task then rejects ("need more than one
        // file"). A lone file without deletion vectors gains nothing from a rewrite: keep it.
        if bin.files.len() >= self.min_file_num && bin.files.len() > 1 {
            Self::drain(&mut bin, to_compact, &mut out);
        }
        out
    }

    /// Files sharing a deletion-vector index file stay together (their index is rewritten once);
    /// any bin with such files is emitted, however small, because their deletes must be applied.
    fn pack_dv(&self, to_compact: &mut BTreeMap<String, CoordinatorFile>) -> Packed {
        let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut rest = Vec::new();
        for f in to_compact.values() {
            match &f.deletion_file {
                Some(dv) => groups
                    .entry(dv.index_file.clone())
                    .or_default()
                    .push(f.file.file_name.clone()),
                None => rest.push(f.file.file_name.clone()),
            }
        }
        let mut groups: Vec<(u64, String, Vec<String>)> = groups
            .into_iter()
            .map(|(idx, names)| {
                let size = names.iter().map(|n| to_compact[n].file.file_size).sum();
                (size, idx, names)
            })
            .collect();
        groups.sort();
        let mut out = Vec::new();
        let mut bin = Bin::default();
        for (_, _, names) in groups {
            for n in &names {
                if let Some(f) = to_compact.get(n) {
                    self.add(&mut bin, f);
                }
            }
            if self.enough_content(&bin) {
                Self::drain(&mut bin, to_compact, &mut out);
            }
        }
        if !bin.files.is_empty() {
            Self::drain(&mut bin, to_compact, &mut out);
        }
        if rest.len() > 1 {
            out.extend(self.pack_names(to_compact, Some(&rest)));
        }
        out
    }
}
