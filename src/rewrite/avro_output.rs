//! Avro data files written from Arrow batches, as Paimon's Avro writer writes them: for an
//! output level whose format is `avro` (`file.format`, `file.format.per.level`,
//! `changelog-file.format`).
//!
//! The schema is Paimon's (`org.apache.paimon.avro.generated.record`, a nullable column as the
//! union `["null", T]` with default `null`; TINYINT and SMALLINT as `int`, DECIMAL as `bytes`
//! with the `decimal` logical type, DATE as `date`, TIME as `time-millis`, TIMESTAMP(p) as
//! `timestamp-millis` up to p = 3 and `timestamp-micros` up to 6, TIMESTAMP_LTZ as
//! `local-timestamp-*`). Nested types as Paimon's schema converter lays them out
//! (docs/format.md §8.2): ARRAY as an `array`, ROW as a `record` named after its path
//! (`record_<column>_<field>…`, inside the file's namespace), MAP and MULTISET with a string
//! key as an Avro `map`, with any other key as an `array` (logical type `map`) of
//! `{key, value}` records. Timestamps above precision 6, which Paimon's writer refuses too,
//! are `unsupported`.
//!
//! Records are encoded here, straight from the Arrow arrays, into blocks of the object
//! container format (about 64 KiB of records each, compressed with the file's codec, each
//! followed by the sync marker), handed to the caller's sink as they fill. The codec is
//! `avro.codec` when set, else `file.compression` (`zstd` at `file.compression.zstd-level`,
//! `snappy`, `deflate`, `none`), as Paimon chooses it.

use std::io::Write;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, Time32MillisecondType, TimestampMicrosecondType, TimestampMillisecondType,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, TimeUnit};

use crate::error::{Error, Result};
use crate::options::CoreOptions;

/// Records are gathered into blocks of about this many bytes before compression.
const BLOCK_BYTES: usize = 64 * 1024;

/// The block codec of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AvroCodec {
    Null,
    Deflate,
    Snappy,
    Zstandard(i32),
}

impl AvroCodec {
    fn name(self) -> &'static str {
        match self {
            AvroCodec::Null => "null",
            AvroCodec::Deflate => "deflate",
            AvroCodec::Snappy => "snappy",
            AvroCodec::Zstandard(_) => "zstandard",
        }
    }

    fn compress(self, block: &[u8]) -> Result<Vec<u8>> {
        let fail = |e: &dyn std::fmt::Display| Error::internal(format!("Avro block: {e}"));
        Ok(match self {
            AvroCodec::Null => block.to_vec(),
            AvroCodec::Deflate => {
                let mut enc = flate2::write::DeflateEncoder::new(
                    Vec::with_capacity(block.len() / 2),
                    flate2::Compression::default(),
                );
                enc.write_all(block).map_err(|e| fail(&e))?;
                enc.finish().map_err(|e| fail(&e))?
            }
            AvroCodec::Snappy => {
                // Avro's snappy blocks end with the big-endian CRC-32 of the raw block.
                let mut out = snap::raw::Encoder::new()
                    .compress_vec(block)
                    .map_err(|e| fail(&e))?;
                out.extend_from_slice(&crc32fast::hash(block).to_be_bytes());
                out
            }
            AvroCodec::Zstandard(level) => {
                zstd::bulk::compress(block, level).map_err(|e| fail(&e))?
            }
        })
    }
}

/// What the files of one output stream are written with.
#[derive(Debug)]
pub(crate) struct AvroSpec {
    /// The writer schema, as JSON, stored in each file's header.
    schema_json: String,
    columns: Vec<ColumnKind>,
    /// The Arrow type each column is encoded from: a batch's column of another type (a
    /// dictionary, another string width) is cast to it first, so the encoder's downcasts hold.
    types: Vec<DataType>,
    codec: AvroCodec,
}

/// How one value (a column's, or a nested one's) is encoded.
#[derive(Clone, Debug)]
struct ColumnKind {
    nullable: bool,
    value: ValueKind,
}

