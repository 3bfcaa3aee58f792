//! A linear walk over Thrift compact-protocol bytes (a Parquet footer, or one column chunk's
//! column index or offset index) that refuses what would send arrow-rs's decoder into a long
//! loop, before arrow-rs sees the bytes.
//!
//! Why: arrow-rs 60.1's Thrift reader skips the fields it does not read element by element,
//! and takes a boolean element of a list, set or map as zero bytes (the compact protocol writes
//! each as one). A footer of a kilobyte that declares a list of two billion booleans in such a
//! field keeps it looping for seconds, and lists of such lists for ever (found by the
//! `parquet_append` and `parquet_merge` fuzz targets, `fuzz/README.md`).
//!
//! The walk goes where arrow-rs goes, byte for byte, which is what makes its checks hold:
//! - arrow-rs reads a field it knows as the type the Parquet format gives it, whatever the
//!   field header declares. The walk knows the same fields ([`Def`], the format's structs as
//!   arrow-rs 60.1 reads them) and refuses a known field whose header declares another type,
//!   or a known list whose elements are of another type. No writer emits either, and past such
//!   a field the two readings would part.
//! - arrow-rs skips every other field by the type its header declares; so does the walk, and it
//!   refuses a skipped list, set or map that holds booleans (where arrow-rs's skip and the bytes
//!   part) and an unknown type code.
//! - Every list that remains takes at least one byte per element, so a list that declares more
//!   elements than the bytes after it can hold is refused; with that, every loop of arrow-rs's
//!   reading is bounded by the length of the bytes.
//!
//! What the walk cannot follow (a truncated varint, nesting deeper than [`MAX_DEPTH`], a field
//! id that overflows) is left to arrow-rs, whose reader fails on the same bytes at once.
//!
//! Page headers are walked too ([`check_page_header`], called by [`super::page_guard`] where
//! this crate hands a column chunk's bytes to arrow-rs). There the walk also knows how many
//! bytes of the column chunk follow, and refuses a binary value declared longer than that:
//! arrow-rs reads a page header from a stream and reserves the declared length before reading.

/// Nesting beyond this is left to arrow-rs (which stops skipping at the same depth).
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
    pub const UUID: u8 = 13;
}

