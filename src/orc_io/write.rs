//! Writing Arrow batches as an ORC file, stripe by stripe.
//!
//! Rows are buffered as plain column values (a tree of [`ColumnEncoder`]s mirroring the ORC
//! type tree) until the buffered bytes reach the stripe target; the stripe is then encoded
//! (RLE v2 for integers and lengths, byte RLE for bytes and booleans, the file's codec in
//! chunks of the block size) and handed to the caller's sink with its footer. The file ends
//! with stripe statistics, the footer and the postscript. No row index is written
//! (`rowIndexStride = 0`, allowed by the format): readers skip by stripe statistics only.
//!
//! Strings are written with a sorted dictionary per stripe (DICTIONARY_V2) when at most eight
//! values in ten are distinct, as ORC's Java writer decides by default, else directly
//! (DIRECT_V2); binaries directly.
//!
//! Column statistics, per stripe and for the file: every column records its value count and
//! whether it has nulls, and the typed part ORC's Java writer records (exact bounds, NaN left
//! out of floating-point ones).

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, Time32MillisecondType, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use arrow_array::{Array, RecordBatch};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer};
use arrow_schema::{DataType, Schema, TimeUnit};

use super::compression::Codec;
use super::proto::{
    encode_metadata, ColumnEncoding, ColumnStatistics, CompressionKind, EncodingKind, Footer,
    PostScript, StreamKind, StripeFooter, StripeInformation, Type, TypeKind, TypedStatistics,
};
use super::read::{pack_nanos, ORC_EPOCH_SECONDS};
use super::rle;
use crate::error::{Error, Result};

/// ORC's default compression block size.
pub(crate) const DEFAULT_BLOCK_SIZE: usize = 256 * 1024;

/// How to write a file.
#[derive(Clone, Debug)]
pub(crate) struct OrcWriteSettings {
    pub compression: CompressionKind,
    /// Buffered value bytes at which a stripe is written.
    pub stripe_bytes: usize,
    /// Per top-level column (by position): the ORC type to declare when the Arrow type alone
    /// does not say it (`CHAR(n)`, `VARCHAR(n)`), and attributes to set on its type node.
    pub columns: Vec<ColumnHint>,
}

/// What the caller knows of a top-level column beyond its Arrow type.
#[derive(Clone, Debug, Default)]
pub(crate) struct ColumnHint {
    /// `CHAR(n)` or `VARCHAR(n)` for a string column.
    pub string_kind: Option<(TypeKind, u64)>,
    pub attributes: Vec<(String, String)>,
}

/// Where the bytes of a file go, in order.
pub(crate) type Sink<'a> = dyn FnMut(&[u8]) -> Result<()> + 'a;

/// One ORC file being written.
pub(crate) struct OrcFileWriter {
    codec: Codec,
    stripe_bytes: usize,
    types: Vec<Type>,
    root: ColumnEncoder,
    /// Rows buffered for the next stripe.
    rows: u64,
    /// Bytes sent to the sink so far.
    written: u64,
    stripes: Vec<StripeInformation>,
    stripe_stats: Vec<Vec<ColumnStatistics>>,
    file_stats: Vec<Stats>,
    /// Top-level columns.
    width: usize,
    /// Encoded bytes per buffered value byte over the stripes written so far, for size
    /// estimates.
    ratio: f64,
}

impl OrcFileWriter {
    /// A writer of `schema`'s columns; `unsupported` for an Arrow type this layer cannot
    /// write.
    pub(crate) fn new(schema: &Schema, settings: &OrcWriteSettings) -> Result<Self> {
        let codec = Codec {
            kind: settings.compression,
            block_size: DEFAULT_BLOCK_SIZE,
        };
        let mut types = vec![Type::new(TypeKind::Struct)];
        let mut children = Vec::new();
        for (i, f) in schema.fields().iter().enumerate() {
            let id = types.len();
            types[0].subtypes.push(id as u64);
            types[0].field_names.push(f.name().clone());
            let hint = settings.columns.get(i).cloned().unwrap_or_default();
            children.push(ColumnEncoder::new(
                f.data_type(),
                &mut types,
                Some(&hint),
                f.name(),
            )?);
        }
        let root = ColumnEncoder {
            id: 0,
            present: Vec::new(),
            kind: Enc::Struct(children),
            stats: Stats::new(TypeKind::Struct),
        };
        Ok(OrcFileWriter {
            codec,
            stripe_bytes: settings.stripe_bytes.max(1),
            file_stats: types.iter().map(|t| Stats::new(t.kind)).collect(),
            types,
            root,
            rows: 0,
            written: 0,
            stripes: Vec::new(),
            stripe_stats: Vec::new(),
            width: schema.fields().len(),
            ratio: 0.5,
        })
    }

    /// Bytes the file would have if finished now (buffered rows estimated).
    pub(crate) fn estimated_size(&self) -> u64 {
        self.written + (self.root.buffered() as f64 * self.ratio) as u64
    }

