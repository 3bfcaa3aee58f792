//! The options of table maintenance, declared like the core's (`declare.rs`): each key
//! once, with its parser, range and default.
//!
//! Maintenance reads them per task and on demand, as Paimon does: a malformed tag option does
//! not stop snapshot expiration. So each task's options are a table of their own, read by the
//! task's config (`ExpireConfig`, `PartitionExpireConfig`, [`TagOptions`], consumer expiry in
//! `crate::maintenance`), which adds the derived defaults. [`keys`] lists them all.

use super::declare::{
    declare_options, duration_ms, int, parse_bool, read_first, string_enum, I32_MAX,
};
use crate::error::{Error, Result};

/// `snapshot.num-retained.min`.
pub const NUM_RETAINED_MIN: &str = "snapshot.num-retained.min";
/// `snapshot.num-retained.max`.
pub const NUM_RETAINED_MAX: &str = "snapshot.num-retained.max";
/// `snapshot.time-retained`.
pub const TIME_RETAINED: &str = "snapshot.time-retained";
/// `snapshot.expire.limit`.
pub const EXPIRE_LIMIT: &str = "snapshot.expire.limit";
/// `snapshot.expire.execution-mode`.
pub const EXECUTION_MODE: &str = "snapshot.expire.execution-mode";
/// `snapshot.clean-empty-directories` (and its fallback key).
pub const CLEAN_EMPTY_DIRECTORIES: &str = "snapshot.clean-empty-directories";
const CLEAN_EMPTY_DIRECTORIES_FALLBACK: &str = "snapshot.expire.clean-empty-directories";
/// `changelog.num-retained.min`.
pub const CHANGELOG_NUM_RETAINED_MIN: &str = "changelog.num-retained.min";
/// `changelog.num-retained.max`.
pub const CHANGELOG_NUM_RETAINED_MAX: &str = "changelog.num-retained.max";
/// `changelog.time-retained`.
pub const CHANGELOG_TIME_RETAINED: &str = "changelog.time-retained";
/// `consumer.changelog-only`.
pub const CONSUMER_CHANGELOG_ONLY: &str = "consumer.changelog-only";

/// `partition.expiration-time`: how old a partition must be to expire; setting it enables
/// partition expiration (maintenance-rules.md §7.1).
pub const EXPIRATION_TIME: &str = "partition.expiration-time";
/// `partition.expiration-check-interval`: minimum gap between two checks (maintenance-rules.md
/// §7.2).
pub const CHECK_INTERVAL: &str = "partition.expiration-check-interval";
/// `partition.expiration-strategy`: `values-time` or `update-time`.
pub const STRATEGY: &str = "partition.expiration-strategy";
/// `partition.timestamp-formatter`: the Java `DateTimeFormatter` pattern partition texts are
/// read with.
pub const TIMESTAMP_FORMATTER: &str = "partition.timestamp-formatter";
/// `partition.timestamp-pattern`: how partition values form the text to read, such as
/// `$dt $hr:00:00`.
pub const TIMESTAMP_PATTERN: &str = "partition.timestamp-pattern";
/// `partition.expiration-max-num`: partitions expired per check at most.
pub const MAX_NUM: &str = "partition.expiration-max-num";
/// `partition.expiration-batch-size`: partitions dropped per OVERWRITE commit.
pub const BATCH_SIZE: &str = "partition.expiration-batch-size";
/// `end-input.check-partition-expire`: always check on the end-of-input commit.
pub const END_INPUT_CHECK: &str = "end-input.check-partition-expire";
/// `compaction.skip-expired-partitions`: compaction leaves partitions expired by value alone.
pub const SKIP_EXPIRED: &str = "compaction.skip-expired-partitions";

/// `consumer.expiration-time`.
pub const CONSUMER_EXPIRATION_TIME: &str = "consumer.expiration-time";

