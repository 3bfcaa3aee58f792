//! The table schema (`schema/schema-N`, spec §2): fields with Paimon's SQL-ish type strings,
//! partition and primary keys, and the options map compaction is configured by.
//!
//! Types are parsed strictly: a type this build does not know is an error naming the schema
//! file, never a silent guess, because the key and partition codecs depend on the exact type.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::options::{CoreOptions, TableKind};

/// A Paimon data type, with its nullability.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DataType {
    pub root: TypeRoot,
    pub nullable: bool,
}

/// The kind of a type and its parameters.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TypeRoot {
    Boolean,
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    Float,
    Double,
    Decimal {
        precision: u32,
        scale: u32,
    },
    Char {
        length: u32,
    },
    VarChar {
        length: u32,
    },
    Binary {
        length: u32,
    },
    VarBinary {
        length: u32,
    },
    Date,
    Time {
        precision: u32,
    },
    Timestamp {
        precision: u32,
    },
    LocalZonedTimestamp {
        precision: u32,
    },
    Array {
        element: Box<DataType>,
    },
    Multiset {
        element: Box<DataType>,
    },
    Map {
        key: Box<DataType>,
        value: Box<DataType>,
    },
    Row {
        fields: Vec<DataField>,
    },
    Variant,
    Blob,
}

/// `VARCHAR(2147483647)`, written as `STRING`.
pub const MAX_LENGTH: u32 = i32::MAX as u32;

impl DataType {
    /// The Arrow type Paimon's Parquet format reads and writes this type as (scalar types
    /// only: nested types are refused, as the rewriters only map them from existing files).
    pub fn to_arrow(&self) -> Result<arrow::datatypes::DataType> {
        use arrow::datatypes::{DataType as A, TimeUnit};
        let unit = |p: u32| match p {
            0..=3 => TimeUnit::Millisecond,
            4..=6 => TimeUnit::Microsecond,
            _ => TimeUnit::Nanosecond,
        };
        Ok(match &self.root {
            TypeRoot::Boolean => A::Boolean,
            TypeRoot::TinyInt => A::Int8,
            TypeRoot::SmallInt => A::Int16,
            TypeRoot::Int => A::Int32,
            TypeRoot::BigInt => A::Int64,
            TypeRoot::Float => A::Float32,
            TypeRoot::Double => A::Float64,
            TypeRoot::Decimal { precision, scale } => {
                let p = u8::try_from(*precision).ok().filter(|p| *p <= 38);
                let s = i8::try_from(*scale).ok();
                match (p, s) {
                    (Some(p), Some(s)) => A::Decimal128(p, s),
                    _ => {
                        return Err(Error::unsupported(format!(
                            "DECIMAL({precision}, {scale}) as Arrow"
                        )))
                    }
                }
            }
            TypeRoot::Char { .. } | TypeRoot::VarChar { .. } => A::Utf8,
            TypeRoot::Binary { .. } | TypeRoot::VarBinary { .. } => A::Binary,
            TypeRoot::Date => A::Date32,
            TypeRoot::Time { .. } => A::Time32(TimeUnit::Millisecond),
            TypeRoot::Timestamp { precision } => A::Timestamp(unit(*precision), None),
            TypeRoot::LocalZonedTimestamp { precision } => {
                A::Timestamp(unit(*precision), Some("UTC".into()))
            }
            other => {
                return Err(Error::unsupported(format!(
                    "{other:?} columns in a schema-evolved rewrite"
                )))
            }
        })
    }

    pub fn new(root: TypeRoot) -> Self {
        DataType {
            root,
            nullable: true,
        }
    }

    pub fn not_null(mut self) -> Self {
        self.nullable = false;
        self
    }

