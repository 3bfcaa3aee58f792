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
//! * `hive`: Hive's bucketing hash, as Paimon's `HiveBucketFunction`: `h = 31 * h + hash(v)`
//!   over the bucket-key fields from 0, then `(h & i32::MAX) mod n`. A field's hash ([`hive_hash`])
//!   is 0 for null; the value of a BOOLEAN (1 or 0), TINYINT, SMALLINT, INT, DATE (days) or
//!   TIME (milliseconds); `(v ^ v >>> 32)` of a BIGINT; the same of a FLOAT's or DOUBLE's IEEE
//!   bits (NaN canonical, both zeros 0); `31 * h + b` over the signed bytes of a string's UTF-8
//!   or a binary; for a DECIMAL, Java's `BigDecimal.hashCode` of the value with its trailing
//!   zeros stripped (scale never below 0): `31 * (sign * words) + scale`, `words` folding the
//!   unscaled magnitude's 32-bit words, most significant first, by `31 * h + w`. Timestamps
//!   have no Hive hash there, and are refused.

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
    /// as Paimon does (`hive` over a type Hive does not hash, `mod` over anything but one INT
    /// or BIGINT, a bucket key that is not part of the primary key).
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
                if let Some((_, t)) = key.iter().find(|(_, t)| !hive_hashes(t)) {
                    return Err(Error::invalid_option(
                        "bucket-function.type",
                        "hive",
                        format!(
                            "Hive's bucketing hash has no value for a bucket-key field of type \
                             {} (it hashes booleans, integers, floats, decimals, strings, \
                             binaries, dates and times)",
                            t.to_type_string()
                        ),
                    ));
                }
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
                BucketFunctionType::Hive => hive_bucket(&values, &types, n)
                    .map_err(|why| Error::corrupt(Some(file), why))?,
                BucketFunctionType::Default => bucket_of(&BinaryRow::encode(&values, &types)?, n),
            };
            out.push(bucket as u32);
        }
        Ok(out)
    }
}

/// Whether Hive's bucketing hash takes values of type `t` (Paimon's `HiveBucketFunction`).
fn hive_hashes(t: &DataType) -> bool {
    matches!(
        t.root,
        TypeRoot::Boolean
            | TypeRoot::TinyInt
            | TypeRoot::SmallInt
            | TypeRoot::Int
            | TypeRoot::BigInt
            | TypeRoot::Float
            | TypeRoot::Double
            | TypeRoot::Decimal { .. }
            | TypeRoot::Char { .. }
            | TypeRoot::VarChar { .. }
            | TypeRoot::Binary { .. }
            | TypeRoot::VarBinary { .. }
            | TypeRoot::Date
            | TypeRoot::Time { .. }
    )
}

/// The bucket of a bucket key (`values` of `types`) under Hive's bucketing hash, of `n > 0`.
pub fn hive_bucket(
    values: &[Datum],
    types: &[DataType],
    n: i32,
) -> std::result::Result<i32, String> {
    let mut h: i32 = 0;
    for (v, t) in values.iter().zip(types) {
        h = h.wrapping_mul(31).wrapping_add(hive_hash(v, t)?);
    }
    Ok((h & i32::MAX) % n)
}

/// Hive's hash of one bucket-key value of type `t` (see the module documentation).
pub fn hive_hash(v: &Datum, t: &DataType) -> std::result::Result<i32, String> {
    let long = |x: i64| (x ^ ((x as u64) >> 32) as i64) as i32;
    let bytes = |b: &[u8]| {
        b.iter().fold(0i32, |h, &x| {
            h.wrapping_mul(31).wrapping_add(i32::from(x as i8))
        })
    };
    Ok(match v {
        Datum::Null => 0,
        Datum::Boolean(b) => i32::from(*b),
        Datum::TinyInt(x) => i32::from(*x),
        Datum::SmallInt(x) => i32::from(*x),
        Datum::Int(x) | Datum::Date(x) | Datum::Time(x) => *x,
        Datum::BigInt(x) => long(*x),
        // Java compares with -0.0 (true for both zeros) and takes NaN's canonical bits.
        Datum::Float(x) if *x == 0.0 => 0,
        Datum::Float(x) if x.is_nan() => 0x7fc0_0000,
        Datum::Float(x) => x.to_bits() as i32,
        Datum::Double(x) if *x == 0.0 => 0,
        Datum::Double(x) if x.is_nan() => long(0x7ff8_0000_0000_0000),
        Datum::Double(x) => long(x.to_bits() as i64),
        Datum::String(s) => bytes(s.as_bytes()),
        Datum::Bytes(b) => bytes(b),
        Datum::Decimal(unscaled) => {
            let TypeRoot::Decimal { scale, .. } = t.root else {
                return Err(format!(
                    "a decimal bucket key of type {}",
                    t.to_type_string()
                ));
            };
            decimal_hash(*unscaled, scale)
        }
        other => return Err(format!("bucket key {other:?} has no Hive hash")),
    })
}

