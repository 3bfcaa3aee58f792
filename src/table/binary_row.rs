//! Paimon's BinaryRow (format.md §7): the serialized rows of partitions, min/max keys and
//! statistics.
//!
//! Stored bytes are a 4-byte big-endian arity, then the row: a header + null bitset rounded to
//! 8 bytes, an 8-byte little-endian slot per field, and a variable part for long strings,
//! bytes, non-compact decimals and timestamps. Decoding is exact and bounds-checked (a manifest
//! is external data), and [`order_key`] turns typed key values into the order-preserving bytes
//! the planner's [`Key`] compares, so the planner's key order is Paimon's key comparator order.

use super::schema::{DataType, TypeRoot};
use crate::error::{Error, Result};

/// The typed values rows are made of, and their order-preserving key bytes (kept here under
/// their old path too).
pub use crate::value::{order_key, Datum};

/// A serialized BinaryRow as stored in manifests (arity prefix included).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct BinaryRow(pub Vec<u8>);

/// The 12 bytes of a row with no fields (`EMPTY_ROW`).
pub const EMPTY_ROW: [u8; 12] = [0; 12];

/// Paimon's `calculateBitSetWidthInBytes`: `((arity + 63 + 8) / 64) * 8`.
fn bitset_width(arity: usize) -> usize {
    (arity + 63 + 8) / 64 * 8
}

/// In JSON (fan-out tasks and results) a row is the hex of its stored bytes.
impl serde::Serialize for BinaryRow {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let hex: String = self.0.iter().map(|b| format!("{b:02x}")).collect();
        s.serialize_str(&hex)
    }
}

impl<'de> serde::Deserialize<'de> for BinaryRow {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let hex = String::deserialize(d)?;
        crate::table::ids::from_hex(&hex)
            .map(BinaryRow)
            .ok_or_else(|| {
                serde::de::Error::custom(format!("a row must be hex bytes, not '{hex}'"))
            })
    }
}

impl BinaryRow {
    /// The row with no fields ([`EMPTY_ROW`]): an unpartitioned table's partition, an append
    /// file's min/max key, and both rows of "no statistics".
    pub fn empty() -> Self {
        BinaryRow(EMPTY_ROW.to_vec())
    }

    /// The stored bytes, arity prefix included.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The field count stored in the 4-byte prefix.
    pub fn arity(&self) -> Option<usize> {
        let b: [u8; 4] = self.0.get(..4)?.try_into().ok()?;
        usize::try_from(i32::from_be_bytes(b)).ok()
    }

