//! A linear walk over Thrift compact-protocol bytes (a Parquet footer, or one column chunk's
//! column index or offset index) that refuses container sizes the bytes cannot hold, before
//! arrow-rs's decoder sees them.
//!
//! Why: arrow-rs 60.1's Thrift reader skips unknown fields element by element, and some
//! element types take no bytes to skip. A footer of a kilobyte that declares a list of two
//! billion such elements keeps it looping for seconds (found by the `parquet_append` fuzz
//! target, `fuzz/README.md`). In the compact protocol every element of a list, set or map
//! takes at least one byte (a boolean element is a byte, a struct at least its stop byte), so
//! a container that declares more elements than bytes remain cannot be valid, and checking
//! that bounds every loop by the size of the struct's bytes. The page index is decoded by the same
//! reader, so each column chunk's index is walked too, over exactly its declared range.
//!
//! The walk is deliberately partial: it refuses only what cannot be valid. An unknown type
//! code is refused too (arrow-rs reads a known field by its schema's type, so it may read on
//! past such a byte down a path this walk never checked: fuzz/README.md). On a truncated
//! varint or nesting deeper than [`MAX_DEPTH`] it stops and leaves the verdict to arrow-rs.

/// Nesting beyond this is left to arrow-rs (which limits depth itself).
const MAX_DEPTH: usize = 64;

/// Compact-protocol type codes.
mod code {
    pub const BOOL_TRUE: u8 = 1;
    pub const BOOL_FALSE: u8 = 2;
    pub const BYTE: u8 = 3;
    pub const I16: u8 = 4;
    pub const I32: u8 = 5;
    pub const I64: u8 = 6;
    pub const DOUBLE: u8 = 7;
    pub const BINARY: u8 = 8;
    pub const LIST: u8 = 9;
    pub const SET: u8 = 10;
    pub const MAP: u8 = 11;
    pub const STRUCT: u8 = 12;
}

/// Why the walk stopped early.
enum Stop {
    /// A container declares more elements than the remaining bytes can hold.
    Impossible(String),
    /// Something the walk does not follow; arrow-rs decides.
    Unfollowed,
}

/// Checks the compact-protocol struct in `bytes` (a Parquet `FileMetaData`, `ColumnIndex` or
/// `OffsetIndex`). `Err` says which container declares more elements than the bytes after it
/// (its byte offset is relative to `bytes`); `Ok` means nothing impossible was found (not that
/// the struct is valid).
pub(crate) fn check_struct(bytes: &[u8]) -> Result<(), String> {
    let mut walk = Walk { bytes, at: 0 };
    match walk.value(code::STRUCT, 0) {
        Ok(()) | Err(Stop::Unfollowed) => Ok(()),
        Err(Stop::Impossible(why)) => Err(why),
    }
}

