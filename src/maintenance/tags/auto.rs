//! Automatic tag creation (`tag.automatic-creation`) and expiry (`tag.time-expire-enabled`,
//! and the `expire_tags` procedure); see the module documentation of [`super`].

use std::collections::BTreeMap;

use super::super::{Deleter, MaintenanceContext};
use super::deletion::delete_tag_with;
use super::{
    earliest_snapshot_id, list_tag_entries, parse_tag, tag_json, tag_path, try_read_snapshot,
    validate_no_auto_tag, CreatedTag, TagCreationMode, TagDeleteReason, TagEntry, TagOptions,
    TagPeriodHandler, TagReport,
};
use crate::error::{Error, Result};
use crate::options::maintenance::TimeZoneOption;
use crate::storage::Storage;
use crate::table::scan::Table;
use crate::table::snapshot::Snapshot;

/// The state of automatic tag creation: the next snapshot to look at and the next period
/// start to tag (Paimon keeps both in the committer's memory).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TagAutoCreation {
    /// The table's tag options (`tag.*`, `sink.*-time-zone`) the state was built from.
    pub options: TagOptions,
    handler: TagPeriodHandler,
    /// Added to a snapshot's time or watermark to get the local time of the period zone.
    /// The zone whose wall clock names tags; `None`: the host's offset (`ctx.utc_offset_ms`).
    zone: Option<TimeZoneOption>,
    host_offset_ms: i64,
    /// The next snapshot id to look at: the one after the newest auto tag's snapshot, or the
    /// earliest snapshot when there is no auto tag.
    pub next_snapshot: i64,
    /// Local ms; `None` before the first tag.
    pub next_tag: Option<i64>,
}

impl TagAutoCreation {
    /// The wall clock, as local milliseconds, of the instant `utc_ms` in the tag's zone.
    fn local(&self, utc_ms: i64) -> i64 {
        let offset = match &self.zone {
            Some(zone) => zone.offset_ms_at(utc_ms),
            None => self.host_offset_ms,
        };
        utc_ms.saturating_add(offset)
    }

    /// Builds the state from the tags on storage; `None` when the table does not create tags
    /// in maintenance (`none`, or `batch`, which Paimon's batch writer handles).
    pub fn new(
        storage: &dyn Storage,
        table: &Table,
        ctx: &MaintenanceContext,
    ) -> Result<Option<Self>> {
        let options = TagOptions::from_options(&table.schema.options)?;
        let zone = match options.mode {
            TagCreationMode::ProcessTime => options.process_zone.clone(),
            TagCreationMode::Watermark => Some(options.watermark_zone.clone()),
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
            zone,
            host_offset_ms: ctx.utc_offset_ms,
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

    #[allow(
        clippy::too_many_arguments,
        reason = "what one tag creation reads (table, snapshot, clock) and updates (tags, deleter, report)"
    )]
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
            TagCreationMode::ProcessTime => self.local(snapshot.time_millis),
            TagCreationMode::Watermark => match snapshot.watermark {
                None | Some(i64::MIN) => return Ok(()),
                Some(w) => self.local(w),
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
