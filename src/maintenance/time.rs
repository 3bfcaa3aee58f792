//! Java's `java.time` parsing as Paimon uses it, on local wall-clock milliseconds (a
//! `LocalDateTime` read as if it were UTC): the partition timestamp formats and the tag
//! period names. Parsing is strict about the text (every character consumed, digits counted
//! as Java's adjacent value parsing counts them) and resolves fields leniently or "smartly"
//! as the formatter says.

pub const DAY_MS: i64 = 86_400_000;

/// Days since 1970-01-01 of a proleptic Gregorian date.
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `(year, month, day)` of days since 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Calendar fields of local milliseconds: year, month, day, hour, minute, second, nanos.
pub fn fields_of(local_ms: i64) -> [i64; 7] {
    let days = local_ms.div_euclid(DAY_MS);
    let ms = local_ms.rem_euclid(DAY_MS);
    let (y, m, d) = civil_from_days(days);
    [
        y,
        m,
        d,
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000 * 1_000_000,
    ]
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn month_len(y: i64, m: i64) -> i64 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(y) => 29,
        2 => 28,
        _ => 31,
    }
}

/// `LocalDateTime.toString()`: `yyyy-MM-ddTHH:mm[:ss[.fff[fff[fff]]]]`.
pub fn local_date_time_string(millis: i64, nanos: i32) -> String {
    let [y, mo, d, h, mi, s, n] = fields_of(millis);
    let nano = n + nanos as i64;
    let mut out = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}");
    if s > 0 || nano > 0 {
        out.push_str(&format!(":{s:02}"));
        if nano > 0 {
            if nano % 1_000_000 == 0 {
                out.push_str(&format!(".{:03}", nano / 1_000_000));
            } else if nano % 1000 == 0 {
                out.push_str(&format!(".{:06}", nano / 1000));
            } else {
                out.push_str(&format!(".{nano:09}"));
            }
        }
    }
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Nano,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sign {
    Normal,
    NotNegative,
    ExceedsPad,
}

/// A number field (Java's `NumberPrinterParser` and the fixed-width subclasses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Num {
    pub field: Field,
    pub min: usize,
    pub max: usize,
    pub sign: Sign,
    /// Digits reserved for the fixed-width fields that follow it without a separator;
    /// `-1` once it stopped being the first of such a run.
    pub subsequent: i64,
    /// `yy`: two digits added to this base.
    pub reduced_base: Option<i64>,
    /// `S..S`: the digits are a fraction of a second.
    pub fraction: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    Num(Num),
    Lit(char),
    /// `.` and 1 to 9 digits of a second (the default partition timestamp format).
    PointFraction,
    Optional(Vec<Tok>),
}

/// Java's `DateTimeFormatterBuilder`: appending a value after a value starts or extends an
/// adjacent run; anything else ends it.
#[derive(Default)]
pub struct Builder {
    toks: Vec<Tok>,
    active: Option<usize>,
}

impl Builder {
    pub fn value(&mut self, mut n: Num) -> &mut Self {
        match self.active {
            Some(a) => {
                let fixed = n.min == n.max && n.sign == Sign::NotNegative;
                if let Tok::Num(base) = &mut self.toks[a] {
                    if fixed {
                        base.subsequent += n.max as i64;
                        n.subsequent = -1;
                        self.toks.push(Tok::Num(n));
                        return self;
                    }
                    base.subsequent = -1;
                }
                self.toks.push(Tok::Num(n));
                self.active = Some(self.toks.len() - 1);
            }
            None => {
                self.toks.push(Tok::Num(n));
                self.active = Some(self.toks.len() - 1);
            }
        }
        self
    }

    pub fn other(&mut self, t: Tok) -> &mut Self {
        self.toks.push(t);
        self.active = None;
        self
    }

    pub fn lit(&mut self, s: &str) -> &mut Self {
        for c in s.chars() {
            self.other(Tok::Lit(c));
        }
        self
    }

