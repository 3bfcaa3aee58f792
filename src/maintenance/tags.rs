//! Tags: reading them, creating them on a schedule, expiring them by age, and deleting them
//! with the files only they kept alive (Paimon's `TagManager`, `TagAutoCreation`,
//! `TagTimeExpire`, `TagDeletion`).
//!
//! A tag is `tag/tag-<name>`: a copy of a snapshot's JSON, plus, when it was given a retention,
//! `tagCreateTime` (a local date-time as a Jackson array `[y, M, d, H, m(, s(, nanos))]`) and
//! `tagTimeRetained` (seconds with nine decimals). A tag without retention is the snapshot's
//! bytes unchanged, so old readers can still parse it. Several tags may name one snapshot.
//!
//! **Automatic creation** (`tag.automatic-creation` = `process-time` or `watermark`): every
//! period (`tag.creation-period` daily, hourly or two-hours, or `tag.creation-period-duration`)
//! gets a tag named after the period's start (`tag.period-formatter`). A snapshot's time is its
//! commit time in `sink.process-time-zone` (default: the host's zone) or its watermark in
//! `sink.watermark-time-zone` (default UTC; no watermark, or `Long.MIN_VALUE`, means no tag).
//! The snapshots after the last auto tag are walked in order; the first one whose time minus
//! `tag.creation-delay` reaches the end of the next period gets the tag of the period before
//! its own (with `tag.automatic-completion`, of the next missing period instead), and the very
//! first tag is made at once. A name that exists already is skipped; an auto-format name on a
//! snapshot that already has an auto tag is an error, as in Paimon. After each creation the
//! oldest auto tags beyond `tag.num-retained-max` are deleted (tags whose names do not parse
//! with the period's format are manual and never counted). New auto tags carry
//! `tag.default-time-retained`. Paimon keeps the walk's position in its committer's memory and
//! rebuilds it from the tags when it restarts; every call here rebuilds it the same way.
//!
//! A quirk kept on purpose: Paimon builds the name formats with a year of 1 to 10 digits
//! followed directly by the month, so names without dashes (`20230718`) never parse back; such
//! tags are created but never recognised as automatic (no cap, no resume point), exactly as in
//! Paimon.
//!
//! **Expiry by age** (`tag.time-expire-enabled`, default on): a tag with both TTL fields is
//! deleted once the local clock is strictly past `tagCreateTime + tagTimeRetained`.
//!
//! **Deletion**: if the tag's snapshot still exists only the tag file goes (the snapshot keeps
//! its files). Otherwise the tag file is deleted first (a crash then leaves orphans, never a
//! tag naming missing files) and, unless another tag names the same snapshot, the files only
//! this tag protected are deleted: its live data files (and their extra files) that neither the
//! previous tag nor the nearer of the next tag and the earliest snapshot has, then its manifest
//! lists, manifests, index manifest, index files and statistics that those neighbours do not
//! reference. Changelog manifests are left to snapshot expiration. A neighbour that cannot be
//! read cancels that half of the cleanup rather than guessing. Empty directories are not
//! removed (object stores have none; `snapshot.clean-empty-directories` is not applied here).
//!
//! Only the main branch (`<table>/tag/`) is handled.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::partition_expire::is_not_found;
use super::partition_expire::time::{self, Builder, Field, Sign, Style, Tok};
use super::{Deleter, MaintenanceContext};
use crate::error::{Error, Result};
use crate::storage::{Storage, StorageErrorKind};
use crate::table::binary_row::BinaryRow;
use crate::table::path::{validate_name, TablePaths};
use crate::table::scan::{
    live_entries, read_index_manifest, read_manifest_list, snapshot_manifests, Table,
};
use crate::table::snapshot::Snapshot;

fn join(paths: &TablePaths, rel: &str) -> String {
    if paths.root().is_empty() {
        rel.to_string()
    } else {
        format!("{}/{rel}", paths.root())
    }
}

/// `<table>/tag`.
pub fn tag_dir(paths: &TablePaths) -> String {
    join(paths, "tag")
}

/// `<table>/tag/tag-<name>`.
pub fn tag_path(paths: &TablePaths, name: &str) -> Result<String> {
    if name.trim().is_empty() {
        return Err(Error::illegal_state("Tag name shouldn't be blank."));
    }
    validate_name(&format!("tag-{name}"), "tag name")?;
    Ok(format!("{}/tag-{name}", tag_dir(paths)))
}

fn statistics_path(paths: &TablePaths, name: &str, source: &str) -> Result<String> {
    validate_name(name, source)?;
    Ok(join(paths, &format!("statistics/{name}")))
}

/// One tag file.
#[derive(Clone, Debug, PartialEq)]
pub struct TagEntry {
    pub name: String,
    /// The tagged snapshot (the TTL fields are in `extra`).
    pub snapshot: Snapshot,
    /// `tagCreateTime`, local wall-clock milliseconds.
    pub create_time_local_ms: Option<i64>,
    /// `tagTimeRetained`, milliseconds.
    pub time_retained_ms: Option<i64>,
    /// The tag file's modification time (epoch ms) when the listing gave one.
    pub file_modified_ms: Option<i64>,
}

