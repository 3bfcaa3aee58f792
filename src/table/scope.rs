//! What one compaction job covers and which table options it runs with: the arguments of
//! Paimon's dedicated compaction job (`--partition`, `--where`, `--partition-idle-time`,
//! `--buckets`, dynamic table options), described in `docs/dedicated-job.md`.
//!
//! Hosts hand the arguments over as text ([`JobScope`]), exactly as a user typed them, so that
//! the CLI, the component and Node share one parser and one set of error messages. They are
//! resolved against the table's latest schema ([`ResolvedScope::resolve`]): a key that is not a
//! partition column, a malformed range or an unsupported operator is a typed
//! `invalid-option` error naming the argument, before anything is read beyond the schema.

use std::collections::{BTreeMap, BTreeSet};

use super::binary_row::Datum;
use super::schema::{DataType, TableSchema, TypeRoot};
use crate::error::{Error, Result};
use crate::options::parse_duration_ms;

/// The scope and overrides of a job, as text (see the module documentation). The default
/// covers every partition and bucket with the table's own options.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct JobScope {
    /// Partition specs `k1=v1,k2=v2`, each naming some or all partition columns; a partition
    /// is in scope when it matches any of them. Empty: no restriction.
    pub partitions: Vec<String>,
    /// A predicate over partition columns (`dt >= '2025-01-01' AND region IN ('eu', 'us')`).
    /// Not allowed together with `partitions`, as in Paimon's action.
    #[serde(rename = "where")]
    pub where_clause: Option<String>,
    /// Only partitions whose newest live file was created at least this long ago
    /// (`1 d`, `12h`, ...).
    pub partition_idle_time: Option<String>,
    /// Bucket ranges `0-3,7` (fixed-bucket tables only).
    pub buckets: Option<String>,
    /// Dynamic table options for this job only (`compaction.force-rewrite-all-files=true`);
    /// the schema file is never changed.
    pub options: Vec<(String, String)>,
}

impl JobScope {
    /// Whether the scope restricts nothing and overrides nothing.
    pub fn is_everything(&self) -> bool {
        *self == JobScope::default()
    }
}

/// Options a job may not override: they define what the stored data means or where it lives,
/// so changing them for one job would rewrite files that the table's readers and writers then
/// misread. `write-only` is handled apart: the job always runs with it off.
const FIXED_OPTIONS: &[&str] = &[
    "bucket",
    "bucket-key",
    "bucket-function.type",
    "primary-key",
    "partition",
    "merge-engine",
    "sequence.field",
    "sequence.field.sort-order",
    "partition.default-name",
    "data-file.path-directory",
    "row-tracking.enabled",
    "data-evolution.enabled",
    "deletion-vectors.enabled",
    "changelog-producer",
    "ignore-delete",
    "partial-update.ignore-delete",
    "first-row.ignore-delete",
    "deduplicate.ignore-delete",
    "partial-update.remove-record-on-delete",
    "partial-update.remove-record-on-sequence-group",
    "aggregation.remove-record-on-delete",
    "fields.default-aggregate-function",
];

/// Per-field option suffixes a job may not override (`fields.<f>.<suffix>`), for the same
/// reason as [`FIXED_OPTIONS`].
const FIXED_FIELD_SUFFIXES: &[&str] = &[
    "aggregate-function",
    "ignore-retract",
    "sequence-group",
    "distinct",
    "list-agg-delimiter",
    "nested-key",
    "nested-sequence-field",
    "nested-key-null-strategy",
    "count-limit",
    "ts-field",
    "default-value",
];

/// The keys that switch writers' compaction off; a job runs with them off whatever it is told.
pub const WRITE_ONLY_KEYS: [&str; 2] = ["write-only", "write.compaction-skip"];

