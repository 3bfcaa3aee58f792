//! Metadata that parses but lies: a snapshot whose id is not its file name's or without its
//! schema id, a manifest entry in a bucket its own bucket count does not have or at a level
//! out of range. Each is refused as corrupt input naming the
//! file before the job writes anything (the rows and keys that lie are in `merge_errors`).

use std::sync::Arc;

use paimon_compact::api::{compact_table, plan_table, write_demo_tables, Services, TableJob};
use paimon_compact::storage::MemoryStorage;
use paimon_compact::table::manifest::{decode_manifest, encode_manifest, ManifestEntry};
use paimon_compact::ErrorKind;

const NOW_MS: i64 = 1_700_000_000_000;

fn job() -> TableJob {
    TableJob {
        full: true,
        now_ms: NOW_MS + 1,
        local_hour: 3,
        job_id: vec![3; 16],
        owner: "hostile-metadata".into(),
        lease_ttl_ms: None,
        max_commit_retries: 1,
        scope: Default::default(),
        skip_maintenance: false,
        utc_offset_ms: 0,
    }
}

/// The demo tables, and the path of the one whose name ends with `name`.
fn demo(name: &str) -> (Arc<MemoryStorage>, String) {
    let storage = Arc::new(MemoryStorage::new());
    let tables = write_demo_tables(storage.clone(), "w", NOW_MS, 11).unwrap();
    let table = tables.into_iter().find(|t| t.ends_with(name)).unwrap();
    (storage, table)
}

/// A manifest (not a list, not an index manifest) of `table`.
fn first_manifest(storage: &MemoryStorage, table: &str) -> String {
    storage
        .paths()
        .into_iter()
        .filter(|p| p.starts_with(&format!("{table}/manifest/manifest-")))
        .find(|p| !p.contains("manifest-list-") && !p.contains("index-manifest-"))
        .unwrap()
}

/// Rewrites the first entry of `table`'s first manifest with `edit`; returns the manifest's
/// path and the entry's file name.
fn edit_first_entry(
    storage: &MemoryStorage,
    table: &str,
    edit: impl FnOnce(&mut ManifestEntry),
) -> (String, String) {
    let manifest = first_manifest(storage, table);
    let mut entries = decode_manifest(&storage.get(&manifest).unwrap(), &manifest).unwrap();
    edit(&mut entries[0]);
    let name = entries[0].file.file_name.clone();
    storage.put(
        &manifest,
        encode_manifest(&entries, apache_avro::Codec::Null, [5; 16]).unwrap(),
    );
    (manifest, name)
}

/// Rewrites `table`'s latest snapshot file with `edit` (its JSON and its id, from the file's
/// name); returns the file's path and that id.
fn edit_latest_snapshot(
    storage: &MemoryStorage,
    table: &str,
    edit: impl FnOnce(&mut serde_json::Value, i64),
) -> (String, i64) {
    let prefix = format!("{table}/snapshot/snapshot-");
    let id = storage
        .paths()
        .iter()
        .filter_map(|p| p.strip_prefix(&prefix)?.parse::<i64>().ok())
        .max()
        .unwrap();
    let latest = format!("{prefix}{id}");
    let mut doc: serde_json::Value =
        serde_json::from_slice(&storage.get(&latest).unwrap()).unwrap();
    edit(&mut doc, id);
    storage.put(&latest, serde_json::to_vec(&doc).unwrap());
    (latest, id)
}

/// Asserts that planning and compacting `table` fail as corrupt input naming `file` with
/// `words` in the message, and that the compaction left every file as it was.
fn refused(storage: &Arc<MemoryStorage>, table: &str, file: &str, words: &str) {
    let before = storage.paths();
    for e in [
        plan_table(storage.clone(), table, &job()).map(|_| ()),
        compact_table(storage.clone(), table, &job(), &Services::none()).map(|_| ()),
    ] {
        let e = e.unwrap_err();
        assert_eq!(
            e.kind,
            ErrorKind::CorruptInput {
                file: Some(file.to_string())
            },
            "{e}"
        );
        assert!(e.message.contains(words), "{e}");
    }
    assert_eq!(storage.paths(), before, "the refused job wrote nothing");
}

#[test]
fn a_snapshot_whose_id_is_not_its_file_name_is_refused() {
    let (storage, table) = demo("orders");
    let (latest, id) = edit_latest_snapshot(&storage, &table, |doc, id| {
        assert_eq!(doc["id"], id);
        doc["id"] = (id + 3).into();
    });
    refused(
        &storage,
        &table,
        &latest,
        &format!("holds id {}, not {id}", id + 3),
    );
}

#[test]
fn a_manifest_entry_beyond_its_bucket_count_is_refused() {
    let (storage, table) = demo("metrics");
    let (manifest, name) = edit_first_entry(&storage, &table, |e| {
        assert_eq!(e.total_buckets, 2, "the demo metrics table has two buckets");
        e.bucket = 2;
    });
    refused(
        &storage,
        &table,
        &manifest,
        &format!("file '{name}' is in bucket 2 of 2 buckets"),
    );
}

/// apache-avro panics (an `unwrap`) on a type name in a file's embedded schema that is not an
/// Avro name; found by the `avro_metadata` fuzz target. It is corrupt input of that file.
#[test]
fn an_avro_schema_with_an_invalid_name_is_corrupt_input_not_a_panic() {
    let (storage, table) = demo("metrics");
    let manifest = first_manifest(&storage, &table);
    let mut bytes = storage.get(&manifest).unwrap().to_vec();
    // Same length, so the header stays well-formed: only the name is wrong.
    let at = bytes
        .windows(15)
        .position(|w| w == b"FILE__KEY_STATS")
        .expect("the manifest schema names its key statistics record");
    bytes[at + 9] = b'-';
    let e = decode_manifest(&bytes, &manifest).unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::CorruptInput {
            file: Some(manifest.clone())
        },
        "{e}"
    );
    assert!(e.message.contains("Avro decoder failed on it"), "{e}");
}

/// A file's level outside 0..Level::LIMIT (negative, or past what any table has) is refused
/// naming the manifest, not planned as a level the planner would index out of range.
#[test]
fn a_manifest_entry_with_a_level_out_of_range_is_refused() {
    for level in [-1, i32::MAX] {
        let (storage, table) = demo("orders");
        let (manifest, name) = edit_first_entry(&storage, &table, |e| e.file.level = level);
        refused(
            &storage,
            &table,
            &manifest,
            &format!("file '{name}' has level {level}"),
        );
    }
}

/// A snapshot without the `schemaId` Paimon always writes is corrupt input naming it (the
/// job cannot know which schema its files were written with), not a default of schema 0.
#[test]
fn a_snapshot_without_its_schema_id_is_refused() {
    let (storage, table) = demo("orders");
    let (latest, _) = edit_latest_snapshot(&storage, &table, |doc, _| {
        doc.as_object_mut().unwrap().remove("schemaId").unwrap();
    });
    refused(&storage, &table, &latest, "schemaId");
}
