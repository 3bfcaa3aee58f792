//! A dictionary-encoding column-chunk writer for INT32, INT64, FLOAT and DOUBLE columns.
//!
//! Paimon writes every column dictionary-encoded by default (`parquet.enable.dictionary`), so
//! every row of an integer or floating-point column goes through the writer's dictionary.
//! arrow-rs's interner hashes the value's bytes with ahash, probes a `hashbrown` table of
//! indices and compares the bytes with a `memcmp` call: the largest cost of a primitive-key
//! merge after zstd, natively and more so in the component, where ahash's portable path,
//! hashbrown's portable groups and wasi-libc's `memcmp` are slower still (profiles:
//! benches/README.md, "Since: page-by-page reads and a cheaper heap" and "Then: a dictionary
//! writer for primitive columns and 16-byte key heads"). This writer keeps the values' bits in an open-addressing table (one multiply to
//! hash, one slot compare, no call) and otherwise writes what arrow-rs writes: ids in order
//! of first appearance, a PLAIN dictionary page, RLE_DICTIONARY data pages with RLE
//! definition levels, PLAIN once the dictionary outgrows `parquet.dictionary.page.size`, page
//! limits by size and row count, chunk statistics, and a column index.
//!
//! Min/max follow parquet-rs: signed order for integers, IEEE 754 total order for floats with
//! NaN ignored unless a page or chunk holds nothing else, and a NaN count for floats. A page's
//! min/max come from the dictionary entries it uses (a bit per entry), not from a comparison
//! per row.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::buffer::{NullBuffer, ScalarBuffer};
use arrow::datatypes::ArrowNativeType;
use arrow::datatypes::{DataType, Date32Type, Float32Type, Float64Type, Int32Type, Int64Type};
use parquet::basic::{SortOrder, Type as PhysicalType};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::schema::types::ColumnDescPtr;

use super::ids::{IdTable, EMPTY};
use super::{DictConfig, PageBounds, PageBuffer};
use crate::error::{Error, Result};
use crate::parquet_io::codec::PageCompressor;
use crate::parquet_io::column_chunk::{assemble_chunk, ChunkPages, ChunkParts, ChunkSource};

/// A fixed-width Parquet value the writer handles.
pub(crate) trait DictPrimitive:
    ArrowNativeType + Copy + Default + PartialEq + std::fmt::Debug + 'static
{
    const PHYSICAL: PhysicalType;
    const FLOAT: bool;
    /// The value's bits: what the dictionary compares (NaN payloads and signed zeros are
    /// distinct values, as they are to arrow-rs's interner).
    fn bits(self) -> u64;
    fn put_plain(self, out: &mut Vec<u8>);
    fn is_nan(self) -> bool;
    /// `a > b` in parquet-rs's statistics order.
    fn greater(a: Self, b: Self) -> bool;
    /// Min and max of a non-empty slice by [`update_min`] / [`update_max`]'s rules.
    fn slice_min_max(values: &[Self]) -> Option<(Self, Self)>;
    fn statistics(stats: ValueStatistics<Self>) -> Statistics;
}