/// Applies a job's dynamic options to the schema's options (in memory) and forces
/// `write-only = false`, as Paimon's compact action does: a dedicated job compacts the tables
/// whose writers skip compaction. Returns warnings for overrides that were ignored.
pub fn job_options(
    table_options: &BTreeMap<String, String>,
    overrides: &[(String, String)],
) -> Result<(BTreeMap<String, String>, Vec<String>)> {
    let mut out = table_options.clone();
    let mut warnings = Vec::new();
    for (key, value) in overrides {
        let key = key.trim();
        if key.is_empty() {
            return Err(Error::invalid_option(
                "option",
                &format!("={value}"),
                "a dynamic option needs a key (key=value)",
            ));
        }
        let field_suffix = key
            .strip_prefix("fields.")
            .and_then(|rest| rest.split_once('.'))
            .map(|(_, suffix)| suffix);
        if FIXED_OPTIONS.contains(&key)
            || field_suffix.is_some_and(|s| FIXED_FIELD_SUFFIXES.contains(&s))
        {
            return Err(Error::invalid_option(
                key,
                value,
                "defines how the table's data is stored or merged and cannot be overridden for \
                 one job (change it with ALTER TABLE)",
            ));
        }
        if WRITE_ONLY_KEYS.contains(&key) {
            warnings.push(format!(
                "dynamic option '{key}={value}' ignored: a dedicated compaction job always runs \
                 with write-only off"
            ));
            continue;
        }
        out.insert(key.to_string(), value.trim().to_string());
    }
    for k in WRITE_ONLY_KEYS {
        out.remove(k);
    }
    Ok((out, warnings))
}

/// A [`JobScope`] checked against a table's schema.
#[derive(Clone, Debug, Default)]
pub struct ResolvedScope {
    filter: Option<Predicate>,
    idle_ms: Option<u64>,
    buckets: Option<BTreeSet<i32>>,
}

impl ResolvedScope {
    /// Parses and checks every argument against `schema` (whose options are the job's).
    pub fn resolve(scope: &JobScope, schema: &TableSchema, bucket_count: i32) -> Result<Self> {
        let columns: Vec<(String, DataType)> = schema
            .partition_fields()
            .iter()
            .map(|f| (f.name.clone(), f.data_type.clone()))
            .collect();
        let default_name = schema
            .options
            .get("partition.default-name")
            .map(String::as_str)
            .unwrap_or(super::path::DEFAULT_PARTITION_NAME);
        let where_clause = scope
            .where_clause
            .as_deref()
            .filter(|w| !w.trim().is_empty());
        if !scope.partitions.is_empty() && where_clause.is_some() {
            return Err(Error::invalid_option(
                "where",
                where_clause.unwrap_or_default(),
                "--partition and --where cannot be used together",
            ));
        }
        let filter = if !scope.partitions.is_empty() {
            let specs = scope
                .partitions
                .iter()
                .map(|s| partition_spec(s, &columns, default_name))
                .collect::<Result<Vec<_>>>()?;
            Some(Predicate::Or(specs))
        } else if let Some(w) = where_clause {
            Some(Parser::parse(w, &columns)?)
        } else {
            None
        };
        let idle_ms = scope
            .partition_idle_time
            .as_deref()
            .map(|t| {
                parse_duration_ms(t)
                    .map_err(|why| Error::invalid_option("partition-idle-time", t, why))
            })
            .transpose()?;
        let buckets = scope
            .buckets
            .as_deref()
            .map(|text| bucket_ranges(text, bucket_count))
            .transpose()?;
        Ok(ResolvedScope {
            filter,
            idle_ms,
            buckets,
        })
    }

    /// Whether a partition (its typed values, in partition-column order) is in scope.
    pub fn partition_matches(&self, values: &[Datum], types: &[DataType]) -> bool {
        self.filter.as_ref().is_none_or(|p| p.eval(values, types))
    }

    /// Whether a partition whose newest live file was created at `newest_file_ms` has been
    /// idle long enough at `now_ms`.
    pub fn idle_enough(&self, newest_file_ms: i64, now_ms: i64) -> bool {
        self.idle_ms.is_none_or(|idle| {
            newest_file_ms <= now_ms.saturating_sub(i64::try_from(idle).unwrap_or(i64::MAX))
        })
    }

    /// Whether a bucket is in scope.
    pub fn bucket_matches(&self, bucket: i32) -> bool {
        self.buckets.as_ref().is_none_or(|b| b.contains(&bucket))
    }
}