    /// Buffers `batch`, writing a stripe once the buffer reaches the stripe target.
    pub(crate) fn write(&mut self, batch: &RecordBatch, out: &mut Sink<'_>) -> Result<()> {
        if batch.num_columns() != self.width {
            return Err(Error::internal(
                "an ORC batch has the wrong number of columns",
            ));
        }
        let Enc::Struct(children) = &mut self.root.kind else {
            return Err(Error::internal("the ORC root is not a struct"));
        };
        for (c, a) in children.iter_mut().zip(batch.columns()) {
            if let DataType::Dictionary(_, values) = a.data_type() {
                // Dictionary arrays (the merge's dictionary reads) are written as values.
                let plain = arrow_cast::cast(a, values)
                    .map_err(|e| Error::internal(format!("ORC: decoding a dictionary: {e}")))?;
                c.add(plain.as_ref(), None)?;
            } else {
                c.add(a.as_ref(), None)?;
            }
        }
        self.root.stats.values += batch.num_rows() as u64;
        self.rows += batch.num_rows() as u64;
        if self.root.buffered() >= self.stripe_bytes {
            self.flush_stripe(out)?;
        }
        Ok(())
    }

    fn flush_stripe(&mut self, out: &mut Sink<'_>) -> Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        if self.written == 0 {
            out(b"ORC")?;
            self.written = 3;
        }
        let buffered = self.root.buffered();
        let mut streams = Vec::new();
        let mut encodings = vec![
            ColumnEncoding {
                kind: EncodingKind::Direct,
                dictionary_size: 0,
            };
            self.types.len()
        ];
        let mut stats = vec![Stats::new(TypeKind::Struct); self.types.len()];
        self.root.flush(&mut streams, &mut encodings, &mut stats)?;
        let mut data = Vec::new();
        let mut footer = StripeFooter {
            streams: Vec::new(),
            columns: encodings,
            writer_timezone: Some("UTC".to_string()),
        };
        for (column, kind, bytes) in streams {
            let start = data.len();
            self.codec.compress(&bytes, &mut data)?;
            footer.streams.push(super::proto::Stream {
                kind,
                column: column as u64,
                length: (data.len() - start) as u64,
            });
        }
        let mut footer_bytes = Vec::new();
        self.codec.compress(&footer.encode(), &mut footer_bytes)?;
        out(&data)?;
        out(&footer_bytes)?;
        self.stripes.push(StripeInformation {
            offset: self.written,
            index_length: 0,
            data_length: data.len() as u64,
            footer_length: footer_bytes.len() as u64,
            number_of_rows: self.rows,
        });
        let encoded = (data.len() + footer_bytes.len()) as u64;
        self.written += encoded;
        if buffered > 0 {
            self.ratio = encoded as f64 / buffered as f64;
        }
        for (f, s) in self.file_stats.iter_mut().zip(&stats) {
            f.merge(s);
        }
        self.stripe_stats.push(
            stats
                .iter()
                .zip(&self.types)
                .map(|(s, t)| s.proto(t.kind))
                .collect(),
        );
        self.rows = 0;
        Ok(())
    }

    /// Writes the last stripe and the tail.
    pub(crate) fn finish(mut self, out: &mut Sink<'_>) -> Result<()> {
        self.flush_stripe(out)?;
        if self.written == 0 {
            out(b"ORC")?;
            self.written = 3;
        }
        let mut metadata = Vec::new();
        self.codec
            .compress(&encode_metadata(&self.stripe_stats), &mut metadata)?;
        let rows = self.stripes.iter().map(|s| s.number_of_rows).sum();
        let footer = Footer {
            header_length: 3,
            content_length: self.written - 3,
            stripes: std::mem::take(&mut self.stripes),
            types: self.types.clone(),
            number_of_rows: rows,
            statistics: self
                .file_stats
                .iter()
                .zip(&self.types)
                .map(|(s, t)| s.proto(t.kind))
                .collect(),
            row_index_stride: 0,
            writer: Some(WRITER_ID),
        };
        let mut footer_bytes = Vec::new();
        self.codec.compress(&footer.encode(), &mut footer_bytes)?;
        let ps = PostScript {
            footer_length: footer_bytes.len() as u64,
            compression: self.codec.kind,
            compression_block_size: self.codec.block_size as u64,
            version: vec![0, 12],
            metadata_length: metadata.len() as u64,
            writer_version: WRITER_VERSION,
            magic: "ORC".to_string(),
        }
        .encode();
        let ps_len =
            u8::try_from(ps.len()).map_err(|_| Error::internal("ORC postscript too long"))?;
        out(&metadata)?;
        out(&footer_bytes)?;
        out(&ps)?;
        out(&[ps_len])?;
        Ok(())
    }
}

