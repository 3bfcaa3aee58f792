//! Primary keys as comparable bytes.
//!
//! Paimon compares keys with the table's key comparator. The planner only ever needs the order,
//! so keys are kept in an order-preserving binary encoding and compared bytewise; the table layer
//! produces that encoding from BinaryRow. Tests and the simulator use [`Key::from_i64`].

use std::fmt;
use std::sync::Arc;

/// An order-preserving encoding of a primary key. Cheap to clone.
///
/// The first eight bytes are kept inline as a big-endian integer (zero-padded). Comparing it
/// first is consistent with bytewise order (padding sorts a proper prefix first, and equal
/// prefixes fall through to the bytes), and it spares a pointer chase per comparison: sorting
/// the key ranges of ten thousand files is most of what planning a large unit costs.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Key {
    prefix: u64,
    bytes: Arc<[u8]>,
}

impl Key {
    /// A key from its order-preserving encoding (as [`crate::value::order_key`] makes it);
    /// the bytes are taken as they are, not validated.
    pub fn from_bytes(bytes: impl Into<Arc<[u8]>>) -> Self {
        let bytes: Arc<[u8]> = bytes.into();
        let mut head = [0u8; 8];
        let n = bytes.len().min(8);
        head[..n].copy_from_slice(&bytes[..n]);
        Key {
            prefix: u64::from_be_bytes(head),
            bytes,
        }
    }

    /// Big-endian with the sign bit flipped, so that bytewise order equals numeric order.
    pub fn from_i64(v: i64) -> Self {
        Key::from_bytes(((v as u64) ^ (1 << 63)).to_be_bytes().as_slice())
    }

    /// The inverse of [`Key::from_i64`]; `None` for keys not made by it.
    pub fn as_i64(&self) -> Option<i64> {
        let b: [u8; 8] = self.bytes.as_ref().try_into().ok()?;
        Some((u64::from_be_bytes(b) ^ (1 << 63)) as i64)
    }

    /// The first eight bytes as a big-endian integer (zero-padded): orders like the key except
    /// where it ties, so hot loops compare it before touching the bytes.
    pub fn prefix(&self) -> u64 {
        self.prefix
    }

    /// The whole encoding, as given to [`Key::from_bytes`].
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_i64() {
            Some(v) => write!(f, "Key({v})"),
            None => write!(f, "Key(0x{})", hex(&self.bytes)),
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Keys travel through JSON as hex strings (exact, and readable enough in a plan dump).
impl serde::Serialize for Key {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex(&self.bytes))
    }
}

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.len() % 2 != 0 || !s.is_ascii() {
            return Err(serde::de::Error::custom(
                "key must be an even-length hex string",
            ));
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
    fn order_is_bytewise_whatever_the_length() {
        let keys: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![1],
            vec![1, 0],
            vec![1, 0, 0, 0, 0, 0, 0, 0, 0],
            vec![1, 0, 0, 0, 0, 0, 0, 0, 1],
            vec![1, 2, 3, 4, 5, 6, 7, 8],
            vec![1, 2, 3, 4, 5, 6, 7, 8, 0],
            vec![1, 2, 3, 4, 5, 6, 7, 9],
            vec![255],
        ];
        for a in &keys {
            for b in &keys {
                let (ka, kb) = (Key::from_bytes(a.clone()), Key::from_bytes(b.clone()));
                assert_eq!(ka.cmp(&kb), a.cmp(b), "{a:?} vs {b:?}");
                assert_eq!(ka == kb, a == b);
            }
        }
    }

    #[test]
    fn i64_encoding_preserves_order_and_round_trips() {
        let vals = [i64::MIN, -5, -1, 0, 1, 7, i64::MAX];
        for w in vals.windows(2) {
            assert!(Key::from_i64(w[0]) < Key::from_i64(w[1]));
        }
        for v in vals {
            assert_eq!(Key::from_i64(v).as_i64(), Some(v));
            let json = serde_json::to_string(&Key::from_i64(v)).unwrap();
            assert_eq!(
                serde_json::from_str::<Key>(&json).unwrap(),
                Key::from_i64(v)
            );
        }
    }
}
