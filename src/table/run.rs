//! Running one bucket's planned work: its tasks through the rewriters (the append rewrite, the
//! primary-key merge, metadata-only upgrades), then the bucket's deletion-vector index if its
//! vectors changed. What the run produces is the bucket's part of the commit's delta and its
//! metrics; every file it writes is tracked, so the job can delete them all if it fails. A
//! bucket is the unit of a fan-out task ([`super::fanout`]): it needs nothing from other
//! buckets.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use roaring::RoaringBitmap;

use super::binary_row::BinaryRow;
use super::commit::{self, CommitDelta, WrittenFiles};
use super::ids::IdGen;
use super::index::{self, IndexManifestEntry, DELETION_VECTORS_INDEX};
use super::manifest::{DataFileMeta, FileKind, ManifestEntry, SimpleStats};
use super::plan::{evolved_schema, level_stats, Work};
use super::report::BucketMetrics;
use super::scan::{planner_meta, BucketState, LiveFile, Table};
use crate::error::{Error, Result};
use crate::io::Io;
use crate::meta::{CompactionFile, Level, Levels};
use crate::options::ChangelogProducer;
use crate::plan::{MergeTreeDecision, TaskAction, UpgradeStrategy};
use crate::rewrite::foreign_data::DataFormat;
use crate::rewrite::merge::MergeTreeRewrite;
use crate::rewrite::schema_evolution::{column_sources, ColumnSource};
use crate::rewrite::{rewrite_append, AppendRewrite, RewriteInput};
use crate::storage::Storage;

/// What running one bucket's work needs besides the storage: the bucket's live files and
/// deletion-vector index entries as of the planned snapshot, its planned work, and the names
/// and times of what it writes. A fan-out task carries exactly this ([`super::fanout::Task`]).
pub(super) struct BucketWork<'a> {
    /// The table as the job sees it (its dynamic options applied).
    pub(super) table: &'a Table,
    /// The bucket's live files.
    pub(super) bucket: &'a BucketState,
    /// The live index entries of the bucket (others are ignored).
    pub(super) index_entries: &'a [IndexManifestEntry],
    /// The planned work.
    pub(super) work: &'a Work,
    /// Delete counts verified from footers, by file name (PK level-0 files).
    pub(super) verified_delete_counts: &'a BTreeMap<String, Option<u64>>,
    /// The job's `now`: creation time of the new files.
    pub(super) now_ms: i64,
    /// Seeds the choice of external output directories (from the job id and the task).
    pub(super) output_seed: u64,
}

/// Runs one bucket's work through the rewriters, then rewrites its deletion vectors if they
/// changed. Returns the commit's delta and the bucket's metrics; `ids` names the new files
/// and `written` tracks them (also when it fails part-way).
pub(super) fn run_bucket(
    io: &Io,
    w: &BucketWork<'_>,
    ids: &mut IdGen,
    written: &mut WrittenFiles,
) -> Result<(CommitDelta, BucketMetrics)> {
    let mut run = Run {
        storage: io.storage.as_ref(),
        io,
        table: w.table,
        index_entries: w.index_entries,
        now_ms: w.now_ms,
        ids,
        written,
        delta: CommitDelta::default(),
        removed_dvs: BTreeMap::new(),
        dv_marks: BTreeMap::new(),
        // Paimon's external path provider starts each writer at a random root.
        external_pick: (w.output_seed >> 16) as usize,
        external_seed: w.output_seed,
        metrics: Vec::new(),
    };
    run.bucket(w.bucket, w.work, w.verified_delete_counts)?;
    run.deletion_vectors()?;
    let metrics = run.metrics.pop().unwrap_or_default();
    Ok((run.delta, metrics))
}

/// The state of a running bucket.
struct Run<'s> {
    storage: &'s dyn Storage,
    /// The same storage, shared, with the host's services (what the rewriters take).
    io: &'s Io,
    table: &'s Table,
    index_entries: &'s [IndexManifestEntry],
    now_ms: i64,
    ids: &'s mut IdGen,
    written: &'s mut WrittenFiles,
    delta: CommitDelta,
    /// Data files whose deletion vectors go away, by (partition, bucket).
    removed_dvs: BTreeMap<(BinaryRow, i32), BTreeSet<String>>,
    /// Counter of output directories handed out (external-path rotation).
    external_pick: usize,
    /// Seeds the `weight-robin` draws (from the job id).
    external_seed: u64,
    /// Row positions lookups found superseded, by (partition, bucket) and data file.
    dv_marks: BTreeMap<(BinaryRow, i32), BTreeMap<String, Vec<u64>>>,
    metrics: Vec<BucketMetrics>,
}

