//! The Protocol Buffers messages of an ORC file's tail and stripe footers, decoded and encoded
//! by hand.
//!
//! An ORC file describes itself with a handful of small protobuf messages (the postscript, the
//! footer, one footer per stripe, column statistics). Only the fields this layer uses are
//! modelled; every other field is skipped on read, as protobuf allows. A generated-code crate
//! would add a build step and a proc-macro for a dozen messages, and its decoder would allocate
//! whatever lengths the bytes claim: here every length is checked against the bytes that are
//! really there, so a hostile tail ends in a typed error, never a panic or a huge allocation.
//!
//! Field numbers and enum values are those of ORC's `orc_proto.proto`.

use crate::error::{Error, Result};

/// A corrupt-input error of this layer (the file is named by the caller).
fn bad(why: impl std::fmt::Display) -> Error {
    Error::corrupt(None, format!("ORC metadata: {why}"))
}

/// One field of a message, as the wire carries it.
#[derive(Clone, Copy, Debug)]
enum Value<'a> {
    Varint(u64),
    /// A fixed-width field (no field this layer reads has one).
    Fixed,
    Bytes(&'a [u8]),
}

impl<'a> Value<'a> {
    fn uint(self) -> Result<u64> {
        match self {
            Value::Varint(v) => Ok(v),
            _ => Err(bad("a varint field has another wire type")),
        }
    }

    fn bytes(self) -> Result<&'a [u8]> {
        match self {
            Value::Bytes(b) => Ok(b),
            _ => Err(bad("a length-delimited field has another wire type")),
        }
    }

    fn string(self) -> Result<String> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| bad("a string field is not UTF-8"))
    }

    /// A repeated unsigned field, packed or not, appended to `out`.
    fn uints_into(self, out: &mut Vec<u64>) -> Result<()> {
        match self {
            Value::Varint(v) => out.push(v),
            Value::Bytes(mut b) => {
                while !b.is_empty() {
                    let (v, n) = varint(b)?;
                    out.push(v);
                    b = &b[n..];
                }
            }
            _ => return Err(bad("a repeated integer field has another wire type")),
        }
        Ok(())
    }
}

/// Decodes a base-128 varint at the start of `b`: the value and the bytes it took.
fn varint(b: &[u8]) -> Result<(u64, usize)> {
    let mut pos = 0;
    let v = crate::varint::read_u64(b, &mut pos)
        .ok_or_else(|| bad("a varint is truncated or longer than ten bytes"))?;
    Ok((v, pos))
}

/// The fields of one encoded message, in order.
struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        Some(self.field())
    }
}

impl<'a> Fields<'a> {
    fn field(&mut self) -> Result<(u32, Value<'a>)> {
        let (key, n) = varint(self.rest)?;
        self.rest = &self.rest[n..];
        let number = u32::try_from(key >> 3).map_err(|_| bad("a field number is out of range"))?;
        let value = match key & 7 {
            0 => {
                let (v, n) = varint(self.rest)?;
                self.rest = &self.rest[n..];
                Value::Varint(v)
            }
            1 => {
                let (_, rest) = self
                    .rest
                    .split_first_chunk::<8>()
                    .ok_or_else(|| bad("a fixed64 field is truncated"))?;
                self.rest = rest;
                Value::Fixed
            }
            2 => {
                let (len, n) = varint(self.rest)?;
                let body = &self.rest[n..];
                let len = usize::try_from(len)
                    .ok()
                    .filter(|&l| l <= body.len())
                    .ok_or_else(|| bad("a length-delimited field runs past its message"))?;
                self.rest = &body[len..];
                Value::Bytes(&body[..len])
            }
            5 => {
                let (_, rest) = self
                    .rest
                    .split_first_chunk::<4>()
                    .ok_or_else(|| bad("a fixed32 field is truncated"))?;
                self.rest = rest;
                Value::Fixed
            }
            w => return Err(bad(format!("wire type {w} is not supported"))),
        };
        Ok((number, value))
    }
}

fn fields(b: &[u8]) -> Fields<'_> {
    Fields { rest: b }
}