string_enum!(
    /// `snapshot.expire.execution-mode`: where the post-commit hook runs expiration. Expiration
    /// itself behaves the same either way; the hook that calls it decides.
    ExpireExecutionMode {
        /// The hook expires in the committing thread (Paimon's default).
        Sync = "sync",
        /// The hook expires in the background, after the commit returns.
        Async = "async",
    }
);

string_enum!(
    /// `tag.automatic-creation`.
    TagCreationMode {
        /// No automatic tags (Paimon's default).
        None = "none",
        /// Tags by each snapshot's commit time, in `sink.process-time-zone`.
        ProcessTime = "process-time",
        /// Tags by each snapshot's watermark, in `sink.watermark-time-zone`.
        Watermark = "watermark",
        /// Created by Paimon's Flink batch writer, not by maintenance.
        Batch = "batch",
    }
    spelled with_dashes, expected "expected none, process-time, watermark or batch"
);

string_enum!(
    /// `tag.creation-period`.
    TagCreationPeriod {
        /// One tag per day, such as `2023-07-18` (Paimon's default).
        Daily = "daily",
        /// One tag per hour, such as `2023-07-18 11`.
        Hourly = "hourly",
        /// One tag per two hours, always named like `2023-07-18 11`.
        TwoHours = "two-hours",
    }
    spelled with_dashes, expected "expected daily, hourly or two-hours"
);

string_enum!(
    /// `tag.period-formatter`.
    TagPeriodFormatter {
        /// `2023-07-18`, `2023-07-18 11` (Paimon's default).
        WithDashes = "with_dashes",
        /// `20230718`, `20230718 11`.
        WithoutDashes = "without_dashes",
        /// `20230718`, `2023071811`.
        WithoutDashesAndSpaces = "without_dashes_and_spaces",
    }
    spelled with_underscores,
    expected "expected with_dashes, without_dashes or without_dashes_and_spaces"
);

/// How a partition's age is judged (`partition.expiration-strategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExpireStrategy {
    /// The time spelled by the partition values.
    ValuesTime,
    /// The newest creation time of the partition's live files.
    UpdateTime,
}

/// Paimon's enum spelling for tag options: case and `-`/`_` do not matter.
fn with_dashes(v: &str) -> String {
    v.trim().to_ascii_lowercase().replace('_', "-")
}

/// [`with_dashes`] for values spelled with underscores.
fn with_underscores(v: &str) -> String {
    v.trim().to_ascii_lowercase().replace('-', "_")
}

declare_options! {
    /// Snapshot and changelog expiration (Paimon's `ExpireConfig`); defaults that copy other
    /// values are applied by `ExpireConfig::from_options`.
    pub struct ExpireOptions {
        /// `snapshot.num-retained.min`: the newest snapshots that always stay (at least 1;
        /// `None`: 10). With its text, which names it in the `min > max` error.
        retain_min: Option<(i32, String)> = NUM_RETAINED_MIN => int_and_text(1);
        /// `snapshot.num-retained.max`: snapshots older than the newest this many go whatever
        /// their age (default unlimited, `i32::MAX`).
        retain_max: i32 = NUM_RETAINED_MAX => int(1, I32_MAX), default i32::MAX,
            then retain_min_within_max(&retain_min, retain_max);
        /// `snapshot.time-retained` in milliseconds (default 1 h): a snapshot goes once its
        /// successor is older than this (maintenance-rules.md §4.2).
        time_retained_ms: i64 = TIME_RETAINED => millis_saturating, default 3_600_000;
        /// `snapshot.expire.limit` (default 50): snapshots, and changelogs, removed per run at
        /// most; zero or negative removes none.
        max_deletes: i32 = EXPIRE_LIMIT => int(i32::MIN as i64, I32_MAX), default 50;
        /// `snapshot.clean-empty-directories`: report the directories a run emptied
        /// (maintenance-rules.md §4.6).
        clean_empty_directories: bool = CLEAN_EMPTY_DIRECTORIES | CLEAN_EMPTY_DIRECTORIES_FALLBACK
            => parse_bool, default false;
        /// Default: the snapshot minimum.
        changelog_retain_min: Option<i32> = CHANGELOG_NUM_RETAINED_MIN => int(1, I32_MAX);
        /// Default: the snapshot maximum.
        changelog_retain_max: Option<i32> = CHANGELOG_NUM_RETAINED_MAX => int(1, I32_MAX);
        /// Default: the snapshot time.
        changelog_time_retained_ms: Option<i64> = CHANGELOG_TIME_RETAINED => millis_saturating;
        /// `consumer.changelog-only`: with decoupled changelogs, consumers protect changelogs
        /// only, not snapshots.
        consumer_changelog_only: bool = CONSUMER_CHANGELOG_ONLY => parse_bool, default false;
        /// `snapshot.expire.execution-mode`: parsed for the post-commit hook only.
        execution_mode: ExpireExecutionMode =
            EXECUTION_MODE => ExpireExecutionMode::parse, default ExpireExecutionMode::Sync;
    }
}