/// Java's `BigDecimal.hashCode` of `unscaled / 10^scale` with its trailing zeros stripped
/// (and a zero as `0` of scale 0), as Hive normalizes a decimal before hashing it.
fn decimal_hash(mut unscaled: i128, scale: u32) -> i32 {
    if unscaled == 0 {
        return 0;
    }
    let mut scale = scale as i32;
    while scale > 0 && unscaled % 10 == 0 {
        unscaled /= 10;
        scale -= 1;
    }
    let magnitude = unscaled.unsigned_abs();
    let words = (0..4)
        .rev()
        .map(|i| (magnitude >> (32 * i)) as u32)
        .skip_while(|&w| w == 0)
        .fold(0i32, |h, w| h.wrapping_mul(31).wrapping_add(w as i32));
    let signed = if unscaled < 0 {
        words.wrapping_neg()
    } else {
        words
    };
    signed.wrapping_mul(31).wrapping_add(scale)
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

    /// Buckets Paimon Java HEAD's `HiveBucketFunction` gave these keys
    /// (`tests/java/hive_bucket/run.sh`): `types|values|buckets` for 1, 2, 3, 7, 16, 100 and
    /// 1 024 buckets, in the oracle's text (`N` null, floats as hex bits, strings and binaries
    /// as `x` and hex).
    const HIVE_GOLDEN: &str = "\
DOUBLE|f975f274b2c86168|0 0 1 5 12 64 796\n\
BYTES|xc9d66f8c30efe9f6|0 0 0 3 6 34 278\n\
INT;DOUBLE|-2147483648;0|0 0 0 0 0 0 0\n\
DOUBLE;DECIMAL(5,5)|dd62185c857a4f98;-1|0 0 0 5 2 6 162\n\
FLOAT|d4c5e5ab|0 1 0 4 11 31 427\n\
TINYINT;TIME;FLOAT|0;0;95a61481|0 1 0 2 1 61 129\n\
DECIMAL(5,5)|-600|0 1 2 1 9 65 841\n\
DECIMAL(10,2);STRING|0;xc3a9e4b8ade69687f09f9982|0 0 0 5 12 4 860\n\
DECIMAL(10,2)|257221729|0 1 0 2 1 57 961\n\
TINYINT;DECIMAL(18,0)|3;-108080457|0 0 1 0 6 22 134\n\
DECIMAL(18,0);DECIMAL(38,10);SMALLINT|-2629382;7650;31507|0 1 1 0 13 65 173\n\
FLOAT;DATE;DECIMAL(18,0)|2b9a6846;658933789;0|0 1 0 3 9 17 585\n\
DECIMAL(10,2);DECIMAL(10,2)|0;-5956|0 0 0 0 6 14 710\n\
DECIMAL(10,2)|8319555|0 1 2 6 15 7 543\n\
BYTES;STRING;DATE|x8a;x;-509657062|0 0 0 6 4 88 292\n\
DOUBLE;TIME;INT|0;86152038;1|0 1 2 6 11 31 347\n\
DATE;TIME|1527402210;46939863|0 1 1 4 5 17 53\n\
DECIMAL(5,5)|0|0 0 0 0 0 0 0\n\
SMALLINT|31759|0 1 1 0 15 59 15\n\
BIGINT;FLOAT|-4294967296;82e7cb7c|0 1 1 4 13 9 861\n\
TINYINT;STRING|51;x7061696d6f6e|0 1 0 3 1 37 417\n\
DECIMAL(5,5);SMALLINT;SMALLINT|-7;10665;-27972|0 1 1 1 15 11 607\n\
SMALLINT;TINYINT|-25445;N|0 1 0 2 5 53 709\n\
TINYINT|-1|0 1 1 1 15 47 1023\n\
TIME;SMALLINT;BYTES|2;0;x109856b4ffb1eaa3|0 1 0 6 3 55 563\n\
BOOLEAN;DATE;DECIMAL(18,0)|1;-1;215407461|0 1 0 2 13 77 221\n\
BYTES;INT;BOOLEAN|xbe6e40f635;-272376916;N|0 1 0 6 3 75 739\n\
BIGINT|6677573055143830|0 1 1 4 1 45 673\n\
TIME;BIGINT|876589;-123973|0 1 1 2 7 31 439\n\
BYTES|xff7ec7b93f19c667|0 0 0 3 12 36 908\n\
BYTES;DECIMAL(38,10)|x1cbe72b31128;94059185846168816653395527|0 0 0 0 8 16 568\n\
BIGINT;DECIMAL(10,2)|46;1582435000|0 0 2 0 4 76 884\n\
DECIMAL(5,5);FLOAT|0;6ffc3036|0 0 0 0 6 90 54\n\
BIGINT;TIME;DATE|4294967296;79865842;3|0 0 0 3 2 18 530\n\
BIGINT;INT|-1;-852|0 0 2 4 12 96 172\n\
BYTES;STRING|x4e381521e7;x61|0 0 0 0 0 52 432\n\
DATE;DECIMAL(5,5);DECIMAL(38,10)|-2110586532;0;194000|0 1 0 5 1 29 481\n\
DECIMAL(38,10);DATE|96131;1|0 0 1 3 10 2 1018\n\
TINYINT;BYTES|6;xad|0 1 1 5 7 3 103\n\
DECIMAL(10,2)|164|0 0 1 4 14 86 990\n\
DECIMAL(5,5);TIME|0;N|0 0 0 0 0 0 0\n\
DECIMAL(38,10)|0|0 0 0 0 0 0 0\n\
DOUBLE|fff0000000000000|0 0 1 5 0 72 0\n\
DECIMAL(5,5);DECIMAL(10,2);BOOLEAN|516;0;N|0 1 2 5 1 61 577\n\
TINYINT;TINYINT;SMALLINT|N;103;-22052|0 1 1 1 5 89 597\n\
TIME|82674017|0 1 2 6 1 17 353\n\
BYTES;DOUBLE|x29dbe1;7ff8000000000000|0 1 1 0 1 25 145\n\
FLOAT;DOUBLE;DECIMAL(38,10)|cf23e27e;60b383d3fe75e646;-20722576291009722011107|0 1 2 2 7 79 407\n\
SMALLINT|-2666|0 0 0 3 6 82 406\n\
DOUBLE;STRING;INT|1df9bc8a8621bb2e;x6b65792d383035;-8|0 1 1 0 13 33 173\n\
BYTES;BIGINT|x;-4294967296|0 1 1 1 15 47 1023\n\
DATE;TIME|0;N|0 0 0 0 0 0 0\n\
BOOLEAN;BOOLEAN|1;0|0 1 1 3 15 31 31\n\
DECIMAL(18,0);DOUBLE|64;48c704afe2b74928|0 1 1 4 7 55 455\n\
STRING;DECIMAL(5,5);FLOAT|x6b65792d383634;4;82ccd4c8|0 1 0 2 15 83 751\n\
DECIMAL(5,5);DOUBLE;TIME|0;20591e7dd7675af5;86399976|0 0 2 5 0 12 96\n\
FLOAT;SMALLINT|3a7a78f8;-1|0 1 0 2 7 55 519\n\
DECIMAL(38,10);DOUBLE;DATE|-72116104952747768011637503748;8d4f4a1aacc9d4a;4779123|0 1 0 0 15 95 511\n\
BIGINT;STRING|-533;x0078|0 0 1 1 4 12 228\n\
TINYINT;TIME|N;41315248|0 0 1 2 0 48 944\n\
BOOLEAN;DECIMAL(18,0)|1;0|0 1 1 3 15 31 31\n\
DECIMAL(18,0);DATE|-7012999008000;N|0 0 0 4 0 96 864\n\
BYTES|x|0 0 0 0 0 0 0\n\
SMALLINT;FLOAT;DECIMAL(10,2)|N;4450493a;-6|0 0 0 6 14 82 334\n\
BYTES;DECIMAL(10,2);TIME|x144cfe;-3443646;65417132|0 0 0 1 2 98 626\n\
DECIMAL(18,0)|-387000|0 0 2 1 8 48 184\n\
TINYINT;TINYINT;INT|-7;-73;-2147483648|0 0 0 0 2 58 226\n\
BOOLEAN;BOOLEAN|0;0|0 0 0 0 0 0 0\n\
FLOAT|7fc00000|0 0 1 0 0 44 0\n\
DOUBLE;TINYINT;BYTES|fff0000000000000;0;x66|0 0 1 5 6 14 102\n\
STRING;TIME|x7061696d6f6e;823|0 1 2 5 3 91 579\n\
TIME;INT;TIME|8670;N;86399998|0 0 1 0 12 68 604\n\
TIME;BYTES;DECIMAL(38,10)|N;N;-1951077259961900097553600|0 0 0 1 0 52 480\n\
BOOLEAN;BYTES;TINYINT|N;x85a42364e164;33|0 0 2 2 14 66 574\n\
TINYINT;DECIMAL(5,5);INT|0;0;-97424|0 0 0 4 0 24 880\n\
DECIMAL(10,2)|5506|0 0 0 0 0 88 704\n\
DECIMAL(18,0)|N|0 0 0 0 0 0 0\n\
STRING;BIGINT;DATE|x61;61;-11926269|0 1 1 3 7 87 135\n\
INT;DOUBLE;DECIMAL(38,10)|-1804189396;7ff8000000000000;-1809562251|0 1 1 2 1 77 865\n\
DATE|-653872123|0 1 1 0 5 25 5";

    fn golden_value(text: &str, t: &DataType) -> Datum {
        let hex = |x: &str| -> Vec<u8> {
            (0..x.len() / 2)
                .map(|i| u8::from_str_radix(&x[2 * i..2 * i + 2], 16).unwrap())
                .collect()
        };
        if text == "N" {
            return Datum::Null;
        }
        match t.root {
            TypeRoot::Boolean => Datum::Boolean(text == "1"),
            TypeRoot::TinyInt => Datum::TinyInt(text.parse().unwrap()),
            TypeRoot::SmallInt => Datum::SmallInt(text.parse().unwrap()),
            TypeRoot::Int => Datum::Int(text.parse().unwrap()),
            TypeRoot::Date => Datum::Date(text.parse().unwrap()),
            TypeRoot::Time { .. } => Datum::Time(text.parse().unwrap()),
            TypeRoot::BigInt => Datum::BigInt(text.parse().unwrap()),
            TypeRoot::Float => Datum::Float(f32::from_bits(u32::from_str_radix(text, 16).unwrap())),
            TypeRoot::Double => {
                Datum::Double(f64::from_bits(u64::from_str_radix(text, 16).unwrap()))
            }
            TypeRoot::Decimal { .. } => Datum::Decimal(text.parse().unwrap()),
            TypeRoot::VarChar { .. } => Datum::String(String::from_utf8(hex(&text[1..])).unwrap()),
            _ => Datum::Bytes(hex(&text[1..])),
        }
    }

    #[test]
    fn hive_buckets_are_java_s() {
        let mut decimals = 0;
        for line in HIVE_GOLDEN.lines() {
            let parts: Vec<&str> = line.split('|').collect();
            let types: Vec<DataType> = parts[0]
                .split(';')
                .map(|t| DataType::parse(t, "t").unwrap())
                .collect();
            let values: Vec<Datum> = parts[1]
                .split(';')
                .zip(&types)
                .map(|(v, t)| golden_value(v, t))
                .collect();
            decimals += values
                .iter()
                .filter(|v| matches!(v, Datum::Decimal(_)))
                .count();
            for (n, want) in [1, 2, 3, 7, 16, 100, 1024].iter().zip(parts[2].split(' ')) {
                let got = hive_bucket(&values, &types, *n).unwrap();
                assert_eq!(got.to_string(), want, "{line} with {n} buckets");
            }
        }
        assert!(decimals > 10, "{decimals}");
        // A timestamp has no Hive hash: Java throws, and so do we.
        let ts = DataType::parse("TIMESTAMP(3)", "t").unwrap();
        let at = Datum::Timestamp {
            millis: 0,
            nanos: 0,
        };
        assert!(hive_bucket(&[at], std::slice::from_ref(&ts), 4).is_err());
        assert!(!hive_hashes(&ts));
    }

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
