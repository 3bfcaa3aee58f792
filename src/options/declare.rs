//! How an option is declared: once, with its key, its parser (which holds the range) and its
//! default, in a table that is also the list of keys the table reads.
//!
//! [`declare_options!`] turns such a table into a private struct with one field per entry, a
//! `read` function that parses the raw map into it, and `KEYS`, the keys it reads. Entries are
//! read in table order, so the first malformed key in that order is the error reported. An
//! entry looks like
//!
//! ```text
//! field: Type = "key" | "fallback-key" => parser, default value, then check;
//! ```
//!
//! * `"key"`: a string literal or the name of a `&str` constant.
//! * `| "fallback-key"`: read when `"key"` is absent (Paimon's deprecated spellings).
//! * `parser`: `Fn(key, value) -> Result<T>`, one of the functions below or an enum's `parse`.
//! * `default value`: the field is `T`, else it is `Option<T>` (the default is derived from
//!   other options afterwards, or there is none).
//! * `then check`: an expression of type `Result<()>` run right after the field is read, which
//!   may use the fields read before it (a range that depends on another option).

use std::collections::BTreeMap;

use super::units::{parse_duration_ms, parse_memory_size};
use crate::error::{Error, Result};

/// `i32::MAX`, the upper bound of Paimon's `int` options.
pub(crate) const I32_MAX: i64 = i32::MAX as i64;

macro_rules! declare_options {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$doc:meta])*
                $field:ident: $ty:ty = $key:tt $(| $alt:tt)* => $parser:expr
                    $(, default $default:expr)? $(, then $check:expr)?;
            )+
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[$doc])* $vis $field: $ty, )+
        }

        impl $name {
            /// Every key this table reads (fallback keys included), in reading order.
            $vis const KEYS: &'static [&'static str] = &[$($key, $($alt,)*)+];

            /// Parses the declared keys out of `raw`, in table order.
            $vis fn read(
                raw: &std::collections::BTreeMap<String, String>,
            ) -> $crate::error::Result<Self> {
                $(
                    let $field: $ty = declare_options!(
                        @value raw, [$key $(, $alt)*], $parser $(, $default)?
                    );
                    $( $check?; )?
                )+
                Ok($name { $($field),+ })
            }
        }
    };
    (@value $raw:ident, [$($key:tt),+], $parser:expr) => {
        $crate::options::declare::read_first($raw, &[$($key),+], &$parser)?
    };
    (@value $raw:ident, [$($key:tt),+], $parser:expr, $default:expr) => {
        $crate::options::declare::read_first($raw, &[$($key),+], &$parser)?.unwrap_or($default)
    };
}

pub(crate) use declare_options;

/// The value of the first of `keys` present in `raw`, parsed; `None` when none is. The parser
/// is taken by reference so this is compiled once per value type, not once per option.
pub(crate) fn read_first<T>(
    raw: &BTreeMap<String, String>,
    keys: &[&str],
    parser: &dyn Fn(&str, &str) -> Result<T>,
) -> Result<Option<T>> {
    for key in keys {
        if let Some(v) = raw.get(*key) {
            return parser(key, v).map(Some);
        }
    }
    Ok(None)
}

/// A whole number in `min..=max` that fits `T`.
pub(crate) fn int<T: TryFrom<i64>>(min: i64, max: i64) -> impl Fn(&str, &str) -> Result<T> {
    move |key, v| parse_int(key, v, min, max)
}

fn parse_int<T: TryFrom<i64>>(key: &str, v: &str, min: i64, max: i64) -> Result<T> {
    let n: i64 = v
        .trim()
        .parse()
        .map_err(|_| Error::invalid_option(key, v, "expected a whole number"))?;
    if n < min || n > max {
        return Err(Error::invalid_option(
            key,
            v,
            format!("must be between {min} and {max}"),
        ));
    }
    T::try_from(n).map_err(|_| Error::invalid_option(key, v, "out of range"))
}

/// A number in `min..=max`.
pub(crate) fn float(min: f64, max: f64) -> impl Fn(&str, &str) -> Result<f64> {
    move |key, v| {
        let x: f64 = v
            .trim()
            .parse()
            .map_err(|_| Error::invalid_option(key, v, "expected a number"))?;
        if !(min..=max).contains(&x) {
            return Err(Error::invalid_option(
                key,
                v,
                format!("must be between {min} and {max}"),
            ));
        }
        Ok(x)
    }
}

/// `true` or `false` (any case, trimmed), else a typed invalid-option error naming `key`.
pub(crate) fn parse_bool(key: &str, v: &str) -> Result<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(Error::invalid_option(key, v, "expected true or false")),
    }
}

/// A memory size in bytes (`128 mb`).
pub(crate) fn memory(key: &str, v: &str) -> Result<u64> {
    parse_memory_size(v).map_err(|why| Error::invalid_option(key, v, why))
}

/// A memory size above zero.
pub(crate) fn positive_memory(key: &str, v: &str) -> Result<u64> {
    match memory(key, v)? {
        0 => Err(Error::invalid_option(key, "0", "must be greater than zero")),
        n => Ok(n),
    }
}

/// A duration in milliseconds (`1 h`).
pub(crate) fn duration_ms(key: &str, v: &str) -> Result<u64> {
    parse_duration_ms(v).map_err(|why| Error::invalid_option(key, v, why))
}

/// The text exactly as given (file name prefixes, which Paimon uses as they are).
pub(crate) fn verbatim(_key: &str, v: &str) -> Result<String> {
    Ok(v.to_string())
}

/// The text, trimmed.
pub(crate) fn text(_key: &str, v: &str) -> Result<String> {
    Ok(v.trim().to_string())
}

/// The text, trimmed and in lower case (format and codec names).
pub(crate) fn lowercase(_key: &str, v: &str) -> Result<String> {
    Ok(v.trim().to_ascii_lowercase())
}

/// An enum-valued option: each variant with the text that spells it (in serialized form too).
/// Values are matched trimmed and in lower case, unless a `spelled` function normalises them
/// otherwise; a value that matches no variant is an invalid-option error listing the texts,
/// or saying what `expected` says.
macro_rules! string_enum {
    (
        $(#[$m:meta])*
        $name:ident { $( $(#[$vm:meta])* $variant:ident = $text:literal ),+ $(,)? }
        $( spelled $spell:path, expected $expected:literal )?
    ) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        pub enum $name { $( $(#[$vm])* #[serde(rename = $text)] $variant ),+ }

        impl $name {
            /// The option value that spells this variant, as Paimon writes it.
            pub fn as_str(self) -> &'static str {
                match self { $( $name::$variant => $text ),+ }
            }

            /// Parses `value` of option `key`.
            pub(crate) fn parse(key: &str, value: &str) -> $crate::error::Result<Self> {
                let spelled = string_enum!(@spell value $(, $spell)?);
                match spelled.as_str() {
                    $( $text => Ok($name::$variant), )+
                    _ => Err($crate::error::Error::invalid_option(
                        key,
                        value,
                        string_enum!(@expected [$($text),+] $(, $expected)?),
                    )),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
    (@spell $v:ident) => { $v.trim().to_ascii_lowercase() };
    (@spell $v:ident, $spell:path) => { $spell($v) };
    (@expected [$($text:literal),+]) => {
        format!("expected one of: {}", [$($text),+].join(", "))
    };
    (@expected [$($text:literal),+], $expected:literal) => { $expected };
}

pub(crate) use string_enum;
