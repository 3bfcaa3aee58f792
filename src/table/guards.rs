//! Tables a dedicated compaction job refuses, with the reason, because compacting them the
//! way this build does would change what their readers see or drop metadata their writers
//! rely on (`docs/dedicated-job.md`, "What is refused").
//!
//! A refusal is decided from the table's options (after the job's dynamic options) before
//! anything is read or written, so a refused table is left byte for byte as it was. Two
//! outcomes are distinguished, as the error kinds are: `not-compactable` for tables whose
//! compaction is a different job by design (row tracking, clustering, chain tables, Iceberg
//! metadata), `unsupported` for layouts this build cannot read or write correctly yet.

use std::collections::BTreeMap;

use crate::error::Error;
use crate::plan::NotCompactable;

/// Why a table is refused, if it is.
pub fn refusal(options: &BTreeMap<String, String>, bucket: i32) -> Option<Error> {
    let is_true = |key: &str| {
        options
            .get(key)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    };
    let refuse = |key: &str, why: &str| {
        Some(Error::not_compactable(NotCompactable::TableOption {
            key: key.to_string(),
            value: options.get(key).cloned().unwrap_or_default(),
            because: why.to_string(),
        }))
    };
    if is_true("row-tracking.enabled") {
        return refuse(
            "row-tracking.enabled",
            "compaction must carry each row's id and sequence through the rewrite, which this \
             build does not do",
        );
    }
    if is_true("clustering.incremental") {
        return refuse(
            "clustering.incremental",
            "incremental clustering tables are compacted by Paimon's clustering job, which \
             orders rows by the clustering columns",
        );
    }
    if bucket > 0
        && options
            .get("clustering.columns")
            .is_some_and(|v| !v.trim().is_empty())
    {
        return refuse(
            "clustering.columns",
            "bucketed clustering tables are compacted by Paimon's clustering job, which orders \
             rows by the clustering columns",
        );
    }
    if is_true("pk-clustering-override") {
        return refuse(
            "pk-clustering-override",
            "files are ordered by clustering columns instead of the primary key, which the \
             merge would break",
        );
    }
    if is_true("chain-table.enabled") {
        return refuse(
            "chain-table.enabled",
            "chain tables merge snapshot and delta branches, which a bucket compaction must \
             not do alone",
        );
    }
    if let Some(key) = options
        .keys()
        .find(|k| k.starts_with("pk-") && k.contains("index") && k.ends_with(".columns"))
    {
        return refuse(
            key,
            "primary-key index files would have to be rebuilt for every rewritten file, which \
             this build does not do",
        );
    }
    if let Some(v) = options.get("metadata.iceberg.storage") {
        if !v.trim().eq_ignore_ascii_case("disabled") {
            return refuse(
                "metadata.iceberg.storage",
                "Paimon writes Iceberg metadata with every commit of this table, which this \
                 build does not do",
            );
        }
    }
    if is_true("data-file.thin-mode") {
        return Some(Error::unsupported(
            "'data-file.thin-mode' = true: primary-key files that do not store their key \
             columns are not read or written by this build; the table is left as it is",
        ));
    }
    if is_true("deletion-vectors.bitmap64") {
        return Some(Error::unsupported(
            "'deletion-vectors.bitmap64' = true: 64-bit deletion-vector bitmaps are not read \
             or written by this build; the table is left as it is",
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn opts(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn each_guarded_option_is_refused_with_its_kind() {
        for (k, v, unsupported) in [
            ("row-tracking.enabled", "true", false),
            ("clustering.incremental", "TRUE", false),
            ("pk-clustering-override", "true", false),
            ("chain-table.enabled", "true", false),
            ("pk-lookup.index.columns", "a,b", false),
            ("metadata.iceberg.storage", "table-location", false),
            ("data-file.thin-mode", "true", true),
            ("deletion-vectors.bitmap64", "true", true),
        ] {
            let e = refusal(&opts(&[(k, v)]), 4).unwrap_or_else(|| panic!("{k} not refused"));
            match (&e.kind, unsupported) {
                (ErrorKind::Unsupported, true) => {}
                (ErrorKind::NotCompactable { .. }, false) => assert!(e.message.contains(k)),
                other => panic!("{k}: {other:?}"),
            }
        }
        assert!(refusal(&opts(&[("clustering.columns", "a")]), 4).is_some());
        assert!(refusal(&opts(&[("clustering.columns", "a")]), -1).is_none());
        assert!(refusal(&opts(&[("metadata.iceberg.storage", "disabled")]), 4).is_none());
        assert!(refusal(&opts(&[("row-tracking.enabled", "false")]), 4).is_none());
    }
}
