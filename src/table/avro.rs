//! Avro object container files, the encoding of every manifest-type file (format.md §4).
//!
//! Reading decodes with the writer schema stored in the file (pypaimon and Java name their
//! records differently; fields are matched by name, unknown ones ignored), so any standard codec
//! Paimon may have used (null, deflate, snappy, zstandard) is accepted. Writing mirrors Java's
//! schemas exactly and takes its 16-byte sync marker from the caller: the core draws no random
//! numbers, so the same job writes the same bytes.

use apache_avro::types::Value;
use apache_avro::{Codec, Schema, Writer};

use crate::error::{Error, Result};

pub use crate::avro_file::read_records;

/// The codec named by `manifest.compression` (Paimon's default is zstd).
pub fn codec_for(name: &str) -> Result<Codec> {
    match name.trim().to_ascii_lowercase().as_str() {
        "zstd" | "zstandard" => Ok(Codec::Zstandard(apache_avro::ZstandardSettings::new(1))),
        "snappy" => Ok(Codec::Snappy),
        "deflate" => Ok(Codec::Deflate(apache_avro::DeflateSettings::default())),
        "null" | "none" | "uncompressed" => Ok(Codec::Null),
        other => Err(Error::invalid_option(
            "manifest.compression",
            other,
            "expected zstd, snappy, deflate or none",
        )),
    }
}

/// Encodes records into one container file. The records are taken one at a time, so a
/// caller can build each `Value` as it goes.
pub fn write_records(
    schema: &Schema,
    records: impl IntoIterator<Item = Value>,
    codec: Codec,
    marker: [u8; 16],
) -> Result<Vec<u8>> {
    let mut files = write_records_rolling(schema, records, codec, u64::MAX, || marker)?;
    Ok(files.pop().map(|(bytes, _)| bytes).unwrap_or_default())
}

/// Encodes records into container files that roll to a new file once one reaches `target`
/// bytes (its blocks written so far, compressed), as Paimon's rolling manifest writer does;
/// each file takes a new sync `marker()`. Returns every file's bytes and how many of the
/// records, in order, it holds; no records make one empty file.
pub fn write_records_rolling(
    schema: &Schema,
    records: impl IntoIterator<Item = Value>,
    codec: Codec,
    target: u64,
    mut marker: impl FnMut() -> [u8; 16],
) -> Result<Vec<(Vec<u8>, usize)>> {
    let new_writer = |marker: [u8; 16]| {
        Writer::builder()
            .schema(schema)
            .writer(Vec::new())
            .codec(codec)
            .marker(marker)
            .build()
    };
    let finish = |w: Writer<'_, Vec<u8>>| {
        w.into_inner()
            .map_err(|e| Error::internal(format!("Avro encoding failed: {e}")).with_source(e))
    };
    let mut files = Vec::new();
    let mut w = new_writer(marker());
    let mut count = 0usize;
    for r in records {
        if count > 0 && w.get_ref().len() as u64 >= target {
            let full = std::mem::replace(&mut w, new_writer(marker()));
            files.push((finish(full)?, count));
            count = 0;
        }
        w.append(r).map_err(|e| {
            Error::internal(format!("Avro record does not fit its schema: {e}")).with_source(e)
        })?;
        count += 1;
    }
    files.push((finish(w)?, count));
    Ok(files)
}

/// Parses one of the fixed schemas below.
pub fn parse_schema(json: &str) -> Result<Schema> {
    Schema::parse_str(json)
        .map_err(|e| Error::internal(format!("built-in Avro schema: {e}")).with_source(e))
}

/// A decoded record, read field by field with errors that name the file and the field.
pub struct Rec<'a> {
    fields: &'a [(String, Value)],
    file: &'a str,
    what: &'a str,
}

fn unwrap_union(v: &Value) -> &Value {
    match v {
        Value::Union(_, inner) => inner,
        other => other,
    }
}

impl<'a> Rec<'a> {
    /// Wraps a decoded value that must be a record (a union around one is unwrapped);
    /// anything else is `CorruptInput`. `file` and `what` (e.g. `manifest entry`) name it in
    /// errors.
    pub fn new(v: &'a Value, file: &'a str, what: &'a str) -> Result<Self> {
        match unwrap_union(v) {
            Value::Record(fields) => Ok(Rec { fields, file, what }),
            other => Err(Error::corrupt(
                Some(file),
                format!("{what}: expected a record, found {other:?}"),
            )),
        }
    }

    fn bad(&self, field: &str, why: &str) -> Error {
        Error::corrupt(
            Some(self.file),
            format!("{} field {field}: {why}", self.what),
        )
    }