/// The snapshot minimum must not exceed the maximum.
fn retain_min_within_max(min: &Option<(i32, String)>, max: i32) -> Result<()> {
    let retain_min = min.as_ref().map_or(10, |(n, _)| *n);
    if retain_min > max {
        return Err(Error::invalid_option(
            NUM_RETAINED_MIN,
            min.as_ref().map_or("10", |(_, v)| v),
            format!("must not exceed {NUM_RETAINED_MAX} ({max})"),
        ));
    }
    Ok(())
}

declare_options! {
    /// When partitions expire and how their age is judged. Read only when
    /// `partition.expiration-time` is set; the timestamp formatter is checked before
    /// [`PartitionExpireLimits`] are read.
    pub struct PartitionExpireOptions {
        /// Always set when read through [`PartitionExpireOptions::read_if_enabled`].
        expiration_time_ms: Option<i64> = EXPIRATION_TIME => millis;
        /// Minimum gap between checks in milliseconds (default 1 h; 0 checks every time).
        check_interval_ms: i64 = CHECK_INTERVAL => millis, default 3_600_000;
        /// How a partition's age is judged (default `values-time`).
        strategy: ExpireStrategy = STRATEGY => expire_strategy, default ExpireStrategy::ValuesTime;
        /// Not trimmed: a pattern's spaces are part of it.
        timestamp_formatter: Option<String> = TIMESTAMP_FORMATTER => verbatim;
    }
}

declare_options! {
    /// How much one partition-expiration check does.
    pub struct PartitionExpireLimits {
        /// Partitions expired per check at most (default 100).
        max_num: usize = MAX_NUM => non_negative_count, default 100;
        /// Partitions per OVERWRITE commit. Default: `max_num`.
        batch_size: Option<i64> = BATCH_SIZE => java_int;
        /// Template with `$column` placeholders; `None`: the first partition value alone.
        /// Not trimmed.
        timestamp_pattern: Option<String> = TIMESTAMP_PATTERN => verbatim;
        /// Check on an end-of-input commit whatever the interval.
        end_input_check: bool = END_INPUT_CHECK => parse_bool, default false;
        /// Compaction skips partitions expired by value (`values-time` only).
        skip_expired_in_compaction: bool = SKIP_EXPIRED => parse_bool, default false;
    }
}

impl PartitionExpireOptions {
    /// `None` when `partition.expiration-time` is not set: partitions never expire, and the
    /// other keys are not read (a malformed one does not matter then, as in Paimon).
    pub fn read_if_enabled(
        raw: &std::collections::BTreeMap<String, String>,
    ) -> Result<Option<Self>> {
        if read_first(raw, &[EXPIRATION_TIME], &millis)?.is_none() {
            return Ok(None);
        }
        Self::read(raw).map(Some)
    }
}