/// The type the Parquet format gives a field (enums are `I32`, unions are structs).
#[derive(Clone, Copy)]
pub(crate) enum Ty {
    Bool,
    Byte,
    I16,
    I32,
    I64,
    Double,
    Binary,
    List(&'static Ty),
    Struct(&'static Def),
}

impl Ty {
    /// Whether a header's type code declares this type (a boolean is either of its codes).
    fn declared_by(self, code: u8) -> bool {
        match self {
            Ty::Bool => code == code::BOOL_TRUE || code == code::BOOL_FALSE,
            Ty::Byte => code == code::BYTE,
            Ty::I16 => code == code::I16,
            Ty::I32 => code == code::I32,
            Ty::I64 => code == code::I64,
            Ty::Double => code == code::DOUBLE,
            Ty::Binary => code == code::BINARY,
            Ty::List(_) => code == code::LIST,
            Ty::Struct(_) => code == code::STRUCT,
        }
    }

    /// The fewest bytes one element of this type takes inside a list.
    fn min_element_bytes(self) -> u64 {
        match self {
            Ty::Double => 8,
            _ => 1,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Ty::Bool => "bool",
            Ty::Byte => "byte",
            Ty::I16 => "i16",
            Ty::I32 => "i32",
            Ty::I64 => "i64",
            Ty::Double => "double",
            Ty::Binary => "binary",
            Ty::List(_) => "list",
            Ty::Struct(d) => d.name,
        }
    }
}

/// A struct (or union) of the Parquet format: the fields arrow-rs reads by their type.
pub(crate) struct Def {
    name: &'static str,
    fields: &'static [(i16, Ty)],
}

impl Def {
    fn field(&self, id: i16) -> Option<Ty> {
        self.fields.iter().find(|(f, _)| *f == id).map(|(_, t)| *t)
    }
}

/// The name of a type code, for messages.
fn code_name(c: u8) -> &'static str {
    match c {
        code::BOOL_TRUE | code::BOOL_FALSE => "bool",
        code::BYTE => "byte",
        code::I16 => "i16",
        code::I32 => "i32",
        code::I64 => "i64",
        code::DOUBLE => "double",
        code::BINARY => "binary",
        code::LIST => "list",
        code::SET => "set",
        code::MAP => "map",
        code::STRUCT => "struct",
        code::UUID => "uuid",
        _ => "unknown",
    }
}

// The Parquet format's structs, as parquet.thrift defines them and arrow-rs 60.1 reads them.

/// A union variant or struct without fields (`StringType`, `MilliSeconds`, `TypeDefinedOrder`...).
static EMPTY: Def = Def {
    name: "an empty struct",
    fields: &[],
};
static KEY_VALUE: Def = Def {
    name: "KeyValue",
    fields: &[(1, Ty::Binary), (2, Ty::Binary)],
};
static DECIMAL_TYPE: Def = Def {
    name: "DecimalType",
    fields: &[(1, Ty::I32), (2, Ty::I32)],
};
static TIME_UNIT: Def = Def {
    name: "TimeUnit",
    fields: &[
        (1, Ty::Struct(&EMPTY)),
        (2, Ty::Struct(&EMPTY)),
        (3, Ty::Struct(&EMPTY)),
    ],
};
/// Also `TimeType`, which has the same fields.
static TIMESTAMP_TYPE: Def = Def {
    name: "TimestampType",
    fields: &[(1, Ty::Bool), (2, Ty::Struct(&TIME_UNIT))],
};
static INT_TYPE: Def = Def {
    name: "IntType",
    fields: &[(1, Ty::Byte), (2, Ty::Bool)],
};
static VARIANT_TYPE: Def = Def {
    name: "VariantType",
    fields: &[(1, Ty::Byte)],
};
static GEOMETRY_TYPE: Def = Def {
    name: "GeometryType",
    fields: &[(1, Ty::Binary)],
};
static GEOGRAPHY_TYPE: Def = Def {
    name: "GeographyType",
    fields: &[(1, Ty::Binary), (2, Ty::I32)],
};
static LOGICAL_TYPE: Def = Def {
    name: "LogicalType",
    fields: &[
        (1, Ty::Struct(&EMPTY)),
        (2, Ty::Struct(&EMPTY)),
        (3, Ty::Struct(&EMPTY)),
        (4, Ty::Struct(&EMPTY)),
        (5, Ty::Struct(&DECIMAL_TYPE)),
        (6, Ty::Struct(&EMPTY)),
        (7, Ty::Struct(&TIMESTAMP_TYPE)),
        (8, Ty::Struct(&TIMESTAMP_TYPE)),
        (10, Ty::Struct(&INT_TYPE)),
        (11, Ty::Struct(&EMPTY)),
        (12, Ty::Struct(&EMPTY)),
        (13, Ty::Struct(&EMPTY)),
        (14, Ty::Struct(&EMPTY)),
        (15, Ty::Struct(&EMPTY)),
        (16, Ty::Struct(&VARIANT_TYPE)),
        (17, Ty::Struct(&GEOMETRY_TYPE)),
        (18, Ty::Struct(&GEOGRAPHY_TYPE)),
        (19, Ty::Struct(&EMPTY)),
    ],
};
static SCHEMA_ELEMENT: Def = Def {
    name: "SchemaElement",
    fields: &[
        (1, Ty::I32),
        (2, Ty::I32),
        (3, Ty::I32),
        (4, Ty::Binary),
        (5, Ty::I32),
        (6, Ty::I32),
        (7, Ty::I32),
        (8, Ty::I32),
        (9, Ty::I32),
        (10, Ty::Struct(&LOGICAL_TYPE)),
    ],
};
static STATISTICS: Def = Def {
    name: "Statistics",
    fields: &[
        (1, Ty::Binary),
        (2, Ty::Binary),
        (3, Ty::I64),
        (4, Ty::I64),
        (5, Ty::Binary),
        (6, Ty::Binary),
        (7, Ty::Bool),
        (8, Ty::Bool),
        (9, Ty::I64),
    ],
};
static PAGE_ENCODING_STATS: Def = Def {
    name: "PageEncodingStats",
    fields: &[(1, Ty::I32), (2, Ty::I32), (3, Ty::I32)],
};
static SIZE_STATISTICS: Def = Def {
    name: "SizeStatistics",
    fields: &[
        (1, Ty::I64),
        (2, Ty::List(&Ty::I64)),
        (3, Ty::List(&Ty::I64)),
    ],
};
static BOUNDING_BOX: Def = Def {
    name: "BoundingBox",
    fields: &[
        (1, Ty::Double),
        (2, Ty::Double),
        (3, Ty::Double),
        (4, Ty::Double),
        (5, Ty::Double),
        (6, Ty::Double),
        (7, Ty::Double),
        (8, Ty::Double),
    ],
};
static GEOSPATIAL_STATISTICS: Def = Def {
    name: "GeospatialStatistics",
    fields: &[(1, Ty::Struct(&BOUNDING_BOX)), (2, Ty::List(&Ty::I32))],
};
static COLUMN_META_DATA: Def = Def {
    name: "ColumnMetaData",
    fields: &[
        (1, Ty::I32),
        (2, Ty::List(&Ty::I32)),
        (3, Ty::List(&Ty::Binary)),
        (4, Ty::I32),
        (5, Ty::I64),
        (6, Ty::I64),
        (7, Ty::I64),
        (8, Ty::List(&Ty::Struct(&KEY_VALUE))),
        (9, Ty::I64),
        (10, Ty::I64),
        (11, Ty::I64),
        (12, Ty::Struct(&STATISTICS)),
        (13, Ty::List(&Ty::Struct(&PAGE_ENCODING_STATS))),
        (14, Ty::I64),
        (15, Ty::I32),
        (16, Ty::Struct(&SIZE_STATISTICS)),
        (17, Ty::Struct(&GEOSPATIAL_STATISTICS)),
    ],
};
static ENCRYPTION_WITH_COLUMN_KEY: Def = Def {
    name: "EncryptionWithColumnKey",
    fields: &[(1, Ty::List(&Ty::Binary)), (2, Ty::Binary)],
};
static COLUMN_CRYPTO_META_DATA: Def = Def {
    name: "ColumnCryptoMetaData",
    fields: &[
        (1, Ty::Struct(&EMPTY)),
        (2, Ty::Struct(&ENCRYPTION_WITH_COLUMN_KEY)),
    ],
};
static COLUMN_CHUNK: Def = Def {
    name: "ColumnChunk",
    fields: &[
        (1, Ty::Binary),
        (2, Ty::I64),
        (3, Ty::Struct(&COLUMN_META_DATA)),
        (4, Ty::I64),
        (5, Ty::I32),
        (6, Ty::I64),
        (7, Ty::I32),
        (8, Ty::Struct(&COLUMN_CRYPTO_META_DATA)),
        (9, Ty::Binary),
    ],
};
static SORTING_COLUMN: Def = Def {
    name: "SortingColumn",
    fields: &[(1, Ty::I32), (2, Ty::Bool), (3, Ty::Bool)],
};
static ROW_GROUP: Def = Def {
    name: "RowGroup",
    fields: &[
        (1, Ty::List(&Ty::Struct(&COLUMN_CHUNK))),
        (2, Ty::I64),
        (3, Ty::I64),
        (4, Ty::List(&Ty::Struct(&SORTING_COLUMN))),
        (5, Ty::I64),
        (6, Ty::I64),
        (7, Ty::I16),
    ],
};
static COLUMN_ORDER: Def = Def {
    name: "ColumnOrder",
    fields: &[
        (1, Ty::Struct(&EMPTY)),
        (2, Ty::Struct(&EMPTY)),
        (3, Ty::Struct(&EMPTY)),
    ],
};
/// `AesGcmV1` and `AesGcmCtrV1`, which have the same fields.
static AES_GCM: Def = Def {
    name: "AesGcmV1",
    fields: &[(1, Ty::Binary), (2, Ty::Binary), (3, Ty::Bool)],
};
static ENCRYPTION_ALGORITHM: Def = Def {
    name: "EncryptionAlgorithm",
    fields: &[(1, Ty::Struct(&AES_GCM)), (2, Ty::Struct(&AES_GCM))],
};

/// A Parquet footer's struct.
pub(crate) static FILE_META_DATA: Def = Def {
    name: "FileMetaData",
    fields: &[
        (1, Ty::I32),
        (2, Ty::List(&Ty::Struct(&SCHEMA_ELEMENT))),
        (3, Ty::I64),
        (4, Ty::List(&Ty::Struct(&ROW_GROUP))),
        (5, Ty::List(&Ty::Struct(&KEY_VALUE))),
        (6, Ty::Binary),
        (7, Ty::List(&Ty::Struct(&COLUMN_ORDER))),
        (8, Ty::Struct(&ENCRYPTION_ALGORITHM)),
        (9, Ty::Binary),
    ],
};
/// One column chunk's column index.
pub(crate) static COLUMN_INDEX: Def = Def {
    name: "ColumnIndex",
    fields: &[
        (1, Ty::List(&Ty::Bool)),
        (2, Ty::List(&Ty::Binary)),
        (3, Ty::List(&Ty::Binary)),
        (4, Ty::I32),
        (5, Ty::List(&Ty::I64)),
        (6, Ty::List(&Ty::I64)),
        (7, Ty::List(&Ty::I64)),
        (8, Ty::List(&Ty::I64)),
    ],
};
static PAGE_LOCATION: Def = Def {
    name: "PageLocation",
    fields: &[(1, Ty::I64), (2, Ty::I32), (3, Ty::I64)],
};
/// One column chunk's offset index.
pub(crate) static OFFSET_INDEX: Def = Def {
    name: "OffsetIndex",
    fields: &[
        (1, Ty::List(&Ty::Struct(&PAGE_LOCATION))),
        (2, Ty::List(&Ty::I64)),
    ],
};

static DATA_PAGE_HEADER: Def = Def {
    name: "DataPageHeader",
    fields: &[
        (1, Ty::I32),
        (2, Ty::I32),
        (3, Ty::I32),
        (4, Ty::I32),
        (5, Ty::Struct(&STATISTICS)),
    ],
};
static DICTIONARY_PAGE_HEADER: Def = Def {
    name: "DictionaryPageHeader",
    fields: &[(1, Ty::I32), (2, Ty::I32), (3, Ty::Bool)],
};
static DATA_PAGE_HEADER_V2: Def = Def {
    name: "DataPageHeaderV2",
    fields: &[
        (1, Ty::I32),
        (2, Ty::I32),
        (3, Ty::I32),
        (4, Ty::I32),
        (5, Ty::I32),
        (6, Ty::I32),
        (7, Ty::Bool),
        (8, Ty::Struct(&STATISTICS)),
    ],
};
/// A page's header, in front of every page of a column chunk.
static PAGE_HEADER: Def = Def {
    name: "PageHeader",
    fields: &[
        (1, Ty::I32),
        (2, Ty::I32),
        (3, Ty::I32),
        (4, Ty::I32),
        (5, Ty::Struct(&DATA_PAGE_HEADER)),
        (6, Ty::Struct(&EMPTY)),
        (7, Ty::Struct(&DICTIONARY_PAGE_HEADER)),
        (8, Ty::Struct(&DATA_PAGE_HEADER_V2)),
    ],
};

/// What a page header walked whole declares about its page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PageSizes {
    /// Bytes of the header itself.
    pub header: u64,
    /// `uncompressed_page_size`, as arrow-rs reads it (`None`: absent).
    pub uncompressed: Option<i32>,
    /// `compressed_page_size`, the bytes of the page after its header.
    pub compressed: Option<i32>,
    /// Where a data page keeps its repetition levels, as arrow-rs reads the header (`None`:
    /// not a data page, or a required field is absent, which arrow-rs refuses by itself).
    pub data: Option<DataPageLevels>,
}