#[derive(Clone, Debug)]
enum ValueKind {
    /// An `array` of the item's values.
    Array(Box<ColumnKind>),
    /// A map: an Avro `map` when its keys are strings, else an `array` of `{key, value}`
    /// records (encoded alike).
    Map {
        key: Box<ColumnKind>,
        value: Box<ColumnKind>,
    },
    /// A `record` of the row's fields, in order.
    Record(Vec<ColumnKind>),
    Boolean,
    Int8,
    Int16,
    Int32,
    Date,
    TimeMillis,
    Int64,
    TimestampMillis,
    TimestampMicros,
    Float,
    Double,
    String,
    Bytes,
    Decimal,
}

impl AvroSpec {
    /// The spec of files of `schema` (`types`: Paimon's types by position, which name the
    /// logical types), compressed as `codec_name` (read from `key`) says.
    pub(crate) fn new(
        options: &CoreOptions,
        schema: &Schema,
        types: &[crate::types::DataType],
        codec_name: &str,
        key: &str,
    ) -> Result<Self> {
        let (codec_name, key) = match options.raw.get("avro.codec") {
            Some(c) => (c.as_str(), "avro.codec"),
            None => (codec_name, key),
        };
        let codec = match codec_name.to_ascii_lowercase().as_str() {
            "zstd" | "zstandard" => AvroCodec::Zstandard(options.zstd_level),
            "snappy" => AvroCodec::Snappy,
            "deflate" => AvroCodec::Deflate,
            "null" | "none" => AvroCodec::Null,
            other => {
                return Err(Error::unsupported(format!(
                    "{key} '{other}' for an Avro file (this build writes zstd, snappy, deflate \
                     and none)"
                )))
            }
        };
        let mut fields = Vec::new();
        let mut columns = Vec::new();
        for (i, f) in schema.fields().iter().enumerate() {
            let root = types.get(i).map(|t| &t.root);
            let (kind, avro) = avro_type(f, root, &format!("record_{}", f.name()))?;
            fields.push(avro_field(f, &avro)?);
            columns.push(kind);
        }
        Ok(AvroSpec {
            schema_json: format!(
                r#"{{"type":"record","name":"record","namespace":"org.apache.paimon.avro.generated","fields":[{}]}}"#,
                fields.join(",")
            ),
            columns,
            types: schema
                .fields()
                .iter()
                .map(|f| f.data_type().clone())
                .collect(),
            codec,
        })
    }
}