/// `values-time` or `update-time`, exactly (trimmed), as Paimon's `partitionExpireStrategy`.
fn expire_strategy(key: &str, v: &str) -> Result<ExpireStrategy> {
    match v.trim() {
        "values-time" => Ok(ExpireStrategy::ValuesTime),
        "update-time" => Ok(ExpireStrategy::UpdateTime),
        other => Err(Error::invalid_option(
            key,
            other,
            format!("Unknown partitionExpireStrategy: {other} (values-time or update-time)"),
        )),
    }
}

/// A Java `int`, widened.
fn java_int(key: &str, v: &str) -> Result<i64> {
    v.trim()
        .parse::<i32>()
        .map(i64::from)
        .map_err(|_| Error::invalid_option(key, v, "expected a whole number"))
}

/// A Java `int` that must not be negative.
fn non_negative_count(key: &str, v: &str) -> Result<usize> {
    match java_int(key, v)? {
        n if n >= 0 => Ok(n as usize),
        n => Err(Error::invalid_option(
            key,
            &n.to_string(),
            "must not be negative",
        )),
    }
}

declare_options! {
    /// Automatic tag creation and expiry.
    pub struct TagDeclared {
        /// See [`TagOptions::mode`].
        mode: TagCreationMode =
            "tag.automatic-creation" => TagCreationMode::parse, default TagCreationMode::None;
        /// See [`TagOptions::period`].
        period: TagCreationPeriod =
            "tag.creation-period" => TagCreationPeriod::parse, default TagCreationPeriod::Daily;
        /// See [`TagOptions::formatter`].
        formatter: TagPeriodFormatter = "tag.period-formatter" => TagPeriodFormatter::parse,
            default TagPeriodFormatter::WithDashes;
        /// Negative counts read as zero.
        num_retained_max: Option<usize> = "tag.num-retained-max" => java_int_at_least_zero;
        /// See [`TagOptions::watermark_zone`].
        watermark_zone: TimeZoneOption = "sink.watermark-time-zone" => TimeZoneOption::parse,
            default TimeZoneOption::Offset(0);
        /// See [`TagOptions::process_zone`].
        process_zone: Option<TimeZoneOption> = "sink.process-time-zone" => TimeZoneOption::parse;
        /// See [`TagOptions::period_duration_ms`].
        period_duration_ms: Option<i64> = "tag.creation-period-duration" => positive_millis;
        /// See [`TagOptions::delay_ms`].
        delay_ms: i64 = "tag.creation-delay" => millis, default 0;
        /// See [`TagOptions::default_time_retained_ms`].
        default_time_retained_ms: Option<i64> = "tag.default-time-retained" => millis;
        /// See [`TagOptions::time_expire_enabled`].
        time_expire_enabled: bool = "tag.time-expire-enabled" => parse_bool, default true;
        /// See [`TagOptions::automatic_completion`].
        automatic_completion: bool =
            "tag.automatic-completion" => parse_bool, default false;
    }
}

/// The tag options of a table.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TagOptions {
    /// `tag.automatic-creation` (default `none`): whether and by which time tags are created
    /// automatically.
    pub mode: TagCreationMode,
    /// `tag.creation-period` (default `daily`): the period one automatic tag covers.
    pub period: TagCreationPeriod,
    /// `tag.creation-period-duration`: replaces `period`, names `yyyyMMddHHmm`.
    pub period_duration_ms: Option<i64>,
    /// `tag.creation-delay` in milliseconds (default 0, must be below the period): how long
    /// after a period ends its tag is created.
    pub delay_ms: i64,
    /// `tag.period-formatter` (default `with_dashes`): how automatic tag names are spelled.
    pub formatter: TagPeriodFormatter,
    /// `tag.num-retained-max`: automatic tags kept at most, oldest deleted first; `None` for
    /// no cap. Manual tags never count.
    pub num_retained_max: Option<usize>,
    /// `tag.default-time-retained` in milliseconds: the retention written into a new tag
    /// that is not given one; `None` writes none.
    pub default_time_retained_ms: Option<i64>,
    /// `tag.time-expire-enabled` (default true): delete tags whose retention has passed
    /// (maintenance-rules.md §8.3).
    pub time_expire_enabled: bool,
    /// `tag.automatic-completion`: name a new tag after the next missing period rather than
    /// the period before the snapshot's own.
    pub automatic_completion: bool,
    /// `sink.watermark-time-zone` (default UTC): the zone whose wall clock names tags.
    pub watermark_zone: TimeZoneOption,
    /// `sink.process-time-zone`; `None`: the host's zone.
    pub process_zone: Option<TimeZoneOption>,
}

