//! Which bucket a row of a fixed-bucket table belongs to (Paimon's `BucketFunction`), byte for
//! byte as Java assigns it: the postpone-bucket compaction ([`super::postpone`]) must put
//! every key where Paimon's writers and readers (bucket pruning of key lookups) expect it.
//!
//! * `default`: the bucket key (`bucket-key`, else the primary key without the partition
//!   keys) is written as a `BinaryRow` of those fields alone, and its bytes (header, null bits,
//!   fixed part, variable part with its zero padding; not the 4-byte arity prefix of the
//!   manifest serialization) are hashed by Murmur3 over 4-byte little-endian words with seed 42
//!   (`MurmurHashUtils.hashBytesByWords`); the bucket is `abs(hash % n)` with Java's signed
//!   remainder.
//! * `mod`: `floorMod(value, n)` of a single INT or BIGINT bucket key.
//! * `hive`: refused (`unsupported`): Hive's hash is not implemented here.

use arrow_array::{Array, RecordBatch};

use super::binary_row::{BinaryRow, Datum};
use super::scan::Table;
use super::schema::{DataType, TypeRoot};
use crate::error::{Error, Result};
use crate::options::BucketFunctionType;
use crate::rewrite::merge::kv_format;

/// Paimon's `MurmurHashUtils.hashBytesByWords` (seed 42) over a BinaryRow's bytes.
pub fn murmur_hash(row_without_arity: &[u8]) -> i32 {
    let mut h1: u32 = 42;
    for w in row_without_arity.chunks(4) {
        let mut b = [0u8; 4];
        b[..w.len()].copy_from_slice(w);
        let mut k1 = u32::from_le_bytes(b).wrapping_mul(0xcc9e_2d51);
        k1 = k1.rotate_left(15).wrapping_mul(0x1b87_3593);
        h1 ^= k1;
        h1 = h1.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    h1 ^= row_without_arity.len() as u32;
    h1 ^= h1 >> 16;
    h1 = h1.wrapping_mul(0x85eb_ca6b);
    h1 ^= h1 >> 13;
    h1 = h1.wrapping_mul(0xc2b2_ae35);
    h1 ^= h1 >> 16;
    h1 as i32
}

/// The bucket of a bucket-key row under the default function (`Math.abs(hash % n)`).
pub fn bucket_of(bucket_key: &BinaryRow, num_buckets: i32) -> i32 {
    let bytes = bucket_key.as_bytes().get(4..).unwrap_or(&[]);
    (murmur_hash(bytes) % num_buckets).abs()
}

/// The bucket function of a table, bound to a bucket count and to the bucket-key columns of
/// its data files (`_KEY_<field>`).
pub(crate) struct BucketAssigner {
    function: BucketFunctionType,
    /// The bucket-key fields: data-file column name and Paimon type, in bucket-key order.
    key: Vec<(String, DataType)>,
    num_buckets: i32,
}

impl BucketAssigner {
    /// The table's bucket function for `num_buckets` buckets; refuses what cannot be assigned
    /// as Paimon does (`hive`, `mod` over anything but one INT or BIGINT, a bucket key that is
    /// not part of the primary key).
    pub(crate) fn new(table: &Table, num_buckets: i32) -> Result<Self> {
        if num_buckets < 1 {
            return Err(Error::internal(format!("{num_buckets} buckets")));
        }
        let schema = &table.schema;
        let trimmed: Vec<&str> = schema
            .trimmed_primary_keys()
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        let names: Vec<String> = if table.options.bucket_key.is_empty() {
            trimmed.iter().map(|s| s.to_string()).collect()
        } else {
            table.options.bucket_key.clone()
        };
        let mut key = Vec::with_capacity(names.len());
        for name in &names {
            let field = schema
                .field(name)
                .filter(|_| trimmed.contains(&name.as_str()))
                .ok_or_else(|| {
                    Error::invalid_option(
                        "bucket-key",
                        &names.join(","),
                        format!(
                            "'{name}' is not a primary-key field outside the partition keys \
                             (the key columns the data files carry)"
                        ),
                    )
                })?;
            key.push((kv_format::key_column(name), field.data_type.clone()));
        }
        if key.is_empty() {
            return Err(Error::unsupported(
                "a postpone-bucket table without bucket-key fields (its primary key is all \
                 partition keys)",
            ));
        }
        let function = table.options.bucket_function;
        match function {
            BucketFunctionType::Default => {}
            BucketFunctionType::Mod => {
                let integral =
                    key.len() == 1 && matches!(key[0].1.root, TypeRoot::Int | TypeRoot::BigInt);
                if !integral {
                    return Err(Error::invalid_option(
                        "bucket-function.type",
                        "mod",
                        "needs exactly one bucket-key field of type INT or BIGINT",
                    ));
                }
            }
            BucketFunctionType::Hive => {
                return Err(Error::unsupported(
                    "'bucket-function.type' = 'hive': this build does not implement Hive's \
                     bucketing hash",
                ));
            }
        }
        Ok(BucketAssigner {
            function,
            key,
            num_buckets,
        })
    }

    /// The bucket of every row of `batch` (a data file's rows; `file` names it in errors).
    pub(crate) fn buckets(&self, batch: &RecordBatch, file: &str) -> Result<Vec<u32>> {
        let mut columns: Vec<&dyn Array> = Vec::with_capacity(self.key.len());
        for (name, _) in &self.key {
            let c = batch.column_by_name(name).ok_or_else(|| {
                Error::corrupt(Some(file), format!("no bucket-key column '{name}'"))
            })?;
            columns.push(c.as_ref());
        }
        let n = self.num_buckets;
        if self.function == BucketFunctionType::Default {
            if let Some(fast) = FastKey::of(&columns) {
                return Ok(fast.buckets(batch.num_rows(), n));
            }
        }
        let types: Vec<DataType> = self.key.iter().map(|(_, t)| t.clone()).collect();
        let mut out = Vec::with_capacity(batch.num_rows());
        let mut values: Vec<Datum> = Vec::with_capacity(columns.len());
        for row in 0..batch.num_rows() {
            values.clear();
            for c in &columns {
                values.push(kv_format::datum_at(*c, row)?);
            }
            let bucket = match self.function {
                BucketFunctionType::Mod => {
                    (match &values[0] {
                        Datum::Int(v) => i64::from(*v).rem_euclid(i64::from(n)),
                        Datum::BigInt(v) => v.rem_euclid(i64::from(n)),
                        other => {
                            return Err(Error::corrupt(
                                Some(file),
                                format!("bucket key {other:?} where INT or BIGINT was declared"),
                            ))
                        }
                    }) as i32
                }
                _ => bucket_of(&BinaryRow::encode(&values, &types)?, n),
            };
            out.push(bucket as u32);
        }
        Ok(out)
    }
}

/// The bucket-key columns when each is INT, BIGINT or STRING (the usual keys): their rows are
/// written as `BinaryRow` bytes into one reused buffer, without the typed values and the three
/// allocations per row of [`BinaryRow::encode`] (the same bytes: a test compares them).
struct FastKey<'a> {
    columns: Vec<FastColumn<'a>>,
}