/// The writer implementation id recorded in the footer: one no ORC release has registered,
/// which ORC's readers treat as a writer with every known fix (timestamp statistics in
/// UTC, and so on), as this writer is.
const WRITER_ID: u64 = 1000;
/// The writer version recorded in the postscript (ORC-14, the newest of Apache ORC 1.x).
const WRITER_VERSION: u64 = 9;

/// The buffered values of one ORC column (a node of the type tree).
struct ColumnEncoder {
    /// The type node.
    id: usize,
    /// Validity of the slots the parent shows (the PRESENT stream, written when one is
    /// null).
    present: Vec<bool>,
    kind: Enc,
    /// Statistics of the buffered stripe.
    stats: Stats,
}

enum Enc {
    Boolean(Vec<bool>),
    Byte(Vec<u8>),
    Int(Vec<i64>),
    Float(Vec<u8>),
    Double(Vec<u8>),
    Bytes {
        lengths: Vec<i64>,
        data: Vec<u8>,
        /// `CHAR(n)`: values are padded to `n` characters.
        pad_to: Option<usize>,
    },
    Decimal {
        data: Vec<u8>,
        scales: Vec<i64>,
    },
    Timestamp {
        seconds: Vec<i64>,
        nanos: Vec<i64>,
    },
    Struct(Vec<ColumnEncoder>),
    List {
        lengths: Vec<i64>,
        child: Box<ColumnEncoder>,
    },
    Map {
        lengths: Vec<i64>,
        key: Box<ColumnEncoder>,
        value: Box<ColumnEncoder>,
    },
}

impl ColumnEncoder {
    /// The encoder of Arrow type `t`, adding its type nodes to `types` in pre-order.
    fn new(
        t: &DataType,
        types: &mut Vec<Type>,
        hint: Option<&ColumnHint>,
        name: &str,
    ) -> Result<Self> {
        let id = types.len();
        let unsupported = || {
            Error::unsupported(format!(
                "column '{name}' of Arrow type {t} cannot be written as ORC by this build"
            ))
        };
        let mut node = |kind: TypeKind| {
            let mut ty = Type::new(kind);
            if let Some(h) = hint {
                ty.attributes = h.attributes.clone();
            }
            types.push(ty);
        };
        let kind = match t {
            DataType::Boolean => {
                node(TypeKind::Boolean);
                Enc::Boolean(Vec::new())
            }
            DataType::Int8 => {
                node(TypeKind::Byte);
                Enc::Byte(Vec::new())
            }
            DataType::Int16 => {
                node(TypeKind::Short);
                Enc::Int(Vec::new())
            }
            DataType::Int32 | DataType::Time32(TimeUnit::Millisecond) => {
                node(TypeKind::Int);
                Enc::Int(Vec::new())
            }
            DataType::Int64 => {
                node(TypeKind::Long);
                Enc::Int(Vec::new())
            }
            DataType::Date32 => {
                node(TypeKind::Date);
                Enc::Int(Vec::new())
            }
            DataType::Float32 => {
                node(TypeKind::Float);
                Enc::Float(Vec::new())
            }
            DataType::Float64 => {
                node(TypeKind::Double);
                Enc::Double(Vec::new())
            }
            DataType::Utf8 => {
                let (kind, len) = hint
                    .and_then(|h| h.string_kind)
                    .map_or((TypeKind::String, None), |(k, n)| (k, Some(n)));
                node(kind);
                types[id].maximum_length = len;
                Enc::Bytes {
                    lengths: Vec::new(),
                    data: Vec::new(),
                    pad_to: len
                        .filter(|_| kind == TypeKind::Char)
                        .map(|n| n.min(u32::MAX.into()) as usize),
                }
            }
            DataType::Binary => {
                node(TypeKind::Binary);
                Enc::Bytes {
                    lengths: Vec::new(),
                    data: Vec::new(),
                    pad_to: None,
                }
            }
            DataType::Decimal128(p, s) => {
                node(TypeKind::Decimal);
                types[id].precision = Some(u64::from(*p));
                types[id].scale = Some(u64::try_from(*s).map_err(|_| unsupported())?);
                Enc::Decimal {
                    data: Vec::new(),
                    scales: Vec::new(),
                }
            }
            DataType::Timestamp(_, tz) => {
                node(if tz.is_some() {
                    TypeKind::TimestampInstant
                } else {
                    TypeKind::Timestamp
                });
                Enc::Timestamp {
                    seconds: Vec::new(),
                    nanos: Vec::new(),
                }
            }
            DataType::Struct(fields) => {
                node(TypeKind::Struct);
                let mut children = Vec::new();
                for f in fields {
                    let child = types.len() as u64;
                    types[id].subtypes.push(child);
                    types[id].field_names.push(f.name().clone());
                    children.push(ColumnEncoder::new(f.data_type(), types, None, f.name())?);
                }
                Enc::Struct(children)
            }
            DataType::List(item) => {
                node(TypeKind::List);
                let next = types.len() as u64;
                types[id].subtypes.push(next);
                let child = ColumnEncoder::new(item.data_type(), types, None, name)?;
                Enc::List {
                    lengths: Vec::new(),
                    child: Box::new(child),
                }
            }
            DataType::Map(entries, _) => {
                let DataType::Struct(kv) = entries.data_type() else {
                    return Err(unsupported());
                };
                if kv.len() != 2 {
                    return Err(unsupported());
                }
                node(TypeKind::Map);
                let next = types.len() as u64;
                types[id].subtypes.push(next);
                let key = ColumnEncoder::new(kv[0].data_type(), types, None, name)?;
                let next = types.len() as u64;
                types[id].subtypes.push(next);
                let value = ColumnEncoder::new(kv[1].data_type(), types, None, name)?;
                Enc::Map {
                    lengths: Vec::new(),
                    key: Box::new(key),
                    value: Box::new(value),
                }
            }
            _ => return Err(unsupported()),
        };
        let stats = Stats::new(types[id].kind);
        Ok(ColumnEncoder {
            id,
            present: Vec::new(),
            kind,
            stats,
        })
    }