impl TagOptions {
    /// Reads the tag options out of a table's raw options; a malformed one is an
    /// `invalid-option` error naming its key.
    pub fn from_options(raw: &std::collections::BTreeMap<String, String>) -> Result<Self> {
        let d = TagDeclared::read(raw)?;
        Ok(TagOptions {
            mode: d.mode,
            period: d.period,
            period_duration_ms: d.period_duration_ms,
            delay_ms: d.delay_ms,
            formatter: d.formatter,
            num_retained_max: d.num_retained_max,
            default_time_retained_ms: d.default_time_retained_ms,
            time_expire_enabled: d.time_expire_enabled,
            automatic_completion: d.automatic_completion,
            watermark_zone: d.watermark_zone,
            process_zone: d.process_zone,
        })
    }
}

/// A Java `int`; a negative count reads as zero.
fn java_int_at_least_zero(key: &str, v: &str) -> Result<usize> {
    v.trim()
        .parse::<i32>()
        .map(|n| n.max(0) as usize)
        .map_err(|_| Error::invalid_option(key, v, "expected a whole number"))
}

declare_options! {
    /// Consumer expiry.
    pub struct ConsumerOptions {
        /// `consumer.expiration-time` in milliseconds: consumers whose file was last modified
        /// longer ago are deleted; `None`: consumers never expire.
        expiration_ms: Option<i64> = CONSUMER_EXPIRATION_TIME => millis;
    }
}

/// A duration in milliseconds that must fit an `i64`.
fn millis(key: &str, v: &str) -> Result<i64> {
    let ms = duration_ms(key, v)?;
    i64::try_from(ms).map_err(|_| Error::invalid_option(key, v, "too large"))
}

/// A duration in milliseconds that is at least one millisecond: a period that tags are cut
/// by, which a zero would make endless.
fn positive_millis(key: &str, v: &str) -> Result<i64> {
    match millis(key, v)? {
        0 => Err(Error::invalid_option(
            key,
            v,
            "a period must be longer than zero",
        )),
        ms => Ok(ms),
    }
}

/// A duration in milliseconds, saturating at `i64::MAX` (Paimon's expiration times).
fn millis_saturating(key: &str, v: &str) -> Result<i64> {
    duration_ms(key, v).map(|ms| i64::try_from(ms).unwrap_or(i64::MAX))
}

/// The text as written.
fn verbatim(_key: &str, v: &str) -> Result<String> {
    Ok(v.to_string())
}

/// A whole number in `min..=i32::MAX`, with the text it was written as.
fn int_and_text(min: i64) -> impl Fn(&str, &str) -> Result<(i32, String)> {
    move |key, v| Ok((int(min, I32_MAX)(key, v)?, v.to_string()))
}

/// A time zone option (`sink.watermark-time-zone`, `sink.process-time-zone`): a fixed offset,
/// or, in builds with the table layer, a region of the IANA database bundled with it (such as
/// `Asia/Shanghai`), whose offset changes with the date as Java's `ZoneId` rules say.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TimeZoneOption {
    /// Milliseconds east of UTC.
    Offset(i64),
    /// A region of the bundled database, by its name.
    #[cfg(feature = "rewrite")]
    Region(String),
}

