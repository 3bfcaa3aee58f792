//! The table schema (`schema/schema-N`, format.md §2): fields with Paimon's SQL-ish type strings,
//! partition and primary keys, and the options map compaction is configured by.
//!
//! Types are parsed strictly: a type this build does not know is an error naming the schema
//! file, never a silent guess, because the key and partition codecs depend on the exact type.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::options::{CoreOptions, TableKind};

/// Paimon's data types, which a schema's fields have (kept here under their old path too).
pub use crate::types::{same_fields, DataField, DataType, TypeRoot, MAX_LENGTH};

/// One version of the table schema.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TableSchema {
    /// Schema version, the `N` of `schema/schema-N` (0 when the document has none); data
    /// files record it as `_SCHEMA_ID`.
    pub id: i64,
    /// The table's columns in order, each with a field id that is stable across renames.
    pub fields: Vec<DataField>,
    /// `highestFieldId`: the largest field id ever assigned, nested fields included
    /// (defaults to the largest top-level id when absent).
    pub highest_field_id: i32,
    /// `partitionKeys`: partition column names in partition order; each is a field.
    pub partition_keys: Vec<String>,
    /// `primaryKeys`: primary-key column names (empty for an append table); each is a field.
    pub primary_keys: Vec<String>,
    /// The table's options as strings (non-string JSON values are kept as their JSON text);
    /// where compaction's options live (`compaction.md` §2).
    pub options: BTreeMap<String, String>,
    /// The table comment, if any.
    pub comment: Option<String>,
    /// `timeMillis`: when this version was created, epoch milliseconds (0 when absent).
    pub time_millis: i64,
}

impl TableSchema {
    /// Parses `schema/schema-N`; `file` names it in errors.
    pub fn from_json(bytes: &[u8], file: &str) -> Result<Self> {
        let v: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|e| Error::corrupt(Some(file), format!("not a schema JSON document: {e}")))?;
        let fields = v
            .get("fields")
            .and_then(|f| f.as_array())
            .ok_or_else(|| Error::corrupt(Some(file), "schema has no 'fields' array"))?
            .iter()
            .map(|f| DataField::from_json(f, file))
            .collect::<Result<Vec<_>>>()?;
        let strings = |k: &str| -> Result<Vec<String>> {
            match v.get(k) {
                None | Some(serde_json::Value::Null) => Ok(Vec::new()),
                Some(serde_json::Value::Array(a)) => a
                    .iter()
                    .map(|x| {
                        x.as_str().map(str::to_string).ok_or_else(|| {
                            Error::corrupt(Some(file), format!("'{k}' must hold strings"))
                        })
                    })
                    .collect(),
                Some(_) => Err(Error::corrupt(
                    Some(file),
                    format!("'{k}' must be an array"),
                )),
            }
        };
        let options = match v.get("options") {
            None | Some(serde_json::Value::Null) => BTreeMap::new(),
            Some(serde_json::Value::Object(o)) => o
                .iter()
                .map(|(k, x)| {
                    let s = match x {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    (k.clone(), s)
                })
                .collect(),
            Some(_) => return Err(Error::corrupt(Some(file), "'options' must be an object")),
        };
        let schema = TableSchema {
            id: v.get("id").and_then(|x| x.as_i64()).unwrap_or(0),
            highest_field_id: v
                .get("highestFieldId")
                .and_then(|x| x.as_i64())
                .and_then(|x| i32::try_from(x).ok())
                .unwrap_or_else(|| fields.iter().map(|f| f.id).max().unwrap_or(-1)),
            fields,
            partition_keys: strings("partitionKeys")?,
            primary_keys: strings("primaryKeys")?,
            options,
            comment: v
                .get("comment")
                .and_then(|x| x.as_str())
                .map(str::to_string),
            time_millis: v.get("timeMillis").and_then(|x| x.as_i64()).unwrap_or(0),
        };
        for k in schema.partition_keys.iter().chain(&schema.primary_keys) {
            if schema.field(k).is_none() {
                return Err(Error::corrupt(
                    Some(file),
                    format!("key column '{k}' is not a field of the schema"),
                ));
            }
        }
        Ok(schema)
    }

    /// The JSON document Paimon writes (version 3).
    pub fn to_json(&self) -> Vec<u8> {
        let v = serde_json::json!({
            "version": 3,
            "id": self.id,
            "fields": self.fields.iter().map(DataField::to_json).collect::<Vec<_>>(),
            "highestFieldId": self.highest_field_id,
            "partitionKeys": self.partition_keys,
            "primaryKeys": self.primary_keys,
            "options": self.options,
            "comment": self.comment,
            "timeMillis": self.time_millis,
        });
        serde_json::to_vec_pretty(&v).unwrap_or_default()
    }