    pub fn build(self) -> Vec<Tok> {
        self.toks
    }
}

pub fn num(field: Field, min: usize, max: usize, sign: Sign) -> Num {
    Num {
        field,
        min,
        max,
        sign,
        subsequent: 0,
        reduced_base: None,
        fraction: false,
    }
}

/// Compiles a `DateTimeFormatter.ofPattern` pattern (the letters a date-time partition
/// needs: `y u M L d H m s S`, literals and quoted text).
pub fn compile_pattern(pattern: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut b = Builder::default();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphabetic() {
            let mut n = 1;
            while i + n < chars.len() && chars[i + n] == c {
                n += 1;
            }
            i += n;
            let simple = |field: Field| -> Result<Num, String> {
                match n {
                    1 => Ok(num(field, 1, 19, Sign::Normal)),
                    2 => Ok(num(field, 2, 2, Sign::NotNegative)),
                    _ => Err(format!("too many pattern letters: {c}")),
                }
            };
            let tok = match c {
                'y' | 'u' => match n {
                    2 => Num {
                        reduced_base: Some(2000),
                        ..num(Field::Year, 2, 2, Sign::NotNegative)
                    },
                    1 | 3 => num(Field::Year, n, 19, Sign::Normal),
                    _ => num(Field::Year, n, 19, Sign::ExceedsPad),
                },
                'M' | 'L' if n <= 2 => simple(Field::Month)?,
                'd' => simple(Field::Day)?,
                'H' => simple(Field::Hour)?,
                'm' => simple(Field::Minute)?,
                's' => simple(Field::Second)?,
                'S' if n <= 9 => Num {
                    fraction: true,
                    ..num(Field::Nano, n, n, Sign::NotNegative)
                },
                _ => {
                    return Err(format!(
                        "pattern letter '{c}' ({n}x) is not supported; use y, u, M, d, H, \
                         m, s, S and literals"
                    ))
                }
            };
            b.value(tok);
        } else if c == '\'' {
            let mut j = i + 1;
            let mut text = String::new();
            loop {
                match chars.get(j) {
                    None => return Err("unterminated quote".into()),
                    Some('\'') if chars.get(j + 1) == Some(&'\'') => {
                        text.push('\'');
                        j += 2;
                    }
                    Some('\'') => break,
                    Some(&ch) => {
                        text.push(ch);
                        j += 1;
                    }
                }
            }
            if j == i + 1 {
                text.push('\'');
            }
            b.lit(&text);
            i = j + 1;
        } else if matches!(c, '[' | ']' | '{' | '}' | '#') {
            return Err(format!("'{c}' is not supported in the pattern"));
        } else {
            b.other(Tok::Lit(c));
            i += 1;
        }
    }
    Ok(b.build())
}

type Values = [Option<i64>; 7];

fn slot(f: Field) -> usize {
    f as usize
}

fn set(v: &mut Values, f: Field, x: i64) -> bool {
    match v[slot(f)] {
        Some(old) if old != x => false,
        _ => {
            v[slot(f)] = Some(x);
            true
        }
    }
}

fn digits_at(text: &[char], pos: usize, max: usize) -> usize {
    text[pos..]
        .iter()
        .take(max)
        .take_while(|c| c.is_ascii_digit())
        .count()
}