impl TimeZoneOption {
    /// A fixed offset ([`zone_offset_ms`]), else a region name the bundled database knows.
    pub fn parse(key: &str, text: &str) -> Result<Self> {
        let fixed = zone_offset_ms(key, text);
        #[cfg(feature = "rewrite")]
        if fixed.is_err() {
            let name = text.trim();
            if jiff::tz::db().get(name).is_ok() {
                return Ok(TimeZoneOption::Region(name.to_string()));
            }
            return Err(Error::invalid_option(
                key,
                text,
                "expected UTC, a fixed offset such as +08:00, or a region such as Asia/Shanghai",
            ));
        }
        fixed.map(TimeZoneOption::Offset)
    }

    /// The zone's offset from UTC at the instant `utc_ms`, in milliseconds (Java's
    /// `ZoneId.getRules().getOffset(instant)`); a region the database no longer knows (only
    /// after deserializing another build's options) counts as UTC.
    pub fn offset_ms_at(&self, utc_ms: i64) -> i64 {
        #[cfg(not(feature = "rewrite"))]
        let _ = utc_ms;
        match self {
            TimeZoneOption::Offset(ms) => *ms,
            #[cfg(feature = "rewrite")]
            TimeZoneOption::Region(name) => jiff::tz::db()
                .get(name)
                .ok()
                .zip(jiff::Timestamp::from_millisecond(utc_ms).ok())
                .map(|(zone, t)| i64::from(zone.to_offset(t).seconds()) * 1000)
                .unwrap_or(0),
        }
    }
}

/// A zone as a fixed offset from UTC: `UTC`, `GMT`, `UT`, `Z`, or an offset (`+08:00`,
/// `-0530`, `+8`, `UTC+8`, `GMT+08:00`). Region names are [`TimeZoneOption`]'s.
pub fn zone_offset_ms(key: &str, text: &str) -> Result<i64> {
    let t = text.trim();
    let upper = t.to_ascii_uppercase();
    let rest = ["UTC", "GMT", "UT"]
        .iter()
        .find_map(|p| upper.strip_prefix(p))
        .unwrap_or(&upper);
    if rest.is_empty() || rest == "Z" {
        return Ok(0);
    }
    let bad = || Error::invalid_option(key, text, "expected UTC or a fixed offset such as +08:00");
    let (sign, digits) = match rest.as_bytes().first() {
        Some(b'+') => (1, &rest[1..]),
        Some(b'-') => (-1, &rest[1..]),
        _ => return Err(bad()),
    };
    // Digits and one colon only: the split below is by byte.
    if !digits.bytes().all(|b| b.is_ascii_digit() || b == b':') {
        return Err(bad());
    }
    let (h, m) = if let Some((h, m)) = digits.split_once(':') {
        (h, m)
    } else if digits.len() > 2 {
        digits.split_at(digits.len() - 2)
    } else {
        (digits, "0")
    };
    let h: i64 = h.parse().map_err(|_| bad())?;
    let m: i64 = m.parse().map_err(|_| bad())?;
    if h > 18 || m > 59 {
        return Err(bad());
    }
    Ok(sign * (h * 3_600_000 + m * 60_000))
}

/// Every maintenance key declared here.
pub fn keys() -> impl Iterator<Item = &'static str> {
    [
        ExpireOptions::KEYS,
        PartitionExpireOptions::KEYS,
        PartitionExpireLimits::KEYS,
        TagDeclared::KEYS,
        ConsumerOptions::KEYS,
    ]
    .into_iter()
    .flatten()
    .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zone_offset_with_other_characters_is_refused_not_a_panic() {
        // Found by the `options` fuzz target: a multi-byte character where the digits are.
        for text in ["+0\u{fffd}", "UTC+1\u{e9}00", "-\u{1f600}", "  0\u{fffd}"] {
            assert!(zone_offset_ms("k", text).is_err(), "{text}");
        }
        assert_eq!(zone_offset_ms("k", "+0830").unwrap(), 30_600_000);
        assert_eq!(zone_offset_ms("k", "UTC-01:30").unwrap(), -5_400_000);
    }
}