    /// Bytes buffered for the next stripe (an estimate of its raw size).
    fn buffered(&self) -> usize {
        let own = self.present.len() / 8
            + match &self.kind {
                Enc::Boolean(v) => v.len() / 8,
                Enc::Byte(v) | Enc::Float(v) | Enc::Double(v) => v.len(),
                Enc::Int(v) => v.len() * 8,
                Enc::Bytes { lengths, data, .. } => lengths.len() * 4 + data.len(),
                Enc::Decimal { data, scales } => data.len() + scales.len(),
                Enc::Timestamp { seconds, .. } => seconds.len() * 12,
                Enc::Struct(_) => 0,
                Enc::List { lengths, .. } | Enc::Map { lengths, .. } => lengths.len() * 4,
            };
        own + match &self.kind {
            Enc::Struct(children) => children.iter().map(ColumnEncoder::buffered).sum(),
            Enc::List { child, .. } => child.buffered(),
            Enc::Map { key, value, .. } => key.buffered() + value.buffered(),
            _ => 0,
        }
    }

    /// Buffers the values of `array` at the slots `shown` leaves valid (all slots when
    /// `None`): a hidden slot belongs to a null parent and holds no value in ORC.
    fn add(&mut self, array: &dyn Array, shown: Option<&NullBuffer>) -> Result<()> {
        let n = array.len();
        let visible = |i: usize| shown.is_none_or(|s| s.is_valid(i));
        let nulls = array.logical_nulls();
        let valid = |i: usize| nulls.as_ref().is_none_or(|v| v.is_valid(i));
        let mut values = 0u64;
        for i in (0..n).filter(|&i| visible(i)) {
            let v = valid(i);
            self.present.push(v);
            if v {
                values += 1;
            } else {
                self.stats.nulls += 1;
            }
        }
        self.stats.values += values;
        // The slots whose values are buffered: shown and valid.
        let keep = |i: usize| visible(i) && valid(i);
        match &mut self.kind {
            Enc::Boolean(out) => {
                let a = array.as_boolean();
                let start = out.len();
                out.extend((0..n).filter(|&i| keep(i)).map(|i| a.value(i)));
                self.stats.true_count += out[start..].iter().filter(|b| **b).count() as u64;
            }
            Enc::Byte(out) => {
                let a = array.as_primitive::<Int8Type>();
                let start = out.len();
                out.extend((0..n).filter(|&i| keep(i)).map(|i| a.value(i) as u8));
                for b in &out[start..] {
                    self.stats.int(i64::from(*b as i8));
                }
            }
            Enc::Int(out) => {
                let start = out.len();
                match array.data_type() {
                    DataType::Int16 => {
                        let a = array.as_primitive::<Int16Type>();
                        out.extend((0..n).filter(|&i| keep(i)).map(|i| i64::from(a.value(i))));
                    }
                    DataType::Int32 => {
                        let a = array.as_primitive::<Int32Type>();
                        out.extend((0..n).filter(|&i| keep(i)).map(|i| i64::from(a.value(i))));
                    }
                    DataType::Time32(TimeUnit::Millisecond) => {
                        let a = array.as_primitive::<Time32MillisecondType>();
                        out.extend((0..n).filter(|&i| keep(i)).map(|i| i64::from(a.value(i))));
                    }
                    DataType::Date32 => {
                        let a = array.as_primitive::<Date32Type>();
                        out.extend((0..n).filter(|&i| keep(i)).map(|i| i64::from(a.value(i))));
                    }
                    DataType::Int64 => {
                        let a = array.as_primitive::<Int64Type>();
                        out.extend((0..n).filter(|&i| keep(i)).map(|i| a.value(i)));
                    }
                    t => return Err(Error::internal(format!("ORC integer column of type {t}"))),
                }
                for v in &out[start..] {
                    self.stats.int(*v);
                }
            }
            Enc::Float(out) => {
                let a = array.as_primitive::<Float32Type>();
                for i in (0..n).filter(|&i| keep(i)) {
                    out.extend_from_slice(&a.value(i).to_le_bytes());
                    self.stats.double(f64::from(a.value(i)));
                }
            }
            Enc::Double(out) => {
                let a = array.as_primitive::<Float64Type>();
                for i in (0..n).filter(|&i| keep(i)) {
                    out.extend_from_slice(&a.value(i).to_le_bytes());
                    self.stats.double(a.value(i));
                }
            }
            Enc::Bytes {
                lengths,
                data,
                pad_to,
            } => {
                let string = matches!(array.data_type(), DataType::Utf8);
                for i in (0..n).filter(|&i| keep(i)) {
                    let start = data.len();
                    if string {
                        let v = array.as_string::<i32>().value(i);
                        data.extend_from_slice(v.as_bytes());
                        // CHAR(n) values are stored padded with spaces to n characters, as
                        // ORC's writer stores them (its reader trims them again).
                        if let Some(n) = *pad_to {
                            let chars = v.chars().count();
                            data.resize(data.len() + n.saturating_sub(chars), b' ');
                        }
                    } else {
                        data.extend_from_slice(array.as_binary::<i32>().value(i));
                    }
                    lengths.push((data.len() - start) as i64);
                    self.stats.bytes(&data[start..]);
                }
            }
            Enc::Decimal { data, scales } => {
                let a = array.as_primitive::<Decimal128Type>();
                let scale = i64::from(a.scale());
                self.stats.scale = a.scale();
                for i in (0..n).filter(|&i| keep(i)) {
                    crate::varint::write_zigzag_i128(a.value(i), data);
                    scales.push(scale);
                    self.stats.decimal(a.value(i));
                }
            }
            Enc::Timestamp { seconds, nanos } => {
                let (per_second, raw): (i64, Vec<i64>) = match array.data_type() {
                    DataType::Timestamp(TimeUnit::Second, _) => (
                        1,
                        array
                            .as_primitive::<TimestampSecondType>()
                            .values()
                            .to_vec(),
                    ),
                    DataType::Timestamp(TimeUnit::Millisecond, _) => (
                        1_000,
                        array
                            .as_primitive::<TimestampMillisecondType>()
                            .values()
                            .to_vec(),
                    ),
                    DataType::Timestamp(TimeUnit::Microsecond, _) => (
                        1_000_000,
                        array
                            .as_primitive::<TimestampMicrosecondType>()
                            .values()
                            .to_vec(),
                    ),
                    DataType::Timestamp(TimeUnit::Nanosecond, _) => (
                        1_000_000_000,
                        array
                            .as_primitive::<TimestampNanosecondType>()
                            .values()
                            .to_vec(),
                    ),
                    t => return Err(Error::internal(format!("ORC timestamp column of type {t}"))),
                };
                for i in (0..n).filter(|&i| keep(i)) {
                    let (s, frac) = encode_timestamp(raw[i], per_second).ok_or_else(|| {
                        Error::unsupported(format!(
                            "an ORC TIMESTAMP within the second before 1970-01-01 \
                             ({} s after it): ORC's readers read such a time written in UTC \
                             one second late",
                            raw[i] as f64 / per_second as f64
                        ))
                    })?;
                    seconds.push(s);
                    nanos.push(frac as i64);
                    self.stats
                        .timestamp(i128::from(raw[i]) * i128::from(1_000_000_000 / per_second));
                }
            }
            Enc::Struct(children) => {
                let a = array.as_struct();
                let shown_here = and_nulls(shown, nulls.as_ref(), n);
                for (c, col) in children.iter_mut().zip(a.columns()) {
                    c.add(col.as_ref(), shown_here.as_ref())?;
                }
            }
            Enc::List { lengths, child } => {
                let a = array.as_list::<i32>();
                let (mask, base, len) = child_mask(a.value_offsets(), n, &keep, lengths);
                child.add(a.values().slice(base, len).as_ref(), Some(&mask))?;
            }
            Enc::Map {
                lengths,
                key,
                value,
            } => {
                let a = array.as_map();
                let (mask, base, len) = child_mask(a.value_offsets(), n, &keep, lengths);
                key.add(a.keys().slice(base, len).as_ref(), Some(&mask))?;
                value.add(a.values().slice(base, len).as_ref(), Some(&mask))?;
            }
        }
        Ok(())
    }

