//! Paimon's data types (`org.apache.paimon.types`): [`DataType`] with its [`TypeRoot`], the
//! [`DataField`]s of a row type, their type strings and JSON form in schema files, and the
//! Arrow type each is read and written as ([`DataType::to_arrow`], the one Paimon → Arrow
//! mapping of the crate).
//!
//! Types are parsed strictly: a type this build does not know is an error naming the schema
//! file, never a silent guess, because the key and partition codecs depend on the exact type.
//! Shared by the table layer (schema files, BinaryRow codecs) and the rewriters (schema
//! evolution), so neither depends on the other for them.

use crate::error::{Error, Result};

/// A Paimon data type, with its nullability.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DataType {
    /// The kind of the type and its parameters (length, precision, nested types).
    pub root: TypeRoot,
    /// Whether values may be null: `false` for a type written with `NOT NULL` in the schema
    /// file, `true` otherwise (Paimon's default).
    pub nullable: bool,
}

/// The kind of a type and its parameters.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TypeRoot {
    /// `BOOLEAN`.
    Boolean,
    /// `TINYINT`: a signed 8-bit integer.
    TinyInt,
    /// `SMALLINT`: a signed 16-bit integer.
    SmallInt,
    /// `INT` (also read as `INTEGER`): a signed 32-bit integer.
    Int,
    /// `BIGINT`: a signed 64-bit integer.
    BigInt,
    /// `FLOAT`: a 32-bit IEEE 754 float.
    Float,
    /// `DOUBLE` (also read as `DOUBLE PRECISION`): a 64-bit IEEE 754 float.
    Double,
    /// `DECIMAL(p, s)` (also read as `NUMERIC`, `DEC`); `DECIMAL` alone is `DECIMAL(10, 0)`.
    Decimal {
        /// Total number of decimal digits; up to 18 fits BinaryRow's fixed 8-byte slot
        /// ([`DataType::is_fixed_length`]), above 38 has no Arrow form.
        precision: u32,
        /// Digits after the decimal point (`0..=precision`).
        scale: u32,
    },
    /// `CHAR(n)`: a fixed-length string; `CHAR` alone is `CHAR(1)`.
    Char {
        /// Length in characters.
        length: u32,
    },
    /// `VARCHAR(n)`; `STRING` is `VARCHAR(`[`MAX_LENGTH`]`)`.
    VarChar {
        /// Maximum length in characters.
        length: u32,
    },
    /// `BINARY(n)`: a fixed-length byte string; `BINARY` alone is `BINARY(1)`.
    Binary {
        /// Length in bytes.
        length: u32,
    },
    /// `VARBINARY(n)`; `BYTES` is `VARBINARY(`[`MAX_LENGTH`]`)`.
    VarBinary {
        /// Maximum length in bytes.
        length: u32,
    },
    /// `DATE`: days since 1970-01-01.
    Date,
    /// `TIME(p)`: a time of day without time zone, stored in Parquet as `INT32` milliseconds
    /// whatever the precision; `TIME` alone is `TIME(0)`.
    Time {
        /// Fractional-second digits (0–9).
        precision: u32,
    },
    /// `TIMESTAMP(p)` (`TIMESTAMP WITHOUT TIME ZONE`); `TIMESTAMP` alone is `TIMESTAMP(6)`.
    Timestamp {
        /// Fractional-second digits (0–9): up to 3 is stored as milliseconds (and fits
        /// BinaryRow's fixed slot), up to 6 as microseconds, above 6 as nanoseconds (INT96 in
        /// Parquet).
        precision: u32,
    },
    /// `TIMESTAMP(p) WITH LOCAL TIME ZONE` (also read as `TIMESTAMP_LTZ`): an instant, read
    /// as UTC; `TIMESTAMP_LTZ` alone has precision 6.
    LocalZonedTimestamp {
        /// Fractional-second digits (0–9), with the same storage tiers as
        /// [`TypeRoot::Timestamp`].
        precision: u32,
    },
    /// `ARRAY<t>`.
    Array {
        /// Type of each element, with its own nullability.
        element: Box<DataType>,
    },
    /// `MULTISET<t>`: a bag, stored in Parquet as a map from element to its `INT` count.
    Multiset {
        /// Type of the distinct elements (the map's keys).
        element: Box<DataType>,
    },
    /// `MAP<k, v>`.
    Map {
        /// Type of the keys; Paimon's Parquet writer stores them as non-null.
        key: Box<DataType>,
        /// Type of the values, with its own nullability.
        value: Box<DataType>,
    },
    /// `ROW<...>`: a nested record.
    Row {
        /// The nested fields in order, each with its own stable field id.
        fields: Vec<DataField>,
    },
    /// `VARIANT`: semi-structured data; readable from schemas, but it has no single Arrow form
    /// ([`DataType::to_arrow`] refuses it).
    Variant,
    /// `BLOB`: values stored outside the data files; [`DataType::to_arrow`] refuses it.
    Blob,
}

/// `VARCHAR(2147483647)`, written as `STRING`.
pub const MAX_LENGTH: u32 = i32::MAX as u32;

