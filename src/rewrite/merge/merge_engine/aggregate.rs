//! `merge-engine = aggregation`: every table column has a function
//! (`fields.<name>.aggregate-function`, else `fields.default-aggregate-function`, else
//! `last_non_null_value`; primary-key columns keep the latest value) folded over the key's
//! records in sequence order. The result is an insert (`+I`) with the latest sequence number
//! (a `-D` under `aggregation.remove-record-on-delete` when the key's last record is one).
//! `product`'s arithmetic is in [`product`].
//!
//! Semantics follow Paimon's field aggregators exactly, including their null handling (a null
//! input leaves the accumulator) and Java's wrapping integer arithmetic (`sum`; `product`
//! multiplies exactly, as Paimon's does). A retract record is applied by functions that can
//! retract (`sum`, `product`, `last_value`, `last_non_null_value`),
//! skipped for `fields.<name>.ignore-retract`, and refused otherwise (Paimon fails the job
//! there too). Paimon functions this build does not implement are refused up front with
//! `unsupported`: a wrong aggregate would be silent. `fields.<f>.sequence-group` means nothing
//! to this engine (Paimon validates and applies it for partial-update only), so it is ignored
//! here as Paimon's writers and readers ignore it. A name Paimon does not know at all
//! (`count`, removed in Paimon 0.9, or a misspelling) is an invalid option, as Paimon rejects
//! such a table outright: see
//! [`check_function_names`].

use std::cmp::Ordering;

use arrow_schema::DataType;

use super::collection::{CollectionFunc, NestedUpdate, NullKeys, Out};
use super::product;
use super::{hll_sketch, theta_sketch};
use super::{Cell, Columns, Merged, Record, Values};
use crate::error::{Error, Result};
use crate::options::CoreOptions;
use crate::rewrite::merge::kv_format::RowKind;
use crate::value::Datum;

/// The field aggregators this build implements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Func {
    PrimaryKey,
    Sum,
    Product,
    Min,
    Max,
    LastValue,
    LastNonNullValue,
    FirstValue,
    FirstNonNullValue,
    BoolAnd,
    BoolOr,
    /// `distinct`: `fields.<name>.distinct` (Paimon since 1.1): tokens of an input already in
    /// the accumulator are not appended again.
    ListAgg {
        delimiter: String,
        distinct: bool,
    },
    /// `collect`, `merge_map`, `nested_update`: see [`super::collection`].
    Collection(CollectionFunc),
    /// `rbm32`: the union of 32-bit RoaringBitmaps in RoaringBitmap's portable serialization,
    /// run-optimized before it is written, as Paimon's `RoaringBitmap32` writes it.
    Rbm32,
    /// `theta_sketch`: the union of serialized Apache DataSketches theta sketches, byte for
    /// byte as Paimon's `ThetaSketch.union` writes it (`merge_engine::theta_sketch`).
    ThetaSketch,
    /// `hll_sketch`: the union of serialized Apache DataSketches HLL sketches, byte for byte
    /// as Paimon's `HllSketchUtil.union` writes it (`merge_engine::hll_sketch`).
    HllSketch,
}