    /// Encodes the buffered stripe into `streams` (column, kind, bytes), in pre-order, and
    /// records each column's encoding and statistics; the buffers are emptied.
    fn flush(
        &mut self,
        streams: &mut Vec<(usize, StreamKind, Vec<u8>)>,
        encodings: &mut [ColumnEncoding],
        stats: &mut [Stats],
    ) -> Result<()> {
        let id = self.id;
        if self.stats.nulls > 0 {
            let mut b = Vec::new();
            rle::encode_bools(&self.present, &mut b);
            streams.push((id, StreamKind::Present, b));
        }
        self.present.clear();
        let mut int_stream = |kind, v: &[i64], signed| {
            let mut b = Vec::new();
            rle::encode_int_v2(v, signed, &mut b);
            streams.push((id, kind, b));
        };
        let mut direct_v2 = true;
        let mut dictionary = None;
        let is_text = matches!(
            self.stats.kind,
            TypeKind::String | TypeKind::Varchar | TypeKind::Char
        );
        match &mut self.kind {
            Enc::Boolean(v) => {
                let mut b = Vec::new();
                rle::encode_bools(v, &mut b);
                streams.push((id, StreamKind::Data, b));
                direct_v2 = false;
                v.clear();
            }
            Enc::Byte(v) => {
                let mut b = Vec::new();
                rle::encode_bytes(v, &mut b);
                streams.push((id, StreamKind::Data, b));
                direct_v2 = false;
                v.clear();
            }
            Enc::Int(v) => {
                int_stream(StreamKind::Data, v, true);
                v.clear();
            }
            Enc::Float(v) | Enc::Double(v) => {
                streams.push((id, StreamKind::Data, std::mem::take(v)));
                direct_v2 = false;
            }
            Enc::Bytes { lengths, data, .. } => {
                match is_text.then(|| dictionary_of(lengths, data)).flatten() {
                    Some(dict) => {
                        let mut b = Vec::new();
                        rle::encode_int_v2(&dict.ids, false, &mut b);
                        streams.push((id, StreamKind::Data, b));
                        streams.push((id, StreamKind::DictionaryData, dict.data));
                        let mut b = Vec::new();
                        rle::encode_int_v2(&dict.lengths, false, &mut b);
                        streams.push((id, StreamKind::Length, b));
                        dictionary = Some(dict.lengths.len() as u64);
                        data.clear();
                    }
                    None => {
                        streams.push((id, StreamKind::Data, std::mem::take(data)));
                        let mut b = Vec::new();
                        rle::encode_int_v2(lengths, false, &mut b);
                        streams.push((id, StreamKind::Length, b));
                    }
                }
                lengths.clear();
            }
            Enc::Decimal { data, scales } => {
                streams.push((id, StreamKind::Data, std::mem::take(data)));
                let mut b = Vec::new();
                rle::encode_int_v2(scales, true, &mut b);
                streams.push((id, StreamKind::Secondary, b));
                scales.clear();
            }
            Enc::Timestamp { seconds, nanos } => {
                int_stream(StreamKind::Data, seconds, true);
                let mut b = Vec::new();
                rle::encode_int_v2(nanos, false, &mut b);
                streams.push((id, StreamKind::Secondary, b));
                seconds.clear();
                nanos.clear();
            }
            Enc::Struct(_) => direct_v2 = false,
            Enc::List { lengths, .. } | Enc::Map { lengths, .. } => {
                int_stream(StreamKind::Length, lengths, false);
                lengths.clear();
            }
        }
        encodings[id] = match dictionary {
            Some(size) => ColumnEncoding {
                kind: EncodingKind::DictionaryV2,
                dictionary_size: size,
            },
            None if direct_v2 => ColumnEncoding {
                kind: EncodingKind::DirectV2,
                dictionary_size: 0,
            },
            None => ColumnEncoding {
                kind: EncodingKind::Direct,
                dictionary_size: 0,
            },
        };
        let kind = self.stats.kind;
        stats[id] = std::mem::replace(&mut self.stats, Stats::new(kind));
        match &mut self.kind {
            Enc::Struct(children) => {
                for c in children {
                    c.flush(streams, encodings, stats)?;
                }
            }
            Enc::List { child, .. } => child.flush(streams, encodings, stats)?,
            Enc::Map { key, value, .. } => {
                key.flush(streams, encodings, stats)?;
                value.flush(streams, encodings, stats)?;
            }
            _ => {}
        }
        Ok(())
    }
}