/// What a data page's header says about its repetition levels ([`super::level_guard`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DataPageLevels {
    /// `num_values`: levels the page holds (one per value, nulls and empty lists included).
    pub num_values: i32,
    pub layout: LevelLayout,
}

/// Where the repetition levels of a data page are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LevelLayout {
    /// Version 1: inside the (compressed) page body, in this encoding (the format's enum
    /// value), the first of the body's level runs.
    V1 { encoding: i32 },
    /// Version 2: the first `bytes` bytes of the page body, never compressed.
    V2 { bytes: i32 },
}

/// The format's `PageType` values of the two data pages.
const DATA_PAGE: i32 = 0;
const DATA_PAGE_V2: i32 = 3;

impl DataPageLevels {
    /// Read from the walk's fields: `top` the header's own, `nested` those of its structs
    /// (parent field, field, value), each the last occurrence as arrow-rs keeps it.
    fn of(
        top: impl Fn(i16) -> Option<i32>,
        nested: impl Fn(i16, i16) -> Option<i32>,
    ) -> Option<Self> {
        let (num_values, layout) = match top(1)? {
            DATA_PAGE => (
                nested(5, 1)?,
                LevelLayout::V1 {
                    encoding: nested(5, 4)?,
                },
            ),
            DATA_PAGE_V2 => (
                nested(8, 1)?,
                LevelLayout::V2 {
                    bytes: nested(8, 6)?,
                },
            ),
            _ => return None,
        };
        Some(DataPageLevels { num_values, layout })
    }
}