impl Func {
    fn name(&self) -> &'static str {
        match self {
            Func::PrimaryKey => "primary-key",
            Func::Sum => "sum",
            Func::Product => "product",
            Func::Min => "min",
            Func::Max => "max",
            Func::LastValue => "last_value",
            Func::LastNonNullValue => "last_non_null_value",
            Func::FirstValue => "first_value",
            Func::FirstNonNullValue => "first_non_null_value",
            Func::BoolAnd => "bool_and",
            Func::BoolOr => "bool_or",
            Func::ListAgg { .. } => "listagg",
            Func::Collection(c) => c.name(),
            Func::Rbm32 => "rbm32",
            Func::ThetaSketch => "theta_sketch",
            Func::HllSketch => "hll_sketch",
        }
    }

    /// Names match exactly (no trimming, case-sensitive), as Paimon looks up its factories.
    /// `data_type` is the column's (nested-update keys are names of its row fields).
    fn parse(name: &str, field: &str, data_type: &DataType, options: &CoreOptions) -> Result<Self> {
        Ok(match name {
            "collect" => Func::Collection(CollectionFunc::Collect {
                distinct: field_flag(options, field, "distinct"),
            }),
            "merge_map" => Func::Collection(CollectionFunc::MergeMap),
            "merge_map_with_keytime" => Func::Collection(CollectionFunc::MergeMapWithKeyTime {
                ts: keytime_field(field, data_type, options)?,
            }),
            "nested_partial_update" => {
                let n = nested_update(field, data_type, options)?;
                if n.key.is_empty() {
                    return Err(Error::invalid_option(
                        &format!("fields.{field}.aggregate-function"),
                        name,
                        "nested_partial_update needs 'fields.<field>.nested-key'",
                    ));
                }
                Func::Collection(CollectionFunc::NestedPartialUpdate {
                    key: n.key,
                    null_keys: n.null_keys,
                })
            }
            "rbm32" => Func::Rbm32,
            "rbm64" => {
                return Err(Error::unsupported(format!(
                    "aggregate function 'rbm64' of field '{field}': Paimon stores these bitmaps \
                     in RoaringBitmap's Roaring64Bitmap layout (its adaptive radix tree), which \
                     this build does not reproduce"
                )))
            }
            "theta_sketch" => Func::ThetaSketch,
            "hll_sketch" => Func::HllSketch,
            "nested_update" => Func::Collection(CollectionFunc::NestedUpdate(nested_update(
                field, data_type, options,
            )?)),
            "sum" => Func::Sum,
            "product" => Func::Product,
            "min" => Func::Min,
            "max" => Func::Max,
            "last_value" => Func::LastValue,
            "last_non_null_value" => Func::LastNonNullValue,
            "first_value" => Func::FirstValue,
            "first_non_null_value" | "first_not_null_value" => Func::FirstNonNullValue,
            "bool_and" => Func::BoolAnd,
            "bool_or" => Func::BoolOr,
            "listagg" => {
                let distinct = field_flag(options, field, "distinct");
                let delimiter = options
                    .raw
                    .get(&format!("fields.{field}.list-agg-delimiter"))
                    .cloned()
                    .unwrap_or_else(|| ",".to_string());
                Func::ListAgg {
                    delimiter,
                    distinct,
                }
            }
            other => {
                return Err(Error::unsupported(format!(
                    "aggregate function '{other}' of field '{field}' is not supported by the \
                     merge rewriter (supported: sum, product, min, max, last_value, \
                     last_non_null_value, first_value, first_non_null_value, bool_and, bool_or, \
                     listagg, collect, merge_map, merge_map_with_keytime, nested_update, \
                     nested_partial_update, rbm32, theta_sketch, hll_sketch)"
                )))
            }
        })
    }

    /// Whether `t` is a type the function is defined on (as in Paimon's factories).
    fn accepts(&self, t: &DataType) -> bool {
        let numeric = matches!(
            t,
            DataType::Int8
                | DataType::Int16
                | DataType::Int32
                | DataType::Int64
                | DataType::Float32
                | DataType::Float64
                | DataType::Decimal128(_, _)
        );
        match self {
            Func::Sum | Func::Product => numeric,
            Func::Min | Func::Max => {
                numeric
                    || matches!(
                        t,
                        DataType::Utf8
                            | DataType::LargeUtf8
                            | DataType::Date32
                            | DataType::Time32(_)
                            | DataType::Timestamp(_, _)
                    )
            }
            Func::BoolAnd | Func::BoolOr => matches!(t, DataType::Boolean),
            Func::ListAgg { .. } => matches!(t, DataType::Utf8 | DataType::LargeUtf8),
            Func::Collection(c) => c.accepts(t),
            Func::Rbm32 | Func::ThetaSketch | Func::HllSketch => {
                matches!(t, DataType::Binary | DataType::LargeBinary)
            }
            _ => true,
        }
    }
}

