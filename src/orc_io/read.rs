//! Reading an ORC file as Arrow batches of a wanted schema.
//!
//! The tail (postscript, footer) is read first, with one range read of the file's end; each
//! stripe is then read with one range read and decoded column by column into arrays of the
//! wanted Arrow types, so memory is bounded by a stripe (ORC writers roll stripes at tens of
//! megabytes) rather than the file. Top-level columns are matched to the wanted fields by
//! name; a wanted column the file lacks, or a file type that cannot become the wanted Arrow
//! type, is an error naming the file, never a guess.
//!
//! Every length, count and offset the file states is checked against the bytes that are
//! really there before it is used, and decoders produce exactly the number of values the
//! stripe's row count (or a parent's lengths) asks for: hostile files end in a typed
//! `corrupt-input` error naming the file.
//!
//! Compound columns follow ORC's layout: a struct's, list's or map's children hold values only
//! for the parent's non-null rows.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::BooleanBufferBuilder;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, Time32MillisecondType, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use arrow_array::{
    ArrayRef, ArrowPrimitiveType, BinaryArray, BooleanArray, ListArray, MapArray, PrimitiveArray,
    RecordBatch, StringArray, StructArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, SchemaRef, TimeUnit};

use super::compression::Codec;
use super::proto::{
    EncodingKind, Footer, PostScript, StreamKind, StripeFooter, StripeInformation, TypeKind,
};
use super::rle;
use crate::error::{Error, ErrorKind, Result};
use crate::storage::Storage;

/// Bytes of the file's end read first; a larger tail is read again whole.
const TAIL_GUESS: u64 = 16 * 1024;
/// The most column values (slots of every column read, nested ones included) one stripe may
/// decode: a stripe is decoded whole, and run-length encodings and codecs let a few
/// kilobytes claim billions of values. Java's 64 MiB stripes stay far below it.
const MAX_STRIPE_VALUES: u64 = 1 << 27;
/// Seconds from 1970-01-01 to ORC's timestamp base, 2015-01-01 00:00:00 UTC.
pub(crate) const ORC_EPOCH_SECONDS: i64 = 1_420_070_400;

/// An ORC file's tail: what is needed to read its stripes.
pub(crate) struct OrcTail {
    pub footer: Footer,
    pub codec: Codec,
}

/// Rebinds a corrupt-input error of this layer to the file it is about.
fn in_file(e: Error, path: &str) -> Error {
    match e.kind {
        ErrorKind::CorruptInput { file: None } => {
            let why = e
                .message
                .strip_prefix("corrupt input: ")
                .unwrap_or(&e.message)
                .to_string();
            Error::corrupt(Some(path), why)
        }
        _ => e,
    }
}

fn bad(why: impl std::fmt::Display) -> Error {
    Error::corrupt(None, format!("ORC: {why}"))
}

/// Reads and checks the tail of the ORC file `path`.
pub(crate) fn read_tail(storage: &dyn Storage, path: &str) -> Result<OrcTail> {
    read_tail_inner(storage, path).map_err(|e| in_file(e, path))
}

fn read_tail_inner(storage: &dyn Storage, path: &str) -> Result<OrcTail> {
    let size = storage.size(path)?;
    if size < 4 {
        return Err(bad("the file is too short to be ORC"));
    }
    let guess = size.min(TAIL_GUESS);
    let mut tail = storage.read_range(path, size - guess, guess)?;
    let ps_len = u64::from(*tail.last().ok_or_else(|| bad("empty tail"))?);
    if ps_len + 1 > guess {
        return Err(bad("the postscript length runs past the file"));
    }
    let ps_start = (guess - 1 - ps_len) as usize;
    let ps = PostScript::decode(&tail[ps_start..tail.len() - 1])?;
    if ps.magic != "ORC" {
        return Err(bad("the postscript has no ORC magic"));
    }
    let block_size = usize::try_from(ps.compression_block_size)
        .ok()
        .filter(|b| (1..=(64 << 20)).contains(b))
        .ok_or_else(|| bad("the compression block size is out of range"))?;
    let codec = Codec {
        kind: ps.compression,
        block_size,
    };
    let footer_len = ps.footer_length;
    let needed = footer_len
        .checked_add(ps.metadata_length)
        .and_then(|n| n.checked_add(ps_len + 1))
        .filter(|&n| n <= size)
        .ok_or_else(|| bad("the footer and metadata run past the file"))?;
    if needed > guess {
        tail = storage.read_range(path, size - needed, needed)?;
    }
    let ps_start = tail.len() - 1 - ps_len as usize;
    let footer_start = ps_start - footer_len as usize;
    let footer = Footer::decode(&codec.decompress(&tail[footer_start..ps_start])?)?;
    check_footer(&footer, size)?;
    Ok(OrcTail { footer, codec })
}