    /// Decodes all fields with their types. `what` names the row in errors (file and field).
    pub fn decode(&self, types: &[DataType], file: &str, what: &str) -> Result<Vec<Datum>> {
        let bad = |why: String| Error::corrupt(Some(file), format!("{what}: {why}"));
        let arity = self
            .arity()
            .ok_or_else(|| bad(format!("{} bytes is too short for a row", self.0.len())))?;
        if arity != types.len() {
            return Err(bad(format!(
                "row has {arity} fields where {} were expected",
                types.len()
            )));
        }
        let row = &self.0[4..];
        let fixed = bitset_width(arity);
        if row.len() < fixed + 8 * arity {
            return Err(bad(format!(
                "row of {arity} fields needs at least {} bytes, has {}",
                fixed + 8 * arity,
                row.len()
            )));
        }
        let mut out = Vec::with_capacity(arity);
        for (i, t) in types.iter().enumerate() {
            let bit = i + 8;
            if row[bit / 8] & (1 << (bit % 8)) != 0 {
                out.push(Datum::Null);
                continue;
            }
            let off = fixed + 8 * i;
            let slot: [u8; 8] = row[off..off + 8]
                .try_into()
                .map_err(|_| bad("short slot".into()))?;
            let word = u64::from_le_bytes(slot);
            let var = |len_mask: bool| -> Result<&[u8]> {
                let offset = (word >> 32) as usize;
                let len = if len_mask {
                    (word & 0xffff_ffff) as usize
                } else {
                    0
                };
                row.get(offset..offset.saturating_add(len)).ok_or_else(|| {
                    bad(format!(
                        "field {i} points at bytes {offset}..{} beyond the row ({} bytes)",
                        offset.saturating_add(len),
                        row.len()
                    ))
                })
            };
            let bytes_of = || -> Result<Vec<u8>> {
                if slot[7] & 0x80 != 0 {
                    let len = (slot[7] & 0x7f) as usize;
                    if len > 7 {
                        return Err(bad(format!("inline field {i} claims {len} bytes")));
                    }
                    Ok(slot[..len].to_vec())
                } else {
                    Ok(var(true)?.to_vec())
                }
            };
            let d = match &t.root {
                TypeRoot::Boolean => Datum::Boolean(slot[0] != 0),
                TypeRoot::TinyInt => Datum::TinyInt(slot[0] as i8),
                TypeRoot::SmallInt => Datum::SmallInt(i16::from_le_bytes([slot[0], slot[1]])),
                TypeRoot::Int => {
                    Datum::Int(i32::from_le_bytes([slot[0], slot[1], slot[2], slot[3]]))
                }
                TypeRoot::Date => {
                    Datum::Date(i32::from_le_bytes([slot[0], slot[1], slot[2], slot[3]]))
                }
                TypeRoot::Time { .. } => {
                    Datum::Time(i32::from_le_bytes([slot[0], slot[1], slot[2], slot[3]]))
                }
                TypeRoot::BigInt => Datum::BigInt(word as i64),
                TypeRoot::Float => {
                    Datum::Float(f32::from_le_bytes([slot[0], slot[1], slot[2], slot[3]]))
                }
                TypeRoot::Double => Datum::Double(f64::from_le_bytes(slot)),
                TypeRoot::Decimal { precision, .. } if *precision <= 18 => {
                    Datum::Decimal(word as i64 as i128)
                }
                TypeRoot::Decimal { .. } => {
                    let b = var(true)?;
                    if b.is_empty() || b.len() > 16 {
                        return Err(bad(format!("decimal field {i} has {} bytes", b.len())));
                    }
                    let fill = if b[0] & 0x80 != 0 { 0xff } else { 0 };
                    let mut full = [fill; 16];
                    full[16 - b.len()..].copy_from_slice(b);
                    Datum::Decimal(i128::from_be_bytes(full))
                }
                TypeRoot::Timestamp { precision } | TypeRoot::LocalZonedTimestamp { precision }
                    if *precision <= 3 =>
                {
                    Datum::Timestamp {
                        millis: word as i64,
                        nanos: 0,
                    }
                }
                TypeRoot::Timestamp { .. } | TypeRoot::LocalZonedTimestamp { .. } => {
                    let offset = (word >> 32) as usize;
                    let ms = row
                        .get(offset..offset + 8)
                        .and_then(|b| <[u8; 8]>::try_from(b).ok())
                        .ok_or_else(|| bad(format!("timestamp field {i} beyond the row")))?;
                    Datum::Timestamp {
                        millis: i64::from_le_bytes(ms),
                        nanos: (word & 0xffff_ffff) as i32,
                    }
                }
                TypeRoot::Char { .. } | TypeRoot::VarChar { .. } => Datum::String(
                    String::from_utf8(bytes_of()?)
                        .map_err(|_| bad(format!("string field {i} is not valid UTF-8")))?,
                ),
                TypeRoot::Binary { .. } | TypeRoot::VarBinary { .. } => Datum::Bytes(bytes_of()?),
                other => {
                    return Err(Error::unsupported(format!(
                        "'{file}': {what}: field {i} has type {other:?}, which a key or partition \
                         row cannot hold here"
                    )))
                }
            };
            out.push(d);
        }
        Ok(out)
    }

    /// Decodes field `index` alone as `ty`; `None` when the row has no such field. The other
    /// fields are read as BIGINT slots, which any slot holds, so a row with fields this
    /// build cannot decode (value statistics of nested columns) still yields the one asked
    /// for. `what` names the row in errors.
    pub fn decode_field(
        &self,
        index: usize,
        ty: &DataType,
        file: &str,
        what: &str,
    ) -> Result<Option<Datum>> {
        let Some(arity) = self.arity().filter(|&a| index < a) else {
            return Ok(None);
        };
        let slot = DataType {
            root: TypeRoot::BigInt,
            nullable: true,
        };
        let mut types = vec![slot; arity];
        types[index] = ty.clone();
        Ok(self.decode(&types, file, what)?.into_iter().nth(index))
    }