/// `orc_proto.CompressionKind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CompressionKind {
    None,
    Zlib,
    Snappy,
    Lzo,
    Lz4,
    Zstd,
}

impl CompressionKind {
    fn from_wire(v: u64) -> Result<Self> {
        Ok(match v {
            0 => CompressionKind::None,
            1 => CompressionKind::Zlib,
            2 => CompressionKind::Snappy,
            3 => CompressionKind::Lzo,
            4 => CompressionKind::Lz4,
            5 => CompressionKind::Zstd,
            v => return Err(bad(format!("compression kind {v} is unknown"))),
        })
    }

    fn to_wire(self) -> u64 {
        match self {
            CompressionKind::None => 0,
            CompressionKind::Zlib => 1,
            CompressionKind::Snappy => 2,
            CompressionKind::Lzo => 3,
            CompressionKind::Lz4 => 4,
            CompressionKind::Zstd => 5,
        }
    }
}

/// `orc_proto.PostScript`: how to read the rest of the tail.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PostScript {
    pub footer_length: u64,
    pub compression: CompressionKind,
    /// The largest decompressed chunk; ORC's default when absent (256 KiB).
    pub compression_block_size: u64,
    pub version: Vec<u64>,
    pub metadata_length: u64,
    pub writer_version: u64,
    pub magic: String,
}

impl PostScript {
    pub(crate) fn decode(b: &[u8]) -> Result<Self> {
        let mut p = PostScript {
            footer_length: 0,
            compression: CompressionKind::None,
            compression_block_size: 256 * 1024,
            version: Vec::new(),
            metadata_length: 0,
            writer_version: 0,
            magic: String::new(),
        };
        for f in fields(b) {
            match f? {
                (1, v) => p.footer_length = v.uint()?,
                (2, v) => p.compression = CompressionKind::from_wire(v.uint()?)?,
                (3, v) => p.compression_block_size = v.uint()?,
                (4, v) => v.uints_into(&mut p.version)?,
                (5, v) => p.metadata_length = v.uint()?,
                (6, v) => p.writer_version = v.uint()?,
                (8000, v) => p.magic = v.string()?,
                _ => {}
            }
        }
        Ok(p)
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.uint(1, self.footer_length);
        w.uint(2, self.compression.to_wire());
        w.uint(3, self.compression_block_size);
        w.packed(4, &self.version);
        w.uint(5, self.metadata_length);
        w.uint(6, self.writer_version);
        w.bytes(8000, self.magic.as_bytes());
        w.buf
    }
}

/// `orc_proto.StripeInformation`: where a stripe is.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct StripeInformation {
    pub offset: u64,
    pub index_length: u64,
    pub data_length: u64,
    pub footer_length: u64,
    pub number_of_rows: u64,
}

impl StripeInformation {
    fn decode(b: &[u8]) -> Result<Self> {
        let mut s = StripeInformation::default();
        for f in fields(b) {
            match f? {
                (1, v) => s.offset = v.uint()?,
                (2, v) => s.index_length = v.uint()?,
                (3, v) => s.data_length = v.uint()?,
                (4, v) => s.footer_length = v.uint()?,
                (5, v) => s.number_of_rows = v.uint()?,
                _ => {}
            }
        }
        Ok(s)
    }

    fn encode(&self, w: &mut Writer) {
        w.uint(1, self.offset);
        w.uint(2, self.index_length);
        w.uint(3, self.data_length);
        w.uint(4, self.footer_length);
        w.uint(5, self.number_of_rows);
    }
}

/// `orc_proto.Type.Kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TypeKind {
    Boolean,
    Byte,
    Short,
    Int,
    Long,
    Float,
    Double,
    String,
    Binary,
    Timestamp,
    List,
    Map,
    Struct,
    Union,
    Decimal,
    Date,
    Varchar,
    Char,
    TimestampInstant,
}

