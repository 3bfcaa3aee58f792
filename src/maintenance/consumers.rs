//! Consumers (Paimon's `ConsumerManager`): the progress of named streaming readers.
//!
//! A consumer is `consumer/consumer-<id>` holding `{"nextSnapshot": N}`: the reader will read
//! snapshot `N` next, so snapshot expiration keeps everything from the smallest `N` on
//! ([`min_next_snapshot`]). A file that does not parse is re-read up to ten times (a writer may
//! be half-way through it; Paimon waits 200 ms between reads, this core has no clock) and is
//! then an error, which stops the expiration that needed it rather than ignoring a reader.
//!
//! `consumer.expiration-time` removes consumers that stopped moving: every consumer file last
//! modified strictly before `now - expiration` is deleted (rewriting the file on each
//! checkpoint is what keeps a live reader's consumer young). The age is the modification time
//! the storage listing reports ([`crate::storage::ObjectMeta::modified_ms`]), else the one the
//! caller supplies; a consumer whose age is unknown is kept.
//!
//! Only the main branch (`<table>/consumer/`) is handled.

use super::{Deleter, MaintenanceContext};
use crate::error::{Error, Result};
use crate::storage::{ObjectMeta, Storage, StorageErrorKind};
use crate::table::path::{validate_name, TablePaths};
use crate::table::snapshot::read_snapshot;

/// `<table>/consumer`.
pub fn consumer_dir(paths: &TablePaths) -> String {
    if paths.root().is_empty() {
        "consumer".to_string()
    } else {
        format!("{}/consumer", paths.root())
    }
}

/// `<table>/consumer/consumer-<id>`.
pub fn consumer_path(paths: &TablePaths, id: &str) -> Result<String> {
    validate_name(&format!("consumer-{id}"), "consumer id")?;
    Ok(format!("{}/consumer-{id}", consumer_dir(paths)))
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Consumer {
    next_snapshot: i64,
}

/// Attempts at parsing a consumer file before giving up.
const PARSE_ATTEMPTS: usize = 10;

/// Reads one consumer: `None` when the file does not exist.
pub fn read_consumer(storage: &dyn Storage, paths: &TablePaths, id: &str) -> Result<Option<i64>> {
    let path = consumer_path(paths, id)?;
    for _ in 0..PARSE_ATTEMPTS {
        match storage.read_all(&path) {
            Ok(bytes) => {
                if let Ok(c) = serde_json::from_slice::<Consumer>(&bytes) {
                    return Ok(Some(c.next_snapshot));
                }
            }
            Err(e) if e.kind == StorageErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        }
    }
    Err(Error::corrupt(
        Some(&path),
        format!("Retry fail after {PARSE_ATTEMPTS} times: not a consumer JSON document"),
    ))
}

/// The consumer files, as `(id, listing entry)`, in path order.
fn consumer_files(storage: &dyn Storage, paths: &TablePaths) -> Result<Vec<(String, ObjectMeta)>> {
    let prefix = format!("{}/consumer-", consumer_dir(paths));
    Ok(storage
        .list(&prefix)?
        .into_iter()
        .filter_map(|o| {
            let id = o.path.strip_prefix(&prefix)?.to_string();
            (!id.contains('/')).then_some((id, o))
        })
        .collect())
}

/// Every consumer as `(id, nextSnapshot)`, by id; consumers deleted while listing are skipped.
pub fn list_consumers(storage: &dyn Storage, paths: &TablePaths) -> Result<Vec<(String, i64)>> {
    let mut out = Vec::new();
    for (id, _) in consumer_files(storage, paths)? {
        if let Some(next) = read_consumer(storage, paths, &id)? {
            out.push((id, next));
        }
    }
    Ok(out)
}

/// The smallest `nextSnapshot` of all consumers (what snapshot expiration must keep).
pub fn min_next_snapshot(storage: &dyn Storage, paths: &TablePaths) -> Result<Option<i64>> {
    Ok(list_consumers(storage, paths)?
        .into_iter()
        .map(|(_, n)| n)
        .min())
}

/// The `reset_consumer` procedure: points consumer `id` at `next_snapshot` (which must
/// exist), or deletes it when `None`.
pub fn reset_consumer(
    storage: &dyn Storage,
    paths: &TablePaths,
    id: &str,
    next_snapshot: Option<i64>,
    ctx: &MaintenanceContext,
) -> Result<()> {
    let path = consumer_path(paths, id)?;
    match next_snapshot {
        Some(n) => {
            read_snapshot(storage, paths, n).map_err(|e| {
                Error::illegal_state(format!(
                    "snapshot {n} cannot be read ({e}); consumer not reset"
                ))
            })?;
            if !ctx.dry_run {
                let bytes =
                    serde_json::to_vec_pretty(&Consumer { next_snapshot: n }).unwrap_or_default();
                storage.write_all(&path, &bytes)?;
            }
        }
        None => {
            Deleter::new(storage, ctx.dry_run).delete(&path)?;
        }
    }
    Ok(())
}

/// What consumer expiry did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConsumerReport {
    /// The run only reported ([`MaintenanceContext::dry_run`]): nothing was deleted.
    pub dry_run: bool,
    /// Deleted (in a dry run: would be) consumer ids.
    pub expired: Vec<String>,
    /// Consumers kept because their modification time is unknown.
    pub age_unknown: Vec<String>,
    /// Consumers kept because they were modified at or after the cutoff.
    pub kept: usize,
}