/// Why the walk stopped early.
enum Stop {
    /// Something arrow-rs would loop on, or read apart from the walk.
    Refused(String),
    /// Something the walk does not follow; arrow-rs fails on it by itself.
    Unfollowed,
    /// The bytes end before the walk does: arrow-rs, reading from the same bytes, fails at
    /// their end, but one reading on from a stream may not (a page header, below).
    Short,
}

/// How far a page header could be walked ([`check_page_header`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PageHeaderWalk {
    /// Walked to its end; what it declares.
    Whole(PageSizes),
    /// Its bytes end first: more of them are needed to tell.
    Short,
    /// Something the walk does not follow, which arrow-rs refuses by itself.
    Unfollowed,
}

/// Checks the compact-protocol struct `def` in `bytes` (a Parquet [`FILE_META_DATA`],
/// [`COLUMN_INDEX`] or [`OFFSET_INDEX`]). `Err` says what was refused and where (a byte offset
/// relative to `bytes`); `Ok` means nothing was found that arrow-rs 60.1 would loop on or read
/// differently (not that the struct is valid).
pub(crate) fn check_struct(bytes: &[u8], def: &'static Def) -> Result<(), String> {
    let mut walk = Walk::new(bytes, None);
    match walk.read_struct(Some(def), 0) {
        Ok(()) | Err(Stop::Unfollowed | Stop::Short) => Ok(()),
        Err(Stop::Refused(why)) => Err(why),
    }
}

/// What [`check_footer`] found in a footer it did not refuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FooterWalk {
    /// How deep arrow-rs will recurse building the schema tree from its flat list: the most
    /// groups an element of the schema list is nested in (0 for a root without children).
    pub schema_depth: usize,
}

/// [`check_struct`] of a footer ([`FILE_META_DATA`]), which also measures the nesting of its
/// schema. arrow-rs 60.1 builds the schema tree by recursion, one call per level, with no
/// bound: a footer of a few hundred kilobytes nesting groups 20 000 deep overflows the stack
/// (a process abort natively, a trap in the component). Measured on the elements the walk
/// read even when it stopped early, since arrow-rs may build the tree before reading on.
pub(crate) fn check_footer(bytes: &[u8]) -> Result<FooterWalk, String> {
    let mut walk = Walk::new(bytes, None);
    walk.schema = Some(Vec::new());
    match walk.read_struct(Some(&FILE_META_DATA), 0) {
        Ok(()) | Err(Stop::Unfollowed | Stop::Short) => {}
        Err(Stop::Refused(why)) => return Err(why),
    }
    Ok(FooterWalk {
        schema_depth: schema_depth(walk.schema.as_deref().unwrap_or_default()),
    })
}

/// The deepest recursion arrow-rs's schema builder reaches over schema elements declaring
/// `children` (`num_children` of each, in order): a group (more than 0 children) opens a level
/// that its next elements fill, as the builder's loop calls itself once per child.
fn schema_depth(children: &[Option<i32>]) -> usize {
    let mut open: Vec<i32> = Vec::new();
    let mut deepest = 0;
    for &n in children {
        deepest = deepest.max(open.len());
        if let Some(left) = open.last_mut() {
            *left -= 1;
        }
        match n {
            Some(n) if n > 0 => open.push(n),
            _ => {}
        }
        while open.last() == Some(&0) {
            open.pop();
        }
    }
    deepest
}

/// Checks the page header at the start of `bytes`, of which `available` bytes (at least
/// `bytes.len()`) exist in its column chunk from the header's first byte on. `Ok`: how far
/// the walk went ([`PageHeaderWalk`]); `Err`: what was refused, as for [`check_struct`], or a
/// binary value declared longer than the column chunk.
pub(crate) fn check_page_header(bytes: &[u8], available: u64) -> Result<PageHeaderWalk, String> {
    let mut walk = Walk::new(bytes, Some(available.max(bytes.len() as u64)));
    match walk.read_struct(Some(&PAGE_HEADER), 0) {
        Ok(()) => {
            let field = |id| {
                walk.top_i32
                    .iter()
                    .rev()
                    .find(|(f, _)| *f == id)
                    .map(|(_, v)| *v)
            };
            let nested = |parent, id| {
                walk.nested_i32
                    .iter()
                    .rev()
                    .find(|(p, f, _)| (*p, *f) == (parent, id))
                    .map(|(_, _, v)| *v)
            };
            Ok(PageHeaderWalk::Whole(PageSizes {
                header: walk.at as u64,
                uncompressed: field(2),
                compressed: field(3),
                data: DataPageLevels::of(field, nested),
            }))
        }
        Err(Stop::Short) => Ok(PageHeaderWalk::Short),
        Err(Stop::Unfollowed) => Ok(PageHeaderWalk::Unfollowed),
        Err(Stop::Refused(why)) => Err(why),
    }
}