    /// The value of a field (unions unwrapped); `None` if absent or null.
    pub fn opt(&self, name: &str) -> Option<&'a Value> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| unwrap_union(v))
            .filter(|v| !matches!(v, Value::Null))
    }

    fn req(&self, name: &str) -> Result<&'a Value> {
        self.opt(name).ok_or_else(|| self.bad(name, "missing"))
    }

    /// A required int field; a long within `i32` range is accepted. Missing, null, out of
    /// range or another type is `CorruptInput`.
    pub fn int(&self, name: &str) -> Result<i32> {
        match self.req(name)? {
            Value::Int(i) => Ok(*i),
            Value::Long(l) => i32::try_from(*l).map_err(|_| self.bad(name, "out of int range")),
            _ => Err(self.bad(name, "not an int")),
        }
    }

    /// A required long field; ints and timestamp logical types are accepted as longs.
    /// Missing, null or another type is `CorruptInput`.
    pub fn long(&self, name: &str) -> Result<i64> {
        match self.req(name)? {
            Value::Long(l) | Value::TimestampMillis(l) | Value::TimestampMicros(l) => Ok(*l),
            Value::Int(i) => Ok(*i as i64),
            _ => Err(self.bad(name, "not a long")),
        }
    }

    /// An optional int field: `None` when absent or null, else as [`Rec::int`].
    pub fn opt_int(&self, name: &str) -> Result<Option<i32>> {
        self.opt(name).map(|_| self.int(name)).transpose()
    }

    /// An optional long field: `None` when absent or null, else as [`Rec::long`].
    pub fn opt_long(&self, name: &str) -> Result<Option<i64>> {
        self.opt(name).map(|_| self.long(name)).transpose()
    }

    /// A required string field; missing, null or another type is `CorruptInput`.
    pub fn string(&self, name: &str) -> Result<String> {
        match self.req(name)? {
            Value::String(s) => Ok(s.clone()),
            _ => Err(self.bad(name, "not a string")),
        }
    }

    /// An optional string field: `None` when absent or null.
    pub fn opt_string(&self, name: &str) -> Result<Option<String>> {
        self.opt(name).map(|_| self.string(name)).transpose()
    }

    /// A required bytes (or fixed) field; missing, null or another type is `CorruptInput`.
    pub fn bytes(&self, name: &str) -> Result<Vec<u8>> {
        match self.req(name)? {
            Value::Bytes(b) | Value::Fixed(_, b) => Ok(b.clone()),
            _ => Err(self.bad(name, "not bytes")),
        }
    }

    /// An optional bytes field: `None` when absent or null.
    pub fn opt_bytes(&self, name: &str) -> Result<Option<Vec<u8>>> {
        self.opt(name).map(|_| self.bytes(name)).transpose()
    }

    /// An optional array field's elements, undecoded: `None` when absent or null; a value
    /// that is not an array is `CorruptInput`.
    pub fn array(&self, name: &str) -> Result<Option<&'a [Value]>> {
        match self.opt(name) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(_) => Err(self.bad(name, "not an array")),
        }
    }

    /// An optional array of strings: `None` when absent or null; a non-string element
    /// (null included) is `CorruptInput`.
    pub fn opt_strings(&self, name: &str) -> Result<Option<Vec<String>>> {
        self.array(name)?
            .map(|a| {
                a.iter()
                    .map(|v| match unwrap_union(v) {
                        Value::String(s) => Ok(s.clone()),
                        _ => Err(self.bad(name, "holds a non-string")),
                    })
                    .collect()
            })
            .transpose()
    }

    /// An optional array of nullable longs (ints widened): `None` when absent or null, a
    /// null element as `None`.
    pub fn opt_longs(&self, name: &str) -> Result<Option<Vec<Option<i64>>>> {
        self.array(name)?
            .map(|a| {
                a.iter()
                    .map(|v| match unwrap_union(v) {
                        Value::Null => Ok(None),
                        Value::Long(l) => Ok(Some(*l)),
                        Value::Int(i) => Ok(Some(*i as i64)),
                        _ => Err(self.bad(name, "holds a non-long")),
                    })
                    .collect()
            })
            .transpose()
    }

    /// A required nested record field, read with the same file name and context.
    pub fn record(&self, name: &str) -> Result<Rec<'a>> {
        Rec::new(self.req(name)?, self.file, self.what)
    }
}

/// Builders for the values Java's schemas expect.
pub mod put {
    use apache_avro::types::Value;

    /// The null branch of a `["null", T]` union (branch 0).
    pub fn null() -> Value {
        Value::Union(0, Box::new(Value::Null))
    }
    /// The value branch of a `["null", T]` union (branch 1).
    pub fn some(v: Value) -> Value {
        Value::Union(1, Box::new(v))
    }
    /// A `["null", T]` union: null for `None`, else `f` applied to the value.
    pub fn opt<T>(v: Option<T>, f: impl FnOnce(T) -> Value) -> Value {
        v.map_or_else(null, |x| some(f(x)))
    }
    /// An array of strings.
    pub fn strings(v: &[String]) -> Value {
        Value::Array(v.iter().cloned().map(Value::String).collect())
    }
    /// A record with these fields, in this order (the order of the schema's fields).
    pub fn record(fields: Vec<(&str, Value)>) -> Value {
        Value::Record(
            fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    }
}