/// Deletes the consumers whose file was last modified strictly before `expire_before_ms`
/// (epoch milliseconds: `now - consumer.expiration-time`). A file's modification time is the
/// listing's, else `modified_ms(path)` (epoch ms, `None` when unknown).
pub fn expire_consumers(
    storage: &dyn Storage,
    paths: &TablePaths,
    expire_before_ms: i64,
    ctx: &MaintenanceContext,
    modified_ms: &dyn Fn(&str) -> Option<i64>,
) -> Result<ConsumerReport> {
    let mut report = ConsumerReport {
        dry_run: ctx.dry_run,
        ..Default::default()
    };
    let mut deleter = Deleter::new(storage, ctx.dry_run);
    for (id, meta) in consumer_files(storage, paths)? {
        match meta.modified_ms.or_else(|| modified_ms(&meta.path)) {
            Some(t) if t < expire_before_ms => {
                deleter.delete(&meta.path)?;
                report.expired.push(id);
            }
            Some(_) => report.kept += 1,
            None => report.age_unknown.push(id),
        }
    }
    Ok(report)
}

/// `consumer.expiration-time` in milliseconds, if set.
pub fn consumer_expiration_ms(
    raw: &std::collections::BTreeMap<String, String>,
) -> Result<Option<i64>> {
    Ok(crate::options::maintenance::ConsumerOptions::read(raw)?.expiration_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStorage;

    #[test]
    fn consumers_are_listed_and_a_broken_file_is_an_error() {
        let st = MemoryStorage::new();
        let p = TablePaths::new("t");
        st.put(
            "t/consumer/consumer-a",
            br#"{ "nextSnapshot" : 7 }"#.to_vec(),
        );
        st.put(
            "t/consumer/consumer-b",
            br#"{"nextSnapshot":3,"x":1}"#.to_vec(),
        );
        assert_eq!(
            list_consumers(&st, &p).unwrap(),
            vec![("a".to_string(), 7), ("b".to_string(), 3)]
        );
        assert_eq!(min_next_snapshot(&st, &p).unwrap(), Some(3));
        assert_eq!(read_consumer(&st, &p, "zz").unwrap(), None);
        st.put("t/consumer/consumer-c", Vec::new());
        let e = list_consumers(&st, &p).unwrap_err();
        assert!(e.message.contains("Retry fail after 10 times"), "{e}");
    }
}