struct Walk<'a> {
    bytes: &'a [u8],
    at: usize,
    /// Bytes that exist from the start of `bytes` on, where known to be more than `bytes`
    /// (a page header read from its column chunk): a binary value longer than what is left of
    /// them is refused.
    available: Option<u64>,
    /// The `I32` fields of the outermost struct, as arrow-rs reads them (id, value).
    top_i32: Vec<(i16, i32)>,
    /// The outermost struct's field being walked, when it is a struct.
    in_top: Option<i16>,
    /// The `I32` fields of the structs in the outermost struct's fields, of their last
    /// occurrence only (parent field id, id, value).
    nested_i32: Vec<(i16, i16, i32)>,
    /// When walking a footer: each schema element's `num_children`, in order
    /// ([`check_footer`]).
    schema: Option<Vec<Option<i32>>>,
}

impl<'a> Walk<'a> {
    fn new(bytes: &'a [u8], available: Option<u64>) -> Self {
        Walk {
            bytes,
            at: 0,
            available,
            top_i32: Vec::new(),
            in_top: None,
            nested_i32: Vec::new(),
            schema: None,
        }
    }

    fn byte(&mut self) -> Result<u8, Stop> {
        let b = *self.bytes.get(self.at).ok_or(Stop::Short)?;
        self.at += 1;
        Ok(b)
    }

    fn skip(&mut self, n: usize) -> Result<(), Stop> {
        match self.at.checked_add(n) {
            Some(end) if end <= self.bytes.len() => {
                self.at = end;
                Ok(())
            }
            _ => Err(Stop::Short),
        }
    }