/// One merge of a merge-tree task: its inputs as sections of sorted runs, and what bounds the
/// lookup scope (the bucket's files above the output level, except the task's own).
struct MergeSpec<'t> {
    output_level: Level,
    max_level: Level,
    drop_delete: bool,
    sections: Vec<Vec<Vec<Arc<CompactionFile>>>>,
    exclude: &'t BTreeSet<String>,
    bucket_files: &'t [Arc<CompactionFile>],
}

fn live_file<'b>(b: &'b BucketState, name: &str) -> Result<&'b LiveFile> {
    b.files
        .iter()
        .find(|l| l.entry.file.file_name == name)
        .ok_or_else(|| Error::internal(format!("planned file '{name}' is not live")))
}

fn add_entry(b: &BucketState, file: DataFileMeta) -> ManifestEntry {
    ManifestEntry {
        kind: FileKind::Add,
        partition: b.partition.clone(),
        bucket: b.bucket,
        total_buckets: b.total_buckets,
        file,
    }
}

fn delete_entry(l: &LiveFile) -> ManifestEntry {
    ManifestEntry {
        kind: FileKind::Delete,
        ..l.entry.clone()
    }
}

impl Run<'_> {
    fn path_of(&self, b: &BucketState, l: &LiveFile) -> Result<String> {
        self.table
            .paths
            .live_data_file(&b.partition_path, b.bucket, &l.entry.file, &l.source)
    }

    /// For a file written under schema version `schema_id`: where each column of the latest
    /// schema comes from in the file, matched by Paimon field id at every depth (renames
    /// followed, added columns and nested fields `None`); `None` when the file is read as it is
    /// (the latest version, or one with its fields).
    fn column_map(&self, schema_id: i64) -> Result<Option<Vec<Option<ColumnSource>>>> {
        let latest = &self.table.schema;
        Ok(evolved_schema(self.storage, self.table, schema_id)?
            .map(|old| column_sources(&old.fields, &latest.fields)))
    }

    /// Where this job's next new files of the bucket go (rotating over external paths).
    fn output_dir(&mut self, b: &BucketState) -> (String, bool) {
        let pick = self.external_pick;
        self.external_pick += 1;
        // `weight-robin` draws at random, as Paimon's weighted provider does; the draws are a
        // splitmix64 stream seeded by the job id (the core has no randomness source).
        let mut z = self
            .external_seed
            .wrapping_add((pick as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        let draw = z ^ (z >> 31);
        self.table
            .paths
            .output_bucket_dir(&b.partition_path, b.bucket, pick, draw)
    }

    fn deleted_rows(&self, l: &LiveFile) -> Result<Option<Vec<u64>>> {
        let Some((index_file, meta)) = &l.deletion_vector else {
            return Ok(None);
        };
        let path = self.table.paths.index_file(index_file, "index manifest")?;
        let bitmap = index::read_deletion_vector(self.storage, &path, meta)?;
        Ok(Some(bitmap.iter().map(u64::from).collect()))
    }

    /// Deletes whatever a failed rewrite may have left under its unique prefix.
    fn sweep(&mut self, dir: &str, prefix: &str) {
        if let Ok(list) = self.storage.list(&format!("{dir}/{prefix}")) {
            for o in list {
                self.written.track(&o.path);
            }
        }
    }

    fn bucket(
        &mut self,
        b: &BucketState,
        work: &Work,
        verified: &BTreeMap<String, Option<u64>>,
    ) -> Result<()> {
        let before: Vec<Arc<CompactionFile>> = b.planner_files(self.table)?;
        let mut m = BucketMetrics {
            partition: b.partition_path.clone(),
            bucket: b.bucket,
            files_before: before.len(),
            bytes_before: before.iter().map(|f| f.file_size).sum(),
            levels_before: level_stats(&before),
            ..BucketMetrics::default()
        };
        let mut removed: BTreeSet<String> = BTreeSet::new();
        let mut added: Vec<Arc<CompactionFile>> = Vec::new();
        match work {
            Work::Append(tasks) => {
                m.reason = "append compaction".into();
                for task in tasks {
                    self.append_task(b, task, &mut m, &mut removed, &mut added)?;
                }
            }
            Work::MergeTree(decision) => {
                m.reason = decision.reason.to_string();
                self.merge_tree_task(b, verified, decision, &mut m, &mut removed, &mut added)?;
            }
            Work::Postpone(_) => {
                return Err(Error::internal(
                    "a postpone task runs through the postpone replay, not a bucket run",
                ))
            }
        }
        let mut after: Vec<Arc<CompactionFile>> = before
            .iter()
            .filter(|f| !removed.contains(&f.file_name))
            .cloned()
            .collect();
        after.extend(added);
        m.files_after = after.len();
        m.bytes_after = after.iter().map(|f| f.file_size).sum();
        m.levels_after = level_stats(&after);
        self.metrics.push(m);
        Ok(())
    }

    fn append_task(
        &mut self,
        b: &BucketState,
        task: &[usize],
        m: &mut BucketMetrics,
        removed: &mut BTreeSet<String>,
        added: &mut Vec<Arc<CompactionFile>>,
    ) -> Result<()> {
        let latest = &self.table.schema;
        let maps = task
            .iter()
            .map(|&i| self.column_map(b.files[i].entry.file.schema_id))
            .collect::<Result<Vec<_>>>()?;
        let evolved = maps.iter().any(Option::is_some);
        let mut inputs = Vec::with_capacity(task.len());
        for (&i, map) in task.iter().zip(maps) {
            let l = &b.files[i];
            // In an evolved task every file is mapped onto the latest schema's Arrow form,
            // files with the latest fields through the identity map.
            let columns = match map {
                Some(map) => Some(map),
                None if evolved => Some(column_sources(&latest.fields, &latest.fields)),
                None => None,
            };
            inputs.push(RewriteInput {
                path: self.path_of(b, l)?,
                meta: Arc::new(planner_meta(self.table, l)?),
                deleted_rows: self.deleted_rows(l)?,
                columns,
            });
        }
        // Files of several schema versions are all read as the latest one and written so.
        let table_schema = if evolved {
            Some(crate::types::arrow_schema(&latest.fields)?)
        } else {
            None
        };
        let (output_dir, external) = self.output_dir(b);
        let prefix = format!(
            "{}{}-",
            self.table.options.data_file_prefix,
            self.ids.next_uuid()
        );
        // ORC and Avro inputs are read through Parquet copies of their schema version.
        let copies = self.parquet_copies(b, inputs.iter_mut(), |s| {
            crate::types::arrow_schema(&s.fields)
        })?;
        let req = AppendRewrite {
            inputs,
            table_schema,
            output_dir: output_dir.clone(),
            file_prefix: prefix.clone(),
            output_level: Level::ZERO,
            creation_time_ms: self.now_ms,
            collect_value_stats: true,
            column_types: latest.fields.iter().map(|f| f.data_type.clone()).collect(),
        };
        let result = rewrite_append(self.io, &req, &self.table.options);
        // The copies are read; they go whatever happened.
        self.written.delete_now(self.storage, &copies);
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                self.sweep(&output_dir, &prefix);
                return Err(e);
            }
        };
        for o in &result.outputs {
            self.written.track(&o.path);
        }
        // Evolved or not, the outputs have the latest fields: files of versions that only
        // changed options are read as they are and their outputs are of the latest version.
        let schema_id = latest.id;
        for &i in task {
            let l = &b.files[i];
            self.delta.entries.push(delete_entry(l));
            removed.insert(l.entry.file.file_name.clone());
            m.files_removed += 1;
            m.bytes_removed += l.entry.file.file_size.max(0) as u64;
            if l.deletion_vector.is_some() {
                self.removed_dvs
                    .entry((b.partition.clone(), b.bucket))
                    .or_default()
                    .insert(l.entry.file.file_name.clone());
                m.deletion_vectors_removed += 1;
            }
        }
        for o in &result.outputs {
            // Value statistics name columns of the file's schema: only written when that is
            // the latest, whose fields they are computed against.
            let (value_stats, value_stats_cols) = match &o.value_stats {
                Some(columns) if schema_id == self.table.schema.id => {
                    // Append files: Paimon's append writers use `metadata.stats-mode` alone.
                    super::value_stats::value_stats(self.table, columns, o.meta.row_count, None)?
                }
                _ => (SimpleStats::empty(), Vec::new()),
            };
            let (extra_files, embedded_file_index) =
                crate::rewrite::file_index::FileIndex::manifest_fields(o.file_index.as_ref());
            let f = DataFileMeta {
                file_name: o.meta.file_name.clone(),
                file_size: o.meta.file_size as i64,
                row_count: o.meta.row_count as i64,
                min_key: BinaryRow::empty(),
                max_key: BinaryRow::empty(),
                key_stats: SimpleStats::empty(),
                value_stats,
                min_sequence_number: o.meta.min_sequence_number.0,
                max_sequence_number: o.meta.max_sequence_number.0,
                schema_id,
                level: 0,
                extra_files,
                creation_time: Some(self.now_ms),
                delete_row_count: Some(0),
                embedded_file_index,
                file_source: Some(1),
                value_stats_cols: Some(value_stats_cols),
                external_path: external.then(|| o.path.clone()),
                first_row_id: None,
                write_cols: None,
                write_cols_sequences: None,
            };
            self.delta.entries.push(add_entry(b, f));
            added.push(Arc::new(o.meta.clone()));
            m.files_added += 1;
            m.bytes_added += o.meta.file_size;
        }
        let rm = &result.metrics;
        m.rows_read += rm.input_rows;
        m.rows_written += rm.output_rows;
        m.rows_deleted += rm.deleted_rows;
        m.rewrites += 1;
        m.fast_copy_files += rm.fast_copy.files_copied;
        m.fast_copy_refused += rm.fast_copy.refused.len();
        m.host_codec_pages_compressed += rm.host_codec.pages_compressed;
        m.host_codec_pages_decompressed += rm.host_codec.pages_decompressed;
        for c in &rm.passthrough.columns {
            if !m.passthrough_columns.contains(c) {
                m.passthrough_columns.push(c.clone());
            }
        }
        Ok(())
    }

    fn merge_tree_task(
        &mut self,
        b: &BucketState,
        verified_delete_counts: &BTreeMap<String, Option<u64>>,
        decision: &MergeTreeDecision,
        m: &mut BucketMetrics,
        removed: &mut BTreeSet<String>,
        added: &mut Vec<Arc<CompactionFile>>,
    ) -> Result<()> {
        let bucket_files = b.planner_files(self.table)?;
        let max_level =
            Levels::new(self.table.options.num_levels, bucket_files.clone())?.max_level();
        // Every file the task reads or replaces; the rest of the bucket above the output level
        // is where lookups find older versions of its keys.
        let task_files: BTreeSet<String> = decision
            .task
            .actions
            .iter()
            .flat_map(|a| {
                a.inputs()
                    .iter()
                    .map(|f| f.file_name.clone())
                    .collect::<Vec<_>>()
            })
            .collect();
        for action in &decision.task.actions {
            match action {
                TaskAction::Upgrade {
                    file,
                    to_level,
                    strategy,
                } => {
                    // The "force drop delete" of upgrade-path merges (compaction.md §10.2): only
                    // the lookup rewriter in deletion-vector mode drops retracts there.
                    let drop_delete = self.table.options.deletion_vectors_enabled
                        && self.table.options.changelog_producer
                            != ChangelogProducer::FullCompaction;
                    let merge = MergeSpec {
                        output_level: *to_level,
                        max_level,
                        drop_delete,
                        sections: vec![vec![vec![file.clone()]]],
                        exclude: &task_files,
                        bucket_files: &bucket_files,
                    };
                    match strategy {
                        UpgradeStrategy::ChangelogWithRewrite => {
                            self.merge_rewrite(b, &merge, m, removed, added)?;
                            continue;
                        }
                        UpgradeStrategy::ChangelogNoRewrite => {
                            // Changelog and deletion-vector marks only; the file itself moves up.
                            self.run_merge(b, &merge, false, m)?;
                        }
                        UpgradeStrategy::NoChangelogNoRewrite => {}
                    }
                    let l = live_file(b, &file.file_name)?;
                    self.delta.entries.push(delete_entry(l));
                    let mut up = l.entry.file.with_level(to_level.get() as i32);
                    if let Some(verified) = verified_delete_counts.get(&file.file_name) {
                        // Record what the footer proved; unknown stays unknown (readers merge).
                        up.delete_row_count = verified.map(|c| c as i64);
                    }
                    self.delta.entries.push(add_entry(b, up));
                    removed.insert(file.file_name.clone());
                    added.push(Arc::new(file.upgrade(*to_level)));
                    m.upgrades += 1;
                }
                TaskAction::Rewrite {
                    output_level,
                    sections,
                    ..
                } => {
                    let merge = MergeSpec {
                        output_level: *output_level,
                        max_level,
                        drop_delete: decision.drop_delete,
                        sections: sections
                            .iter()
                            .map(|s| s.iter().map(|r| r.files().to_vec()).collect())
                            .collect(),
                        exclude: &task_files,
                        bucket_files: &bucket_files,
                    };
                    self.merge_rewrite(b, &merge, m, removed, added)?;
                }
            }
        }
        Ok(())
    }

    /// Merges the `MergeSpec`'s inputs into new files that replace them (their vectors go with them).
    fn merge_rewrite(
        &mut self,
        b: &BucketState,
        merge: &MergeSpec<'_>,
        m: &mut BucketMetrics,
        removed: &mut BTreeSet<String>,
        added: &mut Vec<Arc<CompactionFile>>,
    ) -> Result<()> {
        let outputs = self.run_merge(b, merge, true, m)?;
        for f in merge.sections.iter().flatten().flatten() {
            let l = live_file(b, &f.file_name)?;
            self.delta.entries.push(delete_entry(l));
            removed.insert(f.file_name.clone());
            m.files_removed += 1;
            m.bytes_removed += f.file_size;
            if l.deletion_vector.is_some() {
                self.removed_dvs
                    .entry((b.partition.clone(), b.bucket))
                    .or_default()
                    .insert(f.file_name.clone());
                m.deletion_vectors_removed += 1;
            }
        }
        for f in outputs {
            let meta = planner_meta(
                self.table,
                &LiveFile {
                    entry: add_entry(b, f.clone()),
                    source: "merge rewriter output".into(),
                    deletion_vector: None,
                },
            )?;
            m.files_added += 1;
            m.bytes_added += meta.file_size;
            added.push(Arc::new(meta));
            self.delta.entries.push(add_entry(b, f));
        }
        m.rewrites += 1;
        Ok(())
    }

    /// Runs the merge rewriter over the spec (writing data files only with `write_data`),
    /// records its changelog files and deletion-vector marks, and returns the new data files.
    fn run_merge(
        &mut self,
        b: &BucketState,
        merge: &MergeSpec<'_>,
        write_data: bool,
        m: &mut BucketMetrics,
    ) -> Result<Vec<DataFileMeta>> {
        let input = |f: &Arc<CompactionFile>| -> Result<RewriteInput> {
            let l = live_file(b, &f.file_name)?;
            Ok(RewriteInput {
                path: self.path_of(b, l)?,
                meta: f.clone(),
                deleted_rows: self.deleted_rows(l)?,
                columns: None,
            })
        };
        let mut sections = merge
            .sections
            .iter()
            .map(|s| {
                s.iter()
                    .map(|r| r.iter().map(&input).collect::<Result<Vec<_>>>())
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        let mut higher_levels = merge
            .bucket_files
            .iter()
            .filter(|f| f.level > merge.output_level && !merge.exclude.contains(&f.file_name))
            .map(&input)
            .collect::<Result<Vec<_>>>()?;
        super::merge::check_lookup_scope(
            self.table,
            &sections,
            &higher_levels,
            merge.output_level,
            merge.max_level,
        )?;
        let copies = self.parquet_copies(
            b,
            sections
                .iter_mut()
                .flatten()
                .flatten()
                .chain(higher_levels.iter_mut()),
            super::merge::kv_schema,
        )?;
        let r = self.merge_inputs(b, merge, write_data, sections, higher_levels, m);
        // The copies are read; they go whatever happened (a failed deletion leaves an orphan
        // no snapshot references).
        self.written.delete_now(self.storage, &copies);
        r
    }

    /// Replaces each Avro or ORC input (`file.format = 'orc'`, `file.format.per.level =
    /// '0:avro'`) by a Parquet copy next to the outputs, tracked as written; returns the
    /// copies' paths. The rewriters read Parquet: a copy keeps the rows and their order, so
    /// deletion vectors still apply by position. `row_type` is the Arrow row type of a file
    /// of the given schema version (the data-file row type for a merge, the table's columns
    /// for an append rewrite).
    fn parquet_copies<'i>(
        &mut self,
        b: &BucketState,
        inputs: impl Iterator<Item = &'i mut RewriteInput>,
        row_type: impl Fn(&super::schema::TableSchema) -> Result<arrow_schema::SchemaRef>,
    ) -> Result<Vec<String>> {
        let mut copies = Vec::new();
        for input in inputs.filter(|i| DataFormat::is_foreign(&i.path)) {
            let schema_id = live_file(b, &input.meta.file_name)?.entry.file.schema_id;
            let schema = match evolved_schema(self.storage, self.table, schema_id)? {
                Some(old) => row_type(&old)?,
                None => row_type(&self.table.schema)?,
            };
            let dir = self.table.paths.bucket_dir(&b.partition_path, b.bucket);
            let copy = format!("{dir}/data-{}-copy.parquet", self.ids.next_uuid());
            self.written.track(&copy);
            let done = crate::rewrite::foreign_data::transcode_to_parquet(
                self.storage,
                &input.path,
                &copy,
                &schema,
                input.meta.row_count,
            );
            copies.push(copy);
            if let Err(e) = done {
                self.written.delete_now(self.storage, &copies);
                return Err(e);
            }
            input.path = copies[copies.len() - 1].clone();
        }
        Ok(copies)
    }

    /// The merge of [`Run::run_merge`] once its inputs are Parquet, and the record of what
    /// it wrote; returns the new data files.
    fn merge_inputs(
        &mut self,
        b: &BucketState,
        merge: &MergeSpec<'_>,
        write_data: bool,
        mut sections: Vec<Vec<Vec<RewriteInput>>>,
        mut higher_levels: Vec<RewriteInput>,
        m: &mut BucketMetrics,
    ) -> Result<Vec<DataFileMeta>> {
        let schema = super::merge::map_evolved_inputs(
            self.storage,
            self.table,
            &mut sections,
            &mut higher_levels,
            |i| Ok(live_file(b, &i.meta.file_name)?.entry.file.schema_id),
        )?;
        let (output_dir, external) = self.output_dir(b);
        let uuid = self.ids.next_uuid();
        let creation_time_ms = self.now_ms;
        let req = MergeTreeRewrite {
            sections,
            schema,
            higher_levels,
            output_dir: output_dir.clone(),
            file_prefix: format!("{}{uuid}-", self.table.options.data_file_prefix),
            changelog_prefix: format!("{}{uuid}-", self.table.options.changelog_file_prefix),
            output_level: merge.output_level,
            max_level: merge.max_level,
            drop_delete: merge.drop_delete,
            write_data,
            column_types: super::merge::kv_types(&self.table.schema),
            creation_time_ms,
        };
        let (r, mut outputs, mut changelog) = match super::merge::merge(self.io, self.table, &req) {
            Ok(r) => r,
            Err(e) => {
                self.sweep(&output_dir, &req.file_prefix);
                self.sweep(&output_dir, &req.changelog_prefix);
                return Err(e);
            }
        };
        for f in r.outputs.iter().chain(&r.changelog) {
            self.written.track(&f.path);
        }
        if external {
            for f in outputs.iter_mut().chain(changelog.iter_mut()) {
                f.external_path = Some(format!("{output_dir}/{}", f.file_name));
            }
        }
        if !r.deletion_vector_marks.is_empty() {
            let marks = self
                .dv_marks
                .entry((b.partition.clone(), b.bucket))
                .or_default();
            for (file, positions) in r.deletion_vector_marks {
                let l = live_file(b, &file)?;
                if !self
                    .delta
                    .marked
                    .iter()
                    .any(|e| e.identifier() == l.entry.identifier())
                {
                    self.delta.marked.push(l.entry.clone());
                }
                m.deletion_vector_marks += positions.len() as u64;
                marks.entry(file).or_default().extend(positions);
            }
        }
        for f in changelog {
            m.changelog_files += 1;
            self.delta.changelog.push(add_entry(b, f));
        }
        m.rows_read += r.metrics.input_rows;
        m.rows_expired += r.metrics.expired_rows;
        m.spilled_runs += r.metrics.spilled_runs;
        m.rows_deleted += r.metrics.deleted_rows;
        m.rows_written += r.metrics.output_rows;
        m.host_codec_pages_compressed += r.metrics.host_codec.pages_compressed;
        m.host_codec_pages_decompressed += r.metrics.host_codec.pages_decompressed;
        Ok(outputs)
    }

    /// Rewrites the deletion-vector index of every bucket whose vectors changed (files that
    /// were rewritten lose theirs, lookups add marks to files above the output): the bucket's
    /// old index files go and one new file holds every vector that remains, as Paimon's
    /// deletion-vector maintainer does.
    fn deletion_vectors(&mut self) -> Result<()> {
        let removed_dvs = std::mem::take(&mut self.removed_dvs);
        let dv_marks = std::mem::take(&mut self.dv_marks);
        let no_files = BTreeSet::new();
        let no_marks = BTreeMap::new();
        let touched: BTreeSet<&(BinaryRow, i32)> =
            removed_dvs.keys().chain(dv_marks.keys()).collect();
        for key in touched {
            let (partition, bucket) = key;
            let gone = removed_dvs.get(key).unwrap_or(&no_files);
            let marks = dv_marks.get(key).unwrap_or(&no_marks);
            let entries: Vec<&IndexManifestEntry> = self
                .index_entries
                .iter()
                .filter(|e| {
                    e.index_type == DELETION_VECTORS_INDEX
                        && &e.partition == partition
                        && e.bucket == *bucket
                })
                .collect();
            let mut keep: BTreeMap<String, RoaringBitmap> = BTreeMap::new();
            for e in &entries {
                let path = self
                    .table
                    .paths
                    .index_file(&e.file_name, "index manifest")?;
                for r in e.dv_ranges.iter().flatten() {
                    if !gone.contains(&r.data_file) {
                        let bm = index::read_deletion_vector(self.storage, &path, r)?;
                        keep.entry(r.data_file.clone())
                            .or_default()
                            .extend(bm.iter());
                    }
                }
                self.delta.index.push(IndexManifestEntry {
                    kind: FileKind::Delete,
                    ..(*e).clone()
                });
            }
            for (file, positions) in marks {
                if gone.contains(file) {
                    continue;
                }
                let bm = keep.entry(file.clone()).or_default();
                for &p in positions {
                    let p = u32::try_from(p).map_err(|_| {
                        Error::unsupported(format!(
                            "row position {p} of '{file}' is beyond a 32-bit deletion vector"
                        ))
                    })?;
                    bm.insert(p);
                }
            }
            keep.retain(|_, bm| !bm.is_empty());
            if !keep.is_empty() {
                let (bytes, ranges) = index::encode_deletion_vectors(&keep)?;
                let name = format!("index-{}-0", self.ids.next_uuid());
                let path = self.table.paths.index_file(&name, "compaction job")?;
                let size = commit::write_tracked(self.storage, self.written, &path, &bytes)?;
                self.delta.index.push(IndexManifestEntry {
                    kind: FileKind::Add,
                    partition: partition.clone(),
                    bucket: *bucket,
                    index_type: DELETION_VECTORS_INDEX.to_string(),
                    file_name: name,
                    file_size: size as i64,
                    row_count: ranges.len() as i64,
                    dv_ranges: Some(ranges),
                    external_path: None,
                    global_index: None,
                });
            }
        }
        Ok(())
    }
}