    /// Encodes values of the given types (the writer side of [`BinaryRow::decode`]).
    pub fn encode(values: &[Datum], types: &[DataType]) -> Result<Self> {
        if values.len() != types.len() {
            return Err(Error::internal(format!(
                "{} values for {} types",
                values.len(),
                types.len()
            )));
        }
        let arity = values.len();
        let fixed = bitset_width(arity);
        let mut row = vec![0u8; fixed + 8 * arity];
        let mut var: Vec<u8> = Vec::new();
        let var_start = row.len();
        for (i, (v, t)) in values.iter().zip(types).enumerate() {
            let off = fixed + 8 * i;
            let mut put_var = |bytes: &[u8], low: u64, row: &mut Vec<u8>| {
                let offset = (var_start + var.len()) as u64;
                var.extend_from_slice(bytes);
                var.resize(var.len().div_ceil(8) * 8, 0);
                row[off..off + 8].copy_from_slice(&((offset << 32) | low).to_le_bytes());
            };
            let slot: Option<[u8; 8]> = match v {
                Datum::Null => {
                    let bit = i + 8;
                    row[bit / 8] |= 1 << (bit % 8);
                    None
                }
                Datum::Boolean(b) => Some((*b as u64).to_le_bytes()),
                Datum::TinyInt(x) => Some((*x as u8 as u64).to_le_bytes()),
                Datum::SmallInt(x) => Some((*x as u16 as u64).to_le_bytes()),
                Datum::Int(x) | Datum::Date(x) | Datum::Time(x) => {
                    Some((*x as u32 as u64).to_le_bytes())
                }
                Datum::BigInt(x) => Some(x.to_le_bytes()),
                Datum::Float(x) => Some((x.to_bits() as u64).to_le_bytes()),
                Datum::Double(x) => Some(x.to_bits().to_le_bytes()),
                Datum::Decimal(u) => {
                    if t.is_fixed_length() {
                        Some((*u as i64).to_le_bytes())
                    } else {
                        let b = minimal_be(*u);
                        put_var(&b, b.len() as u64, &mut row);
                        None
                    }
                }
                Datum::Timestamp { millis, nanos } => {
                    if t.is_fixed_length() {
                        Some(millis.to_le_bytes())
                    } else {
                        put_var(&millis.to_le_bytes(), *nanos as u32 as u64, &mut row);
                        None
                    }
                }
                Datum::String(s) => inline_or_var(s.as_bytes(), &mut put_var, &mut row),
                Datum::Bytes(b) => inline_or_var(b, &mut put_var, &mut row),
            };
            if let Some(s) = slot {
                row[off..off + 8].copy_from_slice(&s);
            }
        }
        let mut out = Vec::with_capacity(4 + row.len() + var.len());
        out.extend_from_slice(&(arity as i32).to_be_bytes());
        out.extend_from_slice(&row);
        out.extend_from_slice(&var);
        Ok(BinaryRow(out))
    }
}

fn inline_or_var(
    b: &[u8],
    put_var: &mut impl FnMut(&[u8], u64, &mut Vec<u8>),
    row: &mut Vec<u8>,
) -> Option<[u8; 8]> {
    if b.len() <= 7 {
        let mut s = [0u8; 8];
        s[..b.len()].copy_from_slice(b);
        s[7] = 0x80 | b.len() as u8;
        Some(s)
    } else {
        put_var(b, b.len() as u64, row);
        None
    }
}