fn parse_local_date_time(v: &serde_json::Value) -> Option<i64> {
    match v {
        serde_json::Value::Array(items) => {
            let n: Vec<i64> = items.iter().map(|x| x.as_i64()).collect::<Option<_>>()?;
            if !(5..=7).contains(&n.len()) {
                return None;
            }
            let get = |i: usize| n.get(i).copied().unwrap_or(0);
            Some(
                time::days_from_civil(n[0], n[1], n[2]) * time::DAY_MS
                    + ((n[3] * 60 + n[4]) * 60 + get(5)) * 1000
                    + get(6) / 1_000_000,
            )
        }
        serde_json::Value::String(s) => {
            // ISO `yyyy-MM-ddTHH:mm[:ss[.f]]`, the text form Jackson may also write.
            let (date, clock) = s.split_once('T')?;
            let d: Vec<i64> = date
                .split('-')
                .map(|x| x.parse().ok())
                .collect::<Option<_>>()?;
            let (hms, frac) = clock.split_once('.').unwrap_or((clock, ""));
            let t: Vec<i64> = hms
                .split(':')
                .map(|x| x.parse().ok())
                .collect::<Option<_>>()?;
            if d.len() != 3 || !(2..=3).contains(&t.len()) {
                return None;
            }
            let ms = if frac.is_empty() {
                0
            } else {
                format!("{frac:0<3}")[..3].parse::<i64>().ok()?
            };
            Some(
                time::days_from_civil(d[0], d[1], d[2]) * time::DAY_MS
                    + ((t[0] * 60 + t[1]) * 60 + t.get(2).copied().unwrap_or(0)) * 1000
                    + ms,
            )
        }
        _ => None,
    }
}

fn parse_seconds(v: &serde_json::Value) -> Option<i64> {
    match v {
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(s) => s.checked_mul(1000),
            None => n.as_f64().map(|s| (s * 1000.0).round() as i64),
        },
        serde_json::Value::String(s) => s
            .trim()
            .parse::<f64>()
            .ok()
            .map(|s| (s * 1000.0).round() as i64),
        _ => None,
    }
}

/// Parses a tag file.
pub fn parse_tag(name: &str, bytes: &[u8], file: &str) -> Result<TagEntry> {
    let snapshot = Snapshot::from_json(bytes, file)?;
    let field = |key: &str, parse: fn(&serde_json::Value) -> Option<i64>| -> Result<Option<i64>> {
        match snapshot.extra.get(key) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(v) => parse(v)
                .map(Some)
                .ok_or_else(|| Error::corrupt(Some(file), format!("unreadable '{key}': {v}"))),
        }
    };
    let create_time_local_ms = field("tagCreateTime", parse_local_date_time)?;
    let time_retained_ms = field("tagTimeRetained", parse_seconds)?;
    Ok(TagEntry {
        name: name.to_string(),
        snapshot,
        create_time_local_ms,
        time_retained_ms,
        file_modified_ms: None,
    })
}

/// The bytes of a tag of the snapshot whose file holds `snapshot_json`: the snapshot bytes
/// unchanged, or with the TTL fields `(create time, retention)` appended.
pub fn tag_json(snapshot_json: &[u8], file: &str, ttl: Option<(i64, i64)>) -> Result<Vec<u8>> {
    let Some((create_local_ms, retained_ms)) = ttl else {
        return Ok(snapshot_json.to_vec());
    };
    let mut obj: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(snapshot_json)
        .map_err(|e| Error::corrupt(Some(file), format!("not a snapshot JSON object: {e}")))?;
    let [y, mo, d, h, mi, s, nano] = time::fields_of(create_local_ms);
    let mut array = vec![y, mo, d, h, mi];
    if s > 0 || nano > 0 {
        array.push(s);
    }
    if nano > 0 {
        array.push(nano);
    }
    obj.insert("tagCreateTime".into(), serde_json::json!(array));
    obj.remove("tagTimeRetained");
    let text =
        String::from_utf8(serde_json::to_vec_pretty(&obj).unwrap_or_default()).unwrap_or_default();
    let body = text
        .trim_end()
        .strip_suffix('}')
        .map(str::trim_end)
        .ok_or_else(|| Error::corrupt(Some(file), "not a JSON object"))?;
    let retained = retained_ms.max(0);
    let out = format!(
        "{body},\n  \"tagTimeRetained\": {}.{:09}\n}}",
        retained / 1000,
        retained % 1000 * 1_000_000
    );
    Ok(out.into_bytes())
}