/// The footer's own consistency: a type tree whose subtype ids point forward and in range,
/// a struct root, and stripes inside the file whose rows add up.
fn check_footer(footer: &Footer, size: u64) -> Result<()> {
    let n = footer.types.len() as u64;
    let root = footer
        .types
        .first()
        .ok_or_else(|| bad("the file has no types"))?;
    if root.kind != TypeKind::Struct {
        return Err(bad("the root type is not a struct"));
    }
    for (i, t) in footer.types.iter().enumerate() {
        if t.subtypes.iter().any(|&s| s <= i as u64 || s >= n) {
            return Err(bad(format!("type {i} has a subtype out of order or range")));
        }
        let arity = match t.kind {
            TypeKind::List => Some(1),
            TypeKind::Map => Some(2),
            TypeKind::Struct => Some(t.field_names.len()),
            TypeKind::Union => None,
            _ => Some(0),
        };
        if arity.is_some_and(|a| a != t.subtypes.len()) {
            return Err(bad(format!("type {i} has the wrong number of subtypes")));
        }
    }
    let mut rows = 0u64;
    for s in &footer.stripes {
        let end = s
            .offset
            .checked_add(s.index_length)
            .and_then(|e| e.checked_add(s.data_length))
            .and_then(|e| e.checked_add(s.footer_length))
            .ok_or_else(|| bad("a stripe's extent overflows"))?;
        if end > size {
            return Err(bad("a stripe runs past the file"));
        }
        rows = rows
            .checked_add(s.number_of_rows)
            .ok_or_else(|| bad("the stripes' rows overflow"))?;
    }
    if rows != footer.number_of_rows {
        return Err(bad(format!(
            "the stripes hold {rows} rows where the footer records {}",
            footer.number_of_rows
        )));
    }
    Ok(())
}

/// The Arrow schema an ORC file's own types read as (timestamps in nanoseconds, CHAR and
/// VARCHAR as strings); `unsupported` for a union. (The rewriters read files as the table's
/// types; the fuzz target, which knows no table, reads them as their own.)
#[cfg(not(target_family = "wasm"))]
pub(crate) fn arrow_schema_of(footer: &Footer) -> Result<SchemaRef> {
    fn of(types: &[super::proto::Type], i: usize, depth: usize) -> Result<DataType> {
        use arrow_schema::{Field, Fields};
        let t = types
            .get(i)
            .ok_or_else(|| bad("a subtype is out of range"))?;
        if depth > 64 {
            return Err(bad("types nest deeper than 64 levels"));
        }
        let child = |k: usize| of(types, t.subtypes[k] as usize, depth + 1);
        Ok(match t.kind {
            TypeKind::Boolean => DataType::Boolean,
            TypeKind::Byte => DataType::Int8,
            TypeKind::Short => DataType::Int16,
            TypeKind::Int => DataType::Int32,
            TypeKind::Long => DataType::Int64,
            TypeKind::Float => DataType::Float32,
            TypeKind::Double => DataType::Float64,
            TypeKind::String | TypeKind::Varchar | TypeKind::Char => DataType::Utf8,
            TypeKind::Binary => DataType::Binary,
            TypeKind::Date => DataType::Date32,
            TypeKind::Timestamp => DataType::Timestamp(TimeUnit::Nanosecond, None),
            TypeKind::TimestampInstant => {
                DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
            }
            TypeKind::Decimal => {
                let p = t.precision.unwrap_or(38);
                let s = t.scale.unwrap_or(0);
                match (u8::try_from(p), i8::try_from(s)) {
                    (Ok(p @ 1..=38), Ok(s)) if s as u8 <= p => DataType::Decimal128(p, s),
                    _ => return Err(bad(format!("decimal({p}, {s}) is out of range"))),
                }
            }
            TypeKind::List => DataType::List(Arc::new(Field::new("element", child(0)?, true))),
            TypeKind::Map => {
                let entries = Fields::from(vec![
                    Field::new("key", child(0)?, false),
                    Field::new("value", child(1)?, true),
                ]);
                DataType::Map(
                    Arc::new(Field::new("key_value", DataType::Struct(entries), false)),
                    false,
                )
            }
            TypeKind::Struct => DataType::Struct(
                t.field_names
                    .iter()
                    .enumerate()
                    .map(|(k, n)| Ok(Field::new(n, child(k)?, true)))
                    .collect::<Result<Fields>>()?,
            ),
            TypeKind::Union => {
                return Err(Error::unsupported("ORC union columns (Paimon writes none)"))
            }
        })
    }
    match of(&footer.types, 0, 0)? {
        DataType::Struct(fields) => Ok(Arc::new(arrow_schema::Schema::new(fields))),
        _ => Err(bad("the root type is not a struct")),
    }
}

