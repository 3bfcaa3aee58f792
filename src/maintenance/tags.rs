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
//! Only the main branch (`<table>/tag/`) is handled. This file holds the tag files, the options
//! and the period names; `auto` the automatic creation and expiry, `deletion` what a deletion
//! removes.

mod auto;
mod deletion;

use super::time::{self, Builder, Field, Sign, Style, Tok};
use super::{Deleter, MaintenanceContext};
use crate::error::{Error, Result};
use crate::storage::{Storage, StorageErrorKind};
use crate::table::path::{validate_name, TablePaths};
use crate::table::scan::Table;
use crate::table::snapshot::Snapshot;

pub use auto::{auto_create_tags, expire_tags, expire_tags_older_than, TagAutoCreation};
use deletion::delete_tag_with;

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
    /// The tag's name: the file is `tag/tag-<name>`.
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
            time::local_date_time_ms([n[0], n[1], n[2], n[3], n[4], get(5), get(6)])
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
            if !frac.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let ms = if frac.is_empty() {
                0
            } else {
                format!("{frac:0<3}").get(..3)?.parse::<i64>().ok()?
            };
            let second = t.get(2).copied().unwrap_or(0);
            time::local_date_time_ms([d[0], d[1], d[2], t[0], t[1], second, ms * 1_000_000])
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
    /// The handler for `tag.creation-period` and `tag.period-formatter`, or for
    /// `tag.creation-period-duration` when set (which then wins, with `yyyyMMddHHmm` names).
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

    /// Length of one period in milliseconds (`tag.creation-period`, or
    /// `tag.creation-period-duration` when set).
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

    /// Whether `name` parses as a period name of this format, i.e. counts as an automatic tag
    /// (for `tag.num-retained-max` and the resume point); other tags are manual.
    pub fn is_auto_tag(&self, name: &str) -> bool {
        self.tag_to_time(name).is_some()
    }

    /// The name of the period starting at `local_ms` (local wall-clock milliseconds).
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
    /// An automatic tag beyond `tag.num-retained-max`, oldest first, after a creation.
    NumRetainedMax,
    /// Its own retention passed: the local clock is strictly past `tagCreateTime +
    /// tagTimeRetained`.
    TimeRetained,
    /// Created before the `older_than` of the `expire_tags` procedure.
    OlderThan,
    /// Deleted by name ([`delete_tag`]).
    Requested,
}

/// A tag written (in a dry run: that would be).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CreatedTag {
    /// The tag's name.
    pub name: String,
    /// The snapshot it copies.
    pub snapshot_id: i64,
    /// The retention written as `tagTimeRetained`, in milliseconds; `None`: none, the tag is
    /// kept until deleted or capped.
    pub time_retained_ms: Option<i64>,
}

/// A tag deleted (in a dry run: that would be).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeletedTag {
    /// The tag's name.
    pub name: String,
    /// The snapshot it named.
    pub snapshot_id: i64,
    /// Which rule deleted it.
    pub reason: TagDeleteReason,
    /// Whether the files only this tag protected were looked for (its snapshot had expired
    /// and no other tag names it).
    pub cleaned: bool,
}

/// What a tag step did (in a dry run: would do).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TagReport {
    /// The run only reported ([`MaintenanceContext::dry_run`]): no tag file was written or
    /// deleted.
    pub dry_run: bool,
    /// Tags created, in creation order.
    pub created: Vec<CreatedTag>,
    /// Tags deleted, in deletion order.
    pub deleted: Vec<DeletedTag>,
    /// Every file deleted: tag files, then data, manifest, index and statistics files.
    pub deleted_files: Vec<String>,
    /// Tags kept or cleanups cancelled because something could not be read or judged (e.g. a
    /// missing tag, an unreadable neighbour); none of them fails the run.
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

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
        // Fields Java's LocalDateTime refuses, and times past i64 milliseconds, make the tag
        // file corrupt input, never a wrapped time or an overflow (the `json_metadata` fuzz
        // target's finding, `fuzz/README.md`).
        let with = |create: &str| {
            String::from_utf8_lossy(java).replace("[1969,1,1,0,0,0,123456789]", create)
        };
        for bad in [
            "[9223372036854775807,1,1,0,0]",
            "[2024,13,1,0,0]",
            "[2023,2,29,0,0]",
            "[2024,1,1,24,0]",
            "[2024,1,1,0,0,0,1000000000]",
            "[999999999,12,31,23,59]",
            "\"2024-01-01T00:00:00.\u{e9}\u{e9}\"",
            "\"2024-02-30T00:00\"",
        ] {
            let e = parse_tag("z", with(bad).as_bytes(), "z").unwrap_err();
            assert!(
                e.to_string().contains("unreadable 'tagCreateTime'"),
                "{bad}: {e}"
            );
        }
        let leap = parse_tag("z", with("\"2024-02-29T01:02:03.5\"").as_bytes(), "z").unwrap();
        assert_eq!(
            leap.create_time_local_ms,
            Some(time::days_from_civil(2024, 2, 29) * time::DAY_MS + 3_723_500)
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
        // Regions come from the bundled database, with their offset at each instant.
        use crate::options::maintenance::TimeZoneOption;
        let shanghai = TimeZoneOption::parse("k", "Asia/Shanghai").unwrap();
        assert_eq!(shanghai.offset_ms_at(0), 8 * 3_600_000);
        let ny = TimeZoneOption::parse("k", " America/New_York ").unwrap();
        let july_2023 = time::days_from_civil(2023, 7, 1) * time::DAY_MS;
        let jan_2024 = time::days_from_civil(2024, 1, 1) * time::DAY_MS;
        assert_eq!(ny.offset_ms_at(july_2023), -4 * 3_600_000);
        assert_eq!(ny.offset_ms_at(jan_2024), -5 * 3_600_000);
        assert_eq!(
            TimeZoneOption::parse("k", "+08:00").unwrap(),
            TimeZoneOption::Offset(8 * 3_600_000)
        );
        assert!(TimeZoneOption::parse("k", "Mars/Olympus_Mons").is_err());
    }
}