impl TypeKind {
    const ALL: [TypeKind; 19] = [
        TypeKind::Boolean,
        TypeKind::Byte,
        TypeKind::Short,
        TypeKind::Int,
        TypeKind::Long,
        TypeKind::Float,
        TypeKind::Double,
        TypeKind::String,
        TypeKind::Binary,
        TypeKind::Timestamp,
        TypeKind::List,
        TypeKind::Map,
        TypeKind::Struct,
        TypeKind::Union,
        TypeKind::Decimal,
        TypeKind::Date,
        TypeKind::Varchar,
        TypeKind::Char,
        TypeKind::TimestampInstant,
    ];

    fn from_wire(v: u64) -> Result<Self> {
        usize::try_from(v)
            .ok()
            .and_then(|i| TypeKind::ALL.get(i).copied())
            .ok_or_else(|| bad(format!("type kind {v} is unknown")))
    }

    fn to_wire(self) -> u64 {
        TypeKind::ALL.iter().position(|k| *k == self).unwrap_or(0) as u64
    }
}

/// `orc_proto.Type`: one node of the file's type tree (the tree is flattened in pre-order;
/// node 0 is the root struct).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Type {
    pub kind: TypeKind,
    pub subtypes: Vec<u64>,
    pub field_names: Vec<String>,
    pub maximum_length: Option<u64>,
    pub precision: Option<u64>,
    pub scale: Option<u64>,
    pub attributes: Vec<(String, String)>,
}

impl Type {
    pub(crate) fn new(kind: TypeKind) -> Self {
        Type {
            kind,
            subtypes: Vec::new(),
            field_names: Vec::new(),
            maximum_length: None,
            precision: None,
            scale: None,
            attributes: Vec::new(),
        }
    }

    fn decode(b: &[u8]) -> Result<Self> {
        let mut t = Type::new(TypeKind::Boolean);
        let mut kind = None;
        for f in fields(b) {
            match f? {
                (1, v) => kind = Some(TypeKind::from_wire(v.uint()?)?),
                (2, v) => v.uints_into(&mut t.subtypes)?,
                (3, v) => t.field_names.push(v.string()?),
                (4, v) => t.maximum_length = Some(v.uint()?),
                (5, v) => t.precision = Some(v.uint()?),
                (6, v) => t.scale = Some(v.uint()?),
                (7, v) => {
                    let mut pair = (String::new(), String::new());
                    for f in fields(v.bytes()?) {
                        match f? {
                            (1, v) => pair.0 = v.string()?,
                            (2, v) => pair.1 = v.string()?,
                            _ => {}
                        }
                    }
                    t.attributes.push(pair);
                }
                _ => {}
            }
        }
        t.kind = kind.ok_or_else(|| bad("a type has no kind"))?;
        Ok(t)
    }

    fn encode(&self, w: &mut Writer) {
        w.uint(1, self.kind.to_wire());
        w.packed(2, &self.subtypes);
        for n in &self.field_names {
            w.bytes(3, n.as_bytes());
        }
        for (i, v) in [
            (4, self.maximum_length),
            (5, self.precision),
            (6, self.scale),
        ] {
            if let Some(v) = v {
                w.uint(i, v);
            }
        }
        for (k, v) in &self.attributes {
            w.message(7, |w| {
                w.bytes(1, k.as_bytes());
                w.bytes(2, v.as_bytes());
            });
        }
    }
}

/// The typed part of `orc_proto.ColumnStatistics` this layer writes. Bounds it cannot state
/// exactly are left out: a reader then cannot skip by them, which is always safe.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TypedStatistics {
    None,
    /// `intStatistics` (BYTE, SHORT, INT, LONG).
    Integer {
        min: i64,
        max: i64,
    },
    /// `stringStatistics` (STRING, VARCHAR).
    String {
        min: String,
        max: String,
    },
    /// `dateStatistics`, days since the epoch.
    Date {
        min: i32,
        max: i32,
    },
    /// `bucketStatistics`: the count of `true` values.
    Boolean {
        true_count: u64,
    },
    /// `doubleStatistics` (FLOAT, DOUBLE), NaN left out of the bounds.
    Double {
        min: f64,
        max: f64,
    },
    /// `decimalStatistics`, as decimal strings.
    Decimal {
        min: String,
        max: String,
    },
    /// `timestampStatistics`: UTC milliseconds and the sub-millisecond nanoseconds plus one,
    /// as ORC writers since ORC-135 record them.
    Timestamp {
        min_millis: i64,
        max_millis: i64,
        min_nanos: i32,
        max_nanos: i32,
    },
    /// `binaryStatistics`: total bytes.
    Binary {
        sum: i64,
    },
}