impl DataType {
    /// The Arrow type arrow-rs reads a column of this type as, from a file written by Paimon's
    /// Parquet writer: the target of schema evolution and the type outputs are written in when
    /// no input of the latest schema version lends its own.
    ///
    /// Nested types take the names Paimon's writer gives the Parquet groups (a list's `element`,
    /// a map's `key_value` entries of `key` and `value`), since arrow-rs keeps those names and
    /// writes them back; a MULTISET is stored as a map from element to its `INT` count, and map
    /// keys are never null in Parquet. Nested field names and metadata (Parquet field ids) of
    /// decoded files may still differ from these: the evolution rebuilds nested arrays by
    /// position rather than relying on them.
    pub fn to_arrow(&self) -> Result<arrow_schema::DataType> {
        use arrow_schema::{DataType as A, Field, Fields, TimeUnit};
        use std::sync::Arc;
        let unit = |p: u32| match p {
            0..=3 => TimeUnit::Millisecond,
            _ => TimeUnit::Microsecond,
        };
        let map = arrow_map;
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
            // Stored as INT32 milliseconds whatever the precision.
            TypeRoot::Time { .. } => A::Time32(TimeUnit::Millisecond),
            // Precisions above 6 are stored as INT96, which arrow-rs reads as nanoseconds
            // without a time zone (for both timestamp types).
            TypeRoot::Timestamp { precision } | TypeRoot::LocalZonedTimestamp { precision }
                if *precision > 6 =>
            {
                A::Timestamp(TimeUnit::Nanosecond, None)
            }
            TypeRoot::Timestamp { precision } => A::Timestamp(unit(*precision), None),
            TypeRoot::LocalZonedTimestamp { precision } => {
                A::Timestamp(unit(*precision), Some("UTC".into()))
            }
            TypeRoot::Array { element } => A::List(Arc::new(Field::new(
                "element",
                element.to_arrow()?,
                element.nullable,
            ))),
            TypeRoot::Multiset { element } => map(element.to_arrow()?, A::Int32, false),
            TypeRoot::Map { key, value } => map(key.to_arrow()?, value.to_arrow()?, value.nullable),
            TypeRoot::Row { fields } => A::Struct(
                fields
                    .iter()
                    .map(DataField::to_arrow)
                    .collect::<Result<Fields>>()?,
            ),
            // Paimon stores a VARIANT as a group whose layout depends on shredding, and BLOB
            // values outside the data files: neither has one Arrow form to map files onto.
            TypeRoot::Variant => {
                return Err(Error::unsupported(
                    "VARIANT columns in a schema-evolved rewrite (their Parquet layout depends \
                     on shredding)",
                ))
            }
            TypeRoot::Blob => {
                return Err(Error::unsupported(
                    "BLOB columns in a schema-evolved rewrite",
                ))
            }
        })
    }

    /// A nullable type of `root` (Paimon's default when a type string has no `NOT NULL`).
    pub fn new(root: TypeRoot) -> Self {
        DataType {
            root,
            nullable: true,
        }
    }

    /// The same type with `NOT NULL`.
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

    /// The same type as `other` for the data it stores: nested ROW fields compare by id, name,
    /// type and order, but not by their descriptions (comments change nothing in a file).
    pub fn same_as(&self, other: &DataType) -> bool {
        if self.nullable != other.nullable {
            return false;
        }
        match (&self.root, &other.root) {
            (TypeRoot::Array { element: a }, TypeRoot::Array { element: b })
            | (TypeRoot::Multiset { element: a }, TypeRoot::Multiset { element: b }) => {
                a.same_as(b)
            }
            (TypeRoot::Map { key: ka, value: va }, TypeRoot::Map { key: kb, value: vb }) => {
                ka.same_as(kb) && va.same_as(vb)
            }
            (TypeRoot::Row { fields: a }, TypeRoot::Row { fields: b }) => same_fields(a, b),
            (a, b) => a == b,
        }
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

/// The Arrow schema of a row of `fields` ([`DataField::to_arrow`] of each, in order).
pub fn arrow_schema(fields: &[DataField]) -> Result<arrow_schema::SchemaRef> {
    let fields = fields
        .iter()
        .map(DataField::to_arrow)
        .collect::<Result<Vec<_>>>()?;
    Ok(std::sync::Arc::new(arrow_schema::Schema::new(fields)))
}

/// Fields that store the same data: same ids, names and types (see [`DataType::same_as`]), in
/// the same order.
pub fn same_fields(a: &[DataField], b: &[DataField]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.id == y.id && x.name == y.name && x.data_type.same_as(&y.data_type))
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
    /// Field id, stable across renames; schema evolution matches the columns of older files by
    /// it (format.md §2), and nested ROW fields have their own.
    pub id: i32,
    /// Column name in the current schema (may differ from the name in older data files).
    pub name: String,
    /// Type of the column, with its nullability.
    pub data_type: DataType,
    /// The column comment from the schema file; `None` when it has none. Ignored when
    /// comparing types ([`DataType::same_as`]).
    pub description: Option<String>,
}

impl DataField {
    /// The Arrow field of this column: its name, [`DataType::to_arrow`] and nullability.
    pub fn to_arrow(&self) -> Result<arrow_schema::Field> {
        Ok(arrow_schema::Field::new(
            &self.name,
            self.data_type.to_arrow()?,
            self.data_type.nullable,
        ))
    }

    pub(crate) fn from_json(v: &serde_json::Value, file: &str) -> Result<Self> {
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

    pub(crate) fn to_json(&self) -> serde_json::Value {
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

/// The Arrow type of a Paimon MAP (and MULTISET, a map to INT counts): entries named
/// `key_value` with `key` and `value`, the entries and the keys non-null, as Paimon's Parquet
/// writer keeps them.
pub(crate) fn arrow_map(
    key: arrow_schema::DataType,
    value: arrow_schema::DataType,
    value_nullable: bool,
) -> arrow_schema::DataType {
    use arrow_schema::{DataType as A, Field, Fields};
    let entries = Fields::from(vec![
        Field::new("key", key, false),
        Field::new("value", value, value_nullable),
    ]);
    A::Map(
        std::sync::Arc::new(Field::new("key_value", A::Struct(entries), false)),
        false,
    )
}