/// Every tag of the table, by name (tags whose file vanished while listing are skipped).
pub fn list_tag_entries(storage: &dyn Storage, paths: &TablePaths) -> Result<Vec<TagEntry>> {
    let prefix = format!("{}/tag-", tag_dir(paths));
    let mut out = Vec::new();
    for o in storage.list(&prefix)? {
        let Some(name) = o.path.strip_prefix(&prefix) else {
            continue;
        };
        if name.contains('/') {
            continue;
        }
        match storage.read_all(&o.path) {
            Ok(bytes) => {
                let mut tag = parse_tag(name, &bytes, &o.path)?;
                tag.file_modified_ms = o.modified_ms;
                out.push(tag);
            }
            Err(e) if e.kind == StorageErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Every tag as `(name, snapshot)`, ordered by snapshot id, then name.
pub fn list_tags(storage: &dyn Storage, paths: &TablePaths) -> Result<Vec<(String, Snapshot)>> {
    let mut tags: Vec<(String, Snapshot)> = list_tag_entries(storage, paths)?
        .into_iter()
        .map(|t| (t.name, t.snapshot))
        .collect();
    tags.sort_by(|a, b| (a.1.id, &a.0).cmp(&(b.1.id, &b.0)));
    Ok(tags)
}

/// One tag, `None` when its file does not exist.
pub fn read_tag(storage: &dyn Storage, paths: &TablePaths, name: &str) -> Result<Option<TagEntry>> {
    let path = tag_path(paths, name)?;
    match storage.read_all(&path) {
        Ok(bytes) => Ok(Some(parse_tag(name, &bytes, &path)?)),
        Err(e) if e.kind == StorageErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

pub use crate::options::maintenance::{
    zone_offset_ms, TagCreationMode, TagCreationPeriod, TagOptions, TagPeriodFormatter,
};

impl TagOptions {
    /// The period and name format of automatic tags.
    pub fn period_handler(&self) -> TagPeriodHandler {
        TagPeriodHandler::new(self)
    }
}

/// Periods and names of automatic tags (Paimon's `TagPeriodHandler`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TagPeriodHandler {
    period_ms: i64,
    /// Daily names are read as dates, from the text before the first space.
    daily: bool,
    toks: Vec<Tok>,
}

fn name_format(fields: &[Field], dashes: bool, space_before_hour: bool) -> Vec<Tok> {
    let mut b = Builder::default();
    for f in fields {
        let (min, max) = if *f == Field::Year { (1, 10) } else { (2, 2) };
        match f {
            Field::Month | Field::Day if dashes => {
                b.lit("-");
            }
            Field::Hour if space_before_hour => {
                b.lit(" ");
            }
            _ => {}
        }
        b.value(time::num(*f, min, max, Sign::Normal));
    }
    b.build()
}

impl TagPeriodHandler {
    pub fn new(options: &TagOptions) -> Self {
        use Field::*;
        use TagPeriodFormatter::*;
        if let Some(ms) = options.period_duration_ms {
            return TagPeriodHandler {
                period_ms: ms,
                daily: false,
                toks: name_format(&[Year, Month, Day, Hour, Minute], false, false),
            };
        }
        let (period_ms, daily, toks) = match options.period {
            TagCreationPeriod::Daily => (
                86_400_000,
                true,
                name_format(&[Year, Month, Day], options.formatter == WithDashes, false),
            ),
            TagCreationPeriod::Hourly => (
                3_600_000,
                false,
                match options.formatter {
                    WithDashes => name_format(&[Year, Month, Day, Hour], true, true),
                    WithoutDashes => name_format(&[Year, Month, Day, Hour], false, true),
                    WithoutDashesAndSpaces => name_format(&[Year, Month, Day, Hour], false, false),
                },
            ),
            TagCreationPeriod::TwoHours => (
                7_200_000,
                false,
                name_format(&[Year, Month, Day, Hour], true, true),
            ),
        };
        TagPeriodHandler {
            period_ms,
            daily,
            toks,
        }
    }

    pub fn period_ms(&self) -> i64 {
        self.period_ms
    }

    /// The period start a name stands for (local ms), `None` for a manual tag name.
    pub fn tag_to_time(&self, name: &str) -> Option<i64> {
        if self.daily {
            let first = name.split(' ').next().unwrap_or("");
            time::parse_date(&self.toks, first, Style::Lenient)
        } else {
            time::parse_date_time(&self.toks, name, Style::Lenient)
        }
    }

    pub fn is_auto_tag(&self, name: &str) -> bool {
        self.tag_to_time(name).is_some()
    }

    pub fn time_to_tag(&self, local_ms: i64) -> String {
        time::format(&self.toks, local_ms)
    }

    /// The start of the period before the one holding `local_ms`.
    pub fn normalize_to_previous_tag(&self, local_ms: i64) -> i64 {
        local_ms / self.period_ms * self.period_ms - self.period_ms
    }
}

/// Why a tag was deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TagDeleteReason {
    NumRetainedMax,
    TimeRetained,
    OlderThan,
    Requested,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CreatedTag {
    pub name: String,
    pub snapshot_id: i64,
    pub time_retained_ms: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeletedTag {
    pub name: String,
    pub snapshot_id: i64,
    pub reason: TagDeleteReason,
    /// Whether the files only this tag protected were looked for (its snapshot had expired
    /// and no other tag names it).
    pub cleaned: bool,
}

/// What a tag step did (in a dry run: would do).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TagReport {
    pub dry_run: bool,
    pub created: Vec<CreatedTag>,
    pub deleted: Vec<DeletedTag>,
    /// Every file deleted: tag files, then data, manifest, index and statistics files.
    pub deleted_files: Vec<String>,
    pub warnings: Vec<String>,
}

/// Reads snapshot `id` with its bytes; `None` when the file does not exist.
fn try_read_snapshot(
    storage: &dyn Storage,
    paths: &TablePaths,
    id: i64,
) -> Result<Option<(Vec<u8>, Snapshot)>> {
    let path = paths.snapshot(id);
    match storage.read_all(&path) {
        Ok(bytes) => {
            let s = Snapshot::from_json(&bytes, &path)?;
            Ok(Some((bytes, s)))
        }
        Err(e) if e.kind == StorageErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn snapshot_exists(storage: &dyn Storage, paths: &TablePaths, id: i64) -> Result<bool> {
    match storage.size(&paths.snapshot(id)) {
        Ok(_) => Ok(true),
        Err(e) if e.kind == StorageErrorKind::NotFound => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The earliest snapshot id: the `EARLIEST` hint if its snapshot exists, else the smallest
/// listed id.
pub fn earliest_snapshot_id(storage: &dyn Storage, paths: &TablePaths) -> Result<Option<i64>> {
    let hint = match storage.read_all(&paths.earliest_hint()) {
        Ok(b) => std::str::from_utf8(&b)
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok()),
        Err(e) if e.kind == StorageErrorKind::NotFound => None,
        Err(e) => return Err(e.into()),
    };
    if let Some(id) = hint {
        if snapshot_exists(storage, paths, id)? {
            return Ok(Some(id));
        }
    }
    let prefix = format!("{}/snapshot-", paths.snapshot_dir());
    Ok(storage
        .list(&prefix)?
        .iter()
        .filter_map(|o| o.path.strip_prefix(&prefix)?.parse::<i64>().ok())
        .min())
}

/// Creates a tag by hand (Paimon's `create_tag`): `time_retained_ms` `None` takes
/// `tag.default-time-retained`. An existing name is an error, and so is an auto-format name on
/// a snapshot that already has an auto tag when automatic creation is on.
pub fn create_tag(
    storage: &dyn Storage,
    table: &Table,
    name: &str,
    snapshot_id: i64,
    time_retained_ms: Option<i64>,
    ctx: &MaintenanceContext,
) -> Result<TagReport> {
    let options = TagOptions::from_options(&table.schema.options)?;
    let paths = &table.paths;
    let path = tag_path(paths, name)?;
    let tags = list_tag_entries(storage, paths)?;
    if tags.iter().any(|t| t.name == name) {
        return Err(Error::illegal_state(format!(
            "Tag '{name}' already exists."
        )));
    }
    let (bytes, snapshot) = try_read_snapshot(storage, paths, snapshot_id)?
        .ok_or_else(|| Error::illegal_state(format!("Snapshot {snapshot_id} doesn't exist.")))?;
    if matches!(
        options.mode,
        TagCreationMode::ProcessTime | TagCreationMode::Watermark
    ) {
        validate_no_auto_tag(&options.period_handler(), &tags, name, snapshot.id)?;
    }
    let retained = time_retained_ms.or(options.default_time_retained_ms);
    let content = tag_json(
        &bytes,
        &paths.snapshot(snapshot_id),
        retained.map(|r| (ctx.local_now_ms(), r)),
    )?;
    if !ctx.dry_run {
        storage.write_all(&path, &content)?;
    }
    Ok(TagReport {
        dry_run: ctx.dry_run,
        created: vec![CreatedTag {
            name: name.to_string(),
            snapshot_id,
            time_retained_ms: retained,
        }],
        ..Default::default()
    })
}

fn validate_no_auto_tag(
    handler: &TagPeriodHandler,
    tags: &[TagEntry],
    name: &str,
    snapshot_id: i64,
) -> Result<()> {
    if !handler.is_auto_tag(name) {
        return Ok(());
    }
    let auto: Vec<&str> = tags
        .iter()
        .filter(|t| t.snapshot.id == snapshot_id && handler.is_auto_tag(&t.name))
        .map(|t| t.name.as_str())
        .collect();
    if auto.is_empty() {
        Ok(())
    } else {
        Err(Error::illegal_state(format!(
            "Snapshot {snapshot_id} is already auto-tagged with {auto:?}."
        )))
    }
}

/// Deletes a tag by hand (Paimon's `delete_tag`): see the module docs for what goes with it.
pub fn delete_tag(
    storage: &dyn Storage,
    table: &Table,
    name: &str,
    ctx: &MaintenanceContext,
) -> Result<TagReport> {
    let mut tags = list_tag_entries(storage, &table.paths)?;
    let mut report = TagReport {
        dry_run: ctx.dry_run,
        ..Default::default()
    };
    let mut deleter = Deleter::new(storage, ctx.dry_run);
    let result = delete_tag_with(
        storage,
        table,
        name,
        &mut tags,
        &mut deleter,
        &mut report,
        TagDeleteReason::Requested,
    );
    report.deleted_files = deleter.deleted;
    result.map(|()| report)
}

/// Deletes tag `name`; `tags` is the current view of all tags (read before the deletion, as
/// Paimon reads them) and loses the entry.
fn delete_tag_with(
    storage: &dyn Storage,
    table: &Table,
    name: &str,
    tags: &mut Vec<TagEntry>,
    deleter: &mut Deleter<'_>,
    report: &mut TagReport,
    reason: TagDeleteReason,
) -> Result<()> {
    let paths = &table.paths;
    let Some(pos) = tags.iter().position(|t| t.name == name) else {
        report.warnings.push(format!("Tag '{name}' doesn't exist."));
        return Ok(());
    };
    let tag = tags[pos].clone();
    let id = tag.snapshot.id;
    let path = tag_path(paths, name)?;
    let mut deleted = DeletedTag {
        name: name.to_string(),
        snapshot_id: id,
        reason,
        cleaned: false,
    };
    if snapshot_exists(storage, paths, id)? {
        deleter.delete(&path)?;
        tags.remove(pos);
        report.deleted.push(deleted);
        return Ok(());
    }
    let all = tags.clone();
    deleter.delete(&path)?;
    tags.remove(pos);
    if all.iter().filter(|t| t.snapshot.id == id).count() > 1 {
        report.deleted.push(deleted);
        return Ok(());
    }
    // Neighbours: the previous tagged snapshot, and the nearer of the next tagged snapshot
    // and the earliest snapshot.
    let mut tagged: Vec<&Snapshot> = Vec::new();
    let mut by_id: Vec<&TagEntry> = all.iter().collect();
    by_id.sort_by_key(|t| t.snapshot.id);
    for t in by_id {
        if tagged.last().is_none_or(|s| s.id != t.snapshot.id) {
            tagged.push(&t.snapshot);
        }
    }
    let idx = tagged.iter().position(|s| s.id == id).unwrap_or(0);
    let left = idx.checked_sub(1).map(|i| tagged[i].clone());
    let earliest = match earliest_snapshot_id(storage, paths)? {
        Some(e) => try_read_snapshot(storage, paths, e)?.map(|(_, s)| s),
        None => None,
    };
    let right = match (earliest, tagged.get(idx + 1)) {
        (Some(e), Some(r)) => Some(if e.id < r.id { e } else { (*r).clone() }),
        (Some(e), None) => Some(e),
        (None, _) => None,
    };
    let Some(right) = right else {
        report.warnings.push(format!(
            "tag '{name}': the table has no snapshot to compare with; the files only this tag \
             held are left for orphan-file removal"
        ));
        report.deleted.push(deleted);
        return Ok(());
    };
    let neighbours: Vec<Snapshot> = left.into_iter().chain([right]).collect();
    deleted.cleaned = true;
    report.deleted.push(deleted);
    clean_data_files(storage, table, &tag.snapshot, &neighbours, deleter, report)?;
    clean_metadata(storage, paths, &tag.snapshot, &neighbours, deleter, report)?;
    Ok(())
}

type FileKey = (BinaryRow, i32, String);

/// The live data files of the snapshots, as `(partition, bucket, name)`.
fn live_file_set(
    storage: &dyn Storage,
    table: &Table,
    snapshots: &[Snapshot],
) -> Result<HashSet<FileKey>> {
    let mut out = HashSet::new();
    for s in snapshots {
        let manifests = snapshot_manifests(storage, &table.paths, s)?;
        let source = table.paths.snapshot(s.id);
        for (e, _) in live_entries(storage, &table.paths, &manifests, &source, &|_| true)? {
            out.insert((e.partition, e.bucket, e.file.file_name));
        }
    }
    Ok(out)
}

fn clean_data_files(
    storage: &dyn Storage,
    table: &Table,
    tag: &Snapshot,
    neighbours: &[Snapshot],
    deleter: &mut Deleter<'_>,
    report: &mut TagReport,
) -> Result<()> {
    let skip = match live_file_set(storage, table, neighbours) {
        Ok(s) => s,
        Err(e) => {
            report.warnings.push(format!(
                "skipped deleting the data files of the tag of snapshot {}: a neighbour could \
                 not be read: {e}",
                tag.id
            ));
            return Ok(());
        }
    };
    let planned = (|| -> Result<BTreeSet<String>> {
        let manifests = snapshot_manifests(storage, &table.paths, tag)?;
        let source = table.paths.snapshot(tag.id);
        let mut out = BTreeSet::new();
        for (e, src) in live_entries(storage, &table.paths, &manifests, &source, &|_| true)? {
            let key = (e.partition.clone(), e.bucket, e.file.file_name.clone());
            if skip.contains(&key) {
                continue;
            }
            let ppath = table.partition_path(&e.partition, &src)?;
            let data = table
                .paths
                .live_data_file(&ppath, e.bucket, &e.file, &src)?;
            let dir = data.rsplit_once('/').map_or("", |(d, _)| d).to_string();
            for extra in &e.file.extra_files {
                validate_name(extra, &src)?;
                out.insert(if dir.is_empty() {
                    extra.clone()
                } else {
                    format!("{dir}/{extra}")
                });
            }
            out.insert(data);
        }
        Ok(out)
    })();
    match planned {
        Ok(files) => {
            for f in files {
                deleter.delete(&f)?;
            }
        }
        Err(e) => report.warnings.push(format!(
            "skipped deleting the data files of the tag of snapshot {}: {e}",
            tag.id
        )),
    }
    Ok(())
}

/// Manifest lists, manifests, index manifests, index files and statistics the snapshots use.
fn manifest_skipping_set(
    storage: &dyn Storage,
    paths: &TablePaths,
    snapshots: &[Snapshot],
) -> Result<HashSet<String>> {
    let mut set = HashSet::new();
    for s in snapshots {
        set.insert(s.base_manifest_list.clone());
        set.insert(s.delta_manifest_list.clone());
        for m in snapshot_manifests(storage, paths, s)? {
            set.insert(m.file_name);
        }
        if let Some(im) = &s.index_manifest {
            set.insert(im.clone());
            for e in read_index_manifest(storage, paths, s)? {
                set.insert(e.file_name);
            }
        }
        if let Some(st) = &s.statistics {
            set.insert(st.clone());
        }
    }
    Ok(set)
}

fn clean_metadata(
    storage: &dyn Storage,
    paths: &TablePaths,
    tag: &Snapshot,
    neighbours: &[Snapshot],
    deleter: &mut Deleter<'_>,
    report: &mut TagReport,
) -> Result<()> {
    let mut claimed = match manifest_skipping_set(storage, paths, neighbours) {
        Ok(s) => s,
        Err(e) => {
            report.warnings.push(format!(
                "skipped deleting the manifests of the tag of snapshot {}: a neighbour could \
                 not be read: {e}",
                tag.id
            ));
            return Ok(());
        }
    };
    let source = paths.snapshot(tag.id);
    for list in [&tag.base_manifest_list, &tag.delta_manifest_list] {
        // An unreadable list: only the list itself goes.
        if let Ok(metas) = read_manifest_list(storage, paths, list, &source) {
            for m in metas {
                if claimed.insert(m.file_name.clone()) {
                    deleter.delete(&paths.manifest(&m.file_name, &source)?)?;
                }
            }
        }
        if claimed.insert(list.clone()) {
            deleter.delete(&paths.manifest(list, &source)?)?;
        }
    }
    if let Some(im) = &tag.index_manifest {
        match read_index_manifest(storage, paths, tag) {
            Ok(entries) => {
                for e in entries {
                    if claimed.insert(e.file_name.clone()) {
                        let p = match &e.external_path {
                            Some(x) => x.clone(),
                            None => paths.index_file(&e.file_name, &source)?,
                        };
                        deleter.delete(&p)?;
                    }
                }
                if claimed.insert(im.clone()) {
                    deleter.delete(&paths.manifest(im, &source)?)?;
                }
            }
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(e),
        }
    }
    if let Some(st) = &tag.statistics {
        if claimed.insert(st.clone()) {
            deleter.delete(&statistics_path(paths, st, &source)?)?;
        }
    }
    Ok(())
}

/// The state of automatic tag creation: the next snapshot to look at and the next period
/// start to tag (Paimon keeps both in the committer's memory).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TagAutoCreation {
    pub options: TagOptions,
    handler: TagPeriodHandler,
    /// Added to a snapshot's time or watermark to get the local time of the period zone.
    offset_ms: i64,
    pub next_snapshot: i64,
    /// Local ms; `None` before the first tag.
    pub next_tag: Option<i64>,
}

impl TagAutoCreation {
    /// Builds the state from the tags on storage; `None` when the table does not create tags
    /// in maintenance (`none`, or `batch`, which Paimon's batch writer handles).
    pub fn new(
        storage: &dyn Storage,
        table: &Table,
        ctx: &MaintenanceContext,
    ) -> Result<Option<Self>> {
        let options = TagOptions::from_options(&table.schema.options)?;
        let offset_ms = match options.mode {
            TagCreationMode::ProcessTime => options.process_offset_ms.unwrap_or(ctx.utc_offset_ms),
            TagCreationMode::Watermark => options.watermark_offset_ms,
            TagCreationMode::None | TagCreationMode::Batch => return Ok(None),
        };
        let handler = options.period_handler();
        if handler.period_ms() <= options.delay_ms {
            return Err(Error::invalid_option(
                "tag.creation-delay",
                &format!("{} ms", options.delay_ms),
                format!(
                    "must be shorter than the tag period ({} ms)",
                    handler.period_ms()
                ),
            ));
        }
        let tags = list_tag_entries(storage, &table.paths)?;
        let last = tags
            .iter()
            .filter_map(|t| {
                handler
                    .tag_to_time(&t.name)
                    .map(|time| (time, t.snapshot.id))
            })
            .max();
        let (next_snapshot, next_tag) = match last {
            Some((time, id)) => (id + 1, Some(time + handler.period_ms())),
            None => (
                earliest_snapshot_id(storage, &table.paths)?.unwrap_or(1),
                None,
            ),
        };
        Ok(Some(TagAutoCreation {
            options,
            handler,
            offset_ms,
            next_snapshot,
            next_tag,
        }))
    }

    /// Walks the snapshots from `next_snapshot` on and creates (and caps) tags.
    pub fn run(
        &mut self,
        storage: &dyn Storage,
        table: &Table,
        ctx: &MaintenanceContext,
    ) -> Result<TagReport> {
        let mut report = TagReport {
            dry_run: ctx.dry_run,
            ..Default::default()
        };
        let mut tags = list_tag_entries(storage, &table.paths)?;
        let mut deleter = Deleter::new(storage, ctx.dry_run);
        let result = (|| -> Result<()> {
            loop {
                match try_read_snapshot(storage, &table.paths, self.next_snapshot)? {
                    Some((bytes, snapshot)) => {
                        self.try_create(
                            storage,
                            table,
                            ctx,
                            &bytes,
                            &snapshot,
                            &mut tags,
                            &mut deleter,
                            &mut report,
                        )?;
                        self.next_snapshot += 1;
                    }
                    None => match earliest_snapshot_id(storage, &table.paths)? {
                        Some(e) if e > self.next_snapshot => self.next_snapshot = e,
                        _ => return Ok(()),
                    },
                }
            }
        })();
        report.deleted_files = std::mem::take(&mut deleter.deleted);
        result.map(|()| report)
    }

    #[allow(clippy::too_many_arguments)]
    fn try_create(
        &mut self,
        storage: &dyn Storage,
        table: &Table,
        ctx: &MaintenanceContext,
        bytes: &[u8],
        snapshot: &Snapshot,
        tags: &mut Vec<TagEntry>,
        deleter: &mut Deleter<'_>,
        report: &mut TagReport,
    ) -> Result<()> {
        let time = match self.options.mode {
            TagCreationMode::ProcessTime => snapshot.time_millis.saturating_add(self.offset_ms),
            TagCreationMode::Watermark => match snapshot.watermark {
                None | Some(i64::MIN) => return Ok(()),
                Some(w) => w.saturating_add(self.offset_ms),
            },
            TagCreationMode::None | TagCreationMode::Batch => return Ok(()),
        };
        let period = self.handler.period_ms();
        let due = self
            .next_tag
            .is_none_or(|next| time.saturating_sub(self.options.delay_ms) >= next + period);
        if !due {
            return Ok(());
        }
        let mut this_tag = self.handler.normalize_to_previous_tag(time);
        if self.options.automatic_completion {
            if let Some(next) = self.next_tag {
                this_tag = next;
            }
        }
        let name = self.handler.time_to_tag(this_tag);
        if !tags.iter().any(|t| t.name == name) {
            validate_no_auto_tag(&self.handler, tags, &name, snapshot.id)?;
            let retained = self.options.default_time_retained_ms;
            let file = table.paths.snapshot(snapshot.id);
            let content = tag_json(bytes, &file, retained.map(|r| (ctx.local_now_ms(), r)))?;
            let path = tag_path(&table.paths, &name)?;
            if !ctx.dry_run {
                storage.write_all(&path, &content)?;
            }
            tags.push(parse_tag(&name, &content, &path)?);
            report.created.push(CreatedTag {
                name: name.clone(),
                snapshot_id: snapshot.id,
                time_retained_ms: retained,
            });
        }
        self.next_tag = Some(this_tag + period);
        if let Some(max) = self.options.num_retained_max {
            let mut auto: BTreeMap<i64, Vec<String>> = BTreeMap::new();
            for t in tags.iter().filter(|t| self.handler.is_auto_tag(&t.name)) {
                auto.entry(t.snapshot.id).or_default().push(t.name.clone());
            }
            if auto.len() > max {
                let excess = auto.len() - max;
                for names in auto.values().take(excess) {
                    if names.len() != 1 {
                        return Err(Error::illegal_state(format!(
                            "There are more than 1 auto-created tags of the same snapshot: {}. \
                             This is unexpected.",
                            names.join(",")
                        )));
                    }
                    delete_tag_with(
                        storage,
                        table,
                        &names[0],
                        tags,
                        deleter,
                        report,
                        TagDeleteReason::NumRetainedMax,
                    )?;
                }
            }
        }
        Ok(())
    }
}

/// The maintenance step: creates the tags that are due (nothing unless
/// `tag.automatic-creation` is `process-time` or `watermark`).
pub fn auto_create_tags(
    storage: &dyn Storage,
    table: &Table,
    ctx: &MaintenanceContext,
) -> Result<TagReport> {
    match TagAutoCreation::new(storage, table, ctx)? {
        Some(mut creation) => creation.run(storage, table, ctx),
        None => Ok(TagReport {
            dry_run: ctx.dry_run,
            ..Default::default()
        }),
    }
}

/// The maintenance step: deletes the tags whose retention has passed (nothing when
/// `tag.time-expire-enabled` is false).
pub fn expire_tags(
    storage: &dyn Storage,
    table: &Table,
    ctx: &MaintenanceContext,
) -> Result<TagReport> {
    let options = TagOptions::from_options(&table.schema.options)?;
    if !options.time_expire_enabled {
        return Ok(TagReport {
            dry_run: ctx.dry_run,
            ..Default::default()
        });
    }
    expire_tags_older_than(storage, table, ctx, None)
}

/// The `expire_tags` procedure: deletes tags whose retention has passed and, with
/// `older_than_local_ms`, tags created before it; a tag without `tagCreateTime` is then judged
/// by its file's modification time (from the storage listing, read as local time), and kept
/// with a warning when the storage does not know it.
pub fn expire_tags_older_than(
    storage: &dyn Storage,
    table: &Table,
    ctx: &MaintenanceContext,
    older_than_local_ms: Option<i64>,
) -> Result<TagReport> {
    let mut report = TagReport {
        dry_run: ctx.dry_run,
        ..Default::default()
    };
    let mut tags = list_tag_entries(storage, &table.paths)?;
    let mut deleter = Deleter::new(storage, ctx.dry_run);
    let now = ctx.local_now_ms();
    let names: Vec<String> = tags.iter().map(|t| t.name.clone()).collect();
    let result = (|| -> Result<()> {
        for name in names {
            let Some(t) = tags.iter().find(|t| t.name == name) else {
                continue;
            };
            let create = match (t.create_time_local_ms, older_than_local_ms) {
                (Some(c), _) => Some(c),
                (None, Some(_)) => match t.file_modified_ms {
                    Some(m) => Some(m.saturating_add(ctx.utc_offset_ms)),
                    None => {
                        report.warnings.push(format!(
                            "tag '{name}' has no creation time and the storage gives no \
                             modification time; kept"
                        ));
                        None
                    }
                },
                (None, None) => None,
            };
            let Some(create) = create else {
                continue;
            };
            let reason = if t
                .time_retained_ms
                .is_some_and(|r| now > create.saturating_add(r))
            {
                Some(TagDeleteReason::TimeRetained)
            } else if older_than_local_ms.is_some_and(|o| o > create) {
                Some(TagDeleteReason::OlderThan)
            } else {
                None
            };
            if let Some(reason) = reason {
                delete_tag_with(
                    storage,
                    table,
                    &name,
                    &mut tags,
                    &mut deleter,
                    &mut report,
                    reason,
                )?;
            }
        }
        Ok(())
    })();
    report.deleted_files = deleter.deleted;
    result.map(|()| report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handler(period: &str, formatter: &str) -> TagPeriodHandler {
        let raw: BTreeMap<String, String> = [
            ("tag.creation-period", period),
            ("tag.period-formatter", formatter),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        TagOptions::from_options(&raw).unwrap().period_handler()
    }

    fn at(y: i64, m: i64, d: i64, h: i64) -> i64 {
        time::days_from_civil(y, m, d) * time::DAY_MS + h * 3_600_000
    }

    #[test]
    fn names_parse_as_in_java() {
        let daily = handler("daily", "with_dashes");
        assert_eq!(daily.time_to_tag(at(2023, 7, 18, 11)), "2023-07-18");
        assert_eq!(daily.tag_to_time("2023-07-18"), Some(at(2023, 7, 18, 0)));
        assert_eq!(daily.tag_to_time("2023-07-18 11"), Some(at(2023, 7, 18, 0)));
        assert!(!daily.is_auto_tag("savepoint"));
        let hourly = handler("hourly", "with_dashes");
        assert_eq!(hourly.time_to_tag(at(2023, 7, 18, 11)), "2023-07-18 11");
        assert_eq!(
            hourly.tag_to_time("2023-07-18 25"),
            Some(at(2023, 7, 19, 1))
        );
        // JDK 17: a variable-width year directly followed by the month swallows all digits.
        let nd = handler("daily", "without_dashes");
        assert_eq!(nd.time_to_tag(at(2023, 7, 18, 0)), "20230718");
        assert!(!nd.is_auto_tag("20230718"));
        let nds = handler("hourly", "without_dashes_and_spaces");
        assert_eq!(nds.time_to_tag(at(2023, 7, 18, 11)), "2023071811");
        assert!(!nds.is_auto_tag("2023071811"));
        assert_eq!(
            hourly.normalize_to_previous_tag(at(2023, 7, 18, 12) + 12 * 60_000),
            at(2023, 7, 18, 11)
        );
    }

    #[test]
    fn ttl_fields_round_trip() {
        let snap = br#"{"version":3,"id":3,"schemaId":0,"baseManifestList":"a","deltaManifestList":"b","commitUser":"u","commitIdentifier":1,"commitKind":"APPEND","timeMillis":5}"#;
        assert_eq!(tag_json(snap, "s", None).unwrap(), snap.to_vec());
        let created = at(2023, 7, 18, 12) + 30 * 60_000;
        let bytes = tag_json(snap, "s", Some((created, 5_000))).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.contains("\"tagTimeRetained\": 5.000000000"), "{text}");
        assert!(
            text.contains("2023,\n    7,\n    18,\n    12,\n    30\n"),
            "{text}"
        );
        let t = parse_tag("x", &bytes, "x").unwrap();
        assert_eq!(t.create_time_local_ms, Some(created));
        assert_eq!(t.time_retained_ms, Some(5_000));
        assert_eq!(t.snapshot.id, 3);
        let java = br#"{"version":3,"id":1,"schemaId":0,"baseManifestList":"a","deltaManifestList":"b","commitUser":"u","commitIdentifier":1,"commitKind":"APPEND","timeMillis":5,"tagCreateTime":[1969,1,1,0,0,0,123456789],"tagTimeRetained":86400.000000000}"#;
        let t = parse_tag("y", java, "y").unwrap();
        assert_eq!(t.time_retained_ms, Some(86_400_000));
        assert_eq!(
            t.create_time_local_ms,
            Some(time::days_from_civil(1969, 1, 1) * time::DAY_MS + 123)
        );
    }

    #[test]
    fn zones() {
        assert_eq!(zone_offset_ms("k", "UTC").unwrap(), 0);
        assert_eq!(zone_offset_ms("k", "+08:00").unwrap(), 8 * 3_600_000);
        assert_eq!(
            zone_offset_ms("k", "GMT-0530").unwrap(),
            -(5 * 60 + 30) * 60_000
        );
        assert_eq!(zone_offset_ms("k", "UTC+8").unwrap(), 8 * 3_600_000);
        assert!(zone_offset_ms("k", "Asia/Shanghai").is_err());
    }
}