    /// Paimon's type string (the inverse of [`DataType::parse`] for atomic types).
    pub fn to_type_string(&self) -> String {
        let base = match &self.root {
            TypeRoot::Boolean => "BOOLEAN".to_string(),
            TypeRoot::TinyInt => "TINYINT".to_string(),
            TypeRoot::SmallInt => "SMALLINT".to_string(),
            TypeRoot::Int => "INT".to_string(),
            TypeRoot::BigInt => "BIGINT".to_string(),
            TypeRoot::Float => "FLOAT".to_string(),
            TypeRoot::Double => "DOUBLE".to_string(),
            TypeRoot::Decimal { precision, scale } => format!("DECIMAL({precision}, {scale})"),
            TypeRoot::Char { length } => format!("CHAR({length})"),
            TypeRoot::VarChar { length } if *length == MAX_LENGTH => "STRING".to_string(),
            TypeRoot::VarChar { length } => format!("VARCHAR({length})"),
            TypeRoot::Binary { length } => format!("BINARY({length})"),
            TypeRoot::VarBinary { length } if *length == MAX_LENGTH => "BYTES".to_string(),
            TypeRoot::VarBinary { length } => format!("VARBINARY({length})"),
            TypeRoot::Date => "DATE".to_string(),
            TypeRoot::Time { precision } => format!("TIME({precision})"),
            TypeRoot::Timestamp { precision } => format!("TIMESTAMP({precision})"),
            TypeRoot::LocalZonedTimestamp { precision } => {
                format!("TIMESTAMP({precision}) WITH LOCAL TIME ZONE")
            }
            TypeRoot::Array { element } => format!("ARRAY<{}>", element.to_type_string()),
            TypeRoot::Multiset { element } => format!("MULTISET<{}>", element.to_type_string()),
            TypeRoot::Map { key, value } => {
                format!("MAP<{}, {}>", key.to_type_string(), value.to_type_string())
            }
            TypeRoot::Row { fields } => format!(
                "ROW<{}>",
                fields
                    .iter()
                    .map(|f| format!("{} {}", f.name, f.data_type.to_type_string()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            TypeRoot::Variant => "VARIANT".to_string(),
            TypeRoot::Blob => "BLOB".to_string(),
        };
        if self.nullable {
            base
        } else {
            format!("{base} NOT NULL")
        }
    }

    /// Parses a type from the schema JSON: a string for atomic types, an object for nested ones
    /// (`{"type": "ARRAY", "element": ...}`, `MAP` with `key`/`value`, `ROW` with `fields`).
    pub fn from_json(v: &serde_json::Value, file: &str) -> Result<Self> {
        match v {
            serde_json::Value::String(s) => Self::parse(s, file),
            serde_json::Value::Object(o) => {
                let head = o
                    .get("type")
                    .and_then(|t| t.as_str())
                    .ok_or_else(|| Error::corrupt(Some(file), "a nested type has no 'type'"))?;
                let (name, nullable) = split_not_null(head);
                let child = |k: &str| -> Result<Box<DataType>> {
                    let c = o.get(k).ok_or_else(|| {
                        Error::corrupt(Some(file), format!("type {name} has no '{k}'"))
                    })?;
                    Ok(Box::new(Self::from_json(c, file)?))
                };
                let root = match name.to_ascii_uppercase().as_str() {
                    "ARRAY" => TypeRoot::Array {
                        element: child("element")?,
                    },
                    "MULTISET" => TypeRoot::Multiset {
                        element: child("element")?,
                    },
                    "MAP" => TypeRoot::Map {
                        key: child("key")?,
                        value: child("value")?,
                    },
                    "ROW" => {
                        let fields =
                            o.get("fields").and_then(|f| f.as_array()).ok_or_else(|| {
                                Error::corrupt(Some(file), "type ROW has no 'fields'")
                            })?;
                        TypeRoot::Row {
                            fields: fields
                                .iter()
                                .map(|f| DataField::from_json(f, file))
                                .collect::<Result<_>>()?,
                        }
                    }
                    // Atomic types may also come as {"type": "INT"}.
                    _ => return Self::parse(head, file),
                };
                Ok(DataType { root, nullable })
            }
            _ => Err(Error::corrupt(
                Some(file),
                format!("a field type must be a string or an object, not {v}"),
            )),
        }
    }

    /// Parses an atomic type string such as `BIGINT NOT NULL` or `DECIMAL(10, 2)`.
    pub fn parse(s: &str, file: &str) -> Result<Self> {
        let (body, nullable) = split_not_null(s.trim());
        let upper = body.trim().to_ascii_uppercase();
        let (name, args) = match upper.find('(') {
            Some(i) => {
                let j = upper[i..].find(')').map(|j| i + j).ok_or_else(|| {
                    Error::unsupported(format!("schema file '{file}': unbalanced type '{s}'"))
                })?;
                let inner = &upper[i + 1..j];
                let args = inner
                    .split(',')
                    .map(|a| a.trim().parse::<u32>())
                    .collect::<std::result::Result<Vec<u32>, _>>()
                    .map_err(|_| {
                        Error::unsupported(format!(
                            "schema file '{file}': cannot read the parameters of type '{s}'"
                        ))
                    })?;
                (format!("{}{}", upper[..i].trim(), &upper[j + 1..]), args)
            }
            None => (upper.clone(), Vec::new()),
        };
        let arg = |i: usize, default: u32| args.get(i).copied().unwrap_or(default);
        let root = match name.trim() {
            "BOOLEAN" => TypeRoot::Boolean,
            "TINYINT" => TypeRoot::TinyInt,
            "SMALLINT" => TypeRoot::SmallInt,
            "INT" | "INTEGER" => TypeRoot::Int,
            "BIGINT" => TypeRoot::BigInt,
            "FLOAT" => TypeRoot::Float,
            "DOUBLE" | "DOUBLE PRECISION" => TypeRoot::Double,
            "DECIMAL" | "NUMERIC" | "DEC" => TypeRoot::Decimal {
                precision: arg(0, 10),
                scale: arg(1, 0),
            },
            "CHAR" => TypeRoot::Char { length: arg(0, 1) },
            "VARCHAR" => TypeRoot::VarChar { length: arg(0, 1) },
            "STRING" => TypeRoot::VarChar { length: MAX_LENGTH },
            "BINARY" => TypeRoot::Binary { length: arg(0, 1) },
            "VARBINARY" => TypeRoot::VarBinary { length: arg(0, 1) },
            "BYTES" => TypeRoot::VarBinary { length: MAX_LENGTH },
            "DATE" => TypeRoot::Date,
            "TIME" | "TIME WITHOUT TIME ZONE" => TypeRoot::Time {
                precision: arg(0, 0),
            },
            "TIMESTAMP" | "TIMESTAMP WITHOUT TIME ZONE" => TypeRoot::Timestamp {
                precision: arg(0, 6),
            },
            "TIMESTAMP WITH LOCAL TIME ZONE" | "TIMESTAMP_LTZ" => TypeRoot::LocalZonedTimestamp {
                precision: arg(0, 6),
            },
            "VARIANT" => TypeRoot::Variant,
            "BLOB" => TypeRoot::Blob,
            _ => {
                return Err(Error::unsupported(format!(
                    "schema file '{file}': unknown data type '{s}'"
                )))
            }
        };
        Ok(DataType { root, nullable })
    }

    /// Types that fit BinaryRow's fixed 8-byte slot (no variable part).
    pub fn is_fixed_length(&self) -> bool {
        match &self.root {
            TypeRoot::Decimal { precision, .. } => *precision <= 18,
            TypeRoot::Timestamp { precision } | TypeRoot::LocalZonedTimestamp { precision } => {
                *precision <= 3
            }
            TypeRoot::Boolean
            | TypeRoot::TinyInt
            | TypeRoot::SmallInt
            | TypeRoot::Int
            | TypeRoot::BigInt
            | TypeRoot::Float
            | TypeRoot::Double
            | TypeRoot::Date
            | TypeRoot::Time { .. } => true,
            _ => false,
        }
    }
}

fn split_not_null(s: &str) -> (&str, bool) {
    let t = s.trim_end();
    let upper = t.to_ascii_uppercase();
    if upper.ends_with(" NOT NULL") {
        (&t[..t.len() - " NOT NULL".len()], false)
    } else if upper.ends_with(" NULL") {
        (&t[..t.len() - " NULL".len()], true)
    } else {
        (t, true)
    }
}

/// One column.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DataField {
    pub id: i32,
    pub name: String,
    pub data_type: DataType,
    pub description: Option<String>,
}

impl DataField {
    fn from_json(v: &serde_json::Value, file: &str) -> Result<Self> {
        let id = v
            .get("id")
            .and_then(|x| x.as_i64())
            .and_then(|x| i32::try_from(x).ok())
            .ok_or_else(|| Error::corrupt(Some(file), "a field has no integer 'id'"))?;
        let name = v
            .get("name")
            .and_then(|x| x.as_str())
            .ok_or_else(|| Error::corrupt(Some(file), format!("field {id} has no 'name'")))?
            .to_string();
        let t = v
            .get("type")
            .ok_or_else(|| Error::corrupt(Some(file), format!("field '{name}' has no 'type'")))?;
        Ok(DataField {
            id,
            name,
            data_type: DataType::from_json(t, file)?,
            description: v
                .get("description")
                .and_then(|x| x.as_str())
                .map(str::to_string),
        })
    }

    fn to_json(&self) -> serde_json::Value {
        let mut o = serde_json::Map::new();
        o.insert("id".into(), self.id.into());
        o.insert("name".into(), self.name.clone().into());
        o.insert("type".into(), type_to_json(&self.data_type));
        if let Some(d) = &self.description {
            o.insert("description".into(), d.clone().into());
        }
        serde_json::Value::Object(o)
    }
}

fn type_to_json(t: &DataType) -> serde_json::Value {
    let nn = if t.nullable { "" } else { " NOT NULL" };
    match &t.root {
        TypeRoot::Array { element } | TypeRoot::Multiset { element } => {
            let name = if matches!(t.root, TypeRoot::Array { .. }) {
                "ARRAY"
            } else {
                "MULTISET"
            };
            serde_json::json!({"type": format!("{name}{nn}"), "element": type_to_json(element)})
        }
        TypeRoot::Map { key, value } => serde_json::json!({
            "type": format!("MAP{nn}"), "key": type_to_json(key), "value": type_to_json(value)
        }),
        TypeRoot::Row { fields } => serde_json::json!({
            "type": format!("ROW{nn}"),
            "fields": fields.iter().map(DataField::to_json).collect::<Vec<_>>()
        }),
        _ => serde_json::Value::String(t.to_type_string()),
    }
}

/// One version of the table schema.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TableSchema {
    pub id: i64,
    pub fields: Vec<DataField>,
    pub highest_field_id: i32,
    pub partition_keys: Vec<String>,
    pub primary_keys: Vec<String>,
    pub options: BTreeMap<String, String>,
    pub comment: Option<String>,
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

    pub fn field(&self, name: &str) -> Option<&DataField> {
        self.fields.iter().find(|f| f.name == name)
    }

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

    pub fn has_blob_column(&self) -> bool {
        self.fields
            .iter()
            .any(|f| matches!(f.data_type.root, TypeRoot::Blob))
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
}
