//! Bounded STRING statistics: a long min or max is cut to a prefix, as parquet-rs's writer
//! cuts them (`statistics_truncate_length` for the chunk statistics,
//! `column_index_truncate_length` for the column index, 64 bytes each by default), so a column
//! of long strings written by this project's dictionary writer carries the same bounds, and a
//! footer or page index of the same size, as one written by arrow-rs.
//!
//! A cut min is a prefix, which sorts at or below the value. A cut max must still sort at or
//! above it, so its last character is moved up by one; when nothing can be moved up (all
//! characters at their width's limit) the value stays whole. UTF-8 values are cut on character
//! boundaries and stay valid UTF-8; a character never grows into a wider encoding.

/// A lower bound of `v` of at most `limit` bytes, and whether it is `v` itself.
pub(crate) fn lower_bound(v: &[u8], limit: Option<usize>) -> (Vec<u8>, bool) {
    let Some(limit) = limit.filter(|&l| v.len() > l) else {
        return (v.to_vec(), true);
    };
    let cut = match std::str::from_utf8(v) {
        // The longest non-empty prefix ending on a character boundary.
        Ok(s) => (1..=limit).rev().find(|&k| s.is_char_boundary(k)),
        Err(_) => Some(limit),
    };
    match cut {
        Some(k) => (v[..k].to_vec(), false),
        None => (v.to_vec(), true),
    }
}

/// An upper bound of `v` of at most `limit` bytes, and whether it is `v` itself.
pub(crate) fn upper_bound(v: &[u8], limit: Option<usize>) -> (Vec<u8>, bool) {
    let Some(limit) = limit.filter(|&l| v.len() > l) else {
        return (v.to_vec(), true);
    };
    let bumped = match std::str::from_utf8(v) {
        // A boundary at most 3 bytes (one character) short of the limit.
        Ok(s) => (limit.saturating_sub(3)..=limit)
            .rev()
            .find(|&k| s.is_char_boundary(k))
            .and_then(|k| bump_last_char(&s[..k])),
        Err(_) => bump_bytes(v[..limit].to_vec()),
    };
    match bumped {
        Some(b) => (b, false),
        None => (v.to_vec(), true),
    }
}

/// `s` with its last character that can be moved up by one code point (keeping its width)
/// moved up, and everything after it dropped.
fn bump_last_char(s: &str) -> Option<Vec<u8>> {
    s.char_indices().rev().find_map(|(at, c)| {
        let next = char::from_u32(c as u32 + 1).filter(|n| n.len_utf8() == c.len_utf8())?;
        let mut out = s.as_bytes()[..at].to_vec();
        let mut buf = [0u8; 4];
        out.extend_from_slice(next.encode_utf8(&mut buf).as_bytes());
        Some(out)
    })
}

/// The bytes plus one in their last position, carrying leftwards; `None` when all are 0xFF.
fn bump_bytes(mut b: Vec<u8>) -> Option<Vec<u8>> {
    for byte in b.iter_mut().rev() {
        let (next, overflow) = byte.overflowing_add(1);
        *byte = next;
        if !overflow {
            return Some(b);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_stay_exact() {
        assert_eq!(lower_bound(b"abc", Some(3)), (b"abc".to_vec(), true));
        assert_eq!(upper_bound(b"abc", Some(3)), (b"abc".to_vec(), true));
        assert_eq!(upper_bound(b"abcdef", None), (b"abcdef".to_vec(), true));
    }

    #[test]
    fn ascii_is_cut_and_the_max_moved_up() {
        assert_eq!(lower_bound(b"abcdef", Some(4)), (b"abcd".to_vec(), false));
        assert_eq!(upper_bound(b"abcdef", Some(4)), (b"abce".to_vec(), false));
    }

    #[test]
    fn utf8_is_cut_on_character_boundaries() {
        // "é" is two bytes: a cut at 3 would split the second one.
        let v = "aéé".as_bytes();
        assert_eq!(lower_bound(v, Some(4)), ("aé".as_bytes().to_vec(), false));
        let (max, exact) = upper_bound(v, Some(4));
        assert!(!exact);
        assert_eq!(String::from_utf8(max.clone()).unwrap(), "aê");
        assert!(max.as_slice() > v);
    }

    #[test]
    fn a_character_at_its_width_limit_is_dropped_and_the_one_before_moved_up() {
        // U+007F cannot move up within one byte; U+FFFF (3 bytes) cannot either.
        assert_eq!(
            upper_bound("ab\u{7f}xyz".as_bytes(), Some(3)).0,
            b"ac".to_vec()
        );
        let v = "\u{ffff}\u{ffff}\u{ffff}".as_bytes();
        assert_eq!(upper_bound(v, Some(6)), (v.to_vec(), true));
    }

    #[test]
    fn bounds_hold_for_every_cut() {
        let values: [&str; 4] = [
            "zzzz\u{10ffff}x",
            "añb☃c𝄞d",
            "\u{7f}\u{7f}\u{7f}\u{7f}",
            "plain",
        ];
        for v in values {
            for limit in 0..v.len() + 2 {
                let (lo, _) = lower_bound(v.as_bytes(), Some(limit));
                let (hi, _) = upper_bound(v.as_bytes(), Some(limit));
                assert!(lo.as_slice() <= v.as_bytes(), "{v:?} {limit}");
                assert!(hi.as_slice() >= v.as_bytes(), "{v:?} {limit}");
                assert!(std::str::from_utf8(&lo).is_ok() && std::str::from_utf8(&hi).is_ok());
            }
        }
    }

    #[test]
    fn binary_carries_over_ff() {
        assert_eq!(
            upper_bound(&[0x61, 0xff, 0xff, 0x01], Some(3)),
            (vec![0x62, 0x00, 0x00], false)
        );
        assert_eq!(
            upper_bound(&[0xff, 0xff, 0xfe], Some(2)),
            (vec![0xff, 0xff, 0xfe], true)
        );
    }
}