/// `N` or `A-B` items separated by commas, each within `[0, bucket_count)`.
fn bucket_ranges(text: &str, bucket_count: i32) -> Result<BTreeSet<i32>> {
    let bad = |why: String| Error::invalid_option("buckets", text, why);
    if bucket_count <= 0 {
        return Err(bad(format!(
            "only fixed-bucket tables can be scoped by bucket (this table has 'bucket' = \
             {bucket_count})"
        )));
    }
    let mut out = BTreeSet::new();
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(bad("empty item (use e.g. 0-3,7)".into()));
        }
        let num = |s: &str| -> Result<i32> {
            let n: i32 = s
                .trim()
                .parse()
                .map_err(|_| bad(format!("'{s}' is not a bucket number")))?;
            if !(0..bucket_count).contains(&n) {
                return Err(bad(format!(
                    "bucket {n} is outside 0..{} of this table",
                    bucket_count - 1
                )));
            }
            Ok(n)
        };
        let (a, b) = match item.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let n = num(item)?;
                (n, n)
            }
        };
        if a > b {
            return Err(bad(format!("range {a}-{b} runs backwards")));
        }
        out.extend(a..=b);
    }
    Ok(out)
}

/// `k1=v1,k2=v2` as the conjunction of equalities (the default partition name is null).
fn partition_spec(
    text: &str,
    columns: &[(String, DataType)],
    default_name: &str,
) -> Result<Predicate> {
    let bad = |why: String| Error::invalid_option("partition", text, why);
    if columns.is_empty() {
        return Err(bad("the table is not partitioned".into()));
    }
    let mut terms = Vec::new();
    let mut seen = BTreeSet::new();
    for pair in text.split(',') {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| bad(format!("'{pair}' is not key=value")))?;
        let k = k.trim();
        let column = column_index(columns, k).ok_or_else(|| {
            bad(format!(
                "'{k}' is not a partition column (partition columns: {})",
                column_names(columns)
            ))
        })?;
        if !seen.insert(column) {
            return Err(bad(format!("'{k}' is given twice")));
        }
        let v = v.trim();
        terms.push(if v == default_name {
            Predicate::IsNull {
                column,
                negated: false,
            }
        } else {
            Predicate::Compare {
                column,
                op: CmpOp::Eq,
                value: Literal::Text(v.to_string()),
            }
        });
    }
    Ok(Predicate::And(terms))
}

fn column_index(columns: &[(String, DataType)], name: &str) -> Option<usize> {
    columns.iter().position(|(n, _)| n == name).or_else(|| {
        columns
            .iter()
            .position(|(n, _)| n.eq_ignore_ascii_case(name))
    })
}