fn parse_seq(toks: &[Tok], text: &[char], mut pos: usize, v: &mut Values) -> Option<usize> {
    for t in toks {
        match t {
            Tok::Lit(c) => {
                if text.get(pos) != Some(c) {
                    return None;
                }
                pos += 1;
            }
            Tok::Optional(inner) => {
                let saved = *v;
                match parse_seq(inner, text, pos, v) {
                    Some(p) => pos = p,
                    None => *v = saved,
                }
            }
            Tok::PointFraction => {
                if text.get(pos) != Some(&'.') {
                    return None;
                }
                let n = digits_at(text, pos + 1, 9);
                if n == 0 {
                    return None;
                }
                let digits: String = text[pos + 1..pos + 1 + n].iter().collect();
                let x: i64 = digits.parse().ok()?;
                if !set(v, Field::Nano, x * 10i64.pow(9 - n as u32)) {
                    return None;
                }
                pos += 1 + n;
            }
            Tok::Num(n) => {
                // Strict parsing: exactly `min..=max` digits, plus the reserved widths
                // of a run, given back on a second pass (Java's adjacent value parsing).
                if pos + n.min > text.len() {
                    return None;
                }
                let sub = n.subsequent.max(0) as usize;
                let mut width = n.max.saturating_add(sub);
                let mut count = digits_at(text, pos, width);
                if sub > 0 {
                    width = n.min.max(count.saturating_sub(sub));
                    count = digits_at(text, pos, width);
                }
                if count < n.min {
                    return None;
                }
                if n.sign == Sign::ExceedsPad && count > n.min {
                    return None;
                }
                if count > 18 {
                    return None;
                }
                let digits: String = text[pos..pos + count].iter().collect();
                let mut x: i64 = digits.parse().ok()?;
                if let Some(base) = n.reduced_base {
                    x += base;
                }
                if n.fraction {
                    x *= 10i64.pow(9u32.saturating_sub(count as u32));
                }
                if !set(v, n.field, x) {
                    return None;
                }
                pos += count;
            }
        }
    }
    Some(pos)
}

/// The fields of `text` if the whole text matches.
pub fn parse_fields(toks: &[Tok], text: &str) -> Option<Values> {
    let chars: Vec<char> = text.chars().collect();
    let mut v: Values = [None; 7];
    let end = parse_seq(toks, &chars, 0, &mut v)?;
    (end == chars.len()).then_some(v)
}

/// Java's resolver styles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    Smart,
    Lenient,
}

/// The resolved date (epoch day) and time (nanos of day) if they can be built; `Err` when
/// a value is out of range (Java fails the whole parse).
pub fn resolve(v: &Values, style: Style) -> Result<(Option<i64>, Option<i64>), ()> {
    let get = |f: Field| v[slot(f)];
    let mut time: Option<i64> = None;
    let mut excess_days = 0;
    if style == Style::Smart {
        for (f, lo, hi) in [
            (Field::Month, 1, 12),
            (Field::Day, 1, 31),
            (Field::Hour, 0, 24),
            (Field::Minute, 0, 59),
            (Field::Second, 0, 59),
            (Field::Nano, 0, 999_999_999),
        ] {
            if get(f).is_some_and(|x| x < lo || x > hi) {
                return Err(());
            }
        }
    }
    if let Some(h) = get(Field::Hour) {
        let (mi, s, n) = (get(Field::Minute), get(Field::Second), get(Field::Nano));
        let invalid_combination = (mi.is_none() && (s.is_some() || n.is_some()))
            || (mi.is_some() && s.is_none() && n.is_some());
        if !invalid_combination {
            let (mi, s, n) = (mi.unwrap_or(0), s.unwrap_or(0), n.unwrap_or(0));
            if style == Style::Smart && h == 24 {
                if mi != 0 || s != 0 || n != 0 {
                    return Err(());
                }
                excess_days = 1;
                time = Some(0);
            } else {
                let total = h
                    .checked_mul(3_600_000_000_000)
                    .and_then(|t| t.checked_add(mi.checked_mul(60_000_000_000)?))
                    .and_then(|t| t.checked_add(s.checked_mul(1_000_000_000)?))
                    .and_then(|t| t.checked_add(n))
                    .ok_or(())?;
                let day = 86_400_000_000_000;
                excess_days = total.div_euclid(day);
                time = Some(total.rem_euclid(day));
            }
        }
    }
    let date = match (get(Field::Year), get(Field::Month), get(Field::Day)) {
        (Some(y), Some(m), Some(d)) => Some(match style {
            Style::Lenient => {
                let months = y
                    .checked_mul(12)
                    .and_then(|t| t.checked_add(m - 1))
                    .ok_or(())?;
                let (ny, nm) = (months.div_euclid(12), months.rem_euclid(12) + 1);
                days_from_civil(ny, nm, 1) + (d - 1)
            }
            Style::Smart => days_from_civil(y, m, d.min(month_len(y, m))),
        }),
        _ => None,
    };
    Ok((date.map(|d| d + excess_days), time))
}