/// Reads the ORC file `path` as batches of `schema` (top-level columns by name), one batch
/// per stripe, handing each to `each`. `rows`, when known, is the row count the caller's
/// metadata records; a file that holds another count is corrupt.
pub(crate) fn read_orc_batches(
    storage: &dyn Storage,
    path: &str,
    schema: &SchemaRef,
    rows: Option<u64>,
    mut each: impl FnMut(RecordBatch) -> Result<()>,
) -> Result<()> {
    let tail = read_tail(storage, path)?;
    if let Some(r) = rows.filter(|r| *r != tail.footer.number_of_rows) {
        return Err(Error::corrupt(
            Some(path),
            format!(
                "the file holds {} rows where its metadata records {r}",
                tail.footer.number_of_rows
            ),
        ));
    }
    let root = &tail.footer.types[0];
    let columns = schema
        .fields()
        .iter()
        .map(|f| {
            root.field_names
                .iter()
                .position(|n| n == f.name())
                .map(|i| root.subtypes[i] as usize)
                .ok_or_else(|| {
                    Error::corrupt(
                        Some(path),
                        format!("the ORC file has no column '{}'", f.name()),
                    )
                })
        })
        .collect::<Result<Vec<_>>>()?;
    for stripe in &tail.footer.stripes {
        let batch = read_stripe(storage, path, &tail, stripe, schema, &columns)
            .map_err(|e| in_file(e, path))?;
        each(batch)?;
    }
    Ok(())
}

fn read_stripe(
    storage: &dyn Storage,
    path: &str,
    tail: &OrcTail,
    stripe: &StripeInformation,
    schema: &SchemaRef,
    columns: &[usize],
) -> Result<RecordBatch> {
    let len = stripe.index_length + stripe.data_length + stripe.footer_length;
    let bytes = storage.read_range(path, stripe.offset, len)?;
    if bytes.len() as u64 != len {
        return Err(bad("a stripe read came back short"));
    }
    let footer_start = (stripe.index_length + stripe.data_length) as usize;
    let footer = StripeFooter::decode(&tail.codec.decompress(&bytes[footer_start..])?)?;
    if footer.columns.len() != tail.footer.types.len() {
        return Err(bad(
            "a stripe footer has the wrong number of column encodings",
        ));
    }
    let mut streams = HashMap::new();
    let mut offset = 0u64;
    for s in &footer.streams {
        let end = offset
            .checked_add(s.length)
            .filter(|&e| e <= footer_start as u64)
            .ok_or_else(|| bad("a stream runs past its stripe"))?;
        if !matches!(s.kind, StreamKind::Other(_)) {
            streams.insert((s.column, s.kind), offset as usize..end as usize);
        }
        offset = end;
    }
    let stripe_data = StripeData {
        bytes: &bytes,
        streams,
        footer: &footer,
        tail,
        budget: std::cell::Cell::new(MAX_STRIPE_VALUES),
    };
    let rows = usize::try_from(stripe.number_of_rows)
        .map_err(|_| bad("a stripe's row count is out of range"))?;
    let arrays = schema
        .fields()
        .iter()
        .zip(columns)
        .map(|(f, &c)| stripe_data.column(c, f.data_type(), rows, None))
        .collect::<Result<Vec<_>>>()?;
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(schema.clone(), arrays, &options)
        .map_err(|e| bad(format!("the columns do not form the wanted schema: {e}")))
}

/// One stripe's bytes and where its streams are.
struct StripeData<'a> {
    bytes: &'a [u8],
    streams: HashMap<(u64, StreamKind), std::ops::Range<usize>>,
    footer: &'a StripeFooter,
    tail: &'a OrcTail,
    /// Values still allowed ([`MAX_STRIPE_VALUES`]).
    budget: std::cell::Cell<u64>,
}