    /// The top-level field named `name` (case-sensitive), if any.
    pub fn field(&self, name: &str) -> Option<&DataField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// A primary-key table when the schema has primary keys, else an append table.
    pub fn table_kind(&self) -> TableKind {
        if self.primary_keys.is_empty() {
            TableKind::Append
        } else {
            TableKind::PrimaryKey
        }
    }

    /// The partition columns, in partition-key order.
    pub fn partition_fields(&self) -> Vec<&DataField> {
        self.partition_keys
            .iter()
            .filter_map(|k| self.field(k))
            .collect()
    }

    /// The primary key without the partition columns ("trimmed"): the key of data files.
    pub fn trimmed_primary_keys(&self) -> Vec<&DataField> {
        self.primary_keys
            .iter()
            .filter(|k| !self.partition_keys.contains(k))
            .filter_map(|k| self.field(k))
            .collect()
    }

    /// The typed options compaction is configured by.
    pub fn core_options(&self) -> Result<CoreOptions> {
        CoreOptions::parse(self.table_kind(), &self.options)
    }

    /// Whether a top-level field is of type BLOB (such tables are refused by routing).
    pub fn has_blob_column(&self) -> bool {
        self.fields
            .iter()
            .any(|f| matches!(f.data_type.root, TypeRoot::Blob))
    }

    /// Files written under `self` and under `other` have the same columns: the same fields
    /// ([`same_fields`]) and the same key columns. Options, comments and the other properties
    /// of a version change nothing in its files.
    pub fn same_data_layout(&self, other: &TableSchema) -> bool {
        let keys = |s: &TableSchema| -> Vec<String> {
            s.trimmed_primary_keys()
                .iter()
                .map(|f| f.name.clone())
                .collect()
        };
        same_fields(&self.fields, &other.fields) && keys(self) == keys(other)
    }
}

/// The schema versions a table's data files were written under, each read at most once and
/// compared with the latest version once.
///
/// Every `ALTER TABLE` makes a new version, and most (`SET`/`RESET` of options, comments) keep
/// the fields as they were: files of such a version already have the latest layout and are
/// read, copied and merged exactly like files of the latest version. Only a version whose
/// fields differ (added, dropped, renamed, reordered or retyped columns, at any depth) makes
/// its files go through schema evolution. Deciding it here, in one place, keeps the planner's
/// blockers and both rewriters in agreement.
#[derive(Debug, Default)]
pub struct SchemaVersions {
    /// By schema id: `None` for a version with the latest layout, else the version itself.
    known: std::sync::Mutex<BTreeMap<i64, Option<std::sync::Arc<TableSchema>>>>,
}

impl Clone for SchemaVersions {
    fn clone(&self) -> Self {
        SchemaVersions {
            known: std::sync::Mutex::new(self.lock().clone()),
        }
    }
}