/// Every aggregate function name Paimon (Java HEAD) registers a `FieldAggregatorFactory` for.
/// Java 1.0 has the same set less `merge_map_with_keytime` and `nested_partial_update`; every
/// name [`Func::parse`] accepts is in both. `count` is absent: Paimon 0.9 removed it.
const PAIMON_FUNCTIONS: &[&str] = &[
    "bool_and",
    "bool_or",
    "collect",
    "first_non_null_value",
    "first_not_null_value",
    "first_value",
    "hll_sketch",
    "last_non_null_value",
    "last_value",
    "listagg",
    "max",
    "merge_map",
    "merge_map_with_keytime",
    "min",
    "nested_partial_update",
    "nested_update",
    "primary-key",
    "product",
    "rbm32",
    "rbm64",
    "sum",
    "theta_sketch",
];

const DEFAULT_FUNCTION_KEY: &str = "fields.default-aggregate-function";

/// The aggregate function the options name for column `field`, with the key that names it:
/// `fields.<field>.aggregate-function`, else `fields.default-aggregate-function`.
pub(crate) fn configured_function<'o>(
    options: &'o CoreOptions,
    field: &str,
) -> Option<(String, &'o str)> {
    let field_key = format!("fields.{field}.aggregate-function");
    match options.raw.get(&field_key) {
        Some(v) => Some((field_key, v.as_str())),
        None => options
            .raw
            .get(DEFAULT_FUNCTION_KEY)
            .map(|v| (DEFAULT_FUNCTION_KEY.to_string(), v.as_str())),
    }
}