/// `LocalDateTime.parse`, falling back to `LocalDate.parse` at midnight: local ms.
pub fn parse_date_time_or_date(toks: &[Tok], text: &str, style: Style) -> Option<i64> {
    let v = parse_fields(toks, text)?;
    let (date, time) = resolve(&v, style).ok()?;
    let date = date?;
    let nanos = time.unwrap_or(0);
    local_ms(date, nanos)
}

/// `LocalDateTime.parse` only: local ms.
pub fn parse_date_time(toks: &[Tok], text: &str, style: Style) -> Option<i64> {
    let v = parse_fields(toks, text)?;
    let (date, time) = resolve(&v, style).ok()?;
    local_ms(date?, time?)
}

/// `LocalDate.parse(...).atStartOfDay()`: local ms.
pub fn parse_date(toks: &[Tok], text: &str, style: Style) -> Option<i64> {
    let v = parse_fields(toks, text)?;
    let (date, _) = resolve(&v, style).ok()?;
    local_ms(date?, 0)
}

/// Paimon's default partition timestamp format: `y-M-d[ H:m:s[.fraction]]`, lenient,
/// falling back to the date at midnight.
pub fn default_timestamp_tokens() -> Vec<Tok> {
    let mut b = Builder::default();
    b.value(num(Field::Year, 1, 10, Sign::Normal))
        .lit("-")
        .value(num(Field::Month, 1, 2, Sign::Normal))
        .lit("-")
        .value(num(Field::Day, 1, 2, Sign::Normal));
    let mut t = Builder::default();
    t.lit(" ")
        .value(num(Field::Hour, 1, 2, Sign::Normal))
        .lit(":")
        .value(num(Field::Minute, 1, 2, Sign::Normal))
        .lit(":")
        .value(num(Field::Second, 1, 2, Sign::Normal))
        .other(Tok::Optional(vec![Tok::PointFraction]));
    b.other(Tok::Optional(t.build()));
    b.build()
}

/// `toLocalDateTimeDefault`: local ms.
pub fn parse_default_timestamp(text: &str) -> Option<i64> {
    // LocalDateTime with the timestamp format, else LocalDate with the date format; the
    // date format is the timestamp format's first part, so one parse decides both.
    let toks = default_timestamp_tokens();
    let v = parse_fields(&toks, text)?;
    let (date, time) = resolve(&v, Style::Lenient).ok()?;
    local_ms(date?, time.unwrap_or(0))
}

/// Local ms of a day number and the nanoseconds into it; `None` past `i64` milliseconds (a
/// year of ten digits), where Java's `toEpochMilli` throws.
fn local_ms(date: i64, nanos: i64) -> Option<i64> {
    date.checked_mul(DAY_MS)?.checked_add(nanos / 1_000_000)
}

/// Local ms of a date-time given field by field, as Java's `LocalDateTime.of` takes them:
/// `None` for a field outside its range (where Java throws: a year beyond ±999 999 999, a
/// month not 1 to 12, a day past its month, an hour, minute, second or nanosecond out of
/// range) or a time past `i64` milliseconds.
pub fn local_date_time_ms([year, month, day, hour, minute, second, nano]: [i64; 7]) -> Option<i64> {
    let valid = (-999_999_999..=999_999_999).contains(&year)
        && (1..=12).contains(&month)
        && (1..=month_len(year, month)).contains(&day)
        && (0..24).contains(&hour)
        && (0..60).contains(&minute)
        && (0..60).contains(&second)
        && (0..1_000_000_000).contains(&nano);
    if !valid {
        return None;
    }
    let nanos = ((hour * 60 + minute) * 60 + second) * 1_000_000_000 + nano;
    local_ms(days_from_civil(year, month, day), nanos)
}