impl StripeData<'_> {
    /// The decompressed stream, or `None` when the stripe has none of that kind.
    fn stream(&self, column: usize, kind: StreamKind) -> Result<Option<Vec<u8>>> {
        match self.streams.get(&(column as u64, kind)) {
            Some(r) => Ok(Some(self.tail.codec.decompress(&self.bytes[r.clone()])?)),
            None => Ok(None),
        }
    }

    fn required(&self, column: usize, kind: StreamKind) -> Result<Vec<u8>> {
        self.stream(column, kind)?
            .ok_or_else(|| bad(format!("column {column} has no {kind:?} stream")))
    }

    fn encoding(&self, column: usize) -> EncodingKind {
        self.footer.columns[column].kind
    }

    /// `count` integers of `kind`'s stream, in the column's RLE version.
    fn ints(
        &self,
        column: usize,
        kind: StreamKind,
        signed: bool,
        count: usize,
    ) -> Result<Vec<i64>> {
        let mut out = Vec::with_capacity(count.min(1 << 20));
        if count == 0 {
            return Ok(out);
        }
        let data = self.required(column, kind)?;
        match self.encoding(column) {
            EncodingKind::Direct | EncodingKind::Dictionary => {
                rle::decode_int_v1(&data, signed, count, &mut out)?
            }
            EncodingKind::DirectV2 | EncodingKind::DictionaryV2 => {
                rle::decode_int_v2(&data, signed, count, &mut out)?
            }
        }
        Ok(out)
    }

    /// Lengths (non-negative, summing to a `usize`) from the LENGTH stream.
    fn lengths(&self, column: usize, count: usize) -> Result<(Vec<usize>, usize)> {
        let raw = self.ints(column, StreamKind::Length, false, count)?;
        let mut total = 0usize;
        let lengths = raw
            .into_iter()
            .map(|l| {
                let l = usize::try_from(l as u64)
                    .ok()
                    .filter(|l| *l <= u32::MAX as usize);
                let l =
                    l.ok_or_else(|| bad(format!("column {column} has a length out of range")))?;
                total = total
                    .checked_add(l)
                    .ok_or_else(|| bad("lengths overflow"))?;
                Ok(l)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((lengths, total))
    }

    /// The column's validity over `slots` values (`None`: no nulls).
    fn present(&self, column: usize, slots: usize) -> Result<Option<NullBuffer>> {
        let Some(data) = self.stream(column, StreamKind::Present)? else {
            return Ok(None);
        };
        let mut bits = Vec::with_capacity(slots.min(1 << 24));
        rle::decode_bools(&data, slots, &mut bits)?;
        let mut b = BooleanBufferBuilder::new(slots);
        for v in bits {
            b.append(v);
        }
        Ok(Some(NullBuffer::new(b.finish())))
    }

    /// Column `c` as an array of `want` with `slots` entries. `parent_nulls` are the slots a
    /// null parent struct hides (they hold no value in the child's streams).
    fn column(
        &self,
        c: usize,
        want: &DataType,
        slots: usize,
        parent_nulls: Option<&NullBuffer>,
    ) -> Result<ArrayRef> {
        let t = &self.tail.footer.types[c];
        let left = self.budget.get().checked_sub(slots as u64).ok_or_else(|| {
            Error::unsupported(format!(
                "an ORC stripe with more than {MAX_STRIPE_VALUES} column values (this build \
                 decodes a stripe whole)"
            ))
        })?;
        self.budget.set(left);
        // Values exist for the slots the parent does not hide.
        let visible = parent_nulls.map_or(slots, |n| slots - n.null_count());
        let own = self.present(c, visible)?;
        let nulls = merge_nulls(parent_nulls, own.as_ref(), slots)?;
        let values = slots - nulls.as_ref().map_or(0, NullBuffer::null_count);
        let mismatch = || {
            bad(format!(
                "column {c} is ORC {:?}, which cannot be read as {want}",
                t.kind
            ))
        };
        let array: ArrayRef = match (t.kind, want) {
            (TypeKind::Boolean, DataType::Boolean) => {
                let data = self.required(c, StreamKind::Data)?;
                let mut bits = Vec::with_capacity(values.min(1 << 24));
                rle::decode_bools(&data, values, &mut bits)?;
                let dense = spread(bits, nulls.as_ref(), false);
                Arc::new(BooleanArray::new(dense.into_iter().collect(), nulls))
            }
            (TypeKind::Byte, DataType::Int8) => {
                let data = self.required(c, StreamKind::Data)?;
                let mut bytes = Vec::with_capacity(values.min(1 << 24));
                rle::decode_bytes(&data, values, &mut bytes)?;
                let v = bytes.into_iter().map(|b| b as i8).collect();
                primitive::<Int8Type>(v, nulls)
            }
            (TypeKind::Short | TypeKind::Int | TypeKind::Long | TypeKind::Date, _) => {
                let v = self.ints(c, StreamKind::Data, true, values)?;
                let narrow = |bits: u32| {
                    v.iter()
                        .all(|x| x.unsigned_abs() >> (bits - 1) == 0 || *x == -(1i64 << (bits - 1)))
                };
                match (t.kind, want) {
                    (TypeKind::Short, DataType::Int16) if narrow(16) => {
                        primitive::<Int16Type>(v.iter().map(|x| *x as i16).collect(), nulls)
                    }
                    (TypeKind::Int | TypeKind::Short, DataType::Int32) if narrow(32) => {
                        primitive::<Int32Type>(v.iter().map(|x| *x as i32).collect(), nulls)
                    }
                    (TypeKind::Int, DataType::Time32(TimeUnit::Millisecond)) if narrow(32) => {
                        primitive::<Time32MillisecondType>(
                            v.iter().map(|x| *x as i32).collect(),
                            nulls,
                        )
                    }
                    (TypeKind::Date, DataType::Date32) if narrow(32) => {
                        primitive::<Date32Type>(v.iter().map(|x| *x as i32).collect(), nulls)
                    }
                    (TypeKind::Long | TypeKind::Int | TypeKind::Short, DataType::Int64) => {
                        primitive::<Int64Type>(v, nulls)
                    }
                    (TypeKind::Short | TypeKind::Int | TypeKind::Date, _)
                        if !matches!(want, DataType::Int64) =>
                    {
                        if matches!(
                            want,
                            DataType::Int16
                                | DataType::Int32
                                | DataType::Date32
                                | DataType::Time32(_)
                        ) {
                            return Err(bad(format!("column {c} holds a value out of range")));
                        }
                        return Err(mismatch());
                    }
                    _ => return Err(mismatch()),
                }
            }
            (TypeKind::Float, DataType::Float32) => {
                let data = self.required(c, StreamKind::Data)?;
                let v = fixed::<4>(&data, values)?.map(f32::from_le_bytes).collect();
                primitive::<Float32Type>(v, nulls)
            }
            (TypeKind::Double, DataType::Float64) => {
                let data = self.required(c, StreamKind::Data)?;
                let v = fixed::<8>(&data, values)?.map(f64::from_le_bytes).collect();
                primitive::<Float64Type>(v, nulls)
            }
            (
                TypeKind::String | TypeKind::Varchar | TypeKind::Char | TypeKind::Binary,
                DataType::Utf8 | DataType::Binary,
            ) => {
                let (offsets, data) =
                    self.byte_values(c, values, nulls.as_ref(), t.kind == TypeKind::Char)?;
                if matches!(want, DataType::Utf8) {
                    Arc::new(
                        StringArray::try_new(offsets, data.into(), nulls)
                            .map_err(|e| bad(format!("column {c}: {e}")))?,
                    )
                } else {
                    Arc::new(BinaryArray::new(offsets, data.into(), nulls))
                }
            }
            (TypeKind::Decimal, DataType::Decimal128(p, s)) => {
                let v = self.decimals(c, values, *s)?;
                let a = PrimitiveArray::<Decimal128Type>::new(
                    spread(v, nulls.as_ref(), 0).into(),
                    nulls,
                );
                Arc::new(
                    a.with_precision_and_scale(*p, *s)
                        .map_err(|e| bad(format!("column {c}: {e}")))?,
                )
            }
            (TypeKind::Timestamp | TypeKind::TimestampInstant, DataType::Timestamp(unit, tz)) => {
                let zone = self.writer_zone(t.kind)?;
                let v = self.timestamps(c, values, *unit, zone.as_ref())?;
                let v = spread(v, nulls.as_ref(), 0);
                match unit {
                    TimeUnit::Second => timestamp::<TimestampSecondType>(v, nulls, tz),
                    TimeUnit::Millisecond => timestamp::<TimestampMillisecondType>(v, nulls, tz),
                    TimeUnit::Microsecond => timestamp::<TimestampMicrosecondType>(v, nulls, tz),
                    TimeUnit::Nanosecond => timestamp::<TimestampNanosecondType>(v, nulls, tz),
                }
            }
            (TypeKind::Struct, DataType::Struct(fields)) => {
                if fields.len() != t.subtypes.len() {
                    return Err(mismatch());
                }
                let children = fields
                    .iter()
                    .zip(&t.subtypes)
                    .map(|(f, &s)| self.column(s as usize, f.data_type(), slots, nulls.as_ref()))
                    .collect::<Result<Vec<_>>>()?;
                Arc::new(
                    StructArray::try_new(fields.clone(), children, nulls)
                        .map_err(|e| bad(format!("column {c}: {e}")))?,
                )
            }
            (TypeKind::List, DataType::List(item)) => {
                let (offsets, total) = self.list_offsets(c, values, nulls.as_ref())?;
                let child = self.column(t.subtypes[0] as usize, item.data_type(), total, None)?;
                Arc::new(
                    ListArray::try_new(item.clone(), offsets, child, nulls)
                        .map_err(|e| bad(format!("column {c}: {e}")))?,
                )
            }
            (TypeKind::Map, DataType::Map(entries, sorted)) => {
                let DataType::Struct(kv) = entries.data_type() else {
                    return Err(mismatch());
                };
                if kv.len() != 2 {
                    return Err(mismatch());
                }
                let (offsets, total) = self.list_offsets(c, values, nulls.as_ref())?;
                let keys = self.column(t.subtypes[0] as usize, kv[0].data_type(), total, None)?;
                let vals = self.column(t.subtypes[1] as usize, kv[1].data_type(), total, None)?;
                let entries_array = StructArray::try_new(kv.clone(), vec![keys, vals], None)
                    .map_err(|e| bad(format!("column {c}: {e}")))?;
                Arc::new(
                    MapArray::try_new(entries.clone(), offsets, entries_array, nulls, *sorted)
                        .map_err(|e| bad(format!("column {c}: {e}")))?,
                )
            }
            _ => return Err(mismatch()),
        };
        Ok(array)
    }

    /// Offsets over `slots` entries and the values of a string or binary column, from its
    /// direct or dictionary encoding.
    /// `trim`: a CHAR column, whose padding spaces are removed as ORC's reader removes them.
    fn byte_values(
        &self,
        c: usize,
        values: usize,
        nulls: Option<&NullBuffer>,
        trim: bool,
    ) -> Result<(OffsetBuffer<i32>, Vec<u8>)> {
        let (starts, ends, data): (Vec<usize>, Vec<usize>, Vec<u8>) = match self.encoding(c) {
            EncodingKind::Direct | EncodingKind::DirectV2 => {
                let (lengths, total) = self.lengths(c, values)?;
                let data = if total == 0 {
                    Vec::new()
                } else {
                    self.required(c, StreamKind::Data)?
                };
                if data.len() < total {
                    return Err(bad(format!(
                        "column {c}'s data is shorter than its lengths"
                    )));
                }
                let mut at = 0;
                let mut starts = Vec::with_capacity(values);
                let mut ends = Vec::with_capacity(values);
                for l in lengths {
                    starts.push(at);
                    at += l;
                    ends.push(at);
                }
                (starts, ends, data)
            }
            EncodingKind::Dictionary | EncodingKind::DictionaryV2 => {
                let size = usize::try_from(self.footer.columns[c].dictionary_size)
                    .ok()
                    .filter(|s| *s <= u32::MAX as usize)
                    .ok_or_else(|| bad(format!("column {c}'s dictionary size is out of range")))?;
                let ids = self.ints(c, StreamKind::Data, false, values)?;
                let (lengths, total) = self.lengths(c, size)?;
                let dict = if total == 0 {
                    Vec::new()
                } else {
                    self.required(c, StreamKind::DictionaryData)?
                };
                if dict.len() < total {
                    return Err(bad(format!(
                        "column {c}'s dictionary is shorter than its lengths"
                    )));
                }
                let mut bounds = Vec::with_capacity(size);
                let mut at = 0;
                for l in lengths {
                    bounds.push((at, at + l));
                    at += l;
                }
                let mut starts = Vec::with_capacity(values);
                let mut ends = Vec::with_capacity(values);
                for id in ids {
                    let (s, e) = usize::try_from(id as u64)
                        .ok()
                        .and_then(|i| bounds.get(i))
                        .ok_or_else(|| {
                            bad(format!("column {c} has a dictionary id out of range"))
                        })?;
                    starts.push(*s);
                    ends.push(*e);
                }
                (starts, ends, dict)
            }
        };
        let mut out = Vec::with_capacity(data.len().min(1 << 26));
        let mut offsets = Vec::with_capacity(starts.len() + 1);
        offsets.push(0i32);
        let mut next = starts.iter().zip(&ends);
        let too_big = || bad(format!("column {c} holds more than 2 GiB in one stripe"));
        for i in 0..nulls.map_or(values, |n| n.len()) {
            if nulls.is_none_or(|n| n.is_valid(i)) {
                let (s, e) = next.next().ok_or_else(|| bad("fewer values than slots"))?;
                let mut v = &data[*s..*e];
                if trim {
                    while let [rest @ .., b' '] = v {
                        v = rest;
                    }
                }
                out.extend_from_slice(v);
            }
            offsets.push(i32::try_from(out.len()).map_err(|_| too_big())?);
        }
        Ok((OffsetBuffer::new(ScalarBuffer::from(offsets)), out))
    }

    /// List or map offsets over `slots` entries (null entries are empty) and the children's
    /// value count.
    fn list_offsets(
        &self,
        c: usize,
        values: usize,
        nulls: Option<&NullBuffer>,
    ) -> Result<(OffsetBuffer<i32>, usize)> {
        let (lengths, total) = self.lengths(c, values)?;
        let lengths = spread(lengths, nulls, 0);
        let mut offsets = Vec::with_capacity(lengths.len() + 1);
        offsets.push(0i32);
        let mut at = 0i32;
        for l in lengths {
            at = i32::try_from(l)
                .ok()
                .and_then(|l| at.checked_add(l))
                .ok_or_else(|| bad(format!("column {c}'s lists hold too many values")))?;
            offsets.push(at);
        }
        Ok((OffsetBuffer::new(ScalarBuffer::from(offsets)), total))
    }

    /// `values` decimals rescaled to `scale`.
    fn decimals(&self, c: usize, values: usize, scale: i8) -> Result<Vec<i128>> {
        let data = if values == 0 {
            Vec::new()
        } else {
            self.required(c, StreamKind::Data)?
        };
        let scales = self.ints(c, StreamKind::Secondary, true, values)?;
        let mut pos = 0;
        let mut out = Vec::with_capacity(values);
        for s in scales {
            let v = read_varint_i128(&data, &mut pos)?;
            let shift = i64::from(scale) - s;
            let v = match shift {
                0 => Some(v),
                1..=38 => v.checked_mul(10i128.pow(shift as u32)),
                -38..=-1 => Some(v / 10i128.pow((-shift) as u32)),
                _ => None,
            };
            out.push(v.ok_or_else(|| bad(format!("column {c} has a decimal scale out of range")))?);
        }
        Ok(out)
    }

    /// A TIMESTAMP column counts seconds from 2015-01-01 in the writer's time zone, and Java's
    /// readers turn its values back into wall clocks of that zone (Paimon 1.0's writers store
    /// TIMESTAMP and legacy TIMESTAMP_LTZ columns so). Paimon's Java writers use the JVM's
    /// zone: `None` when that is UTC (or the file names none), else the zone's rules from the
    /// bundled IANA database, by which `timestamps` recovers those wall clocks. ORC's
    /// instant type (`timestamp with local time zone`) is stored against UTC whatever the
    /// writer's zone, and read as stored (`None`): what a reader in UTC reads, which our
    /// writer stores back the same way, so readers in every zone read our files as before.
    /// A zone the database does not know is refused, never read shifted.
    fn writer_zone(&self, kind: TypeKind) -> Result<Option<jiff::tz::TimeZone>> {
        let zone = match self.footer.writer_timezone.as_deref() {
            None
            | Some(
                "UTC" | "Etc/UTC" | "GMT" | "Etc/GMT" | "Z" | "UCT" | "Etc/UCT" | "Zulu"
                | "Etc/Zulu" | "Universal" | "Etc/Universal" | "GMT0" | "Etc/GMT0" | "Etc/GMT+0"
                | "Etc/GMT-0" | "Greenwich" | "Etc/Greenwich",
            ) => return Ok(None),
            Some(_) if kind == TypeKind::TimestampInstant => return Ok(None),
            Some(zone) => zone,
        };
        jiff::tz::db().get(zone).map(Some).map_err(|e| {
            Error::unsupported(format!(
                "an ORC TIMESTAMP column written in time zone '{zone}', which the bundled \
                 time-zone database does not know ({e})"
            ))
        })
    }

    /// `values` timestamps in `unit` since the epoch: seconds from ORC's base plus the
    /// SECONDARY stream's nanoseconds (with their trailing-zero packing). With the writer's
    /// `zone` (not UTC), the base is 2015-01-01 00:00 in that zone, and each instant becomes
    /// the wall clock a Java reader gets: the instant plus the zone's offset at it (ORC's
    /// `SerializationUtils.convertBetweenTimezones` to a UTC reader), as a UTC-based value.
    fn timestamps(
        &self,
        c: usize,
        values: usize,
        unit: TimeUnit,
        zone: Option<&jiff::tz::TimeZone>,
    ) -> Result<Vec<i64>> {
        let seconds = self.ints(c, StreamKind::Data, true, values)?;
        let nanos = self.ints(c, StreamKind::Secondary, false, values)?;
        let per_second: i64 = match unit {
            TimeUnit::Second => 1,
            TimeUnit::Millisecond => 1_000,
            TimeUnit::Microsecond => 1_000_000,
            TimeUnit::Nanosecond => 1_000_000_000,
        };
        let base = match zone {
            None => ORC_EPOCH_SECONDS,
            Some(zone) => jiff::civil::date(2015, 1, 1)
                .at(0, 0, 0, 0)
                .to_zoned(zone.clone())
                .map_err(|e| bad(format!("column {c}: the writer zone's 2015-01-01: {e}")))?
                .timestamp()
                .as_second(),
        };
        let out_of_range = || bad(format!("column {c} has a timestamp out of range"));
        seconds
            .into_iter()
            .zip(nanos)
            .map(|(s, n)| {
                let n = unpack_nanos(n as u64)
                    .ok_or_else(|| bad(format!("column {c} has nanoseconds out of range")))?;
                let mut s = s.checked_add(base).ok_or_else(out_of_range)?;
                // Writers before ORC-763 truncated negative seconds toward zero; their
                // readers, and ORC's today, step back a second for such values (judged on
                // the instant in the writer's zone, as Java's reader judges it).
                if s < 0 && n > 999_999 {
                    s -= 1;
                }
                if let Some(zone) = zone {
                    let at = jiff::Timestamp::from_second(s).map_err(|_| out_of_range())?;
                    s = s
                        .checked_add(i64::from(zone.to_offset(at).seconds()))
                        .ok_or_else(out_of_range)?;
                }
                s.checked_mul(per_second)
                    .and_then(|v| v.checked_add(n / (1_000_000_000 / per_second)))
                    .ok_or_else(out_of_range)
            })
            .collect()
    }
}

/// Unpacks ORC's nanosecond encoding: the low 3 bits count trailing decimal zeros removed
/// (beyond the first, when non-zero).
pub(crate) fn unpack_nanos(v: u64) -> Option<i64> {
    let zeros = (v & 7) as u32;
    let base = v >> 3;
    let n = if zeros == 0 {
        base
    } else {
        base.checked_mul(10u64.pow(zeros + 1))?
    };
    (n < 1_000_000_000).then_some(n as i64)
}

/// Packs nanoseconds as ORC does: trailing decimal zeros (two or more) are removed and
/// counted in the low 3 bits.
pub(crate) fn pack_nanos(nanos: u32) -> u64 {
    if nanos == 0 {
        return 0;
    }
    let mut n = u64::from(nanos);
    if n % 100 != 0 {
        return n << 3;
    }
    n /= 100;
    let mut zeros = 1;
    while n % 10 == 0 && zeros < 7 {
        n /= 10;
        zeros += 1;
    }
    (n << 3) | zeros
}

/// One zigzag base-128 varint of up to 128 bits.
fn read_varint_i128(data: &[u8], pos: &mut usize) -> Result<i128> {
    crate::varint::read_zigzag_i128(data, pos)
        .ok_or_else(|| bad("a decimal value is truncated or longer than 128 bits"))
}

/// `n` fixed-width little-endian values from the start of `data`.
fn fixed<const W: usize>(data: &[u8], n: usize) -> Result<impl Iterator<Item = [u8; W]> + '_> {
    let bytes = n
        .checked_mul(W)
        .filter(|b| *b <= data.len())
        .ok_or_else(|| bad("a fixed-width stream is shorter than its values"))?;
    Ok(data[..bytes]
        .chunks_exact(W)
        .map(|c| <[u8; W]>::try_from(c).unwrap_or([0; W])))
}