/// Whether the per-field flag `fields.<field>.<suffix>` is `true` (`ignore-retract`,
/// `distinct`).
fn field_flag(options: &CoreOptions, field: &str, suffix: &str) -> bool {
    options
        .raw
        .get(&format!("fields.{field}.{suffix}"))
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Refuses a table whose `fields.<f>.aggregate-function` (else
/// `fields.default-aggregate-function`) names a function Paimon does not have, with an
/// invalid-option error naming the key and the value.
///
/// Paimon checks this for every table column (primary keys and sequence fields included) of a
/// partial-update or aggregation table when the table is created (`SchemaValidation`), and its
/// `FieldAggregatorFactory` fails on such a name when a writer builds the merge function: no
/// Paimon writer could have produced the files, so merging them with a guessed function (as
/// this crate once did for the retired `count`) would invent results. Names match exactly, as
/// Paimon's factory lookup does.
pub(crate) fn check_function_names(
    options: &CoreOptions,
    columns: &[(String, DataType)],
) -> Result<()> {
    for (name, _) in columns {
        let Some((key, value)) = configured_function(options, name) else {
            continue;
        };
        if PAIMON_FUNCTIONS.contains(&value) {
            continue;
        }
        let retired = if value == "count" {
            " ('count' was removed in Paimon 0.9)"
        } else {
            ""
        };
        return Err(Error::invalid_option(
            &key,
            value,
            format!(
                "Paimon has no aggregate function of this name{retired}, so it rejects the \
                 table (names are exact; Paimon's are: {})",
                PAIMON_FUNCTIONS.join(", ")
            ),
        ));
    }
    Ok(())
}

/// One column's aggregate function and the state it keeps across a key's records (whether
/// `first_value` has seen its first input). The accumulator itself is the caller's: the
/// aggregation engine keeps one per column, partial-update's sequence groups keep it in the
/// merged row.
pub(crate) struct FieldAgg {
    func: Func,
    ignore_retract: bool,
    data_type: DataType,
    name: String,
    initialized: bool,
}

impl FieldAgg {
    /// The aggregator of column `name` for the function named `func` (`None`: the primary-key
    /// function, which keeps the latest value). A type the function is not defined on is
    /// `unsupported`; `fields.<name>.ignore-retract` is read here.
    pub(crate) fn new(
        name: &str,
        data_type: &DataType,
        func: Option<&str>,
        options: &CoreOptions,
    ) -> Result<Self> {
        let func = match func {
            None => Func::PrimaryKey,
            Some(f) => Func::parse(f, name, data_type, options)?,
        };
        Self::with_func(name, data_type, func, options)
    }

    fn with_func(
        name: &str,
        data_type: &DataType,
        func: Func,
        options: &CoreOptions,
    ) -> Result<Self> {
        if !func.accepts(data_type) {
            return Err(Error::unsupported(format!(
                "aggregate function '{}' on field '{name}' of type {data_type}",
                func.name()
            )));
        }
        let ignore_retract = field_flag(options, name, "ignore-retract");
        Ok(FieldAgg {
            func,
            ignore_retract,
            data_type: data_type.clone(),
            name: name.to_string(),
            initialized: false,
        })
    }

    /// Forgets the state of the previous key.
    pub(crate) fn reset(&mut self) {
        self.initialized = false;
    }

    /// Paimon's `agg(accumulator, input)` for column `j`; `r` names the file in errors.
    pub(crate) fn agg(
        &mut self,
        j: usize,
        acc: Cell,
        input: Cell,
        cols: &dyn Columns,
        r: &Record,
    ) -> Result<Cell> {
        step(self, j, false, acc, input, cols, r)
    }

    /// Paimon's `aggReversed(accumulator, input)`: the input arrived out of its group's
    /// sequence order, so it is folded as if it had come first, `agg(input, accumulator)`
    /// (Paimon's default, which every function this build implements keeps).
    pub(crate) fn agg_reversed(
        &mut self,
        j: usize,
        acc: Cell,
        input: Cell,
        cols: &dyn Columns,
        r: &Record,
    ) -> Result<Cell> {
        step(self, j, false, input, acc, cols, r)
    }

    /// Paimon's `retract(accumulator, input)`: the accumulator unchanged under
    /// `ignore-retract`, an `unsupported` error for a function that cannot retract.
    pub(crate) fn retract(
        &mut self,
        j: usize,
        acc: Cell,
        input: Cell,
        cols: &dyn Columns,
        r: &Record,
    ) -> Result<Cell> {
        if self.ignore_retract {
            return Ok(acc);
        }
        step(self, j, true, acc, input, cols, r)
    }
}

/// One column of the aggregation engine: its function and its accumulator.
struct Field {
    agg: FieldAgg,
    acc: Cell,
}

pub(crate) struct Aggregate {
    fields: Vec<Field>,
    /// `aggregation.remove-record-on-delete`.
    remove_record_on_delete: bool,
}

impl Aggregate {
    /// `primary_keys` are the table columns of the primary key: they keep their latest value.
    /// The `sequence.field` columns take `last_value`, whatever function the options name,
    /// as Paimon HEAD's aggregation does (1.0 took `last_non_null_value`; the two differ only
    /// on a null sequence value).
    pub(crate) fn new(
        options: &CoreOptions,
        columns: &[(String, DataType)],
        primary_keys: &[String],
    ) -> Result<Self> {
        // A table Paimon could not have created or written is invalid before it is unsupported.
        check_function_names(options, columns)?;
        let sequence_fields: Vec<&str> = options
            .sequence_field
            .as_deref()
            .map(|s| s.split(',').map(str::trim).collect())
            .unwrap_or_default();
        let mut fields = Vec::with_capacity(columns.len());
        for (name, data_type) in columns {
            let configured = configured_function(options, name).map(|(_, f)| f);
            let func = if sequence_fields.contains(&name.as_str()) {
                Func::LastValue
            } else {
                match configured {
                    _ if primary_keys.contains(name) => Func::PrimaryKey,
                    Some(f) => Func::parse(f, name, data_type, options)?,
                    None => Func::LastNonNullValue,
                }
            };
            let agg = FieldAgg::with_func(name, data_type, func, options)?;
            if agg.ignore_retract && options.aggregation_remove_record_on_delete {
                // Paimon refuses to create such a field's aggregator.
                return Err(Error::invalid_option(
                    "aggregation.remove-record-on-delete",
                    "true",
                    format!("conflicts with 'fields.{name}.ignore-retract' = true"),
                ));
            }
            fields.push(Field {
                agg,
                acc: Cell::NULL,
            });
        }
        Ok(Aggregate {
            fields,
            remove_record_on_delete: options.aggregation_remove_record_on_delete,
        })
    }

    pub(crate) fn merge(
        &mut self,
        records: &[Record],
        cols: &dyn Columns,
    ) -> Result<Option<Merged>> {
        let Some(last) = records.last() else {
            return Ok(None);
        };
        for f in &mut self.fields {
            f.acc = Cell::NULL;
            f.agg.reset();
        }
        let mut deleted = false;
        for r in records {
            // `aggregation.remove-record-on-delete` (Paimon HEAD): a `-D` makes the row its own
            // values, which later records aggregate onto (the functions' state, such as
            // first_value's, is not reset), and the result a `-D` while it is the last record.
            deleted = self.remove_record_on_delete && r.kind == RowKind::Delete;
            if deleted {
                for f in &mut self.fields {
                    f.acc = Cell::of(r);
                }
                continue;
            }
            let retract = r.kind.is_retract();
            for (j, f) in self.fields.iter_mut().enumerate() {
                let acc = std::mem::replace(&mut f.acc, Cell::NULL);
                let input = Cell::of(r);
                f.acc = if retract {
                    f.agg.retract(j, acc, input, cols, r)?
                } else {
                    f.agg.agg(j, acc, input, cols, r)?
                };
            }
        }
        Ok(Some(Merged {
            key: (last.slot, last.row),
            seq: last.seq,
            kind: if deleted {
                RowKind::Delete
            } else {
                RowKind::Insert
            },
            values: Values::Cells(self.fields.iter().map(|f| f.acc.clone()).collect()),
        }))
    }
}

fn no_retract(f: &FieldAgg, cols: &dyn Columns, r: &Record) -> Error {
    Error::unsupported(format!(
        "'{}' holds a {:?} record for field '{}': aggregate function '{}' does not support \
         retraction (set 'fields.{}.ignore-retract' = true to ignore it)",
        cols.file_of(r),
        r.kind,
        f.name,
        f.func.name(),
        f.name
    ))
}

/// One fold step of field `f` (column `j`): the new accumulator.
fn step(
    f: &mut FieldAgg,
    j: usize,
    retract: bool,
    acc: Cell,
    input: Cell,
    cols: &dyn Columns,
    r: &Record,
) -> Result<Cell> {
    if let Func::Collection(c) = &f.func {
        if retract && !c.retracts() {
            return Err(no_retract(f, cols, r));
        }
        let (a, i) = (acc.nested(cols, j), input.nested(cols, j));
        let out = if retract {
            c.retract(a.as_deref(), i.as_deref())?
        } else {
            c.agg(a.as_deref(), i.as_deref())?
        };
        return Ok(match out {
            Out::Acc => acc,
            Out::Input => input,
            Out::New(x) => Cell::Nested(x),
        });
    }
    let acc_null = acc.is_null(cols, j);
    let input_null = input.is_null(cols, j);
    Ok(match &f.func {
        Func::PrimaryKey => input,
        Func::LastValue => {
            if retract {
                Cell::NULL
            } else {
                input
            }
        }
        Func::LastNonNullValue => match (retract, input_null) {
            (_, true) => acc,
            (false, false) => input,
            (true, false) => Cell::NULL,
        },
        Func::FirstValue => {
            if retract {
                return Err(no_retract(f, cols, r));
            }
            if f.initialized {
                acc
            } else {
                f.initialized = true;
                input
            }
        }
        Func::FirstNonNullValue => {
            if retract {
                return Err(no_retract(f, cols, r));
            }
            if !f.initialized && !input_null {
                f.initialized = true;
                input
            } else {
                acc
            }
        }
        Func::Sum => {
            if acc_null {
                if retract {
                    if input_null {
                        Cell::NULL
                    } else {
                        Cell::Val(negate(input.datum(cols, j)?, &f.data_type))
                    }
                } else {
                    input
                }
            } else if input_null {
                acc
            } else {
                let (a, b) = (acc.datum(cols, j)?, input.datum(cols, j)?);
                Cell::Val(add(a, b, retract, &f.data_type))
            }
        }
        Func::Product => {
            if acc_null {
                input
            } else if input_null {
                acc
            } else {
                let (a, b) = (acc.datum(cols, j)?, input.datum(cols, j)?);
                Cell::Val(product::step(a, b, retract, &f.data_type).map_err(|why| {
                    Error::unsupported(format!(
                        "'{}': aggregate function 'product' of field '{}' cannot be computed: \
                         {why} (Paimon fails the compaction there too)",
                        cols.file_of(r),
                        f.name
                    ))
                })?)
            }
        }
        Func::Collection(_) => unreachable!("collections are folded above"),
        Func::Rbm32 | Func::ThetaSketch | Func::HllSketch => {
            if retract {
                return Err(no_retract(f, cols, r));
            }
            if acc_null {
                input
            } else if input_null {
                acc
            } else {
                let (a, b) = (acc.datum(cols, j)?, input.datum(cols, j)?);
                let merged = match (&a, &b) {
                    (Datum::Bytes(a), Datum::Bytes(b)) => match &f.func {
                        Func::Rbm32 => rbm32_union(a, b),
                        Func::HllSketch => hll_sketch::union(a, b),
                        _ => theta_sketch::union(a, b),
                    },
                    _ => Err("not a binary value".to_string()),
                };
                Cell::Val(Datum::Bytes(merged.map_err(|why| {
                    Error::corrupt(
                        Some(cols.file_of(r)),
                        format!("field '{}' ({}): {why}", f.name, f.func.name()),
                    )
                })?))
            }
        }
        Func::Min | Func::Max | Func::BoolAnd | Func::BoolOr | Func::ListAgg { .. } => {
            if retract {
                return Err(no_retract(f, cols, r));
            }
            if let Func::ListAgg {
                delimiter,
                distinct,
            } = &f.func
            {
                let blank = |d: &Datum| match d {
                    Datum::String(s) => java_blank(s),
                    _ => true,
                };
                let b = input.datum(cols, j)?;
                if blank(&b) {
                    return Ok(acc);
                }
                let a = acc.datum(cols, j)?;
                if blank(&a) {
                    return Ok(input);
                }
                return Ok(match (a, b) {
                    (Datum::String(a), Datum::String(b)) if *distinct => {
                        match append_distinct(&a, &b, delimiter) {
                            Some(joined) => Cell::Val(Datum::String(joined)),
                            None => acc,
                        }
                    }
                    (Datum::String(a), Datum::String(b)) => {
                        Cell::Val(Datum::String(format!("{a}{delimiter}{b}")))
                    }
                    _ => input,
                });
            }
            if acc_null {
                input
            } else if input_null {
                acc
            } else {
                let (a, b) = (acc.datum(cols, j)?, input.datum(cols, j)?);
                match &f.func {
                    Func::Min => {
                        if datum_cmp(&b, &a) == Ordering::Less {
                            input
                        } else {
                            acc
                        }
                    }
                    Func::Max => {
                        if datum_cmp(&b, &a) == Ordering::Greater {
                            input
                        } else {
                            acc
                        }
                    }
                    Func::BoolAnd => Cell::Val(Datum::Boolean(
                        matches!(a, Datum::Boolean(true)) && matches!(b, Datum::Boolean(true)),
                    )),
                    _ => Cell::Val(Datum::Boolean(
                        matches!(a, Datum::Boolean(true)) || matches!(b, Datum::Boolean(true)),
                    )),
                }
            }
        }
    })
}

/// The settings of `nested_update` on field `field` of type `data_type` (an ARRAY of ROW, else
/// the type check refuses it later): names resolved to the row's field indexes, as Paimon's
/// factory resolves them, an unknown name or a dependent option without `nested-key` being
/// an invalid option.
fn nested_update(field: &str, data_type: &DataType, options: &CoreOptions) -> Result<NestedUpdate> {
    let names: Vec<String> = match data_type {
        DataType::List(f) => match f.data_type() {
            DataType::Struct(fields) => fields.iter().map(|f| f.name().clone()).collect(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    let get = |suffix: &str| options.raw.get(&format!("fields.{field}.{suffix}"));
    let resolve = |suffix: &str| -> Result<Vec<usize>> {
        let Some(v) = get(suffix) else {
            return Ok(Vec::new());
        };
        v.split(',')
            .map(|n| {
                names.iter().position(|x| x == n.trim()).ok_or_else(|| {
                    Error::invalid_option(
                        &format!("fields.{field}.{suffix}"),
                        v,
                        format!("'{}' is not a field of the nested rows", n.trim()),
                    )
                })
            })
            .collect()
    };
    let key = resolve("nested-key")?;
    let sequence = resolve("nested-sequence-field")?;
    for (suffix, set) in [
        ("nested-sequence-field", !sequence.is_empty()),
        (
            "nested-key-null-strategy",
            get("nested-key-null-strategy").is_some(),
        ),
    ] {
        if set && key.is_empty() {
            let k = format!("fields.{field}.{suffix}");
            let v = get(suffix).map_or("", |v| v.as_str());
            return Err(Error::invalid_option(&k, v, "needs 'nested-key' too"));
        }
    }
    let null_keys = match get("nested-key-null-strategy").map(|v| v.trim().to_ascii_lowercase()) {
        None => NullKeys::Merge,
        Some(v) if v == "merge" => NullKeys::Merge,
        Some(v) if v == "ignore" => NullKeys::Ignore,
        Some(v) if v == "error" => NullKeys::Error,
        Some(v) => {
            return Err(Error::invalid_option(
                &format!("fields.{field}.nested-key-null-strategy"),
                &v,
                "expected merge, ignore or error",
            ))
        }
    };
    let count_limit = match get("count-limit") {
        None => usize::MAX,
        Some(v) => match v.trim().parse::<i32>() {
            Ok(n) => usize::try_from(n).unwrap_or(0),
            Err(_) => {
                return Err(Error::invalid_option(
                    &format!("fields.{field}.count-limit"),
                    v,
                    "expected an integer",
                ))
            }
        },
    };
    Ok(NestedUpdate {
        key,
        sequence,
        null_keys,
        count_limit,
    })
}

/// The time field of `merge_map_with_keytime` on field `field`: `fields.<field>.ts-field`
/// among the map value's row fields, else the last of them (Paimon HEAD's factory). A row of
/// fewer than two fields, or an unknown name, is an invalid option; the field's type is
/// checked with the function's types.
fn keytime_field(field: &str, data_type: &DataType, options: &CoreOptions) -> Result<usize> {
    let row: Vec<String> = match data_type {
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => match kv[1].data_type() {
                DataType::Struct(row) => row.iter().map(|f| f.name().clone()).collect(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    if row.len() < 2 {
        // The type check reports a column that is not MAP<_, ROW>.
        return Ok(usize::MAX);
    }
    let key = format!("fields.{field}.ts-field");
    match options.raw.get(&key) {
        None => Ok(row.len() - 1),
        Some(name) => row.iter().position(|n| n == name).ok_or_else(|| {
            Error::invalid_option(&key, name, "not a field of the map's value rows")
        }),
    }
}

/// The union of two serialized 32-bit RoaringBitmaps, serialized again after the run
/// optimization Paimon applies (RoaringBitmap's portable format, which the `roaring` crate
/// reads and writes as the Java library does).
fn rbm32_union(a: &[u8], b: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let read = |x: &[u8]| {
        roaring::RoaringBitmap::deserialize_from(x)
            .map_err(|e| format!("not a serialized RoaringBitmap: {e}"))
    };
    let mut acc = read(a)?;
    acc |= read(b)?;
    acc.optimize();
    let mut out = Vec::with_capacity(acc.serialized_size());
    acc.serialize_into(&mut out)
        .map_err(|e| format!("serializing the union: {e}"))?;
    Ok(out)
}

/// Java's `StringUtils.isBlank`: empty, or only characters `Character.isWhitespace` accepts
/// (Unicode spaces except the non-breaking ones, and the ASCII controls TAB to CR and FS to
/// US).
fn java_blank(s: &str) -> bool {
    s.chars().all(|c| {
        matches!(c, '\t'..='\r' | '\u{1C}'..='\u{1F}')
            || (c.is_whitespace() && !matches!(c, '\u{85}' | '\u{A0}' | '\u{2007}' | '\u{202F}'))
    })
}

/// `listagg` with `distinct`: the tokens of `input` (split on the whole delimiter, empty
/// tokens kept; on a space where the delimiter is empty) that are not blank and not yet among
/// the accumulator's tokens, appended in order with the delimiter; `None` when none is new.
/// The accumulator's own tokens are not deduplicated, as in Paimon.
fn append_distinct(acc: &str, input: &str, delimiter: &str) -> Option<String> {
    let split_on = if delimiter.is_empty() { " " } else { delimiter };
    let mut seen: std::collections::HashSet<&str> = acc.split(split_on).collect();
    let mut out = acc.to_string();
    for token in input.split(split_on) {
        if java_blank(token) || !seen.insert(token) {
            continue;
        }
        out.push_str(delimiter);
        out.push_str(token);
    }
    (out.len() > acc.len()).then_some(out)
}

/// Decimal results beyond the type's precision become null, as Paimon's `Decimal` does.
fn fit_decimal(v: Option<i128>, t: &DataType) -> Datum {
    let precision = match t {
        DataType::Decimal128(p, _) => *p as u32,
        _ => 38,
    };
    match v {
        Some(v) if v.unsigned_abs() < 10u128.pow(precision.min(38)) => Datum::Decimal(v),
        _ => Datum::Null,
    }
}

fn negate(d: Datum, t: &DataType) -> Datum {
    match d {
        Datum::TinyInt(v) => Datum::TinyInt(v.wrapping_neg()),
        Datum::SmallInt(v) => Datum::SmallInt(v.wrapping_neg()),
        Datum::Int(v) => Datum::Int(v.wrapping_neg()),
        Datum::BigInt(v) => Datum::BigInt(v.wrapping_neg()),
        Datum::Float(v) => Datum::Float(-v),
        Datum::Double(v) => Datum::Double(-v),
        Datum::Decimal(v) => fit_decimal(v.checked_neg(), t),
        other => other,
    }
}

/// `a + b` (or `a - b` for a retraction) with Java's wrapping integer arithmetic.
fn add(a: Datum, b: Datum, subtract: bool, t: &DataType) -> Datum {
    macro_rules! int {
        ($v:ident, $x:expr, $y:expr) => {
            Datum::$v(if subtract {
                $x.wrapping_sub($y)
            } else {
                $x.wrapping_add($y)
            })
        };
    }
    match (a, b) {
        (Datum::TinyInt(x), Datum::TinyInt(y)) => int!(TinyInt, x, y),
        (Datum::SmallInt(x), Datum::SmallInt(y)) => int!(SmallInt, x, y),
        (Datum::Int(x), Datum::Int(y)) => int!(Int, x, y),
        (Datum::BigInt(x), Datum::BigInt(y)) => int!(BigInt, x, y),
        (Datum::Float(x), Datum::Float(y)) => Datum::Float(if subtract { x - y } else { x + y }),
        (Datum::Double(x), Datum::Double(y)) => Datum::Double(if subtract { x - y } else { x + y }),
        (Datum::Decimal(x), Datum::Decimal(y)) => fit_decimal(
            if subtract {
                x.checked_sub(y)
            } else {
                x.checked_add(y)
            },
            t,
        ),
        (a, _) => a,
    }
}

/// Order of two non-null values of one type (floats by total order, strings bytewise).
pub(crate) fn datum_cmp(a: &Datum, b: &Datum) -> Ordering {
    match (a, b) {
        (Datum::Boolean(x), Datum::Boolean(y)) => x.cmp(y),
        (Datum::TinyInt(x), Datum::TinyInt(y)) => x.cmp(y),
        (Datum::SmallInt(x), Datum::SmallInt(y)) => x.cmp(y),
        (Datum::Int(x), Datum::Int(y)) | (Datum::Date(x), Datum::Date(y)) => x.cmp(y),
        (Datum::Time(x), Datum::Time(y)) => x.cmp(y),
        (Datum::BigInt(x), Datum::BigInt(y)) => x.cmp(y),
        (Datum::Float(x), Datum::Float(y)) => x.total_cmp(y),
        (Datum::Double(x), Datum::Double(y)) => x.total_cmp(y),
        (Datum::Decimal(x), Datum::Decimal(y)) => x.cmp(y),
        (Datum::String(x), Datum::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Datum::Bytes(x), Datum::Bytes(y)) => x.cmp(y),
        (
            Datum::Timestamp {
                millis: a,
                nanos: an,
            },
            Datum::Timestamp {
                millis: b,
                nanos: bn,
            },
        ) => (a, an).cmp(&(b, bn)),
        _ => Ordering::Equal,
    }
}