macro_rules! int_primitive {
    ($t:ty, $phys:expr, $variant:ident) => {
        impl DictPrimitive for $t {
            const PHYSICAL: PhysicalType = $phys;
            const FLOAT: bool = false;
            fn bits(self) -> u64 {
                self as u64
            }
            fn put_plain(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn is_nan(self) -> bool {
                false
            }
            fn greater(a: Self, b: Self) -> bool {
                a > b
            }
            fn slice_min_max(values: &[Self]) -> Option<(Self, Self)> {
                Some((*values.iter().min()?, *values.iter().max()?))
            }
            fn statistics(stats: ValueStatistics<Self>) -> Statistics {
                Statistics::$variant(stats)
            }
        }
    };
}

macro_rules! float_primitive {
    ($t:ty, $phys:expr, $variant:ident, $int:ty, $uint:ty) => {
        impl DictPrimitive for $t {
            const PHYSICAL: PhysicalType = $phys;
            const FLOAT: bool = true;
            fn bits(self) -> u64 {
                self.to_bits() as u64
            }
            fn put_plain(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn is_nan(self) -> bool {
                self.is_nan()
            }
            fn greater(a: Self, b: Self) -> bool {
                a.total_cmp(&b) == std::cmp::Ordering::Greater
            }
            fn slice_min_max(values: &[Self]) -> Option<(Self, Self)> {
                if values.iter().any(|v| v.is_nan()) {
                    let (mut lo, mut hi) = (None, None);
                    for &v in values {
                        update_min(&mut lo, v);
                        update_max(&mut hi, v);
                    }
                    return lo.zip(hi);
                }
                // No NaN: total order is the order of these integer keys (vectorisable).
                let key = |v: Self| {
                    let b = v.to_bits() as $int;
                    b ^ (((b >> (<$int>::BITS - 1)) as $uint) >> 1) as $int
                };
                let lo = values.iter().copied().min_by_key(|&v| key(v))?;
                let hi = values.iter().copied().max_by_key(|&v| key(v))?;
                Some((lo, hi))
            }
            fn statistics(stats: ValueStatistics<Self>) -> Statistics {
                Statistics::$variant(stats)
            }
        }
    };
}

int_primitive!(i32, PhysicalType::INT32, Int32);
int_primitive!(i64, PhysicalType::INT64, Int64);
float_primitive!(f32, PhysicalType::FLOAT, Float, i32, u32);
float_primitive!(f64, PhysicalType::DOUBLE, Double, i64, u64);

/// parquet-rs's running minimum: a NaN never replaces a number, a number replaces a NaN.
fn update_min<T: DictPrimitive>(min: &mut Option<T>, v: T) {
    match min {
        None => *min = Some(v),
        Some(m) => match (m.is_nan(), v.is_nan()) {
            (false, true) => {}
            (true, false) => *m = v,
            _ => {
                if T::greater(*m, v) {
                    *m = v
                }
            }
        },
    }
}

/// parquet-rs's running maximum (see [`update_min`]).
fn update_max<T: DictPrimitive>(max: &mut Option<T>, v: T) {
    match max {
        None => *max = Some(v),
        Some(m) => match (m.is_nan(), v.is_nan()) {
            (false, true) => {}
            (true, false) => *m = v,
            _ => {
                if T::greater(v, *m) {
                    *m = v
                }
            }
        },
    }
}

fn plain_bytes<T: DictPrimitive>(v: T) -> Vec<u8> {
    let mut out = Vec::with_capacity(8);
    v.put_plain(&mut out);
    out
}

/// Which arrow array types feed which writer (the physical type must match the file's).
pub(crate) fn accepts(data_type: &DataType, descr: &ColumnDescPtr) -> bool {
    if descr.max_rep_level() > 0 || descr.max_def_level() > 1 {
        return false;
    }
    // Integers in signed order only (unsigned logical types compare differently); floats in
    // parquet-rs's order for them (IEEE 754 total order). Everything else stays with arrow-rs.
    let ints = descr.sort_order() == SortOrder::SIGNED;
    let floats = matches!(
        descr.sort_order(),
        SortOrder::SIGNED | SortOrder::TOTAL_ORDER
    );
    match (data_type, descr.physical_type()) {
        (
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Date32,
            PhysicalType::INT32,
        )
        | (DataType::Int64, PhysicalType::INT64) => ints,
        (DataType::Float32, PhysicalType::FLOAT) | (DataType::Float64, PhysicalType::DOUBLE) => {
            floats
        }
        _ => false,
    }
}

/// The writer of one column, whatever its value type.
pub(crate) trait PrimitiveChunkWriter {
    fn write(&mut self, array: &ArrayRef) -> Result<()>;
    fn estimated_size(&self) -> usize;
    fn close(self: Box<Self>) -> Result<(ChunkSource, ColumnCloseResult)>;
}

/// A writer for `descr` fed arrays of `data_type` (one [`accepts`] allowed).
pub(crate) fn writer_for(
    data_type: &DataType,
    descr: ColumnDescPtr,
    cfg: Arc<DictConfig>,
    pages: ChunkPages,
    dictionary: bool,
) -> Result<Box<dyn PrimitiveChunkWriter>> {
    let (d, c, p) = (descr, cfg, pages);
    Ok(match data_type {
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Date32 => {
            Box::new(PrimitiveDictWriter::<i32>::new(d, c, p, dictionary)?)
        }
        DataType::Int64 => Box::new(PrimitiveDictWriter::<i64>::new(d, c, p, dictionary)?),
        DataType::Float32 => Box::new(PrimitiveDictWriter::<f32>::new(d, c, p, dictionary)?),
        DataType::Float64 => Box::new(PrimitiveDictWriter::<f64>::new(d, c, p, dictionary)?),
        other => {
            return Err(Error::internal(format!(
                "primitive dictionary writer given {other}"
            )))
        }
    })
}

/// Writes one column chunk of a non-nested primitive column.
pub(crate) struct PrimitiveDictWriter<T: DictPrimitive> {
    descr: ColumnDescPtr,
    cfg: Arc<DictConfig>,
    compressor: PageCompressor,
    nullable: bool,

    // The dictionary: values in id order and an open-addressing table of ids (4 bytes a slot,
    // a third of what slots holding each value's bits beside its id would take).
    values: Vec<T>,
    ids: IdTable,
    fallback: bool,

    // The data page being built.
    page: PageBuffer,
    page_nans: u64,
    page_min: Option<T>,
    page_max: Option<T>,

    pages: ChunkPages,
    rows: u64,
    nulls: u64,
    nans: u64,
    min: Option<T>,
    max: Option<T>,
}

impl<T: DictPrimitive> PrimitiveDictWriter<T> {
    /// `dictionary: false` (`parquet.enable.dictionary` off for the column): PLAIN from the
    /// first page, as if the dictionary had been given up before the first value.
    pub(crate) fn new(
        descr: ColumnDescPtr,
        cfg: Arc<DictConfig>,
        pages: ChunkPages,
        dictionary: bool,
    ) -> Result<Self> {
        if descr.max_rep_level() > 0 || descr.max_def_level() > 1 {
            return Err(Error::internal(format!(
                "primitive dictionary writer given nested column '{}'",
                descr.path()
            )));
        }
        Ok(PrimitiveDictWriter {
            nullable: descr.max_def_level() > 0,
            compressor: PageCompressor::new(cfg.compression, cfg.offload.as_ref())?,
            descr,
            cfg,
            values: Vec::new(),
            ids: IdTable::new(),
            fallback: !dictionary,
            page: PageBuffer::default(),
            page_nans: 0,
            page_min: None,
            page_max: None,
            pages,
            rows: 0,
            nulls: 0,
            nans: 0,
            min: None,
            max: None,
        })
    }

    /// The id of `v`, adding it to the dictionary (and to the statistics) when new.
    fn intern(&mut self, v: T) -> u32 {
        let bits = v.bits();
        let values = &self.values;
        let slot = match self.ids.find(bits, |id| values[id as usize].bits() == bits) {
            Ok(id) => return id,
            Err(slot) => slot,
        };
        let id = self.values.len() as u32;
        self.values.push(v);
        let values = &self.values;
        self.ids
            .insert(slot, id, values.len(), |id| values[id].bits());
        if self.cfg.statistics {
            update_min(&mut self.min, v);
            update_max(&mut self.max, v);
        }
        id
    }

    fn write_values(&mut self, values: &[T], nulls: Option<&NullBuffer>) -> Result<()> {
        if !self.nullable && nulls.is_some_and(|n| n.null_count() > 0) {
            return Err(Error::corrupt(
                None,
                format!("nulls in required column '{}'", self.descr.path()),
            ));
        }
        let n = values.len();
        let mut start = 0;
        while start < n {
            let end = self.mini_batch_end(start, n);
            let no_nulls = nulls.is_none_or(|b| b.slice(start, end - start).null_count() == 0);
            if no_nulls {
                if self.fallback {
                    // PLAIN without nulls: the bytes in bulk and min/max of the slice at once
                    // (the per-value path below is branchy; parquet-rs's is vectorised).
                    self.write_plain_slice(&values[start..end]);
                } else {
                    self.write_dictionary_slice(&values[start..end]);
                }
                self.rows += (end - start) as u64;
                self.after_mini_batch()?;
                start = end;
                continue;
            }
            for (i, &v) in values.iter().enumerate().take(end).skip(start) {
                if nulls.is_some_and(|b| b.is_null(i)) {
                    self.page.push_null();
                    self.nulls += 1;
                    continue;
                }
                if self.nullable {
                    self.page.defs.push(1);
                }
                self.page.rows += 1;
                if T::FLOAT && v.is_nan() {
                    self.page_nans += 1;
                    self.nans += 1;
                }
                if self.fallback {
                    v.put_plain(&mut self.page.plain);
                    if self.cfg.statistics {
                        update_min(&mut self.page_min, v);
                        update_max(&mut self.page_max, v);
                        update_min(&mut self.min, v);
                        update_max(&mut self.max, v);
                    }
                } else {
                    let id = self.intern(v);
                    self.page.ids.push(id);
                }
            }
            self.rows += (end - start) as u64;
            self.after_mini_batch()?;
            start = end;
        }
        Ok(())
    }

    /// Dictionary ids for a slice without nulls. Once the dictionary outgrows the cache (the
    /// bench's price column: benches/README.md, "Then: STRING columns through the dictionary
    /// writer, grouped probes, read-ahead") nearly every probe misses it, and one
    /// row at a time those misses queue behind each other. So rows are probed in groups: all
    /// table loads of a group, then all dictionary loads, each set independent and in flight
    /// together. A row whose first probe does not settle it goes through [`Self::intern`].
    /// Accepting an id only when its dictionary value has the row's bits keeps this exact
    /// whatever the table did meanwhile (ids never change value; growing only moves them).
    fn write_dictionary_slice(&mut self, slice: &[T]) {
        const GROUP: usize = 16;
        if self.nullable {
            self.page.defs.resize(self.page.defs.len() + slice.len(), 1);
        }
        self.page.rows += slice.len();
        if T::FLOAT {
            let nans = slice.iter().filter(|v| v.is_nan()).count() as u64;
            self.page_nans += nans;
            self.nans += nans;
        }
        self.page.ids.reserve(slice.len());
        for group in slice.chunks(GROUP) {
            let mut ids = [EMPTY; GROUP];
            for (id, v) in ids.iter_mut().zip(group) {
                *id = self.ids.first(v.bits());
            }
            let mut hit = [false; GROUP];
            for ((h, &id), v) in hit.iter_mut().zip(&ids).zip(group) {
                *h = id != EMPTY && self.values[id as usize].bits() == v.bits();
            }
            for (j, &v) in group.iter().enumerate() {
                let id = if hit[j] { ids[j] } else { self.intern(v) };
                self.page.ids.push(id);
            }
        }
    }

    fn write_plain_slice(&mut self, slice: &[T]) {
        if self.nullable {
            self.page.defs.resize(self.page.defs.len() + slice.len(), 1);
        }
        self.page.rows += slice.len();
        put_plain_slice(slice, &mut self.page.plain);
        if T::FLOAT {
            let nans = slice.iter().filter(|v| v.is_nan()).count() as u64;
            self.page_nans += nans;
            self.nans += nans;
        }
        if self.cfg.statistics {
            if let Some((lo, hi)) = T::slice_min_max(slice) {
                update_min(&mut self.page_min, lo);
                update_max(&mut self.page_max, hi);
                update_min(&mut self.min, lo);
                update_max(&mut self.max, hi);
            }
        }
    }

    fn mini_batch_end(&self, start: usize, n: usize) -> usize {
        self.page.mini_batch_end(&self.cfg, start, n)
    }

    fn dictionary_bytes(&self) -> usize {
        self.values.len() * std::mem::size_of::<T>()
    }

    fn estimated_page_size(&self) -> usize {
        self.page.estimated_size(self.fallback, self.values.len())
    }

    fn after_mini_batch(&mut self) -> Result<()> {
        if !self.fallback && self.dictionary_bytes() >= self.cfg.dictionary_page_size_limit {
            // parquet-rs's rule: finish the page in flight with the dictionary, then write the
            // rest of the chunk PLAIN.
            self.flush_page()?;
            self.fallback = true;
            return Ok(());
        }
        if self.page.rows >= self.cfg.data_page_row_count_limit
            || self.estimated_page_size() >= self.cfg.data_page_size_limit
        {
            self.flush_page()?;
        }
        Ok(())
    }

    /// Min and max of the dictionary entries a page uses.
    fn dictionary_page_min_max(&self) -> (Option<T>, Option<T>) {
        let (mut min, mut max) = (None, None);
        for id in self.page.distinct_ids(self.values.len()) {
            update_min(&mut min, self.values[id]);
            update_max(&mut max, self.values[id]);
        }
        (min, max)
    }

    fn flush_page(&mut self) -> Result<()> {
        if self.page.rows == 0 {
            return Ok(());
        }
        let (min, max) = if !self.cfg.statistics {
            (None, None)
        } else if self.fallback {
            (self.page_min.take(), self.page_max.take())
        } else {
            self.dictionary_page_min_max()
        };
        self.page.finish(
            self.nullable,
            self.fallback,
            self.values.len(),
            &mut self.compressor,
            &mut self.pages,
            PageBounds {
                min: min.map(plain_bytes),
                max: max.map(plain_bytes),
                nans: T::FLOAT.then_some(self.page_nans),
            },
        )?;
        self.page_nans = 0;
        self.page_min = None;
        self.page_max = None;
        Ok(())
    }
}

impl<T: DictPrimitive> PrimitiveChunkWriter for PrimitiveDictWriter<T> {
    fn write(&mut self, array: &ArrayRef) -> Result<()> {
        if matches!(array.data_type(), DataType::Int8 | DataType::Int16) {
            // Stored as INT32, as arrow-rs stores them.
            let wide = arrow::compute::cast(array, &DataType::Int32)
                .map_err(|e| Error::internal(format!("widening to INT32: {e}")))?;
            return self.write(&wide);
        }
        // Each arm hands the native values over; the types match `writer_for`'s choice.
        let (values, nulls): (&[T], Option<&NullBuffer>) = match array.data_type() {
            DataType::Int32 => cast_values(array.as_primitive::<Int32Type>().values()),
            DataType::Date32 => cast_values(array.as_primitive::<Date32Type>().values()),
            DataType::Int64 => cast_values(array.as_primitive::<Int64Type>().values()),
            DataType::Float32 => cast_values(array.as_primitive::<Float32Type>().values()),
            DataType::Float64 => cast_values(array.as_primitive::<Float64Type>().values()),
            other => {
                return Err(Error::internal(format!(
                    "primitive dictionary writer for '{}' given {other}",
                    self.descr.path()
                )))
            }
        }
        .map(|v| (v, array.nulls()))
        .ok_or_else(|| {
            Error::internal(format!(
                "primitive dictionary writer for '{}' given {}",
                self.descr.path(),
                array.data_type()
            ))
        })?;
        self.write_values(values, nulls)
    }

    fn estimated_size(&self) -> usize {
        self.pages.compressed_len() + self.dictionary_bytes() + self.estimated_page_size()
    }

    fn close(mut self: Box<Self>) -> Result<(ChunkSource, ColumnCloseResult)> {
        self.flush_page()?;
        let this = *self;
        let PrimitiveDictWriter {
            descr,
            cfg,
            mut compressor,
            values,
            pages,
            rows,
            nulls,
            nans,
            min,
            max,
            ..
        } = this;
        let dictionary = pages.uses_dictionary().then(|| {
            let mut plain = Vec::with_capacity(values.len() * std::mem::size_of::<T>());
            for v in &values {
                v.put_plain(&mut plain);
            }
            (plain, values.len() as u32)
        });
        let statistics = cfg.statistics.then(|| {
            let mut stats = ValueStatistics::new(min, max, None, Some(nulls), false)
                .with_backwards_compatible_min_max(true);
            if T::FLOAT {
                stats = stats.with_nan_count(Some(nans));
            }
            T::statistics(stats)
        });
        assemble_chunk(
            ChunkParts {
                descr,
                compression: cfg.compression,
                physical: T::PHYSICAL,
                dictionary,
                pages,
                rows,
                statistics,
                column_index: cfg.statistics,
                unencoded_byte_array_bytes: None,
            },
            &mut compressor,
        )
    }
}

/// PLAIN bytes of `values`: little-endian, which is each value's memory on a little-endian
/// target (x86, wasm), so one copy of the slice; value by value elsewhere.
fn put_plain_slice<T: DictPrimitive>(values: &[T], out: &mut Vec<u8>) {
    #[cfg(target_endian = "little")]
    {
        use arrow::datatypes::ToByteSlice;
        out.extend_from_slice(values.to_byte_slice());
    }
    #[cfg(not(target_endian = "little"))]
    {
        out.reserve(std::mem::size_of_val(values));
        for &v in values {
            v.put_plain(out);
        }
    }
}

/// `values` as `&[T]` when the arrow array's native type `U` is the writer's `T`.
fn cast_values<U: ArrowNativeType, T: ArrowNativeType>(values: &ScalarBuffer<U>) -> Option<&[T]> {
    (values as &dyn std::any::Any)
        .downcast_ref::<ScalarBuffer<T>>()
        .map(|b| &b[..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parquet_io::writer::{FileSpec, ParquetFileWriter};
    use arrow::array::{
        Date32Array, Float32Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    };
    use arrow::datatypes::{Field, Schema};
    use bytes::Bytes;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ArrowSchemaConverter;
    use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
    use parquet::file::page_index::column_index::ColumnIndexMetaData;
    use parquet::file::properties::WriterProperties;

    /// Columns that exercise every rule: nulls (and pages of only nulls), NaN and signed
    /// zeros, few distinct values (dictionary to the end), many (fallback to PLAIN), a
    /// required column, dates.
    fn batch(rows: usize) -> RecordBatch {
        let f64s: Float64Array = (0..rows)
            .map(|i| match i % 97 {
                0 => None,
                1 => Some(f64::NAN),
                2 => Some(-0.0),
                3 => Some(0.0),
                _ => Some(((i * 7919) % 5000) as f64 / 4.0 - 300.0),
            })
            .collect();
        let f32s: Float32Array = (0..rows)
            .map(|i| {
                if (20_000..26_000).contains(&i) {
                    None
                } else if i % 5 == 0 {
                    Some(f32::NAN)
                } else {
                    Some((i % 13) as f32 - 6.5)
                }
            })
            .collect();
        let i64_unique: Int64Array = (0..rows)
            .map(|i| Some((i as i64).wrapping_mul(0x9E37_79B9) - 5))
            .collect();
        let i32s: Int32Array = (0..rows)
            .map(|i| (i % 11 != 0).then_some((i % 300) as i32 - 150))
            .collect();
        let dates: Date32Array = (0..rows).map(|i| Some(18_000 + (i % 40) as i32)).collect();
        // Unique doubles without nulls or NaN (fallback to PLAIN in whole slices), zeros of both
        // signs among them.
        let f64_unique: Float64Array = (0..rows)
            .map(|i| match i % 5000 {
                10 => Some(-0.0),
                11 => Some(0.0),
                _ => Some(i as f64 * 0.37 - 1000.0),
            })
            .collect();
        let i8s: arrow::array::Int8Array = (0..rows)
            .map(|i| (i % 9 != 4).then_some((i % 7) as i8 - 3))
            .collect();
        // STRING columns go to the string dictionary writer: few values with nulls, and
        // unique long values (multi-byte characters across the 64-byte statistics cut, some
        // ending in characters that cannot be moved up) that outgrow the dictionary.
        let words: arrow::array::StringArray = (0..rows)
            .map(|i| (i % 13 != 5).then(|| format!("w{:02}é", (i * 7) % 31)))
            .collect();
        let long: arrow::array::StringArray = (0..rows)
            .map(|i| {
                let tail = if i % 3 == 0 { "\u{7f}\u{7f}" } else { "☃" };
                Some(format!(
                    "{:05}{}{tail}",
                    (i * 7919) % rows,
                    "ñ".repeat(30 + i % 5)
                ))
            })
            .collect();
        let schema = Arc::new(Schema::new(vec![
            Field::new("f64", DataType::Float64, true),
            Field::new("f32", DataType::Float32, true),
            Field::new("i64", DataType::Int64, false),
            Field::new("i32", DataType::Int32, true),
            Field::new("d", DataType::Date32, true),
            Field::new("i8", DataType::Int8, true),
            Field::new("f64u", DataType::Float64, false),
            Field::new("words", DataType::Utf8, true),
            Field::new("long", DataType::Utf8, false),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(f64s),
                Arc::new(f32s),
                Arc::new(i64_unique),
                Arc::new(i32s),
                Arc::new(dates),
                Arc::new(i8s),
                Arc::new(f64_unique),
                Arc::new(words),
                Arc::new(long),
            ],
        )
        .unwrap()
    }

    /// `ours`: this project's dictionary writers (primitive and STRING) where they apply.
    fn write(batch: &RecordBatch, ours: bool, props: &WriterProperties) -> Bytes {
        let schema = batch.schema();
        let descr = ArrowSchemaConverter::new().convert(&schema).unwrap();
        let writers = super::super::DictWriters {
            strings: ours,
            primitives: ours,
        };
        let compression = props.compression(&parquet::schema::types::ColumnPath::from("x"));
        let cfg = Arc::new(DictConfig::new(compression, props, writers));
        let spec = FileSpec::new(schema, Arc::new(descr), props.clone(), cfg);
        let mut w = ParquetFileWriter::new(&spec, None).unwrap();
        let mut file = Vec::new();
        let mut out = |piece: &[u8]| -> Result<()> {
            file.extend_from_slice(piece);
            Ok(())
        };
        // Several batches, as the rewriters hand them over.
        for start in (0..batch.num_rows()).step_by(8192) {
            let len = 8192.min(batch.num_rows() - start);
            w.write(&batch.slice(start, len), &mut out).unwrap();
        }
        w.finish(&mut out).unwrap();
        Bytes::from(file)
    }

    fn read(file: &Bytes) -> (Vec<RecordBatch>, ParquetMetaData) {
        let b = ParquetRecordBatchReaderBuilder::try_new(file.clone()).unwrap();
        let meta = ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Required)
            .parse_and_finish(file)
            .unwrap();
        (b.build().unwrap().map(|r| r.unwrap()).collect(), meta)
    }

    /// Per page: min, max, null count and NaN count, as text.
    fn pages(i: &ColumnIndexMetaData) -> Vec<String> {
        macro_rules! each {
            ($ci:expr) => {
                (0..$ci.num_pages() as usize)
                    .map(|p| {
                        format!(
                            "{:?} {:?} {:?} {:?} {}",
                            $ci.min_value(p),
                            $ci.max_value(p),
                            $ci.null_count(p),
                            $ci.nan_count(p),
                            $ci.is_null_page(p)
                        )
                    })
                    .collect()
            };
        }
        match i {
            ColumnIndexMetaData::INT32(ci) => each!(ci),
            ColumnIndexMetaData::INT64(ci) => each!(ci),
            ColumnIndexMetaData::FLOAT(ci) => each!(ci),
            ColumnIndexMetaData::DOUBLE(ci) => each!(ci),
            ColumnIndexMetaData::BYTE_ARRAY(ci) => each!(ci),
            other => panic!("unexpected column index {other:?}"),
        }
    }

    /// Equal as written values (bit patterns, so NaN and -0.0 count).
    fn same_values(a: &[RecordBatch], b: &[RecordBatch]) {
        let a = arrow::compute::concat_batches(&a[0].schema(), a).unwrap();
        let b = arrow::compute::concat_batches(&b[0].schema(), b).unwrap();
        assert_eq!(a.num_rows(), b.num_rows());
        for c in 0..a.num_columns() {
            assert_eq!(a.column(c).to_data(), b.column(c).to_data(), "column {c}");
        }
    }

    /// What the column index should say of a page holding `values`.
    fn expected_page(values: &ArrayRef) -> String {
        fn of<T: DictPrimitive>(values: &[T], nulls: Option<&NullBuffer>) -> String {
            let (mut min, mut max, mut n, mut nan) = (None, None, 0i64, 0i64);
            for (i, &v) in values.iter().enumerate() {
                if nulls.is_some_and(|b| b.is_null(i)) {
                    n += 1;
                    continue;
                }
                nan += i64::from(v.is_nan());
                update_min(&mut min, v);
                update_max(&mut max, v);
            }
            format!(
                "{:?} {:?} {:?} {:?} {}",
                min.as_ref(),
                max.as_ref(),
                Some(n),
                T::FLOAT.then_some(nan),
                min.is_none()
            )
        }
        if values.data_type() == &DataType::Utf8 {
            // Byte order, cut to the column index's 64 bytes as parquet-rs cuts it.
            let strings = values.as_string::<i32>();
            let (mut min, mut max, mut n) = (None::<&[u8]>, None::<&[u8]>, 0i64);
            for v in strings.iter() {
                let Some(v) = v.map(str::as_bytes) else {
                    n += 1;
                    continue;
                };
                min = Some(min.map_or(v, |m| m.min(v)));
                max = Some(max.map_or(v, |m| m.max(v)));
            }
            let limit = parquet::file::properties::DEFAULT_COLUMN_INDEX_TRUNCATE_LENGTH;
            use crate::parquet_io::statistics_truncation::{lower_bound, upper_bound};
            let lo = min.map(|v| lower_bound(v, limit).0);
            let hi = max.map(|v| upper_bound(v, limit).0);
            return format!(
                "{:?} {:?} {:?} {:?} {}",
                lo.as_deref(),
                hi.as_deref(),
                Some(n),
                None::<i64>,
                lo.is_none()
            );
        }
        if values.data_type() == &DataType::Int8 {
            return expected_page(&arrow::compute::cast(values, &DataType::Int32).unwrap());
        }
        let nulls = values.nulls();
        match values.data_type() {
            DataType::Int32 => of(values.as_primitive::<Int32Type>().values(), nulls),
            DataType::Date32 => of(values.as_primitive::<Date32Type>().values(), nulls),
            DataType::Int64 => of(values.as_primitive::<Int64Type>().values(), nulls),
            DataType::Float32 => of(values.as_primitive::<Float32Type>().values(), nulls),
            DataType::Float64 => of(values.as_primitive::<Float64Type>().values(), nulls),
            other => panic!("{other}"),
        }
    }

    fn check_against_arrow(props: WriterProperties, rows: usize) {
        let batch = batch(rows);
        let ours = write(&batch, true, &props);
        let theirs = write(&batch, false, &props);
        let (our_rows, our_meta) = read(&ours);
        let (their_rows, their_meta) = read(&theirs);
        same_values(&our_rows, &their_rows);
        same_values(&our_rows, std::slice::from_ref(&batch));
        assert_eq!(our_meta.num_row_groups(), their_meta.num_row_groups());
        for (rg, (o, t)) in our_meta
            .row_groups()
            .iter()
            .zip(their_meta.row_groups())
            .enumerate()
        {
            for (c, (oc, tc)) in o.columns().iter().zip(t.columns()).enumerate() {
                let what = format!("row group {rg}, column {c}");
                let (os, ts) = (oc.statistics().unwrap(), tc.statistics().unwrap());
                assert_eq!(os.min_bytes_opt(), ts.min_bytes_opt(), "{what}: min");
                assert_eq!(os.max_bytes_opt(), ts.max_bytes_opt(), "{what}: max");
                assert_eq!(os.null_count_opt(), ts.null_count_opt(), "{what}: nulls");
                assert_eq!(os.nan_count_opt(), ts.nan_count_opt(), "{what}: NaNs");
                assert_eq!(os.min_is_exact(), ts.min_is_exact(), "{what}: exact min");
                assert_eq!(os.max_is_exact(), ts.max_is_exact(), "{what}: exact max");
                let encodings = |m: &parquet::file::metadata::ColumnChunkMetaData| {
                    (
                        format!("{:?}", m.page_encoding_stats_mask()),
                        m.encodings().collect::<Vec<_>>(),
                    )
                };
                assert_eq!(encodings(oc), encodings(tc), "{what}: page encodings");
                // The index describes every page exactly; where the pages are cut as
                // arrow-rs cuts them (its mini-batches differ in places), it is the same.
                let (oi, ti) = (
                    our_meta.page_index_for_row_group(rg),
                    their_meta.page_index_for_row_group(rg),
                );
                let rows = |x: &parquet::file::metadata::page_index::RowGroupPageIndex| {
                    x.offset_index(c)
                        .unwrap()
                        .page_locations()
                        .iter()
                        .map(|l| l.first_row_index as usize)
                        .collect::<Vec<_>>()
                };
                let ours_pages = pages(oi.column_index(c).unwrap());
                let base: usize = (0..rg)
                    .map(|r| our_meta.row_group(r).num_rows() as usize)
                    .sum();
                let n = our_meta.row_group(rg).num_rows() as usize;
                let starts = rows(&oi);
                for (p, &start) in starts.iter().enumerate() {
                    let end = starts.get(p + 1).copied().unwrap_or(n);
                    let slice = batch.column(c).slice(base + start, end - start);
                    assert_eq!(ours_pages[p], expected_page(&slice), "{what}: page {p}");
                }
                if starts == rows(&ti) {
                    assert_eq!(
                        ours_pages,
                        pages(ti.column_index(c).unwrap()),
                        "{what}: column index"
                    );
                }
            }
        }
    }

    #[test]
    fn writes_what_arrow_rs_writes() {
        check_against_arrow(WriterProperties::builder().build(), 60_000);
    }

    /// `parquet.enable.dictionary=false`: PLAIN throughout, as arrow-rs writes it.
    #[test]
    fn without_dictionary_matches_too() {
        let props = WriterProperties::builder()
            .set_dictionary_enabled(false)
            .set_data_page_size_limit(4096)
            .build();
        check_against_arrow(props, 30_000);
    }

    #[test]
    fn small_limits_and_fallback_match_too() {
        let props = WriterProperties::builder()
            .set_dictionary_page_size_limit(4096)
            .set_data_page_size_limit(2048)
            .set_data_page_row_count_limit(3000)
            .set_max_row_group_row_count(Some(25_000))
            .build();
        check_against_arrow(props, 60_000);
    }
}