/// A stripe's string column as a dictionary: the sorted distinct values (their lengths and
/// bytes) and each value's index into them.
struct Dictionary {
    ids: Vec<i64>,
    lengths: Vec<i64>,
    data: Vec<u8>,
}

/// The dictionary encoding of a string column's values (`lengths` over `data`), when it pays:
/// as ORC's Java writer decides by default (`orc.dictionary.key.threshold` 0.8), at most
/// eight distinct values in ten. Entries are sorted, as ORC's specification asks.
fn dictionary_of(lengths: &[i64], data: &[u8]) -> Option<Dictionary> {
    let mut values = Vec::with_capacity(lengths.len());
    let mut at = 0usize;
    for &l in lengths {
        let end = at + l as usize;
        values.push(&data[at..end]);
        at = end;
    }
    let mut distinct: std::collections::HashMap<&[u8], u32> = std::collections::HashMap::new();
    let limit = values.len() * 4 / 5;
    for v in &values {
        let next = distinct.len() as u32;
        distinct.entry(v).or_insert(next);
        if distinct.len() > limit {
            return None;
        }
    }
    if values.is_empty() {
        return None;
    }
    let mut sorted: Vec<(&[u8], u32)> = distinct.iter().map(|(k, v)| (*k, *v)).collect();
    sorted.sort_unstable();
    let mut rank = vec![0i64; sorted.len()];
    let mut out = Dictionary {
        ids: Vec::with_capacity(values.len()),
        lengths: Vec::with_capacity(sorted.len()),
        data: Vec::new(),
    };
    for (i, (v, first)) in sorted.iter().enumerate() {
        rank[*first as usize] = i as i64;
        out.lengths.push(v.len() as i64);
        out.data.extend_from_slice(v);
    }
    out.ids
        .extend(values.iter().map(|v| rank[distinct[v] as usize]));
    Some(out)
}

