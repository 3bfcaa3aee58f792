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
        let types: Vec<DataType> = self.key.iter().map(|(_, t)| t.clone()).collect();
        let n = self.num_buckets;
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