/// Java's `BigInteger.toByteArray()`: minimal big-endian two's complement.
fn minimal_be(v: i128) -> Vec<u8> {
    let full = v.to_be_bytes();
    let mut start = 0;
    while start < 15 {
        let (b, next) = (full[start], full[start + 1]);
        if (b == 0 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    full[start..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn t(s: &str) -> DataType {
        DataType::parse(s, "test").unwrap()
    }

    #[test]
    fn spec_examples() {
        assert_eq!(BinaryRow::encode(&[], &[]).unwrap().0, EMPTY_ROW.to_vec());
        let k = BinaryRow::encode(&[Datum::BigInt(57)], &[t("BIGINT")]).unwrap();
        assert_eq!(k.0, hex("0000000100000000000000003900000000000000"));
        let p = BinaryRow::encode(&[Datum::String("2024-01-02".into())], &[t("STRING")]).unwrap();
        assert_eq!(
            p.0,
            hex("0000000100000000000000000a00000010000000323032342d30312d3032000000000000")
        );
        assert_eq!(
            p.decode(&[t("STRING")], "f", "partition").unwrap(),
            vec![Datum::String("2024-01-02".into())]
        );
    }

    #[test]
    fn round_trips_every_type() {
        let cases: Vec<(&str, Datum)> = vec![
            ("BOOLEAN", Datum::Boolean(true)),
            ("TINYINT", Datum::TinyInt(-3)),
            ("SMALLINT", Datum::SmallInt(-300)),
            ("INT", Datum::Int(-70000)),
            ("BIGINT", Datum::BigInt(i64::MIN)),
            ("FLOAT", Datum::Float(1.5)),
            ("DOUBLE", Datum::Double(-2.25)),
            ("DECIMAL(10, 2)", Datum::Decimal(-12345)),
            (
                "DECIMAL(30, 2)",
                Datum::Decimal(-123456789012345678901234567),
            ),
            ("STRING", Datum::String("abc".into())),
            ("STRING", Datum::String("a longer string value".into())),
            ("BYTES", Datum::Bytes(vec![0, 1, 2, 255, 4, 5, 6, 7, 8])),
            ("DATE", Datum::Date(19000)),
            ("TIME", Datum::Time(3_600_000)),
            (
                "TIMESTAMP(3)",
                Datum::Timestamp {
                    millis: 1_700_000_000_123,
                    nanos: 0,
                },
            ),
            (
                "TIMESTAMP(9)",
                Datum::Timestamp {
                    millis: -5,
                    nanos: 999_999,
                },
            ),
            ("INT", Datum::Null),
        ];
        let types: Vec<DataType> = cases.iter().map(|(s, _)| t(s)).collect();
        let values: Vec<Datum> = cases.iter().map(|(_, v)| v.clone()).collect();
        let row = BinaryRow::encode(&values, &types).unwrap();
        assert_eq!(row.decode(&types, "f", "row").unwrap(), values);
    }

    #[test]
    fn truncated_rows_are_corrupt_not_panics() {
        let row = BinaryRow::encode(
            &[Datum::String("a longer string value".into())],
            &[t("STRING")],
        )
        .unwrap();
        // The last 3 bytes are padding of the 21-byte string: everything before is needed.
        for cut in 0..row.0.len() - 3 {
            let r = BinaryRow(row.0[..cut].to_vec());
            let e = r
                .decode(&[t("STRING")], "manifest-x", "min key")
                .unwrap_err();
            assert!(e.message.contains("manifest-x"), "{e}");
        }
        let e = row.decode(&[t("STRING"), t("INT")], "m", "k").unwrap_err();
        assert!(e.message.contains("fields"), "{e}");
    }

    #[test]
    fn order_key_follows_typed_order() {
        let ints = [i64::MIN, -1, 0, 1, 57, i64::MAX];
        for w in ints.windows(2) {
            assert!(order_key(&[Datum::BigInt(w[0])]) < order_key(&[Datum::BigInt(w[1])]));
        }
        let strs = ["", "a", "a\0", "a\0b", "ab", "b"];
        for w in strs.windows(2) {
            assert!(
                order_key(&[Datum::String(w[0].into()), Datum::Int(9)])
                    < order_key(&[Datum::String(w[1].into()), Datum::Int(0)]),
                "{:?} < {:?}",
                w[0],
                w[1]
            );
        }
        assert!(order_key(&[Datum::Null]) < order_key(&[Datum::Int(i32::MIN)]));
        let d = [-1.5f64, -0.0, 0.0, 2.0, f64::INFINITY];
        for w in d.windows(2) {
            assert!(order_key(&[Datum::Double(w[0])]) <= order_key(&[Datum::Double(w[1])]));
        }
    }

    #[test]
    fn partition_strings() {
        assert_eq!(
            Datum::Date(19724).to_partition_string(&t("DATE")).unwrap(),
            "2024-01-02"
        );
        assert_eq!(
            Datum::Decimal(-5)
                .to_partition_string(&t("DECIMAL(5, 2)"))
                .unwrap(),
            "-0.05"
        );
        assert_eq!(Datum::Null.to_partition_string(&t("INT")), None);
    }
}