/// Places dense `values` at the valid slots of `nulls`, `fill` elsewhere.
fn spread<T: Copy>(values: Vec<T>, nulls: Option<&NullBuffer>, fill: T) -> Vec<T> {
    let Some(n) = nulls.filter(|n| n.null_count() > 0) else {
        return values;
    };
    let mut it = values.into_iter();
    (0..n.len())
        .map(|i| {
            if n.is_valid(i) {
                it.next().unwrap_or(fill)
            } else {
                fill
            }
        })
        .collect()
}

/// The validity of a child column: the parent's hidden slots, and the child's own nulls over
/// the slots the parent shows.
fn merge_nulls(
    parent: Option<&NullBuffer>,
    own: Option<&NullBuffer>,
    slots: usize,
) -> Result<Option<NullBuffer>> {
    match (parent.filter(|p| p.null_count() > 0), own) {
        (None, own) => Ok(own.cloned()),
        (Some(p), None) => Ok(Some(p.clone())),
        (Some(p), Some(own)) => {
            let mut b = BooleanBufferBuilder::new(slots);
            let mut it = own.iter();
            for i in 0..slots {
                let valid =
                    p.is_valid(i) && it.next().ok_or_else(|| bad("too few present bits"))?;
                b.append(valid);
            }
            Ok(Some(NullBuffer::new(b.finish())))
        }
    }
}

fn primitive<T: ArrowPrimitiveType>(values: Vec<T::Native>, nulls: Option<NullBuffer>) -> ArrayRef {
    let values = spread(values, nulls.as_ref(), T::Native::default());
    Arc::new(PrimitiveArray::<T>::new(values.into(), nulls))
}

fn timestamp<T: ArrowPrimitiveType<Native = i64>>(
    values: Vec<i64>,
    nulls: Option<NullBuffer>,
    tz: &Option<Arc<str>>,
) -> ArrayRef
where
    PrimitiveArray<T>: From<Vec<i64>>,
{
    let a = PrimitiveArray::<T>::new(values.into(), nulls);
    Arc::new(a.with_data_type(DataType::Timestamp(unit_of::<T>(), tz.clone())))
}

fn unit_of<T: ArrowPrimitiveType>() -> TimeUnit {
    match T::DATA_TYPE {
        DataType::Timestamp(u, _) => u,
        _ => TimeUnit::Nanosecond,
    }
}