/// `orc_proto.ColumnStatistics`, as written.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ColumnStatistics {
    pub number_of_values: u64,
    pub has_null: bool,
    pub typed: TypedStatistics,
}

impl ColumnStatistics {
    fn encode(&self, w: &mut Writer) {
        w.uint(1, self.number_of_values);
        match &self.typed {
            TypedStatistics::None => {}
            TypedStatistics::Integer { min, max } => w.message(2, |w| {
                w.sint(1, *min);
                w.sint(2, *max);
            }),
            TypedStatistics::String { min, max } => w.message(4, |w| {
                w.bytes(1, min.as_bytes());
                w.bytes(2, max.as_bytes());
            }),
            TypedStatistics::Date { min, max } => w.message(7, |w| {
                w.sint(1, i64::from(*min));
                w.sint(2, i64::from(*max));
            }),
            TypedStatistics::Boolean { true_count } => w.message(5, |w| {
                w.packed(1, &[*true_count]);
            }),
            TypedStatistics::Double { min, max } => w.message(3, |w| {
                w.double(1, *min);
                w.double(2, *max);
            }),
            TypedStatistics::Decimal { min, max } => w.message(6, |w| {
                w.bytes(1, min.as_bytes());
                w.bytes(2, max.as_bytes());
            }),
            TypedStatistics::Timestamp {
                min_millis,
                max_millis,
                min_nanos,
                max_nanos,
            } => w.message(9, |w| {
                w.sint(3, *min_millis);
                w.sint(4, *max_millis);
                w.uint(5, *min_nanos as u64);
                w.uint(6, *max_nanos as u64);
            }),
            TypedStatistics::Binary { sum } => w.message(8, |w| w.sint(1, *sum)),
        }
        w.uint(10, u64::from(self.has_null));
    }
}

/// `orc_proto.Footer`: the file's stripes, types and row count.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Footer {
    pub header_length: u64,
    pub content_length: u64,
    pub stripes: Vec<StripeInformation>,
    pub types: Vec<Type>,
    pub number_of_rows: u64,
    /// One entry per type node when written; not decoded.
    pub statistics: Vec<ColumnStatistics>,
    pub row_index_stride: u64,
    pub writer: Option<u64>,
}

impl Footer {
    pub(crate) fn decode(b: &[u8]) -> Result<Self> {
        let mut footer = Footer {
            header_length: 0,
            content_length: 0,
            stripes: Vec::new(),
            types: Vec::new(),
            number_of_rows: 0,
            statistics: Vec::new(),
            row_index_stride: 0,
            writer: None,
        };
        for f in fields(b) {
            match f? {
                (1, v) => footer.header_length = v.uint()?,
                (2, v) => footer.content_length = v.uint()?,
                (3, v) => footer.stripes.push(StripeInformation::decode(v.bytes()?)?),
                (4, v) => footer.types.push(Type::decode(v.bytes()?)?),
                (6, v) => footer.number_of_rows = v.uint()?,
                (8, v) => footer.row_index_stride = v.uint()?,
                (9, v) => footer.writer = Some(v.uint()?),
                _ => {}
            }
        }
        Ok(footer)
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.uint(1, self.header_length);
        w.uint(2, self.content_length);
        for s in &self.stripes {
            w.message(3, |w| s.encode(w));
        }
        for t in &self.types {
            w.message(4, |w| t.encode(w));
        }
        w.uint(6, self.number_of_rows);
        for s in &self.statistics {
            w.message(7, |w| s.encode(w));
        }
        w.uint(8, self.row_index_stride);
        if let Some(id) = self.writer {
            w.uint(9, id);
        }
        // JULIAN_GREGORIAN, what ORC's Java writer records by default: dates and timestamps
        // are read without calendar conversion.
        w.uint(11, 1);
        w.buf
    }
}