fn column_names(columns: &[(String, DataType)]) -> String {
    columns
        .iter()
        .map(|(n, _)| n.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A literal of the predicate language: quoted text, or a bare number or boolean (kept as
/// written; it is interpreted by the column's type when compared).
#[derive(Clone, Debug, PartialEq)]
enum Literal {
    Text(String),
    Bare(String),
}

impl Literal {
    fn text(&self) -> &str {
        match self {
            Literal::Text(s) | Literal::Bare(s) => s,
        }
    }
}

/// A predicate over partition values (SQL semantics: a comparison with a null is false).
#[derive(Clone, Debug, PartialEq)]
enum Predicate {
    And(Vec<Predicate>),
    Or(Vec<Predicate>),
    Compare {
        column: usize,
        op: CmpOp,
        value: Literal,
    },
    In {
        column: usize,
        values: Vec<Literal>,
    },
    IsNull {
        column: usize,
        negated: bool,
    },
}

impl Predicate {
    fn eval(&self, values: &[Datum], types: &[DataType]) -> bool {
        let at = |c: usize| values.get(c).zip(types.get(c));
        match self {
            Predicate::And(ps) => ps.iter().all(|p| p.eval(values, types)),
            Predicate::Or(ps) => ps.iter().any(|p| p.eval(values, types)),
            Predicate::IsNull { column, negated } => {
                at(*column).is_some_and(|(v, _)| v.is_null() != *negated)
            }
            Predicate::Compare { column, op, value } => at(*column).is_some_and(|(v, t)| {
                compare(v, t, value).is_some_and(|o| match op {
                    CmpOp::Eq => o.is_eq(),
                    CmpOp::Ne => o.is_ne(),
                    CmpOp::Lt => o.is_lt(),
                    CmpOp::Le => o.is_le(),
                    CmpOp::Gt => o.is_gt(),
                    CmpOp::Ge => o.is_ge(),
                })
            }),
            Predicate::In { column, values: ls } => at(*column).is_some_and(|(v, t)| {
                ls.iter()
                    .any(|l| compare(v, t, l).is_some_and(|o| o.is_eq()))
            }),
        }
    }
}

/// Orders a partition value against a literal by the column's type: integers and decimals
/// numerically and exactly, floating point as `f64`, booleans as booleans, everything else
/// (strings, dates, times, timestamps) by the text Paimon writes in partition paths, which
/// for ISO dates and times is their order. `None`: null, or a literal the type cannot hold.
fn compare(v: &Datum, t: &DataType, lit: &Literal) -> Option<std::cmp::Ordering> {
    let text = lit.text().trim();
    match v {
        Datum::Null => None,
        Datum::TinyInt(_) | Datum::SmallInt(_) | Datum::Int(_) | Datum::BigInt(_) => {
            let x: i128 = match v {
                Datum::TinyInt(x) => *x as i128,
                Datum::SmallInt(x) => *x as i128,
                Datum::Int(x) => *x as i128,
                Datum::BigInt(x) => *x as i128,
                _ => return None,
            };
            match text.parse::<i128>() {
                Ok(y) => Some(x.cmp(&y)),
                Err(_) => decimal_cmp(&x.to_string(), text),
            }
        }
        Datum::Float(_) | Datum::Double(_) => {
            let x = match v {
                Datum::Float(x) => *x as f64,
                Datum::Double(x) => *x,
                _ => return None,
            };
            let y: f64 = text.parse().ok()?;
            x.partial_cmp(&y)
        }
        Datum::Decimal(_) => decimal_cmp(&v.to_partition_string(t)?, text),
        Datum::Boolean(b) => {
            let y = match text.to_ascii_lowercase().as_str() {
                "true" => true,
                "false" => false,
                _ => return None,
            };
            Some(b.cmp(&y))
        }
        _ => Some(v.to_partition_string(t)?.as_str().cmp(text)),
    }
}

/// Compares two decimal numbers written as text (`-12.50`, `3`), exactly.
fn decimal_cmp(a: &str, b: &str) -> Option<std::cmp::Ordering> {
    use std::cmp::Ordering;
    fn split(s: &str) -> Option<(bool, String, String)> {
        let (neg, s) = match s.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, s.strip_prefix('+').unwrap_or(s)),
        };
        let (i, f) = s.split_once('.').unwrap_or((s, ""));
        if i.is_empty() && f.is_empty()
            || !i.bytes().all(|c| c.is_ascii_digit())
            || !f.bytes().all(|c| c.is_ascii_digit())
        {
            return None;
        }
        let i = i.trim_start_matches('0').to_string();
        let f = f.trim_end_matches('0').to_string();
        let zero = i.is_empty() && f.is_empty();
        Some((neg && !zero, i, f))
    }
    let (na, ia, fa) = split(a)?;
    let (nb, ib, fb) = split(b)?;
    let magnitude = ia
        .len()
        .cmp(&ib.len())
        .then_with(|| ia.cmp(&ib))
        .then_with(|| fa.cmp(&fb));
    Some(match (na, nb) {
        (false, true) => Ordering::Greater,
        (true, false) => Ordering::Less,
        (false, false) => magnitude,
        (true, true) => magnitude.reverse(),
    })
}

/// The `--where` language: comparisons (`=`, `<>`, `<`, `<=`, `>`, `>=`), `IN (...)`,
/// `IS [NOT] NULL`, `AND`, `OR` and parentheses, over partition columns only.
struct Parser<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    columns: &'a [(String, DataType)],
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Word(String),
    Quoted(String),
    Number(String),
    Op(&'static str),
    LParen,
    RParen,
    Comma,
}

impl<'a> Parser<'a> {
    fn parse(text: &'a str, columns: &'a [(String, DataType)]) -> Result<Predicate> {
        let mut p = Parser {
            text,
            tokens: tokenize(text)?,
            pos: 0,
            columns,
        };
        let e = p.or()?;
        if let Some(t) = p.tokens.get(p.pos) {
            return Err(p.err(format!("unexpected {t:?} after a complete condition")));
        }
        Ok(e)
    }

    fn err(&self, why: impl std::fmt::Display) -> Error {
        Error::invalid_option("where", self.text, why)
    }

    fn peek_word(&self, w: &str) -> bool {
        matches!(self.tokens.get(self.pos), Some(Token::Word(x)) if x.eq_ignore_ascii_case(w))
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn or(&mut self) -> Result<Predicate> {
        let mut terms = vec![self.and()?];
        while self.peek_word("OR") {
            self.pos += 1;
            terms.push(self.and()?);
        }
        Ok(if terms.len() == 1 {
            terms.remove(0)
        } else {
            Predicate::Or(terms)
        })
    }

    fn and(&mut self) -> Result<Predicate> {
        let mut terms = vec![self.primary()?];
        while self.peek_word("AND") {
            self.pos += 1;
            terms.push(self.primary()?);
        }
        Ok(if terms.len() == 1 {
            terms.remove(0)
        } else {
            Predicate::And(terms)
        })
    }

    fn primary(&mut self) -> Result<Predicate> {
        match self.next() {
            Some(Token::LParen) => {
                let e = self.or()?;
                match self.next() {
                    Some(Token::RParen) => Ok(e),
                    _ => Err(self.err("missing ')'")),
                }
            }
            Some(Token::Word(w)) => {
                if ["AND", "OR", "NOT", "IN", "IS", "NULL", "LIKE", "BETWEEN"]
                    .iter()
                    .any(|k| w.eq_ignore_ascii_case(k))
                {
                    return Err(self.err(format!(
                        "'{w}' is not supported here (supported: =, <>, <, <=, >, >=, IN, IS \
                         [NOT] NULL, AND, OR, parentheses)"
                    )));
                }
                let column = column_index(self.columns, &w).ok_or_else(|| {
                    self.err(format!(
                        "'{w}' is not a partition column (only partition columns can be used: \
                         {})",
                        column_names(self.columns)
                    ))
                })?;
                self.condition(column)
            }
            Some(t) => Err(self.err(format!("expected a partition column, found {t:?}"))),
            None => Err(self.err("the condition ends too early")),
        }
    }

    fn condition(&mut self, column: usize) -> Result<Predicate> {
        match self.next() {
            Some(Token::Op(op)) => {
                let op = match op {
                    "=" => CmpOp::Eq,
                    "<>" => CmpOp::Ne,
                    "<" => CmpOp::Lt,
                    "<=" => CmpOp::Le,
                    ">" => CmpOp::Gt,
                    ">=" => CmpOp::Ge,
                    other => return Err(self.err(format!("unknown operator '{other}'"))),
                };
                let value = self.literal()?;
                Ok(Predicate::Compare { column, op, value })
            }
            Some(Token::Word(w)) if w.eq_ignore_ascii_case("IN") => {
                if self.next() != Some(Token::LParen) {
                    return Err(self.err("IN needs a parenthesised list"));
                }
                let mut values = vec![self.literal()?];
                loop {
                    match self.next() {
                        Some(Token::Comma) => values.push(self.literal()?),
                        Some(Token::RParen) => break,
                        _ => return Err(self.err("IN list: expected ',' or ')'")),
                    }
                }
                Ok(Predicate::In { column, values })
            }
            Some(Token::Word(w)) if w.eq_ignore_ascii_case("IS") => {
                let negated = self.peek_word("NOT");
                if negated {
                    self.pos += 1;
                }
                if !self.peek_word("NULL") {
                    return Err(self.err("IS must be followed by NULL or NOT NULL"));
                }
                self.pos += 1;
                Ok(Predicate::IsNull { column, negated })
            }
            Some(t) => Err(self.err(format!(
                "{t:?} is not supported (supported: =, <>, <, <=, >, >=, IN, IS [NOT] NULL)"
            ))),
            None => Err(self.err("a column needs a comparison")),
        }
    }

    fn literal(&mut self) -> Result<Literal> {
        match self.next() {
            Some(Token::Quoted(s)) => Ok(Literal::Text(s)),
            Some(Token::Number(s)) => Ok(Literal::Bare(s)),
            Some(Token::Word(w))
                if w.eq_ignore_ascii_case("true") || w.eq_ignore_ascii_case("false") =>
            {
                Ok(Literal::Bare(w.to_ascii_lowercase()))
            }
            Some(Token::Word(w)) if w.eq_ignore_ascii_case("NULL") => {
                Err(self
                    .err("compare with NULL using IS NULL (a comparison with NULL is never true)"))
            }
            Some(t) => Err(self.err(format!("expected a value, found {t:?}"))),
            None => Err(self.err("a value is missing at the end")),
        }
    }
}

fn tokenize(text: &str) -> Result<Vec<Token>> {
    let err = |why: String| Error::invalid_option("where", text, why);
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            c if c.is_whitespace() => i += 1,
            '(' => {
                out.push(Token::LParen);
                i += 1
            }
            ')' => {
                out.push(Token::RParen);
                i += 1
            }
            ',' => {
                out.push(Token::Comma);
                i += 1
            }
            '\'' => {
                let mut s = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err(err("a quoted value is not closed".into())),
                        Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                            s.push('\'');
                            i += 2;
                        }
                        Some('\'') => {
                            i += 1;
                            break;
                        }
                        Some(&ch) => {
                            s.push(ch);
                            i += 1;
                        }
                    }
                }
                out.push(Token::Quoted(s));
            }
            '`' | '"' => {
                let close = c;
                let start = i + 1;
                let end = chars[start..]
                    .iter()
                    .position(|&ch| ch == close)
                    .map(|p| start + p)
                    .ok_or_else(|| err("a quoted column name is not closed".into()))?;
                out.push(Token::Word(chars[start..end].iter().collect()));
                i = end + 1;
            }
            '=' => {
                out.push(Token::Op("="));
                i += 1
            }
            '<' | '>' | '!' => {
                let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
                let op = match two.as_str() {
                    "<>" => "<>",
                    "<=" => "<=",
                    ">=" => ">=",
                    "!=" => return Err(err("use <> for 'not equal'".into())),
                    _ if c == '<' => "<",
                    _ if c == '>' => ">",
                    _ => return Err(err(format!("unexpected '{c}'"))),
                };
                i += op.len();
                out.push(Token::Op(op));
            }
            c if c.is_ascii_digit() || c == '-' || c == '+' || c == '.' => {
                let start = i;
                i += 1;
                while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                    i += 1;
                }
                out.push(Token::Number(chars[start..i].iter().collect()));
            }
            c if c.is_alphanumeric() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                out.push(Token::Word(chars[start..i].iter().collect()));
            }
            other => return Err(err(format!("unexpected character '{other}'"))),
        }
    }
    Ok(out)
}