/// A `partition.timestamp-formatter` read (SMART resolution): local ms.
pub fn parse_with_pattern(pattern: &str, text: &str) -> Option<i64> {
    let toks = compile_pattern(pattern).ok()?;
    parse_date_time_or_date(&toks, text, Style::Smart)
}

/// Formats local ms with number/literal tokens (tag names).
pub fn format(toks: &[Tok], local_ms: i64) -> String {
    let f = fields_of(local_ms);
    let mut out = String::new();
    for t in toks {
        match t {
            Tok::Lit(c) => out.push(*c),
            Tok::Num(n) => {
                let x = f[slot(n.field)];
                out.push_str(&format!("{x:0width$}", width = n.min));
            }
            Tok::PointFraction | Tok::Optional(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(y: i64, m: i64, d: i64, h: i64, mi: i64, s: i64) -> i64 {
        days_from_civil(y, m, d) * DAY_MS + ((h * 60 + mi) * 60 + s) * 1000
    }

    /// Expectations from JDK 17 (`java.time`), see the module docs.
    #[test]
    fn default_partition_timestamps_as_java_reads_them() {
        assert_eq!(
            parse_default_timestamp("2024-1-2"),
            Some(ms(2024, 1, 2, 0, 0, 0))
        );
        assert_eq!(
            parse_default_timestamp("2024-13-40 25:61:61.5"),
            Some(ms(2025, 2, 10, 2, 2, 1) + 500)
        );
        assert_eq!(parse_default_timestamp("2024-01-02 10:00"), None);
        assert_eq!(parse_default_timestamp("abcd"), None);
        assert_eq!(
            parse_default_timestamp("2024-01-02 10:00:00"),
            Some(ms(2024, 1, 2, 10, 0, 0))
        );
        assert_eq!(parse_default_timestamp("20240102"), None);
        // Years whose milliseconds overflow an i64 (Java's toEpochMilli throws): none, not a
        // wrapped time (the `options` fuzz target's finding, `fuzz/README.md`).
        assert_eq!(
            parse_default_timestamp("8000555526-09-02 0:3:0.004252"),
            None
        );
        assert_eq!(parse_default_timestamp("999999999-12-31"), None);
        assert_eq!(
            parse_default_timestamp("200000000-01-01"),
            Some(ms(200_000_000, 1, 1, 0, 0, 0))
        );
    }

    #[test]
    fn formatter_patterns_as_java_reads_them() {
        let p = |f: &str, t: &str| parse_with_pattern(f, t);
        assert_eq!(p("yyyyMMdd", "20240102"), Some(ms(2024, 1, 2, 0, 0, 0)));
        assert_eq!(
            p("yyyyMMddHH", "2024010210"),
            Some(ms(2024, 1, 2, 10, 0, 0))
        );
        assert_eq!(
            p("yyyy-MM-dd HH:mm:ss", "2024-01-02 10:00:00"),
            Some(ms(2024, 1, 2, 10, 0, 0))
        );
        assert_eq!(
            p("yyyy-MM-dd", "2024-02-30"),
            Some(ms(2024, 2, 29, 0, 0, 0))
        );
        assert_eq!(p("yyyy-MM-dd", "2024-02-32"), None);
        assert_eq!(
            p("yyyy-MM-dd HH", "2024-02-03 24"),
            Some(ms(2024, 2, 4, 0, 0, 0))
        );
        assert_eq!(p("yyyy-MM-dd HH", "2024-01-02 25"), None);
        assert_eq!(p("yyyy-M-d", "2024-2-3"), Some(ms(2024, 2, 3, 0, 0, 0)));
        assert_eq!(p("yyMMdd", "240203"), Some(ms(2024, 2, 3, 0, 0, 0)));
        assert_eq!(
            p("yyyyMMddHHmmssSSS", "20240203101112123"),
            Some(ms(2024, 2, 3, 10, 11, 12) + 123)
        );
        assert_eq!(
            p("yyyy-MM-dd'T'HH", "2024-01-02T10"),
            Some(ms(2024, 1, 2, 10, 0, 0))
        );
        assert_eq!(
            p("yyyy-MM-dd mmss", "2024-01-02 0510"),
            Some(ms(2024, 1, 2, 0, 0, 0))
        );
        assert_eq!(p("yyyy-MM-dd", "2024-1-02"), None);
        assert_eq!(p("yyyy-MM-dd", "12024-01-02"), None);
        assert_eq!(p("y-M-d", "2024-1-2"), Some(ms(2024, 1, 2, 0, 0, 0)));
        assert_eq!(p("dd-MM-yyyy", "02-01-2024"), Some(ms(2024, 1, 2, 0, 0, 0)));
        assert_eq!(p("MMdd", "0102"), None);
        assert_eq!(p("uuuuMMdd", "20240102"), Some(ms(2024, 1, 2, 0, 0, 0)));
        for (f, t, want) in [
            ("yyyyMdd", "2024102", None),
            ("yyyyMdd", "20241002", None),
            ("yyyy-M-dd", "2024-1-02", Some(ms(2024, 1, 2, 0, 0, 0))),
            (
                "yyyyMMddHHmm",
                "202401021030",
                Some(ms(2024, 1, 2, 10, 30, 0)),
            ),
            ("yyyy-MM-dd HH:mm:ss", "2024-01-02 10:00:60", None),
            (
                "yyyy-MM-dd HH:mm:ss",
                "2024-01-02 24:00:00",
                Some(ms(2024, 1, 3, 0, 0, 0)),
            ),
            ("yyyy-MM-dd", "2023-02-29", Some(ms(2023, 2, 28, 0, 0, 0))),
            ("yyyy-MM-dd", "2024-00-10", None),
            ("yyyy-MM-dd HH", "2024-01-02 7", None),
            (
                "yyyy-MM-dd H",
                "2024-01-02 7",
                Some(ms(2024, 1, 2, 7, 0, 0)),
            ),
            ("yyyyMMdd", "2024010", None),
            ("yyyyMMdd", "202401021", None),
            ("yyyy.MM.dd", "2024.01.02", Some(ms(2024, 1, 2, 0, 0, 0))),
            ("yy-MM-dd", "99-01-02", Some(ms(2099, 1, 2, 0, 0, 0))),
            ("yyyy-MM-dd'T'HH:mm:ss.SSS", "2024-01-02T10:00:00.5", None),
            (
                "yyyyMMddHHmmss",
                "20240102100000",
                Some(ms(2024, 1, 2, 10, 0, 0)),
            ),
            ("yyyy-MM-dd HH:mm", "2024-01-02 10:5", None),
            ("d/M/yyyy", "2/1/2024", Some(ms(2024, 1, 2, 0, 0, 0))),
            ("yyyyMMdd", "+20240102", None),
        ] {
            assert_eq!(p(f, t), want, "{f} {t}");
        }
        assert!(compile_pattern("yyyy-MMM-dd").is_err());
        assert!(compile_pattern("yyyy-MM-ddd").is_err());
    }

    #[test]
    fn local_date_time_strings() {
        assert_eq!(
            local_date_time_string(ms(2024, 1, 2, 10, 0, 0), 0),
            "2024-01-02T10:00"
        );
        assert_eq!(
            local_date_time_string(ms(2024, 1, 2, 10, 0, 5), 0),
            "2024-01-02T10:00:05"
        );
        assert_eq!(
            local_date_time_string(ms(2024, 1, 2, 10, 0, 5) + 120, 0),
            "2024-01-02T10:00:05.120"
        );
        for d in [-800_000, -1, 0, 1, 19_000, 2_000_000] {
            let (y, m, dd) = civil_from_days(d);
            assert_eq!(days_from_civil(y, m, dd), d);
        }
    }
}