/// `orc_proto.Stream.Kind`, for the kinds this layer reads or writes (others are skipped by
/// their length).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum StreamKind {
    Present,
    Data,
    Length,
    DictionaryData,
    Secondary,
    /// Any index or other stream: skipped.
    Other(u64),
}

impl StreamKind {
    fn from_wire(v: u64) -> Self {
        match v {
            0 => StreamKind::Present,
            1 => StreamKind::Data,
            2 => StreamKind::Length,
            3 => StreamKind::DictionaryData,
            5 => StreamKind::Secondary,
            v => StreamKind::Other(v),
        }
    }

    fn to_wire(self) -> u64 {
        match self {
            StreamKind::Present => 0,
            StreamKind::Data => 1,
            StreamKind::Length => 2,
            StreamKind::DictionaryData => 3,
            StreamKind::Secondary => 5,
            StreamKind::Other(v) => v,
        }
    }
}

/// `orc_proto.Stream`: one stream of a stripe's data, in file order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Stream {
    pub kind: StreamKind,
    pub column: u64,
    pub length: u64,
}

/// `orc_proto.ColumnEncoding.Kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EncodingKind {
    Direct,
    Dictionary,
    DirectV2,
    DictionaryV2,
}

/// `orc_proto.ColumnEncoding`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ColumnEncoding {
    pub kind: EncodingKind,
    pub dictionary_size: u64,
}

/// `orc_proto.StripeFooter`: the stripe's streams and each column's encoding.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StripeFooter {
    pub streams: Vec<Stream>,
    pub columns: Vec<ColumnEncoding>,
    pub writer_timezone: Option<String>,
}

impl StripeFooter {
    pub(crate) fn decode(b: &[u8]) -> Result<Self> {
        let mut footer = StripeFooter {
            streams: Vec::new(),
            columns: Vec::new(),
            writer_timezone: None,
        };
        for f in fields(b) {
            match f? {
                (1, v) => {
                    let mut s = Stream {
                        kind: StreamKind::Other(u64::MAX),
                        column: 0,
                        length: 0,
                    };
                    for f in fields(v.bytes()?) {
                        match f? {
                            (1, v) => s.kind = StreamKind::from_wire(v.uint()?),
                            (2, v) => s.column = v.uint()?,
                            (3, v) => s.length = v.uint()?,
                            _ => {}
                        }
                    }
                    footer.streams.push(s);
                }
                (2, v) => {
                    let mut e = ColumnEncoding {
                        kind: EncodingKind::Direct,
                        dictionary_size: 0,
                    };
                    for f in fields(v.bytes()?) {
                        match f? {
                            (1, v) => {
                                e.kind = match v.uint()? {
                                    0 => EncodingKind::Direct,
                                    1 => EncodingKind::Dictionary,
                                    2 => EncodingKind::DirectV2,
                                    3 => EncodingKind::DictionaryV2,
                                    k => {
                                        return Err(bad(format!("column encoding {k} is unknown")))
                                    }
                                }
                            }
                            (2, v) => e.dictionary_size = v.uint()?,
                            _ => {}
                        }
                    }
                    footer.columns.push(e);
                }
                (3, v) => footer.writer_timezone = Some(v.string()?),
                _ => {}
            }
        }
        Ok(footer)
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        for s in &self.streams {
            w.message(1, |w| {
                w.uint(1, s.kind.to_wire());
                w.uint(2, s.column);
                w.uint(3, s.length);
            });
        }
        for e in &self.columns {
            w.message(2, |w| {
                let kind = match e.kind {
                    EncodingKind::Direct => 0,
                    EncodingKind::Dictionary => 1,
                    EncodingKind::DirectV2 => 2,
                    EncodingKind::DictionaryV2 => 3,
                };
                w.uint(1, kind);
                if matches!(
                    e.kind,
                    EncodingKind::Dictionary | EncodingKind::DictionaryV2
                ) {
                    w.uint(2, e.dictionary_size);
                }
            });
        }
        if let Some(tz) = &self.writer_timezone {
            w.bytes(3, tz.as_bytes());
        }
        w.buf
    }
}