    /// A varint as arrow-rs 60.1 reads (and skips) one: of any length, each byte's bits shifted
    /// in with a wrapping shift. A stricter reading (at most ten bytes) stopped the walk at a
    /// long varint in a skipped field, where arrow-rs read on into a list the walk never saw
    /// (the `parquet_append` fuzz target's `timeout-long-varint`, `fuzz/README.md`).
    fn varint(&mut self) -> Result<u64, Stop> {
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f).wrapping_shl(shift);
            if b & 0x80 == 0 {
                return Ok(value);
            }
            shift = shift.wrapping_add(7);
        }
    }

    fn binary(&mut self) -> Result<(), Stop> {
        let start = self.at;
        let len = self.varint()?;
        if let Some(available) = self.available {
            let left = available.saturating_sub(self.at as u64);
            if len > left {
                return Err(Stop::Refused(format!(
                    "a Thrift binary at byte {start} declares {len} bytes, but only {left} \
                     bytes of the column chunk follow"
                )));
            }
        }
        self.skip(usize::try_from(len).map_err(|_| Stop::Unfollowed)?)
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    /// A list or set header: its element type code and count (`(0, 0)` for the empty list some
    /// writers encode as a single zero byte). A count beyond `i32::MAX` is left to arrow-rs,
    /// which refuses it.
    fn list_header(&mut self) -> Result<(u8, u64), Stop> {
        let header = self.byte()?;
        if header == 0 {
            return Ok((0, 0));
        }
        let count = match header >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        if count > i32::MAX as u64 {
            return Err(Stop::Unfollowed);
        }
        Ok((header & 0x0f, count))
    }

    /// Refuses `count` elements of at least `min_bytes` each when the bytes left cannot hold
    /// them.
    fn fits(&self, what: &str, count: u64, min_bytes: u64) -> Result<(), Stop> {
        let needed = count.saturating_mul(min_bytes);
        if needed > self.remaining() as u64 {
            return Err(Stop::Refused(format!(
                "a Thrift {what} at byte {} declares {count} elements, but only {} bytes follow",
                self.at,
                self.remaining()
            )));
        }
        Ok(())
    }

    /// A struct's fields up to its stop byte; `def`: the fields arrow-rs reads by their type
    /// (`None` inside a skipped field: all are skipped).
    fn read_struct(&mut self, def: Option<&'static Def>, depth: usize) -> Result<(), Stop> {
        if depth > MAX_DEPTH {
            return Err(Stop::Unfollowed);
        }
        if depth == 2
            && self.in_top == Some(2)
            && def.is_some_and(|d| std::ptr::eq(d, &SCHEMA_ELEMENT))
        {
            if let Some(schema) = self.schema.as_mut() {
                schema.push(None);
            }
        }
        let mut last_id = 0i16;
        loop {
            let start = self.at;
            let header = self.byte()?;
            // arrow-rs takes any header with a zero type as the stop.
            let ty = header & 0x0f;
            if ty == 0 {
                return Ok(());
            }
            let id = match header >> 4 {
                0 => {
                    // A zigzag varint, read as arrow-rs reads it (truncated to 16 bits).
                    let v = self.varint()?;
                    ((v >> 1) as i64 ^ -((v & 1) as i64)) as i16
                }
                delta => last_id
                    .checked_add(i16::from(delta))
                    .ok_or(Stop::Unfollowed)?,
            };
            last_id = id;
            match def.and_then(|d| d.field(id).map(|t| (d, t))) {
                Some((d, want)) => {
                    if !want.declared_by(ty) {
                        return Err(Stop::Refused(format!(
                            "field {id} of a Thrift {} at byte {start} is declared a {}, but \
                             the Parquet format makes it a {}",
                            d.name,
                            code_name(ty),
                            want.name()
                        )));
                    }
                    let parent = self.in_top.filter(|_| depth == 1);
                    // A schema element's `num_children` (the footer's field 2 is the list of
                    // them; its elements are walked at depth 2).
                    let children = depth == 2
                        && self.in_top == Some(2)
                        && std::ptr::eq(d, &SCHEMA_ELEMENT)
                        && id == 5;
                    if children {
                        let v = self.varint()?;
                        let value = ((v >> 1) as i64 ^ -((v & 1) as i64)) as i32;
                        if let Some(last) = self.schema.as_mut().and_then(|s| s.last_mut()) {
                            *last = Some(value);
                        }
                    } else if matches!(want, Ty::I32) && (depth == 0 || parent.is_some()) {
                        // A zigzag varint, truncated to 32 bits as arrow-rs reads an i32.
                        let v = self.varint()?;
                        let value = ((v >> 1) as i64 ^ -((v & 1) as i64)) as i32;
                        match parent {
                            Some(parent) => self.nested_i32.push((parent, id, value)),
                            None => self.top_i32.push((id, value)),
                        }
                    } else if depth == 0 && matches!(want, Ty::Struct(_) | Ty::List(_)) {
                        // arrow-rs keeps the last occurrence of a field whole.
                        self.nested_i32.retain(|(p, _, _)| *p != id);
                        if id == 2 {
                            // A footer's schema list (only a footer's walk collects it).
                            if let Some(schema) = self.schema.as_mut() {
                                schema.clear();
                            }
                        }
                        self.in_top = Some(id);
                        let walked = self.typed(want, depth + 1);
                        self.in_top = None;
                        walked?;
                    } else {
                        self.typed(want, depth + 1)?;
                    }
                }
                None => self.skipped(ty, depth + 1)?,
            }
        }
    }

    /// A value arrow-rs reads as the format's type `ty` (its header already checked).
    fn typed(&mut self, ty: Ty, depth: usize) -> Result<(), Stop> {
        match ty {
            // A struct field's boolean is its header's type code.
            Ty::Bool => Ok(()),
            Ty::Byte => self.skip(1),
            Ty::I16 | Ty::I32 | Ty::I64 => self.varint().map(|_| ()),
            Ty::Double => self.skip(8),
            Ty::Binary => self.binary(),
            Ty::Struct(def) => self.read_struct(Some(def), depth),
            Ty::List(element) => {
                let start = self.at;
                let (code, count) = self.list_header()?;
                if count == 0 {
                    return Ok(());
                }
                if !element.declared_by(code) {
                    return Err(Stop::Refused(format!(
                        "a Thrift list at byte {start} declares {} elements where the Parquet \
                         format has {} elements",
                        code_name(code),
                        element.name()
                    )));
                }
                self.fits("list", count, element.min_element_bytes())?;
                for _ in 0..count {
                    match element {
                        // Inside a list a boolean is a whole byte.
                        Ty::Bool => self.skip(1)?,
                        _ => self.typed(*element, depth + 1)?,
                    }
                }
                Ok(())
            }
        }
    }

    /// A value arrow-rs skips, by its declared type code `ty`, as arrow-rs's skip does.
    fn skipped(&mut self, ty: u8, depth: usize) -> Result<(), Stop> {
        if depth > MAX_DEPTH {
            return Err(Stop::Unfollowed);
        }
        match ty {
            code::BOOL_TRUE | code::BOOL_FALSE => Ok(()),
            code::BYTE => self.skip(1),
            code::I16 | code::I32 | code::I64 => self.varint().map(|_| ()),
            code::DOUBLE => self.skip(8),
            code::BINARY => self.binary(),
            code::UUID => self.skip(16),
            code::STRUCT => self.read_struct(None, depth),
            code::LIST | code::SET => {
                let start = self.at;
                let (element, count) = self.list_header()?;
                if count == 0 {
                    return Ok(());
                }
                self.skipped_elements(start, &[element], count)?;
                for _ in 0..count {
                    self.skipped(element, depth + 1)?;
                }
                Ok(())
            }
            code::MAP => {
                let start = self.at;
                let count = self.varint()?;
                if count == 0 {
                    return Ok(());
                }
                if count > i32::MAX as u64 {
                    return Err(Stop::Unfollowed);
                }
                let types = self.byte()?;
                let (key, value) = (types >> 4, types & 0x0f);
                self.skipped_elements(start, &[key, value], count)?;
                for _ in 0..count {
                    self.skipped(key, depth + 1)?;
                    self.skipped(value, depth + 1)?;
                }
                Ok(())
            }
            // No writer emits it, and arrow-rs refuses it as a field type, but not always
            // where this walk meets it; refused here, where the walk still knows the place.
            _ => Err(Stop::Refused(format!(
                "an unknown Thrift type code {ty} before byte {}",
                self.at
            ))),
        }
    }

    /// Checks the element types of a skipped container (at byte `start`) of `count` elements:
    /// arrow-rs takes a boolean element as no byte (though it is one), so its skip would loop
    /// without reading and then read on apart from the bytes.
    fn skipped_elements(&self, start: usize, types: &[u8], count: u64) -> Result<(), Stop> {
        for &t in types {
            match t {
                code::BOOL_TRUE | code::BOOL_FALSE => {
                    return Err(Stop::Refused(format!(
                        "a Thrift container at byte {start} holds {count} booleans in a field \
                         the reader skips, which arrow-rs 60.1 cannot skip"
                    )))
                }
                code::BYTE..=code::UUID => {}
                // arrow-rs refuses such an element type at once.
                _ => return Err(Stop::Unfollowed),
            }
        }
        self.fits("container", count, types.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{Int32Builder, ListBuilder};
    use arrow_array::{
        ArrayRef, BooleanArray, Decimal128Array, Float64Array, Int64Array, RecordBatch,
        StringArray, StructArray, TimestampMicrosecondArray,
    };
    use arrow_schema::{DataType, Field};
    use parquet::arrow::ArrowWriter;
    use parquet::file::metadata::{ParquetMetaDataReader, SortingColumn};
    use parquet::file::properties::WriterProperties;

    use super::*;

    /// The footer's Thrift bytes of a whole Parquet file (before its length and `PAR1`).
    fn footer_of(file: &[u8]) -> &[u8] {
        let n = file.len();
        let len = u32::from_le_bytes(file[n - 8..n - 4].try_into().unwrap()) as usize;
        &file[n - 8 - len..n - 8]
    }

    /// A file arrow-rs writes with most of what a footer can hold: logical types, nested
    /// columns, statistics (NaN counts, exactness flags), dictionary encoding stats, size
    /// statistics, bloom filters, sorting columns, key-value metadata and both page indexes.
    fn rich_file() -> Vec<u8> {
        let mut list = ListBuilder::new(Int32Builder::new());
        for i in 0..300 {
            list.values().append_value(i);
            list.values().append_null();
            list.append(i % 7 != 0);
        }
        let inner: ArrayRef = Arc::new(Int64Array::from_iter((0..300).map(Some)));
        let nested = StructArray::from(vec![(
            Arc::new(Field::new("x", DataType::Int64, true)),
            inner,
        )]);
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("id", Arc::new(Int64Array::from_iter_values(0..300))),
            (
                "name",
                Arc::new(StringArray::from_iter_values(
                    (0..300).map(|i| format!("name-{}", i % 13)),
                )),
            ),
            (
                "flag",
                Arc::new(BooleanArray::from_iter((0..300).map(|i| Some(i % 3 == 0)))),
            ),
            (
                "score",
                Arc::new(Float64Array::from_iter(
                    (0..300).map(|i| Some(if i == 5 { f64::NAN } else { i as f64 })),
                )),
            ),
            (
                "price",
                Arc::new(
                    Decimal128Array::from_iter_values(0..300)
                        .with_precision_and_scale(12, 2)
                        .unwrap(),
                ),
            ),
            (
                "at",
                Arc::new(TimestampMicrosecondArray::from_iter_values(0..300).with_timezone("UTC")),
            ),
            ("tags", Arc::new(list.finish())),
            ("nested", Arc::new(nested)),
        ];
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(100))
            .set_data_page_row_count_limit(20)
            .set_write_batch_size(20)
            .set_bloom_filter_enabled(true)
            .set_sorting_columns(Some(vec![SortingColumn {
                column_idx: 0,
                descending: false,
                nulls_first: true,
            }]))
            .set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new(
                "k".into(),
                "v".to_string(),
            )]))
            .build();
        let mut out = Vec::new();
        let mut w = ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        out
    }

    #[test]
    fn a_footer_and_page_indexes_arrow_rs_writes_pass() {
        let file = rich_file();
        assert_eq!(check_struct(footer_of(&file), &FILE_META_DATA), Ok(()));
        let metadata = ParquetMetaDataReader::new()
            .parse_and_finish(&bytes::Bytes::from(file.clone()))
            .unwrap();
        let mut indexes = 0;
        for group in metadata.row_groups() {
            assert!(group.sorting_columns().is_some());
            for chunk in group.columns() {
                for (range, def) in [
                    (chunk.column_index_range(), &COLUMN_INDEX),
                    (chunk.offset_index_range(), &OFFSET_INDEX),
                ] {
                    let range = range.expect("page indexes are written");
                    let bytes = &file[range.start as usize..range.end as usize];
                    assert_eq!(check_struct(bytes, def), Ok(()), "{}", def.name);
                    indexes += 1;
                }
            }
        }
        // Three row groups of eight leaf columns, two indexes each.
        assert_eq!(indexes, 3 * 8 * 2);
    }

    /// Field 15 (unknown to the format) holds a list of 2^31 - 1 booleans in one header: the
    /// skip arrow-rs would loop through without reading a byte.
    #[test]
    fn a_skipped_list_of_booleans_is_refused() {
        let hostile = [0xf9, 0xf1, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00];
        let why = check_struct(&hostile, &FILE_META_DATA).unwrap_err();
        assert!(why.contains("holds 2147483647 booleans"), "{why}");
        // A map of booleans, and a set of one: refused as well.
        let map = [0xfb, 0x05, 0x11, 0x00];
        let why = check_struct(&map, &FILE_META_DATA).unwrap_err();
        assert!(why.contains("holds 5 booleans"), "{why}");
        let set = [0xfa, 0x12, 0x01, 0x00];
        assert!(check_struct(&set, &FILE_META_DATA).is_err());
        // An empty one skips no element: accepted.
        assert_eq!(check_struct(&[0xf9, 0x01, 0x00], &FILE_META_DATA), Ok(()));
    }

    /// `null_pages` is a list of booleans arrow-rs reads, a byte each: accepted, and counted.
    #[test]
    fn a_column_indexs_booleans_are_a_byte_each() {
        // Field 1: a list of 3 booleans (1, 0, 1); field 4 (delta 3): i32 0; stop.
        let fine = [0x19, 0x31, 0x01, 0x00, 0x01, 0x35, 0x00, 0x00];
        assert_eq!(check_struct(&fine, &COLUMN_INDEX), Ok(()));
        // 200 declared, 5 bytes left.
        let long = [0x19, 0xf1, 0xc8, 0x01, 0x01, 0x00, 0x01, 0x35, 0x00];
        let why = check_struct(&long, &COLUMN_INDEX).unwrap_err();
        assert!(why.contains("declares 200 elements"), "{why}");
    }

    #[test]
    fn a_known_field_of_another_type_is_refused() {
        // FileMetaData's version (field 1, an i32) declared a binary.
        let why = check_struct(&[0x18, 0x00, 0x00], &FILE_META_DATA).unwrap_err();
        assert!(
            why.contains("field 1 of a Thrift FileMetaData at byte 0 is declared a binary"),
            "{why}"
        );
        // The schema (field 2, a list of SchemaElement) as a list of i32.
        let why = check_struct(&[0x29, 0x15, 0x02, 0x00], &FILE_META_DATA).unwrap_err();
        assert!(why.contains("declares i32 elements"), "{why}");
        // The same by a full field id (a zero delta, then zigzag 2).
        let why = check_struct(&[0x08, 0x04, 0x00, 0x00], &FILE_META_DATA).unwrap_err();
        assert!(why.contains("field 2 of a Thrift FileMetaData"), "{why}");
        // Inside a nested struct: a SchemaElement whose name (field 4) is an i64.
        let nested = [0x29, 0x1c, 0x46, 0x02, 0x00, 0x00];
        let why = check_struct(&nested, &FILE_META_DATA).unwrap_err();
        assert!(why.contains("field 4 of a Thrift SchemaElement"), "{why}");
    }

    #[test]
    fn what_the_walk_cannot_follow_is_left_to_arrow_rs() {
        // Truncated in a SchemaElement's name.
        assert_eq!(check_struct(&[0x29, 0x1c, 0x48], &FILE_META_DATA), Ok(()));
        // A header whose type nibble is zero is a stop to arrow-rs too.
        assert_eq!(check_struct(&[0x10], &FILE_META_DATA), Ok(()));
        // A count beyond i32::MAX, which arrow-rs refuses.
        let huge = [0xf9, 0xf5, 0x80, 0x80, 0x80, 0x80, 0x08];
        assert_eq!(check_struct(&huge, &FILE_META_DATA), Ok(()));
        // An unknown type code: refused.
        let why = check_struct(&[0xfe, 0x00], &FILE_META_DATA).unwrap_err();
        assert!(why.contains("unknown Thrift type code 14"), "{why}");
    }

    /// The fuzz findings (`fuzz/README.md`), each refused at once.
    #[test]
    fn the_fuzz_findings_are_refused() {
        let file = include_bytes!("../../fuzz/corpus/parquet_append/crash-thrift-list-skip");
        let why = check_struct(footer_of(file), &FILE_META_DATA).unwrap_err();
        assert!(why.contains("holds 164356175 booleans"), "{why}");
        // Its first field declares a boolean where FileMetaData's version is an i32.
        let file = include_bytes!("../../fuzz/corpus/parquet_append/crash-unknown-type-code");
        let why = check_struct(footer_of(file), &FILE_META_DATA).unwrap_err();
        assert!(why.contains("field 1 of a Thrift FileMetaData"), "{why}");
        // Its first field is FileMetaData's created_by (a string) declared as a double.
        let file = include_bytes!("../../fuzz/corpus/parquet_merge/slow-thrift-skip");
        let why = check_struct(footer_of(file), &FILE_META_DATA).unwrap_err();
        assert!(
            why.contains("field 6 of a Thrift FileMetaData at byte 0"),
            "{why}"
        );
        // A skipped map holds varints of more than ten bytes, which arrow-rs reads on past;
        // behind them a field of 2^31 - 1 booleans kept arrow-rs skipping for 19 seconds.
        let file = include_bytes!("../../fuzz/corpus/parquet_append/timeout-long-varint");
        let why = check_struct(footer_of(file), &FILE_META_DATA).unwrap_err();
        assert!(why.contains("holds 2147483647 booleans"), "{why}");
    }

    #[test]
    fn schema_depth_follows_the_builders_recursion() {
        // A root of three leaves; a root, a group of two leaves, a leaf.
        assert_eq!(schema_depth(&[Some(3), None, None, Some(0)]), 1);
        assert_eq!(schema_depth(&[Some(2), Some(2), None, None, None]), 2);
        // A chain: each group holds the next.
        let chain: Vec<Option<i32>> = (0..100).map(|_| Some(1)).chain([None]).collect();
        assert_eq!(schema_depth(&chain), 100);
        // Negative children make a group of none; a list cut short still counts its depth.
        assert_eq!(schema_depth(&[Some(1), Some(-5), None]), 1);
        assert_eq!(schema_depth(&[Some(1), Some(1), Some(1000)]), 2);
        // A second root starts again at the top.
        assert_eq!(schema_depth(&[Some(1), None, Some(1), Some(1), None]), 2);
        assert_eq!(schema_depth(&[]), 0);
    }

    #[test]
    fn a_footer_measures_its_schema_as_arrow_rs_reads_it() {
        // The rich file: a list column (root, the list's group, its repeated group, the
        // element) is the deepest.
        let file = rich_file();
        assert_eq!(
            check_footer(footer_of(&file)).map(|w| w.schema_depth),
            Ok(3)
        );
        // The reproducer of a footer nesting 20 000 groups (a stack overflow in arrow-rs).
        let file = include_bytes!("../../fuzz/corpus/parquet_append/crash-schema-nesting-20000");
        assert_eq!(
            check_footer(footer_of(file)).map(|w| w.schema_depth),
            Ok(20_001)
        );
        // A footer whose schema list comes twice: arrow-rs keeps the second.
        let element = |children: Option<i32>| -> Vec<u8> {
            let mut e = vec![0x48, 1, b'a']; // field 4, name "a"
            if let Some(n) = children {
                e.push(0x15); // field 5, i32
                e.push(((n << 1) ^ (n >> 31)) as u8);
            }
            e.push(0);
            e
        };
        let list = |elements: &[Option<i32>]| -> Vec<u8> {
            let mut l = vec![((elements.len() as u8) << 4) | 0x0c];
            for &e in elements {
                l.extend(element(e));
            }
            l
        };
        let mut footer = vec![0x29]; // field 2, a list
        footer.extend(list(&[Some(1), Some(1), Some(1), None]));
        footer.extend([0x09, 0x04]); // field 2 again, in the long form (id zigzag 4)
        footer.extend(list(&[Some(1), None]));
        footer.push(0);
        assert_eq!(check_footer(&footer).map(|w| w.schema_depth), Ok(1));
    }
}