impl SchemaVersions {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, BTreeMap<i64, Option<std::sync::Arc<TableSchema>>>> {
        // The map is only ever inserted into whole: a panic elsewhere cannot leave it torn.
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The version `schema_id` when files written under it must be mapped onto `latest` by
    /// field id; `None` when they are read as they are (`latest` itself, or a version with its
    /// layout). One cache serves one latest version: the table's.
    pub fn evolved(
        &self,
        storage: &dyn crate::storage::Storage,
        paths: &super::path::TablePaths,
        latest: &TableSchema,
        schema_id: i64,
    ) -> Result<Option<std::sync::Arc<TableSchema>>> {
        if schema_id == latest.id {
            return Ok(None);
        }
        if let Some(known) = self.lock().get(&schema_id) {
            return Ok(known.clone());
        }
        let file = paths.schema(schema_id);
        let old = TableSchema::from_json(&storage.read_all(&file)?, &file)?;
        let version = (!old.same_data_layout(latest)).then(|| std::sync::Arc::new(old));
        self.lock().insert(schema_id, version.clone());
        Ok(version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pypaimon_schema() {
        let json = br#"{"version":3,"id":0,"fields":[{"id":0,"name":"id","type":"BIGINT NOT NULL"},
            {"id":1,"name":"dt","type":"STRING"},{"id":2,"name":"d","type":"DECIMAL(20, 3)"},
            {"id":3,"name":"a","type":{"type":"ARRAY","element":"INT NOT NULL"}}],
            "highestFieldId":3,"partitionKeys":["dt"],"primaryKeys":["id","dt"],
            "options":{"bucket":"2"},"comment":null,"timeMillis":5}"#;
        let s = TableSchema::from_json(json, "schema-0").unwrap();
        assert_eq!(
            s.fields[0].data_type,
            DataType::new(TypeRoot::BigInt).not_null()
        );
        assert_eq!(
            s.fields[2].data_type.root,
            TypeRoot::Decimal {
                precision: 20,
                scale: 3
            }
        );
        assert_eq!(s.trimmed_primary_keys().len(), 1);
        assert_eq!(s.table_kind(), TableKind::PrimaryKey);
        let back = TableSchema::from_json(&s.to_json(), "x").unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn unknown_type_names_the_file() {
        let json = br#"{"fields":[{"id":0,"name":"x","type":"HYPERLOGLOG"}]}"#;
        let e = TableSchema::from_json(json, "t/schema/schema-3").unwrap_err();
        assert!(e.message.contains("t/schema/schema-3"), "{e}");
        assert!(e.message.contains("HYPERLOGLOG"), "{e}");
        let e = TableSchema::from_json(b"{\"fields\": [", "t/schema/schema-4").unwrap_err();
        assert!(matches!(e.kind, crate::ErrorKind::CorruptInput { .. }));
    }

    #[test]
    fn type_strings_round_trip() {
        for s in [
            "TIMESTAMP(3)",
            "TIMESTAMP(6) WITH LOCAL TIME ZONE",
            "VARCHAR(10) NOT NULL",
            "BYTES",
            "STRING",
            "DECIMAL(38, 10)",
        ] {
            assert_eq!(DataType::parse(s, "f").unwrap().to_type_string(), s);
        }
    }

    /// Every type as Paimon's Parquet writer lays it out, read back by arrow-rs: `to_arrow`
    /// gives exactly that Arrow type (names of nested fields, nullability, units).
    #[test]
    fn to_arrow_is_what_arrow_rs_reads_from_paimon_parquet() {
        let schema = br#"{"fields":[
            {"id":0,"name":"a","type":{"type":"ARRAY","element":"INT"}},
            {"id":1,"name":"an","type":{"type":"ARRAY NOT NULL","element":"BIGINT NOT NULL"}},
            {"id":2,"name":"m","type":{"type":"MAP","key":"STRING",
                "value":{"type":"ROW","fields":[{"id":3,"name":"p","type":"INT"}]}}},
            {"id":4,"name":"ms","type":{"type":"MULTISET","element":"STRING"}},
            {"id":5,"name":"r","type":{"type":"ROW","fields":[
                {"id":6,"name":"x","type":"INT"},
                {"id":7,"name":"y","type":"STRING NOT NULL"},
                {"id":8,"name":"inner","type":{"type":"ARRAY","element":"BOOLEAN"}}]}},
            {"id":9,"name":"t","type":"TIME(3)"},
            {"id":10,"name":"ts3","type":"TIMESTAMP(3)"},
            {"id":11,"name":"ts6","type":"TIMESTAMP(6)"},
            {"id":12,"name":"ts9","type":"TIMESTAMP(9)"},
            {"id":13,"name":"ltz6","type":"TIMESTAMP(6) WITH LOCAL TIME ZONE"},
            {"id":14,"name":"ltz9","type":"TIMESTAMP(9) WITH LOCAL TIME ZONE"},
            {"id":15,"name":"d9","type":"DECIMAL(9, 2)"},
            {"id":16,"name":"d18","type":"DECIMAL(18, 2)"},
            {"id":17,"name":"d38","type":"DECIMAL(38, 10)"},
            {"id":18,"name":"ti","type":"TINYINT"},
            {"id":19,"name":"si","type":"SMALLINT"},
            {"id":20,"name":"bin","type":"BINARY(4)"},
            {"id":21,"name":"dt","type":"DATE"},
            {"id":22,"name":"c","type":"CHAR(3) NOT NULL"}]}"#;
        let schema = TableSchema::from_json(schema, "schema-0").unwrap();
        // The Parquet schema Paimon's ParquetSchemaConverter writes for those fields.
        let parquet = "message paimon_schema {
            optional group a (LIST) { repeated group list { optional int32 element; } }
            required group an (LIST) { repeated group list { required int64 element; } }
            optional group m (MAP) { repeated group key_value {
                required binary key (STRING); optional group value { optional int32 p; } } }
            optional group ms (MAP) { repeated group key_value {
                required binary key (STRING); required int32 value; } }
            optional group r { optional int32 x; required binary y (STRING);
                optional group inner (LIST) { repeated group list { optional boolean element; } } }
            optional int32 t (TIME(MILLIS,true));
            optional int64 ts3 (TIMESTAMP(MILLIS,false));
            optional int64 ts6 (TIMESTAMP(MICROS,false));
            optional int96 ts9;
            optional int64 ltz6 (TIMESTAMP(MICROS,true));
            optional int96 ltz9;
            optional int32 d9 (DECIMAL(9,2));
            optional int64 d18 (DECIMAL(18,2));
            optional fixed_len_byte_array(16) d38 (DECIMAL(38,10));
            optional int32 ti (INTEGER(8,true));
            optional int32 si (INTEGER(16,true));
            optional binary bin;
            optional int32 dt (DATE);
            required binary c (STRING);
        }";
        let parquet = parquet::schema::parser::parse_message_type(parquet).unwrap();
        let descr = parquet::schema::types::SchemaDescriptor::new(std::sync::Arc::new(parquet));
        let read = parquet::arrow::parquet_to_arrow_schema(&descr, None).unwrap();
        assert_eq!(read.fields().len(), schema.fields.len());
        for (arrow, paimon) in read.fields().iter().zip(&schema.fields) {
            assert_eq!(arrow.name(), &paimon.name);
            assert_eq!(
                arrow.data_type(),
                &paimon.data_type.to_arrow().unwrap(),
                "{}",
                paimon.name
            );
            assert_eq!(
                arrow.is_nullable(),
                paimon.data_type.nullable,
                "{}",
                paimon.name
            );
        }
        for t in ["VARIANT", "BLOB"] {
            let e = DataType::parse(t, "f").unwrap().to_arrow().unwrap_err();
            assert!(matches!(e.kind, crate::ErrorKind::Unsupported), "{e}");
            assert!(e.message.contains(t), "{e}");
        }
    }

    /// Versions that changed options, comments or descriptions have the same data layout;
    /// any change of a field at any depth does not.
    #[test]
    fn option_only_versions_have_the_latest_layout() {
        let json = |options: &str, inner: &str, extra: &str| {
            format!(
                r#"{{"id":1,"fields":[{{"id":0,"name":"k","type":"BIGINT NOT NULL"}},
                {{"id":1,"name":"r","type":{{"type":"ROW","fields":[{inner}]}}}}{extra}],
                "primaryKeys":["k"],"options":{{{options}}},"comment":"c"}}"#
            )
        };
        let parse = |s: String| TableSchema::from_json(s.as_bytes(), "schema-1").unwrap();
        let base = parse(json(
            r#""bucket":"1""#,
            r#"{"id":2,"name":"a","type":"INT"}"#,
            "",
        ));
        let options = parse(json(
            r#""bucket":"1","snapshot.num-retained.max":"5""#,
            r#"{"id":2,"name":"a","type":"INT","description":"now with a comment"}"#,
            "",
        ));
        assert!(base.same_data_layout(&options));
        for (inner, extra) in [
            (r#"{"id":2,"name":"b","type":"INT"}"#, ""),
            (r#"{"id":2,"name":"a","type":"BIGINT"}"#, ""),
            (r#"{"id":2,"name":"a","type":"INT NOT NULL"}"#, ""),
            (
                r#"{"id":2,"name":"a","type":"INT"},{"id":3,"name":"n","type":"INT"}"#,
                "",
            ),
            (
                r#"{"id":2,"name":"a","type":"INT"}"#,
                r#",{"id":4,"name":"x","type":"INT"}"#,
            ),
        ] {
            let changed = parse(json(r#""bucket":"1""#, inner, extra));
            assert!(!base.same_data_layout(&changed), "{inner} {extra}");
        }
    }

    /// Each version is read once; the latest itself never.
    #[test]
    fn schema_versions_are_read_once_and_compared_with_the_latest() {
        use crate::storage::{MemoryStorage, Storage};
        let st = MemoryStorage::new();
        let paths = super::super::path::TablePaths::new("t");
        let v0 = TableSchema::from_json(
            br#"{"id":0,"fields":[{"id":0,"name":"k","type":"INT"}]}"#,
            "schema-0",
        )
        .unwrap();
        let mut v1 = v0.clone();
        v1.id = 1;
        v1.options.insert("bucket".into(), "2".into());
        let mut v2 = v1.clone();
        v2.id = 2;
        v2.fields[0].name = "renamed".into();
        for v in [&v0, &v1, &v2] {
            st.put(&paths.schema(v.id), v.to_json());
        }
        let versions = SchemaVersions::default();
        assert_eq!(versions.evolved(&st, &paths, &v1, 1).unwrap(), None);
        assert_eq!(versions.evolved(&st, &paths, &v1, 0).unwrap(), None);
        st.delete(&paths.schema(0)).unwrap();
        assert_eq!(
            versions.evolved(&st, &paths, &v1, 0).unwrap(),
            None,
            "cached"
        );
        let versions = SchemaVersions::default();
        st.put(&paths.schema(0), v0.to_json());
        let old = versions.evolved(&st, &paths, &v2, 0).unwrap().unwrap();
        assert_eq!(old.fields[0].name, "k");
        assert!(versions.evolved(&st, &paths, &v2, 1).unwrap().is_some());
        assert_eq!(versions.evolved(&st, &paths, &v2, 2).unwrap(), None);
        let e = versions.evolved(&st, &paths, &v2, 7).unwrap_err();
        assert!(e.message.contains("schema-7"), "{e}");
    }
}
