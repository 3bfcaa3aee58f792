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

use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef};
use arrow_buffer::ArrowNativeType;
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::DataType;
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
            let wide = arrow_cast::cast(array, &DataType::Int32)
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
        use arrow_buffer::ToByteSlice;
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
mod tests;