enum FastColumn<'a> {
    Int(&'a arrow_array::Int32Array),
    BigInt(&'a arrow_array::Int64Array),
    String(&'a arrow_array::StringArray),
}

impl<'a> FastKey<'a> {
    fn of(columns: &[&'a dyn Array]) -> Option<Self> {
        let mut out = Vec::with_capacity(columns.len());
        for c in columns {
            // Key columns are never null in Paimon; a null takes the general path.
            if c.null_count() > 0 {
                return None;
            }
            let any = c.as_any();
            out.push(
                if let Some(a) = any.downcast_ref::<arrow_array::Int32Array>() {
                    FastColumn::Int(a)
                } else if let Some(a) = any.downcast_ref::<arrow_array::Int64Array>() {
                    FastColumn::BigInt(a)
                } else if let Some(a) = any.downcast_ref::<arrow_array::StringArray>() {
                    FastColumn::String(a)
                } else {
                    return None;
                },
            );
        }
        Some(FastKey { columns: out })
    }

    fn buckets(&self, rows: usize, n: i32) -> Vec<u32> {
        let arity = self.columns.len();
        let fixed = (arity + 63 + 8) / 64 * 8 + 8 * arity;
        let mut row: Vec<u8> = Vec::with_capacity(fixed + 64);
        let mut out = Vec::with_capacity(rows);
        for r in 0..rows {
            row.clear();
            row.resize(fixed, 0);
            let header = fixed - 8 * arity;
            for (i, c) in self.columns.iter().enumerate() {
                let off = header + 8 * i;
                let slot: [u8; 8] = match c {
                    FastColumn::Int(a) => (a.value(r) as u32 as u64).to_le_bytes(),
                    FastColumn::BigInt(a) => a.value(r).to_le_bytes(),
                    FastColumn::String(a) => {
                        let b = a.value(r).as_bytes();
                        if b.len() <= 7 {
                            let mut s = [0u8; 8];
                            s[..b.len()].copy_from_slice(b);
                            s[7] = 0x80 | b.len() as u8;
                            s
                        } else {
                            let offset = row.len() as u64;
                            row.extend_from_slice(b);
                            row.resize(row.len().div_ceil(8) * 8, 0);
                            ((offset << 32) | b.len() as u64).to_le_bytes()
                        }
                    }
                };
                row[off..off + 8].copy_from_slice(&slot);
            }
            out.push((murmur_hash(&row) % n).unsigned_abs());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int32Array, Int64Array, StringArray};

    /// Hashes Paimon Java 1.0 computed for these keys (`BinaryRowWriter`, then
    /// `BinaryRow.hashCode()`, in jshell with the jar of `paimon-python-ali==0.1.1`).
    #[test]
    fn hashes_and_buckets_are_java_s() {
        let types = [
            DataType::parse("INT NOT NULL", "t").unwrap(),
            DataType::parse("STRING NOT NULL", "t").unwrap(),
        ];
        let cases = [
            (17, "a-long-name-2", 1_283_559_402, 2, 6),
            (-3, "short", 1_867_191_555, 3, 5),
            (0, "", 441_064_780, 0, 2),
        ];
        let ints = Int32Array::from(cases.iter().map(|c| c.0).collect::<Vec<_>>());
        let strings = StringArray::from(cases.iter().map(|c| c.1).collect::<Vec<_>>());
        let columns: [&dyn Array; 2] = [&ints, &strings];
        let (fast4, fast7) = {
            let f = FastKey::of(&columns).unwrap();
            (f.buckets(3, 4), f.buckets(3, 7))
        };
        for (i, (k, name, hash, b4, b7)) in cases.into_iter().enumerate() {
            let row =
                BinaryRow::encode(&[Datum::Int(k), Datum::String(name.into())], &types).unwrap();
            assert_eq!(murmur_hash(&row.as_bytes()[4..]), hash, "{k} {name}");
            assert_eq!((bucket_of(&row, 4), bucket_of(&row, 7)), (b4, b7));
            assert_eq!((fast4[i] as i32, fast7[i] as i32), (b4, b7));
        }
        let long = BinaryRow::encode(
            &[Datum::BigInt(123_456_789_012)],
            &[DataType::parse("BIGINT NOT NULL", "t").unwrap()],
        )
        .unwrap();
        assert_eq!(murmur_hash(&long.as_bytes()[4..]), -290_760_731);
    }

    #[test]
    fn the_fast_key_writes_the_bytes_binary_row_writes() {
        let ints = Int32Array::from(vec![0, -1, 7, i32::MAX, i32::MIN]);
        let longs = Int64Array::from(vec![0, -1, 1 << 40, i64::MAX, i64::MIN]);
        let strings = StringArray::from(vec![
            "",
            "short",
            "exactly8",
            "a much longer key",
            "1234567",
        ]);
        let types = [
            DataType::parse("INT NOT NULL", "t").unwrap(),
            DataType::parse("BIGINT NOT NULL", "t").unwrap(),
            DataType::parse("STRING NOT NULL", "t").unwrap(),
        ];
        let columns: [&dyn Array; 3] = [&ints, &longs, &strings];
        for n in [1, 3, 7, 16] {
            let fast = FastKey::of(&columns).unwrap().buckets(5, n);
            for (r, &b) in fast.iter().enumerate() {
                let values = [
                    Datum::Int(ints.value(r)),
                    Datum::BigInt(longs.value(r)),
                    Datum::String(strings.value(r).to_string()),
                ];
                let row = BinaryRow::encode(&values, &types).unwrap();
                assert_eq!(b as i32, bucket_of(&row, n), "row {r}, {n} buckets");
            }
            // One column alone, and a string key alone.
            let one = FastKey::of(&columns[2..]).unwrap().buckets(5, n);
            for (r, &b) in one.iter().enumerate() {
                let values = [Datum::String(strings.value(r).to_string())];
                let row = BinaryRow::encode(&values, &types[2..]).unwrap();
                assert_eq!(b as i32, bucket_of(&row, n));
            }
        }
    }
}