/// `orc_proto.Metadata` with one `StripeStatistics` per stripe, each with one
/// `ColumnStatistics` per type node.
pub(crate) fn encode_metadata(stripes: &[Vec<ColumnStatistics>]) -> Vec<u8> {
    let mut w = Writer::default();
    for stripe in stripes {
        w.message(1, |w| {
            for c in stripe {
                w.message(1, |w| c.encode(w));
            }
        });
    }
    w.buf
}

/// A protobuf encoder: fields appended in the order written.
#[derive(Default)]
struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    fn varint(&mut self, v: u64) {
        crate::varint::write_u64(v, &mut self.buf);
    }

    fn key(&mut self, field: u32, wire: u64) {
        self.varint((u64::from(field) << 3) | wire);
    }

    fn uint(&mut self, field: u32, v: u64) {
        self.key(field, 0);
        self.varint(v);
    }

    fn double(&mut self, field: u32, v: f64) {
        self.key(field, 1);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    fn sint(&mut self, field: u32, v: i64) {
        self.uint(field, ((v << 1) ^ (v >> 63)) as u64);
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    fn packed(&mut self, field: u32, values: &[u64]) {
        if values.is_empty() {
            return;
        }
        let mut inner = Writer::default();
        for v in values {
            inner.varint(*v);
        }
        self.bytes(field, &inner.buf);
    }

    fn message(&mut self, field: u32, body: impl FnOnce(&mut Writer)) {
        let mut inner = Writer::default();
        body(&mut inner);
        self.bytes(field, &inner.buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_messages_round_trip() {
        let ps = PostScript {
            footer_length: 300,
            compression: CompressionKind::Zstd,
            compression_block_size: 262_144,
            version: vec![0, 12],
            metadata_length: 17,
            writer_version: 9,
            magic: "ORC".into(),
        };
        assert_eq!(PostScript::decode(&ps.encode()).unwrap(), ps);
        let mut decimal = Type::new(TypeKind::Decimal);
        decimal.precision = Some(20);
        decimal.scale = Some(3);
        decimal.attributes = vec![("paimon.id".into(), "4".into())];
        let mut root = Type::new(TypeKind::Struct);
        root.subtypes = vec![1, 2];
        root.field_names = vec!["a".into(), "b".into()];
        let footer = Footer {
            header_length: 3,
            content_length: 1000,
            stripes: vec![StripeInformation {
                offset: 3,
                index_length: 0,
                data_length: 900,
                footer_length: 97,
                number_of_rows: 12,
            }],
            types: vec![root, Type::new(TypeKind::Long), decimal],
            number_of_rows: 12,
            statistics: Vec::new(),
            row_index_stride: 0,
            writer: Some(1),
        };
        assert_eq!(Footer::decode(&footer.encode()).unwrap(), footer);
        let sf = StripeFooter {
            streams: vec![Stream {
                kind: StreamKind::Data,
                column: 1,
                length: 40,
            }],
            columns: vec![ColumnEncoding {
                kind: EncodingKind::DictionaryV2,
                dictionary_size: 7,
            }],
            writer_timezone: Some("UTC".into()),
        };
        assert_eq!(StripeFooter::decode(&sf.encode()).unwrap(), sf);
    }

    #[test]
    fn hostile_bytes_are_errors() {
        let footer = Footer {
            header_length: 3,
            content_length: 10,
            stripes: vec![StripeInformation::default()],
            types: vec![Type::new(TypeKind::Struct)],
            number_of_rows: 0,
            statistics: Vec::new(),
            row_index_stride: 0,
            writer: None,
        }
        .encode();
        for cut in 0..footer.len() {
            let _ = Footer::decode(&footer[..cut]);
        }
        // A length that claims more bytes than there are.
        assert!(Footer::decode(&[0x1a, 0xff, 0xff, 0x03, 0x00]).is_err());
        assert!(PostScript::decode(&[0x10, 0x63]).is_err());
        assert!(Footer::decode(&[0x22, 0x02, 0x08, 0x63]).is_err());
    }
}