struct Walk<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Walk<'_> {
    fn byte(&mut self) -> Result<u8, Stop> {
        let b = *self.bytes.get(self.at).ok_or(Stop::Unfollowed)?;
        self.at += 1;
        Ok(b)
    }

    fn skip(&mut self, n: usize) -> Result<(), Stop> {
        match self.at.checked_add(n) {
            Some(end) if end <= self.bytes.len() => {
                self.at = end;
                Ok(())
            }
            _ => Err(Stop::Unfollowed),
        }
    }

    fn varint(&mut self) -> Result<u64, Stop> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Stop::Unfollowed)
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    /// Refuses `count` elements of at least `min_bytes` each when the bytes left cannot hold
    /// them.
    fn fits(&self, what: &str, count: u64, min_bytes: u64) -> Result<(), Stop> {
        let needed = count.saturating_mul(min_bytes);
        if needed > self.remaining() as u64 {
            return Err(Stop::Impossible(format!(
                "a Thrift {what} at byte {} declares {count} elements, but only {} bytes follow",
                self.at,
                self.remaining()
            )));
        }
        Ok(())
    }

    /// An element of a list, set or map: as a value, except that a boolean is a whole byte.
    fn element(&mut self, ty: u8, depth: usize) -> Result<(), Stop> {
        match ty {
            code::BOOL_TRUE | code::BOOL_FALSE => self.skip(1),
            _ => self.value(ty, depth),
        }
    }

    fn value(&mut self, ty: u8, depth: usize) -> Result<(), Stop> {
        if depth > MAX_DEPTH {
            return Err(Stop::Unfollowed);
        }
        match ty {
            code::BOOL_TRUE | code::BOOL_FALSE => Ok(()),
            code::BYTE => self.skip(1),
            code::I16 | code::I32 | code::I64 => self.varint().map(|_| ()),
            code::DOUBLE => self.skip(8),
            code::BINARY => {
                let len = self.varint()?;
                self.skip(usize::try_from(len).map_err(|_| Stop::Unfollowed)?)
            }
            code::LIST | code::SET => {
                let header = self.byte()?;
                let element = header & 0x0f;
                let count = match header >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                self.fits("list", count, 1)?;
                for _ in 0..count {
                    self.element(element, depth + 1)?;
                }
                Ok(())
            }
            code::MAP => {
                let count = self.varint()?;
                if count == 0 {
                    return Ok(());
                }
                let types = self.byte()?;
                self.fits("map", count, 2)?;
                for _ in 0..count {
                    self.element(types >> 4, depth + 1)?;
                    self.element(types & 0x0f, depth + 1)?;
                }
                Ok(())
            }
            code::STRUCT => loop {
                let header = self.byte()?;
                if header == 0 {
                    return Ok(());
                }
                if header >> 4 == 0 {
                    // A field id that is not a delta follows as a zigzag varint.
                    self.varint()?;
                }
                self.value(header & 0x0f, depth + 1)?;
            },
            // No writer emits it, and arrow-rs may not read it as a type at all: it reads a
            // known field as its schema's type whatever the header says, so after such a byte
            // its walk and this one part, and it reads counts this walk never checked.
            _ => Err(Stop::Impossible(format!(
                "an unknown Thrift type code {ty} before byte {}",
                self.at
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_longer_than_its_bytes_is_refused_and_a_real_footer_passes() {
        // Field 1, a list of 15+ elements of type 1 (booleans), declaring 2^31 of them.
        let hostile = [0x19, 0xf1, 0x80, 0x80, 0x80, 0x80, 0x08, 0x00];
        let why = check_struct(&hostile).unwrap_err();
        assert!(why.contains("declares 2147483648 elements"), "{why}");
        // Field 1: a list of 3 i32 (1, 2, 3); field 2: a string "ab"; field 3: a struct with a
        // true bool field; stop.
        let fine = [
            0x19, 0x35, 0x02, 0x04, 0x06, 0x18, 0x02, b'a', b'b', 0x1c, 0x11, 0x00, 0x00,
        ];
        assert_eq!(check_struct(&fine), Ok(()));
        // Truncated: left to arrow-rs. An unknown type code: refused.
        assert_eq!(check_struct(&fine[..5]), Ok(()));
        let why = check_struct(&[0x1e, 0x00]).unwrap_err();
        assert!(why.contains("unknown Thrift type code 14"), "{why}");
    }

    /// The second finding: a footer whose first field declares the wrong type, then an
    /// unknown type code, which arrow-rs (reading the field by its schema type) never saw,
    /// skipping for seconds further on; refused at the unknown code.
    #[test]
    fn the_footer_with_an_unknown_type_code_is_refused() {
        let file = include_bytes!("../../fuzz/corpus/parquet_append/crash-unknown-type-code");
        let why = check_struct(footer_of(file)).unwrap_err();
        assert!(why.contains("unknown Thrift type code 15"), "{why}");
    }

    /// The fuzz finding itself: its footer is refused at once.
    #[test]
    fn the_fuzzed_footer_is_refused() {
        let file = include_bytes!("../../fuzz/corpus/parquet_append/crash-thrift-list-skip");
        let why = check_struct(footer_of(file)).unwrap_err();
        assert!(why.contains("elements, but only"), "{why}");
    }

    /// The footer's Thrift bytes of a whole Parquet file (before its length and `PAR1`).
    fn footer_of(file: &[u8]) -> &[u8] {
        let n = file.len();
        let len = u32::from_le_bytes(file[n - 8..n - 4].try_into().unwrap()) as usize;
        &file[n - 8 - len..n - 8]
    }
}