/// Seconds from ORC's base and the packed nanoseconds of a timestamp `v` counted in
/// `1 / per_second` seconds since the epoch, as ORC's readers decode them: they step a
/// negative time with a millisecond or more of fraction back one second (writers truncate
/// toward zero), so such a time is written one second up from its floor. A time in the
/// second before the epoch with that much fraction cannot be written so that ORC's readers
/// get it back (ORC's own writer in UTC turns it into a time one second later): `None`, and
/// the caller refuses it. Java's writers only store such a time correctly in a zone where
/// it is not within a second before their epoch, and our files are written in UTC.
fn encode_timestamp(v: i64, per_second: i64) -> Option<(i64, u64)> {
    let mut secs = v.div_euclid(per_second);
    let frac = v.rem_euclid(per_second);
    let nanos = (frac * (1_000_000_000 / per_second)) as u32;
    if secs < 0 && nanos > 999_999 {
        secs += 1;
        if secs == 0 {
            return None;
        }
    }
    Some((secs.wrapping_sub(ORC_EPOCH_SECONDS), pack_nanos(nanos)))
}

/// The mask of child values that belong to shown, valid list entries (a null list's range
/// is skipped), the child range it covers, and each shown valid entry's length appended to
/// `lengths`.
fn child_mask(
    offsets: &[i32],
    n: usize,
    keep: &dyn Fn(usize) -> bool,
    lengths: &mut Vec<i64>,
) -> (NullBuffer, usize, usize) {
    let base = offsets.first().copied().unwrap_or(0).max(0) as usize;
    let end = offsets.get(n).copied().unwrap_or(0).max(0) as usize;
    let len = end.saturating_sub(base);
    let mut b = BooleanBufferBuilder::new(len);
    b.append_n(len, false);
    for i in 0..n {
        if keep(i) {
            let (s, e) = (offsets[i].max(0) as usize, offsets[i + 1].max(0) as usize);
            lengths.push(e.saturating_sub(s) as i64);
            for j in s..e {
                b.set_bit(j - base, true);
            }
        }
    }
    (NullBuffer::new(b.finish()), base, len)
}

/// Slots both shown by the parent and valid here.
fn and_nulls(shown: Option<&NullBuffer>, own: Option<&NullBuffer>, n: usize) -> Option<NullBuffer> {
    match (shown, own) {
        (None, None) => None,
        (Some(s), None) => Some(s.clone()),
        (None, Some(o)) => Some(o.clone()),
        (Some(s), Some(o)) => {
            let mut b = BooleanBufferBuilder::new(n);
            for i in 0..n {
                b.append(s.is_valid(i) && o.is_valid(i));
            }
            Some(NullBuffer::new(b.finish()))
        }
    }
}

/// ORC column statistics being gathered for one column.
#[derive(Clone, Debug)]
struct Stats {
    kind: TypeKind,
    values: u64,
    nulls: u64,
    int: Option<(i64, i64)>,
    double: Option<(f64, f64)>,
    bytes: Option<(Vec<u8>, Vec<u8>)>,
    /// Decimal bounds, unscaled at `scale`.
    decimal: Option<(i128, i128)>,
    scale: i8,
    /// Timestamp bounds in nanoseconds since the epoch.
    timestamp: Option<(i128, i128)>,
    true_count: u64,
    byte_sum: i64,
}

impl Stats {
    fn new(kind: TypeKind) -> Self {
        Stats {
            kind,
            values: 0,
            nulls: 0,
            int: None,
            double: None,
            bytes: None,
            decimal: None,
            scale: 0,
            timestamp: None,
            true_count: 0,
            byte_sum: 0,
        }
    }

