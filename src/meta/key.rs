//! Primary keys as comparable bytes.
//!
//! Paimon compares keys with the table's key comparator. The planner only ever needs the order,
//! so keys are kept in an order-preserving binary encoding and compared bytewise; the table layer
//! produces that encoding from BinaryRow. Tests and the simulator use [`Key::from_i64`].

use std::fmt;
use std::sync::Arc;

/// An order-preserving encoding of a primary key. Cheap to clone.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Key(Arc<[u8]>);

impl Key {
    pub fn from_bytes(bytes: impl Into<Arc<[u8]>>) -> Self {
        Key(bytes.into())
    }

    /// Big-endian with the sign bit flipped, so that bytewise order equals numeric order.
    pub fn from_i64(v: i64) -> Self {
        Key(Arc::from(((v as u64) ^ (1 << 63)).to_be_bytes().as_slice()))
    }

    /// The inverse of [`Key::from_i64`]; `None` for keys not made by it.
    pub fn as_i64(&self) -> Option<i64> {
        let b: [u8; 8] = self.0.as_ref().try_into().ok()?;
        Some((u64::from_be_bytes(b) ^ (1 << 63)) as i64)
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_i64() {
            Some(v) => write!(f, "Key({v})"),
            None => write!(f, "Key(0x{})", hex(&self.0)),
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Keys travel through JSON as hex strings (exact, and readable enough in a plan dump).
impl serde::Serialize for Key {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex(&self.0))
    }
}

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.len() % 2 != 0 || !s.is_ascii() {
            return Err(serde::de::Error::custom("key must be an even-length hex string"));
        }
        let bytes = (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16))
            .collect::<Result<Vec<u8>, _>>()
            .map_err(serde::de::Error::custom)?;
        Ok(Key::from_bytes(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i64_encoding_preserves_order_and_round_trips() {
        let vals = [i64::MIN, -5, -1, 0, 1, 7, i64::MAX];
        for w in vals.windows(2) {
            assert!(Key::from_i64(w[0]) < Key::from_i64(w[1]));
        }
        for v in vals {
            assert_eq!(Key::from_i64(v).as_i64(), Some(v));
            let json = serde_json::to_string(&Key::from_i64(v)).unwrap();
            assert_eq!(serde_json::from_str::<Key>(&json).unwrap(), Key::from_i64(v));
        }
    }
}