/// Whether a type can appear in a partition predicate at all (partition columns are atomic).
pub fn is_partition_type(t: &DataType) -> bool {
    !matches!(
        t.root,
        TypeRoot::Array { .. }
            | TypeRoot::Map { .. }
            | TypeRoot::Multiset { .. }
            | TypeRoot::Row { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols() -> Vec<(String, DataType)> {
        vec![
            (
                "dt".into(),
                DataType::new(TypeRoot::VarChar {
                    length: u32::MAX >> 1,
                }),
            ),
            ("hr".into(), DataType::new(TypeRoot::Int)),
            (
                "amt".into(),
                DataType::new(TypeRoot::Decimal {
                    precision: 10,
                    scale: 2,
                }),
            ),
        ]
    }

    fn eval(w: &str, values: &[Datum]) -> bool {
        let c = cols();
        let types: Vec<DataType> = c.iter().map(|(_, t)| t.clone()).collect();
        Parser::parse(w, &c).unwrap().eval(values, &types)
    }

    fn row(dt: Option<&str>, hr: i32, amt: i128) -> Vec<Datum> {
        vec![
            dt.map_or(Datum::Null, |s| Datum::String(s.into())),
            Datum::Int(hr),
            Datum::Decimal(amt),
        ]
    }

    #[test]
    fn where_clauses_evaluate_with_sql_semantics() {
        let r = row(Some("2025-01-02"), 7, 1250);
        assert!(eval("dt = '2025-01-02'", &r));
        assert!(eval("dt >= '2025-01-01' AND hr < 10", &r));
        assert!(!eval("dt > '2025-01-02' OR hr >= 8", &r));
        assert!(eval("hr IN (1, 7, 9)", &r));
        assert!(eval("(hr = 1 OR hr = 7) AND dt <> 'x'", &r));
        assert!(eval("amt = 12.5 AND amt > 12.49 AND amt < 13", &r));
        assert!(eval("hr > 6.5", &r));
        let n = row(None, 7, 0);
        assert!(eval("dt IS NULL", &n));
        assert!(!eval("dt IS NOT NULL", &n));
        assert!(!eval("dt <> 'x'", &n), "a comparison with null is false");
        assert!(eval("`hr` = 7", &n));
    }

    #[test]
    fn where_clauses_outside_the_language_are_typed_errors() {
        let c = cols();
        for bad in [
            "v = 1",
            "dt LIKE 'a%'",
            "dt != 'x'",
            "NOT dt = 'x'",
            "dt = ",
            "dt = 'open",
            "(dt = 'a'",
            "dt = NULL",
            "hr BETWEEN 1 AND 2",
            "dt = 'a' dt = 'b'",
        ] {
            let e = Parser::parse(bad, &c).unwrap_err();
            assert!(
                matches!(&e.kind, crate::error::ErrorKind::InvalidOption { key, .. } if key == "where"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn bucket_ranges_follow_paimons_grammar() {
        assert_eq!(
            bucket_ranges(" 0-2, 5 ", 8).unwrap(),
            [0, 1, 2, 5].into_iter().collect()
        );
        for bad in ["", "1,,2", "3-1", "8", "-1", "a", "1-"] {
            assert!(bucket_ranges(bad, 8).is_err(), "{bad}");
        }
        assert!(bucket_ranges("0", -1)
            .unwrap_err()
            .message
            .contains("fixed-bucket"));
    }

    #[test]
    fn partition_specs_match_by_type_and_default_name() {
        let c = cols();
        let types: Vec<DataType> = c.iter().map(|(_, t)| t.clone()).collect();
        let p = partition_spec("dt=2025-01-02,hr=07", &c, "__DEFAULT_PARTITION__").unwrap();
        assert!(p.eval(&row(Some("2025-01-02"), 7, 0), &types));
        assert!(!p.eval(&row(Some("2025-01-02"), 8, 0), &types));
        let p = partition_spec("dt=__DEFAULT_PARTITION__", &c, "__DEFAULT_PARTITION__").unwrap();
        assert!(p.eval(&row(None, 1, 0), &types));
        for bad in ["dt", "x=1", "dt=1,dt=2"] {
            assert!(partition_spec(bad, &c, "d").is_err(), "{bad}");
        }
    }

    #[test]
    fn dynamic_options_force_write_only_off_and_refuse_layout_options() {
        let base: BTreeMap<String, String> =
            [("write-only".to_string(), "true".to_string())].into();
        let (o, w) = job_options(
            &base,
            &[
                ("write-only".into(), "true".into()),
                ("compaction.force-rewrite-all-files".into(), "true".into()),
            ],
        )
        .unwrap();
        assert!(!o.contains_key("write-only"));
        assert_eq!(o["compaction.force-rewrite-all-files"], "true");
        assert_eq!(w.len(), 1);
        for key in ["bucket", "merge-engine", "fields.v.aggregate-function"] {
            assert!(
                job_options(&base, &[(key.into(), "x".into())]).is_err(),
                "{key}"
            );
        }
    }
}