    fn int(&mut self, v: i64) {
        self.int = Some(self.int.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))));
    }

    fn double(&mut self, v: f64) {
        if !v.is_nan() {
            self.double = Some(
                self.double
                    .map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))),
            );
        }
    }

    fn decimal(&mut self, v: i128) {
        self.decimal = Some(
            self.decimal
                .map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))),
        );
    }

    fn timestamp(&mut self, nanos: i128) {
        self.timestamp = Some(
            self.timestamp
                .map_or((nanos, nanos), |(lo, hi)| (lo.min(nanos), hi.max(nanos))),
        );
    }

    fn bytes(&mut self, v: &[u8]) {
        self.byte_sum = self.byte_sum.saturating_add(v.len() as i64);
        if !matches!(
            self.kind,
            TypeKind::String | TypeKind::Varchar | TypeKind::Char
        ) {
            return;
        }
        match &mut self.bytes {
            None => self.bytes = Some((v.to_vec(), v.to_vec())),
            Some((lo, hi)) => {
                if v < lo.as_slice() {
                    *lo = v.to_vec();
                }
                if v > hi.as_slice() {
                    *hi = v.to_vec();
                }
            }
        }
    }

    fn merge(&mut self, o: &Stats) {
        self.values += o.values;
        self.nulls += o.nulls;
        self.true_count += o.true_count;
        self.scale = o.scale;
        if let Some((lo, hi)) = o.int {
            self.int(lo);
            self.int(hi);
        }
        if let Some((lo, hi)) = o.double {
            self.double(lo);
            self.double(hi);
        }
        if let Some((lo, hi)) = o.decimal {
            self.decimal(lo);
            self.decimal(hi);
        }
        if let Some((lo, hi)) = o.timestamp {
            self.timestamp(lo);
            self.timestamp(hi);
        }
        if let Some((lo, hi)) = &o.bytes {
            let sum = self.byte_sum;
            self.bytes(lo);
            self.bytes(hi);
            self.byte_sum = sum;
        }
        self.byte_sum = self.byte_sum.saturating_add(o.byte_sum);
    }

    /// The statistics as written. Every column records its value count and whether it has
    /// nulls (a reader takes a missing `hasNull` as true, and Paimon's statistics reader
    /// checks the two agree); a typed part is written whenever there are values, since
    /// Paimon's reader of ORC statistics expects the class that matches the type.
    fn proto(&self, kind: TypeKind) -> ColumnStatistics {
        let millis_nanos = |n: i128| {
            let millis = n.div_euclid(1_000_000) as i64;
            (millis, n.rem_euclid(1_000_000) as i32 + 1)
        };
        let typed = match kind {
            TypeKind::Date => {
                self.int
                    .map_or(TypedStatistics::None, |(lo, hi)| TypedStatistics::Date {
                        min: lo as i32,
                        max: hi as i32,
                    })
            }
            TypeKind::Byte | TypeKind::Short | TypeKind::Int | TypeKind::Long => {
                self.int.map_or(TypedStatistics::None, |(min, max)| {
                    TypedStatistics::Integer { min, max }
                })
            }
            TypeKind::String | TypeKind::Varchar | TypeKind::Char => match &self.bytes {
                Some((lo, hi)) => match (std::str::from_utf8(lo), std::str::from_utf8(hi)) {
                    (Ok(min), Ok(max)) => TypedStatistics::String {
                        min: min.to_string(),
                        max: max.to_string(),
                    },
                    _ => TypedStatistics::None,
                },
                None => TypedStatistics::None,
            },
            TypeKind::Boolean => TypedStatistics::Boolean {
                true_count: self.true_count,
            },
            TypeKind::Float | TypeKind::Double => {
                self.double.map_or(TypedStatistics::None, |(min, max)| {
                    TypedStatistics::Double { min, max }
                })
            }
            TypeKind::Decimal => {
                self.decimal
                    .map_or(TypedStatistics::None, |(lo, hi)| TypedStatistics::Decimal {
                        min: decimal_string(lo, self.scale),
                        max: decimal_string(hi, self.scale),
                    })
            }
            TypeKind::Timestamp | TypeKind::TimestampInstant => {
                self.timestamp.map_or(TypedStatistics::None, |(lo, hi)| {
                    let (min_millis, min_nanos) = millis_nanos(lo);
                    let (max_millis, max_nanos) = millis_nanos(hi);
                    TypedStatistics::Timestamp {
                        min_millis,
                        max_millis,
                        min_nanos,
                        max_nanos,
                    }
                })
            }
            TypeKind::Binary => TypedStatistics::Binary { sum: self.byte_sum },
            _ => TypedStatistics::None,
        };
        ColumnStatistics {
            number_of_values: self.values,
            has_null: self.nulls > 0,
            typed,
        }
    }
}

/// An unscaled decimal as a decimal string (`-12.340` for -12340 at scale 3).
fn decimal_string(v: i128, scale: i8) -> String {
    let digits = v.unsigned_abs().to_string();
    let sign = if v < 0 { "-" } else { "" };
    let scale = scale.max(0) as usize;
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}