/// A record field's JSON: a nullable type as the union `["null", T]` with default `null`.
fn avro_field(f: &Field, avro: &str) -> Result<String> {
    let name = serde_json::to_string(f.name())
        .map_err(|e| Error::internal(format!("a column name as JSON: {e}")))?;
    Ok(if f.is_nullable() {
        format!(r#"{{"name":{name},"type":["null",{avro}],"default":null}}"#)
    } else {
        format!(r#"{{"name":{name},"type":{avro}}}"#)
    })
}

/// A type as it stands inside an array, a map or a record: nullable as a union with null.
fn nullable_type(nullable: bool, avro: String) -> String {
    if nullable {
        format!(r#"["null",{avro}]"#)
    } else {
        avro
    }
}

/// How `f`'s values are encoded and its Avro type (without the union of a nullable field);
/// `root` is its Paimon type where known (it tells local-zone timestamps apart), `name` the
/// record name a ROW here takes (Paimon names nested records by their path).
fn avro_type(
    f: &Field,
    root: Option<&crate::types::TypeRoot>,
    name: &str,
) -> Result<(ColumnKind, String)> {
    use crate::types::TypeRoot;
    let unsupported = || {
        Error::unsupported(format!(
            "column '{}' of type {} cannot be written to Avro by this build",
            f.name(),
            f.data_type()
        ))
    };
    let (value, avro) = match f.data_type() {
        DataType::Boolean => (ValueKind::Boolean, r#""boolean""#.to_string()),
        DataType::Int8 => (ValueKind::Int8, r#""int""#.to_string()),
        DataType::Int16 => (ValueKind::Int16, r#""int""#.to_string()),
        DataType::Int32 => (ValueKind::Int32, r#""int""#.to_string()),
        DataType::Int64 => (ValueKind::Int64, r#""long""#.to_string()),
        DataType::Float32 => (ValueKind::Float, r#""float""#.to_string()),
        DataType::Float64 => (ValueKind::Double, r#""double""#.to_string()),
        DataType::Utf8 => (ValueKind::String, r#""string""#.to_string()),
        DataType::Binary => (ValueKind::Bytes, r#""bytes""#.to_string()),
        DataType::Date32 => (
            ValueKind::Date,
            r#"{"type":"int","logicalType":"date"}"#.to_string(),
        ),
        DataType::Time32(TimeUnit::Millisecond) => (
            ValueKind::TimeMillis,
            r#"{"type":"int","logicalType":"time-millis"}"#.to_string(),
        ),
        DataType::Decimal128(p, s) => (
            ValueKind::Decimal,
            format!(r#"{{"type":"bytes","logicalType":"decimal","precision":{p},"scale":{s}}}"#),
        ),
        DataType::Timestamp(unit @ (TimeUnit::Millisecond | TimeUnit::Microsecond), _) => {
            let local = matches!(root, Some(TypeRoot::LocalZonedTimestamp { .. }));
            let (kind, name) = match unit {
                TimeUnit::Millisecond => (ValueKind::TimestampMillis, "millis"),
                _ => (ValueKind::TimestampMicros, "micros"),
            };
            let prefix = if local { "local-" } else { "" };
            (
                kind,
                format!(r#"{{"type":"long","logicalType":"{prefix}timestamp-{name}"}}"#),
            )
        }
        DataType::List(item) => {
            let element = match root {
                Some(TypeRoot::Array { element }) => Some(&element.root),
                _ => None,
            };
            // An array's element keeps the array's record name, as Paimon's converter does.
            let (kind, avro) = avro_type(item, element, name)?;
            let items = nullable_type(kind.nullable, avro);
            (
                ValueKind::Array(Box::new(kind)),
                format!(r#"{{"type":"array","items":{items}}}"#),
            )
        }
        DataType::Map(entries, _) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(unsupported());
            };
            let [k, v] = &kv.iter().collect::<Vec<_>>()[..] else {
                return Err(unsupported());
            };
            let (k_root, v_root) = match root {
                Some(TypeRoot::Map { key, value }) => (Some(&key.root), Some(&value.root)),
                Some(TypeRoot::Multiset { element }) => (Some(&element.root), None),
                _ => (None, None),
            };
            let (key, key_avro) = avro_type(k, k_root, &format!("{name}_key"))?;
            let (value, value_avro) = avro_type(v, v_root, &format!("{name}_value"))?;
            let string_keys = matches!(key.value, ValueKind::String);
            if key.nullable {
                // Paimon's map keys are NOT NULL, and an Avro map's keys are bare strings.
                return Err(unsupported());
            }
            let value_type = nullable_type(value.nullable, value_avro);
            let avro = if string_keys {
                format!(r#"{{"type":"map","values":{value_type}}}"#)
            } else {
                let default = if value.nullable {
                    r#","default":null"#
                } else {
                    ""
                };
                let key_type = nullable_type(key.nullable, key_avro);
                format!(
                    r#"{{"type":"array","items":{{"type":"record","name":"{name}","fields":[{{"name":"key","type":{key_type}}},{{"name":"value","type":{value_type}{default}}}]}},"logicalType":"map"}}"#
                )
            };
            (
                ValueKind::Map {
                    key: Box::new(key),
                    value: Box::new(value),
                },
                avro,
            )
        }
        DataType::Struct(children) => {
            let roots: Vec<Option<&TypeRoot>> = match root {
                Some(TypeRoot::Row { fields }) if fields.len() == children.len() => {
                    fields.iter().map(|d| Some(&d.data_type.root)).collect()
                }
                _ => vec![None; children.len()],
            };
            let mut kinds = Vec::with_capacity(children.len());
            let mut fields = Vec::with_capacity(children.len());
            for (c, r) in children.iter().zip(roots) {
                let (kind, avro) = avro_type(c, r, &format!("{name}_{}", c.name()))?;
                fields.push(avro_field(c, &avro)?);
                kinds.push(kind);
            }
            let record = serde_json::to_string(name)
                .map_err(|e| Error::internal(format!("a record name as JSON: {e}")))?;
            (
                ValueKind::Record(kinds),
                format!(
                    r#"{{"type":"record","name":{record},"fields":[{}]}}"#,
                    fields.join(",")
                ),
            )
        }
        _ => return Err(unsupported()),
    };
    Ok((
        ColumnKind {
            nullable: f.is_nullable(),
            value,
        },
        avro,
    ))
}

/// Where the bytes of a file go, in order.
pub(crate) type Sink<'a> = dyn FnMut(&[u8]) -> Result<()> + 'a;

/// One Avro data file being written.
pub(crate) struct AvroFileWriter {
    spec: std::sync::Arc<AvroSpec>,
    marker: [u8; 16],
    block: Vec<u8>,
    block_records: u64,
    /// Bytes sent to the sink so far.
    written: u64,
}

impl AvroFileWriter {
    /// A writer whose sync marker is `marker` (unique per file: the caller derives it from
    /// the file's path, so outputs are reproducible).
    pub(crate) fn new(spec: std::sync::Arc<AvroSpec>, marker: [u8; 16]) -> Self {
        AvroFileWriter {
            spec,
            marker,
            block: Vec::with_capacity(BLOCK_BYTES + 1024),
            block_records: 0,
            written: 0,
        }
    }

    /// Bytes the file would have if finished now (the open block uncompressed).
    pub(crate) fn estimated_size(&self) -> u64 {
        self.written + self.block.len() as u64
    }

    fn header(&mut self, out: &mut Sink<'_>) -> Result<()> {
        let mut h = b"Obj\x01".to_vec();
        long(2, &mut h);
        for (k, v) in [
            ("avro.schema", self.spec.schema_json.as_bytes()),
            ("avro.codec", self.spec.codec.name().as_bytes()),
        ] {
            long(k.len() as i64, &mut h);
            h.extend_from_slice(k.as_bytes());
            long(v.len() as i64, &mut h);
            h.extend_from_slice(v);
        }
        long(0, &mut h);
        h.extend_from_slice(&self.marker);
        out(&h)?;
        self.written = h.len() as u64;
        Ok(())
    }

    /// Encodes `batch`'s records, writing blocks as they fill.
    pub(crate) fn write(&mut self, batch: &RecordBatch, out: &mut Sink<'_>) -> Result<()> {
        if self.written == 0 {
            self.header(out)?;
        }
        let columns = batch.columns();
        if columns.len() != self.spec.columns.len() {
            return Err(Error::internal(
                "an Avro batch has the wrong number of columns",
            ));
        }
        let plain: Vec<std::sync::Arc<dyn Array>> = columns
            .iter()
            .zip(&self.spec.types)
            .map(|(c, t)| match c.data_type() == t {
                true => Ok(c.clone()),
                false => arrow_cast::cast(c, t).map_err(|e| {
                    Error::internal(format!("Avro: a {} column as {t}: {e}", c.data_type()))
                }),
            })
            .collect::<Result<_>>()?;
        for row in 0..batch.num_rows() {
            for (kind, column) in self.spec.columns.iter().zip(&plain) {
                encode(kind, column.as_ref(), row, &mut self.block)?;
            }
            self.block_records += 1;
            if self.block.len() >= BLOCK_BYTES {
                self.flush_block(out)?;
            }
        }
        Ok(())
    }

    fn flush_block(&mut self, out: &mut Sink<'_>) -> Result<()> {
        if self.block_records == 0 {
            return Ok(());
        }
        let data = self.spec.codec.compress(&self.block)?;
        let mut head = Vec::with_capacity(20);
        long(self.block_records as i64, &mut head);
        long(data.len() as i64, &mut head);
        out(&head)?;
        out(&data)?;
        out(&self.marker)?;
        self.written += (head.len() + data.len() + 16) as u64;
        self.block.clear();
        self.block_records = 0;
        Ok(())
    }

    /// Writes the last block.
    pub(crate) fn finish(mut self, out: &mut Sink<'_>) -> Result<()> {
        if self.written == 0 {
            self.header(out)?;
        }
        self.flush_block(out)
    }
}

/// Avro's `long`: a zigzag varint.
fn long(v: i64, out: &mut Vec<u8>) {
    crate::varint::write_u64(crate::varint::zigzag(v), out);
}

/// Appends the value of `column` at `row` in Avro's binary encoding.
fn encode(kind: &ColumnKind, column: &dyn Array, row: usize, out: &mut Vec<u8>) -> Result<()> {
    if kind.nullable {
        if column.is_null(row) {
            long(0, out);
            return Ok(());
        }
        long(1, out);
    } else if column.is_null(row) {
        return Err(Error::internal(
            "a null in a NOT NULL column written to Avro",
        ));
    }
    match &kind.value {
        ValueKind::Array(item) => {
            let list = column.as_list::<i32>();
            let offsets = list.value_offsets();
            let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
            if end > start {
                long((end - start) as i64, out);
                for i in start..end {
                    encode(item, list.values().as_ref(), i, out)?;
                }
            }
            long(0, out);
        }
        ValueKind::Map { key, value } => {
            // An Avro map's entry (a string key, then the value) and a `{key, value}` record
            // are encoded alike.
            let map = column.as_map();
            let offsets = map.value_offsets();
            let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
            if end > start {
                long((end - start) as i64, out);
                for i in start..end {
                    encode(key, map.keys().as_ref(), i, out)?;
                    encode(value, map.values().as_ref(), i, out)?;
                }
            }
            long(0, out);
        }
        ValueKind::Record(fields) => {
            let row_array = column.as_struct();
            for (kind, child) in fields.iter().zip(row_array.columns()) {
                encode(kind, child.as_ref(), row, out)?;
            }
        }
        ValueKind::Boolean => out.push(u8::from(column.as_boolean().value(row))),
        ValueKind::Int8 => long(column.as_primitive::<Int8Type>().value(row).into(), out),
        ValueKind::Int16 => long(column.as_primitive::<Int16Type>().value(row).into(), out),
        ValueKind::Int32 => long(column.as_primitive::<Int32Type>().value(row).into(), out),
        ValueKind::Date => long(column.as_primitive::<Date32Type>().value(row).into(), out),
        ValueKind::TimeMillis => long(
            column
                .as_primitive::<Time32MillisecondType>()
                .value(row)
                .into(),
            out,
        ),
        ValueKind::Int64 => long(column.as_primitive::<Int64Type>().value(row), out),
        ValueKind::TimestampMillis => long(
            column.as_primitive::<TimestampMillisecondType>().value(row),
            out,
        ),
        ValueKind::TimestampMicros => long(
            column.as_primitive::<TimestampMicrosecondType>().value(row),
            out,
        ),
        ValueKind::Float => out.extend_from_slice(
            &column
                .as_primitive::<Float32Type>()
                .value(row)
                .to_le_bytes(),
        ),
        ValueKind::Double => out.extend_from_slice(
            &column
                .as_primitive::<Float64Type>()
                .value(row)
                .to_le_bytes(),
        ),
        ValueKind::String => {
            let v = column.as_string::<i32>().value(row).as_bytes();
            long(v.len() as i64, out);
            out.extend_from_slice(v);
        }
        ValueKind::Bytes => {
            let v = column.as_binary::<i32>().value(row);
            long(v.len() as i64, out);
            out.extend_from_slice(v);
        }
        ValueKind::Decimal => {
            // The shortest big-endian two's complement bytes, as Java's BigInteger gives them.
            let be = column
                .as_primitive::<Decimal128Type>()
                .value(row)
                .to_be_bytes();
            let mut start = 0;
            while start < 15
                && ((be[start] == 0 && be[start + 1] & 0x80 == 0)
                    || (be[start] == 0xff && be[start + 1] & 0x80 != 0))
            {
                start += 1;
            }
            long((16 - start) as i64, out);
            out.extend_from_slice(&be[start..]);
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use arrow_array::{
        Decimal128Array, Int32Array, Int64Array, StringArray, TimestampMicrosecondArray,
    };
    use arrow_schema::Field;

    use super::*;
    use crate::options::{Flavor, TableKind};
    use crate::storage::{MemoryStorage, Storage};

    /// The bytes of an Avro data file of `batch` as `spec` lays it out, written in two writes
    /// split at row `split`.
    pub(crate) fn file_bytes(spec: Arc<AvroSpec>, batch: &RecordBatch, split: usize) -> Vec<u8> {
        let mut w = AvroFileWriter::new(spec, [7; 16]);
        let mut bytes = Vec::new();
        let mut out = |b: &[u8]| {
            bytes.extend_from_slice(b);
            Ok(())
        };
        let rows = batch.num_rows();
        w.write(&batch.slice(0, split), &mut out).unwrap();
        w.write(&batch.slice(split, rows - split), &mut out)
            .unwrap();
        w.finish(&mut out).unwrap();
        bytes
    }

    /// `batch` written as one file in two writes (split at row `split`), then read back
    /// through the Avro reader as the batch's schema, in one batch.
    fn written_and_read(spec: Arc<AvroSpec>, batch: &RecordBatch, split: usize) -> RecordBatch {
        let rows = batch.num_rows();
        let storage = MemoryStorage::new();
        storage.put("f.avro", file_bytes(spec, batch, split));
        let schema = batch.schema();
        let mut got = Vec::new();
        crate::rewrite::avro_data::read_avro_batches(
            &storage as &dyn Storage,
            "f.avro",
            &schema,
            rows as u64,
            |b| {
                got.push(b);
                Ok(())
            },
        )
        .unwrap();
        arrow_select::concat::concat_batches(&schema, &got).unwrap()
    }

    #[test]
    fn files_read_back_through_the_avro_reader_with_every_codec() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("s", DataType::Utf8, true),
            Field::new("n", DataType::Int32, true),
            Field::new("d", DataType::Decimal128(12, 3), true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
        ]));
        let rows: usize = 5000;
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values(0..rows as i64)),
                Arc::new(StringArray::from_iter(
                    (0..rows).map(|i| (i % 7 != 3).then(|| format!("v{i}"))),
                )),
                Arc::new(Int32Array::from_iter(
                    (0..rows).map(|i| (i % 5 != 1).then_some(i as i32 - 2500)),
                )),
                Arc::new(
                    Decimal128Array::from_iter(
                        (0..rows).map(|i| (i % 9 != 4).then_some(i as i128 * 1_001 - 2_000_000)),
                    )
                    .with_precision_and_scale(12, 3)
                    .unwrap(),
                ),
                Arc::new(TimestampMicrosecondArray::from_iter((0..rows).map(|i| {
                    (i % 4 != 2).then_some((i as i64 - 2000) * 86_400_000_017)
                }))),
            ],
        )
        .unwrap();
        for codec in ["zstd", "snappy", "deflate", "none"] {
            let options =
                CoreOptions::from_pairs(TableKind::PrimaryKey, Flavor::Java, std::iter::empty())
                    .unwrap();
            let spec =
                Arc::new(AvroSpec::new(&options, &schema, &[], codec, "file.compression").unwrap());
            let got = written_and_read(spec, &batch, 1234);
            assert_eq!(got, batch, "{codec}");
        }
    }

    #[test]
    fn nanosecond_timestamps_and_unknown_codecs_are_refused() {
        let options =
            CoreOptions::from_pairs(TableKind::PrimaryKey, Flavor::Java, std::iter::empty())
                .unwrap();
        let nanos = Schema::new(vec![Field::new(
            "a",
            DataType::List(Arc::new(Field::new(
                "element",
                DataType::Timestamp(TimeUnit::Nanosecond, None),
                true,
            ))),
            true,
        )]);
        let e = AvroSpec::new(&options, &nanos, &[], "zstd", "file.compression").unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::Unsupported, "{e}");
        let flat = Schema::new(vec![Field::new("a", DataType::Int32, true)]);
        let e = AvroSpec::new(&options, &flat, &[], "lz4", "file.compression").unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::Unsupported, "{e}");
    }

    /// `n` rows of nested columns, by name: an array of ints, maps with string keys (Avro maps)
    /// and with int keys (arrays of records), a row holding an array, with nulls at every
    /// level (what Paimon writes to Avro, nested in each other).
    pub(crate) fn nested_columns(n: usize) -> Vec<(&'static str, arrow_array::ArrayRef)> {
        use arrow_array::builder::{
            Int32Builder, ListBuilder, MapBuilder, MapFieldNames, StringBuilder,
        };
        use arrow_array::{ArrayRef, StructArray};
        use arrow_schema::Fields;

        let names = || MapFieldNames {
            entry: "key_value".into(),
            key: "key".into(),
            value: "value".into(),
        };
        let element = |t: DataType| Arc::new(Field::new("element", t, true));
        let mut arr = ListBuilder::new(Int32Builder::new()).with_field(element(DataType::Int32));
        let mut m = MapBuilder::new(Some(names()), StringBuilder::new(), Int32Builder::new());
        let mut mi = MapBuilder::new(Some(names()), Int32Builder::new(), StringBuilder::new());
        let mut tags = ListBuilder::new(StringBuilder::new()).with_field(element(DataType::Utf8));
        let n = i32::try_from(n).unwrap();
        for i in 0..n {
            if i % 5 == 1 {
                arr.append_null();
            } else {
                for j in 0..i % 4 {
                    arr.values().append_option((j != 2).then_some(j));
                }
                arr.append(true);
            }
            for j in 0..i % 3 {
                m.keys().append_value(format!("k{j}"));
                m.values().append_option((j != 1).then_some(i));
            }
            m.append(i % 6 != 2).unwrap();
            for j in 0..i % 3 {
                mi.keys().append_value(j - 1);
                mi.values().append_option((j != 0).then(|| format!("v{i}")));
            }
            mi.append(i % 7 != 3).unwrap();
            tags.values().append_value(format!("t{i}"));
            tags.append(i % 4 != 0);
        }
        let tags: ArrayRef = Arc::new(tags.finish());
        let a: ArrayRef = Arc::new(Int32Array::from_iter(
            (0..n).map(|i| (i % 3 != 0).then_some(i)),
        ));
        let row_fields = Fields::from(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("tags", tags.data_type().clone(), true),
        ]);
        let row = StructArray::try_new(
            row_fields.clone(),
            vec![a, tags],
            Some((0..n).map(|i| i % 9 != 4).collect()),
        )
        .unwrap();
        vec![
            ("arr", Arc::new(arr.finish())),
            ("m", Arc::new(m.finish())),
            ("mi", Arc::new(mi.finish())),
            ("r", Arc::new(row)),
        ]
    }

    /// Arrays, rows, maps with string keys (Avro maps) and with int keys (arrays of records),
    /// nested in each other with nulls at every level, read back by the Avro reader as written;
    /// the schema names nested records by path and marks the record-array form as a map.
    #[test]
    fn nested_columns_read_back_as_written() {
        use arrow_array::ArrayRef;
        let n = 50;
        let mut columns: Vec<(&str, ArrayRef)> =
            vec![("k", Arc::new(Int64Array::from_iter_values(0..n as i64)))];
        columns.extend(nested_columns(n));
        let schema = Arc::new(Schema::new(
            columns
                .iter()
                .map(|(name, c)| Field::new(*name, c.data_type().clone(), *name != "k"))
                .collect::<Vec<_>>(),
        ));
        let batch = RecordBatch::try_new(
            schema.clone(),
            columns.into_iter().map(|(_, c)| c).collect(),
        )
        .unwrap();
        let options =
            CoreOptions::from_pairs(TableKind::PrimaryKey, Flavor::Java, std::iter::empty())
                .unwrap();
        let spec = AvroSpec::new(&options, &schema, &[], "snappy", "file.compression").unwrap();
        assert!(
            spec.schema_json.contains(r#""name":"record_r","fields""#),
            "{}",
            spec.schema_json
        );
        assert!(
            spec.schema_json.contains(r#""logicalType":"map""#),
            "{}",
            spec.schema_json
        );
        assert!(spec
            .schema_json
            .contains(r#"{"type":"map","values":["null","int"]}"#));
        let got = written_and_read(Arc::new(spec), &batch, 17);
        // The reader lays a string-keyed map out in key order, as these were written.
        assert_eq!(got, batch);
    }
}
