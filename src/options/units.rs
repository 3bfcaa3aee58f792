//! Paimon's textual units: memory sizes (`"128 mb"`) and durations (`"1 h"`).
//!
//! Both are a non-negative integer followed by an optional unit, with optional white space in
//! between, case-insensitive. A bare number is bytes for sizes and milliseconds for durations.

/// Parses a memory size into bytes. Units are binary (`kb` = 1024).
pub fn parse_memory_size(text: &str) -> Result<u64, String> {
    let (value, unit) = split_number(text)?;
    let multiplier: u64 = match unit.as_str() {
        "" | "b" | "bytes" => 1,
        "k" | "kb" | "kibibytes" => 1 << 10,
        "m" | "mb" | "mebibytes" => 1 << 20,
        "g" | "gb" | "gibibytes" => 1 << 30,
        "t" | "tb" | "tebibytes" => 1 << 40,
        other => {
            return Err(format!(
                "unknown memory unit '{other}' (use b, kb, mb, gb or tb)"
            ))
        }
    };
    value
        .checked_mul(multiplier)
        .filter(|v| *v <= i64::MAX as u64)
        .ok_or_else(|| "numeric overflow: does not fit in 64 bits".to_string())
}

/// Parses a duration into milliseconds (sub-millisecond units are truncated).
pub fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let (value, unit) = split_number(text)?;
    let (mul, div): (u64, u64) = match unit.as_str() {
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => (1, 1),
        "d" | "day" | "days" => (86_400_000, 1),
        "h" | "hour" | "hours" => (3_600_000, 1),
        "min" | "m" | "minute" | "minutes" => (60_000, 1),
        "s" | "sec" | "secs" | "second" | "seconds" => (1_000, 1),
        "µs" | "micro" | "micros" | "microsecond" | "microseconds" => (1, 1_000),
        "ns" | "nano" | "nanos" | "nanosecond" | "nanoseconds" => (1, 1_000_000),
        other => {
            return Err(format!(
                "unknown time unit '{other}' (use ms, s, min, h or d)"
            ))
        }
    };
    value
        .checked_mul(mul)
        .map(|v| v / div)
        .ok_or_else(|| "numeric overflow: does not fit in 64 bits".to_string())
}

fn split_number(text: &str) -> Result<(u64, String), String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("empty value".into());
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err("must start with a non-negative whole number".into());
    }
    let value: u64 = t[..digits]
        .parse()
        .map_err(|_| "numeric overflow: does not fit in 64 bits".to_string())?;
    Ok((value, t[digits..].trim().to_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes() {
        assert_eq!(parse_memory_size("128 mb"), Ok(128 << 20));
        assert_eq!(parse_memory_size("64MB"), Ok(64 << 20));
        assert_eq!(parse_memory_size(" 100 b "), Ok(100));
        assert_eq!(parse_memory_size("7"), Ok(7));
        assert_eq!(parse_memory_size("2 gibibytes"), Ok(2 << 30));
        assert!(parse_memory_size("12 parsecs").is_err());
        assert!(parse_memory_size("-1 mb").is_err());
        assert!(parse_memory_size("mb").is_err());
        assert!(parse_memory_size("99999999999 tb").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("1 h"), Ok(3_600_000));
        assert_eq!(parse_duration_ms("30min"), Ok(1_800_000));
        assert_eq!(parse_duration_ms("2 s"), Ok(2_000));
        assert_eq!(parse_duration_ms("1500"), Ok(1_500));
        assert_eq!(parse_duration_ms("1 d"), Ok(86_400_000));
        assert!(parse_duration_ms("1 fortnight").is_err());
        assert!(parse_duration_ms("").is_err());
    }
}
