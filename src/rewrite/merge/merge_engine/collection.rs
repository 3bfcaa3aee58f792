//! The aggregate functions over collection columns (format.md §9): `collect` (ARRAY, with
//! `fields.<f>.distinct`), `merge_map` (MAP) and `nested_update` (ARRAY<ROW>, with
//! `fields.<f>.nested-key`), with Paimon's semantics for nulls and retraction.
//!
//! Values are Arrow arrays: an accumulator or input is one row of the column, and a result is
//! a new one-row array of the column's type ([`super::Cell::Nested`]). Elements, map keys and
//! nested keys are compared through the row format (`arrow-row`), which is value equality for
//! every type, nested ones included; this is what Paimon's generated equalisers do.
//!
//! Where Paimon collects into a Java `HashMap` or `HashSet`, its output order is the hash
//! table's, not one a reader may rely on; ours is first-seen order (a map key keeps its first
//! position and takes its last value). Readers compare maps as maps; a distinct `collect` or
//! a keyed `nested_update` holds the same elements as Paimon's in another order.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, ListArray, MapArray, UInt32Array};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, FieldRef};
use arrow_select::concat::concat;
use arrow_select::take::take;

use crate::error::{Error, Result};

/// A collection function with its settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CollectionFunc {
    /// `collect`: the elements of every input, once each under `distinct`.
    Collect { distinct: bool },
    /// `merge_map`: the union of the maps, a later value winning per key.
    MergeMap,
    /// `nested_update`: the rows of every input; with a nested key, one row per key.
    NestedUpdate(NestedUpdate),
    /// `merge_map_with_keytime` (Paimon HEAD): a MAP whose values are rows with a STRING time
    /// field `ts`: an input entry replaces its key's entry only when its time is later (as
    /// strings), a null value removes the key, a null time is skipped.
    MergeMapWithKeyTime { ts: usize },
    /// `nested_partial_update` (Paimon HEAD): the rows of every input grouped by the nested
    /// key, each group partially updated (a later non-null field overwrites).
    NestedPartialUpdate {
        key: Vec<usize>,
        null_keys: NullKeys,
    },
}

/// The settings of `nested_update` (Paimon HEAD's options): `fields.<f>.nested-key`,
/// `.nested-sequence-field`, `.nested-key-null-strategy` and `.count-limit`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NestedUpdate {
    /// Indexes of the key fields in the row type; empty: rows are appended and retracted by
    /// equality.
    pub key: Vec<usize>,
    /// Indexes of the fields that order two rows of one key (a row replaces an older one only
    /// when its sequence is at least the older's); empty: the later row wins.
    pub sequence: Vec<usize>,
    pub null_keys: NullKeys,
    /// At most this many rows are kept: new keys (or appended rows) beyond it are dropped.
    pub count_limit: usize,
}

/// `nested-key-null-strategy`: what a row whose nested key has a null does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NullKeys {
    /// It merges like any key (the default, Paimon's behaviour before the option).
    Merge,
    /// It is dropped.
    Ignore,
    /// The merge fails.
    Error,
}

/// The result of a step, which is often one of its operands unchanged.
pub(crate) enum Out {
    Acc,
    Input,
    New(ArrayRef),
}

impl CollectionFunc {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            CollectionFunc::Collect { .. } => "collect",
            CollectionFunc::MergeMap => "merge_map",
            CollectionFunc::NestedUpdate(_) => "nested_update",
            CollectionFunc::MergeMapWithKeyTime { .. } => "merge_map_with_keytime",
            CollectionFunc::NestedPartialUpdate { .. } => "nested_partial_update",
        }
    }

    /// Whether Paimon's function retracts (the HEAD-only ones do not).
    pub(crate) fn retracts(&self) -> bool {
        !matches!(
            self,
            CollectionFunc::MergeMapWithKeyTime { .. } | CollectionFunc::NestedPartialUpdate { .. }
        )
    }

    /// Whether `t` is the column type the function is defined on.
    pub(crate) fn accepts(&self, t: &DataType) -> bool {
        match (self, t) {
            (CollectionFunc::Collect { .. }, DataType::List(_)) => true,
            (CollectionFunc::MergeMap, DataType::Map(_, _)) => true,
            (
                CollectionFunc::NestedUpdate(_) | CollectionFunc::NestedPartialUpdate { .. },
                DataType::List(f),
            ) => matches!(f.data_type(), DataType::Struct(_)),
            (CollectionFunc::MergeMapWithKeyTime { ts }, DataType::Map(entries, _)) => {
                match entries.data_type() {
                    DataType::Struct(kv) if kv.len() == 2 => match kv[1].data_type() {
                        DataType::Struct(row) => row
                            .get(*ts)
                            .is_some_and(|f| matches!(f.data_type(), DataType::Utf8)),
                        _ => false,
                    },
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// `agg(acc, input)`; `None` is a null value. Both null gives `Out::Acc`.
    pub(crate) fn agg(&self, acc: Option<&dyn Array>, input: Option<&dyn Array>) -> Result<Out> {
        match self {
            CollectionFunc::Collect { distinct } => {
                let (acc, input) = match (acc, input) {
                    (None, None) => return Ok(Out::Acc),
                    (None, Some(_)) if !distinct => return Ok(Out::Input),
                    (Some(_), None) if !distinct => return Ok(Out::Acc),
                    (a, i) => (a, i),
                };
                let like = acc.or(input).map(|a| a.data_type().clone());
                let like = like.ok_or_else(|| Error::internal("collect of two nulls"))?;
                let a = acc.map(list_values).transpose()?;
                let i = input.map(list_values).transpose()?;
                let all = concat_present(a.as_ref(), i.as_ref())?;
                let keep: Vec<u32> = if !distinct {
                    (0..all.len() as u32).collect()
                } else {
                    // Paimon keeps an accumulator of nested or binary elements as it is (it is
                    // distinct already) and deduplicates everything else through a hash set.
                    let element = all.data_type();
                    let acc_kept = if keeps_accumulator(element) {
                        a.as_ref().map_or(0, |x| x.len())
                    } else {
                        0
                    };
                    distinct_after(&all, acc_kept)?
                };
                Ok(Out::New(one_list(&like, &all, &keep)?))
            }
            CollectionFunc::MergeMap => {
                let (Some(acc), Some(input)) = (acc, input) else {
                    return Ok(if acc.is_none() { Out::Input } else { Out::Acc });
                };
                let all = concat(&[map_entries(acc)?.as_ref(), map_entries(input)?.as_ref()])
                    .map_err(arrow)?;
                let keep = last_value_per_key(all.as_struct().column(0))?;
                Ok(Out::New(one_map(acc.data_type(), &all, &keep)?))
            }
            CollectionFunc::MergeMapWithKeyTime { ts } => match (acc, input) {
                (None, _) => Ok(Out::Input),
                (Some(_), None) => Ok(Out::Acc),
                (Some(a), Some(i)) => self.merge_with_keytime(*ts, a, i),
            },
            CollectionFunc::NestedPartialUpdate { key, null_keys } => match input {
                None => Ok(Out::Acc),
                Some(i) => self.nested_partial_update(key, *null_keys, acc, i),
            },
            CollectionFunc::NestedUpdate(n) => {
                let Some(input) = input else {
                    return Ok(Out::Acc);
                };
                let like = input.data_type().clone();
                let a = acc.map(list_values).transpose()?;
                let i = list_values(input)?;
                if n.key.is_empty() {
                    let (all, keep) = match &a {
                        None => {
                            let keep: Vec<u32> = valid_rows(&i)
                                .into_iter()
                                .take(n.count_limit)
                                .map(|k| k as u32)
                                .collect();
                            (i, keep)
                        }
                        Some(a) if a.len() >= n.count_limit => return Ok(Out::Acc),
                        Some(a) => {
                            let room = n.count_limit - a.len();
                            let all = concat(&[a.as_ref(), i.as_ref()]).map_err(arrow)?;
                            let mut keep: Vec<u32> =
                                valid_rows(a).into_iter().map(|k| k as u32).collect();
                            keep.extend(
                                valid_rows(&i)
                                    .into_iter()
                                    .take(room)
                                    .map(|k| (k + a.len()) as u32),
                            );
                            (all, keep)
                        }
                    };
                    return Ok(Out::New(one_list(&like, &all, &keep)?));
                }
                let acc_len = a.as_ref().map_or(0, |x| x.len());
                let all = concat_present(a.as_ref(), Some(&i))?;
                let keys = nested_rows(&all, &n.key)?;
                let seqs = if n.sequence.is_empty() {
                    None
                } else {
                    Some(nested_rows(&all, &n.sequence)?)
                };
                let mut per_key = PerKey::default();
                for r in 0..all.len() {
                    if all.is_null(r) || !n.admits(&all, r)? {
                        continue;
                    }
                    let row = keys.row(r);
                    let k = row.as_ref();
                    let take = match per_key.get(k) {
                        Some(old) => seqs
                            .as_ref()
                            .is_none_or(|s| s.row(r) >= s.row(old as usize)),
                        None => r < acc_len || per_key.len() < n.count_limit,
                    };
                    if take {
                        per_key.set(k, r as u32);
                    }
                }
                Ok(Out::New(one_list(&like, &all, &per_key.into_kept())?))
            }
        }
    }

    /// `merge_map_with_keytime`'s step on two non-null maps.
    fn merge_with_keytime(&self, ts: usize, acc: &dyn Array, input: &dyn Array) -> Result<Out> {
        let (a, i) = (map_entries(acc)?, map_entries(input)?);
        let acc_len = a.len();
        let all = concat(&[a.as_ref(), i.as_ref()]).map_err(arrow)?;
        let entries = all.as_struct();
        let keys = entries.column(0);
        let values = entries.column(1);
        let rows_ = values.as_struct();
        let times = rows_.column(ts).as_string_opt::<i32>().ok_or_else(|| {
            Error::internal("merge_map_with_keytime: the time field is not a string")
        })?;
        let conv = converter(keys.data_type())?;
        let key_rows = rows(&conv, keys)?;
        let mut per_key = PerKey::default();
        for e in 0..all.len() {
            let row = key_rows.row(e);
            let k = row.as_ref();
            if e >= acc_len {
                if values.is_null(e) {
                    per_key.remove(k);
                    continue;
                }
                if times.is_null(e) {
                    continue;
                }
                let later = match per_key.get(k) {
                    None => true,
                    Some(old) => {
                        let old = old as usize;
                        values.is_null(old)
                            || times.is_null(old)
                            || times.value(e) > times.value(old)
                    }
                };
                if !later {
                    continue;
                }
            }
            per_key.set(k, e as u32);
        }
        let keep = per_key.into_kept();
        Ok(Out::New(one_map(acc.data_type(), &all, &keep)?))
    }

    /// `nested_partial_update`'s step: `acc` may be null, `input` is not.
    fn nested_partial_update(
        &self,
        key: &[usize],
        null_keys: NullKeys,
        acc: Option<&dyn Array>,
        input: &dyn Array,
    ) -> Result<Out> {
        let like = input.data_type().clone();
        let a = acc.map(list_values).transpose()?;
        let i = list_values(input)?;
        let all = concat_present(a.as_ref(), Some(&i))?;
        let keys = nested_rows(&all, key)?;
        let s = all.as_struct();
        // Per group, per field: the last row whose field is not null.
        let mut slot: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut groups: Vec<Vec<Option<u32>>> = Vec::new();
        for r in 0..all.len() {
            if all.is_null(r) || !null_keys.admits(key, &all, r)? {
                continue;
            }
            let k = keys.row(r).as_ref().to_vec();
            let g = *slot.entry(k).or_insert_with(|| {
                groups.push(vec![None; s.num_columns()]);
                groups.len() - 1
            });
            for (f, col) in s.columns().iter().enumerate() {
                if col.is_valid(r) {
                    groups[g][f] = Some(r as u32);
                }
            }
        }
        let DataType::Struct(fields) = s.data_type() else {
            return Err(Error::internal(
                "nested_partial_update over a non-row element",
            ));
        };
        let columns = s
            .columns()
            .iter()
            .enumerate()
            .map(|(f, col)| {
                let idx: UInt32Array = groups.iter().map(|g| g[f]).collect();
                take(col.as_ref(), &idx, None).map_err(arrow)
            })
            .collect::<Result<Vec<_>>>()?;
        let merged =
            arrow_array::StructArray::try_new(fields.clone(), columns, None).map_err(arrow)?;
        let merged: ArrayRef = Arc::new(merged);
        let keep: Vec<u32> = (0..merged.len() as u32).collect();
        Ok(Out::New(one_list(&like, &merged, &keep)?))
    }

    /// `retract(acc, input)`; `None` is a null value.
    pub(crate) fn retract(
        &self,
        acc: Option<&dyn Array>,
        input: Option<&dyn Array>,
    ) -> Result<Out> {
        let (Some(acc), Some(input)) = (acc, input) else {
            // Nothing to retract from, or nothing retracted.
            return Ok(Out::Acc);
        };
        let like = acc.data_type().clone();
        match self {
            CollectionFunc::MergeMapWithKeyTime { .. }
            | CollectionFunc::NestedPartialUpdate { .. } => {
                Err(Error::internal(format!("{} does not retract", self.name())))
            }
            CollectionFunc::Collect { .. } => {
                // Each retracted element cancels one equal element of the accumulator, the
                // earliest first.
                let (a, r) = (list_values(acc)?, list_values(input)?);
                if r.is_empty() {
                    return Ok(Out::Acc);
                }
                let conv = converter(a.data_type())?;
                let (ra, rr) = (rows(&conv, &a)?, rows(&conv, &r)?);
                let mut pending: HashMap<Vec<u8>, usize> = HashMap::new();
                for k in 0..r.len() {
                    *pending.entry(rr.row(k).as_ref().to_vec()).or_default() += 1;
                }
                let keep: Vec<u32> = (0..a.len())
                    .filter(|&k| match pending.get_mut(ra.row(k).as_ref()) {
                        Some(n) if *n > 0 => {
                            *n -= 1;
                            false
                        }
                        _ => true,
                    })
                    .map(|k| k as u32)
                    .collect();
                Ok(Out::New(one_list(&like, &a, &keep)?))
            }
            CollectionFunc::MergeMap => {
                let (a, r) = (map_entries(acc)?, map_entries(input)?);
                if r.is_empty() {
                    return Ok(Out::Acc);
                }
                let (ak, rk) = (a.as_struct().column(0), r.as_struct().column(0));
                let conv = converter(ak.data_type())?;
                let gone: HashSet<Vec<u8>> = {
                    let rows = rows(&conv, rk)?;
                    (0..rk.len())
                        .map(|k| rows.row(k).as_ref().to_vec())
                        .collect()
                };
                let ak_rows = rows(&conv, ak)?;
                let survivors: Vec<u32> = (0..ak.len())
                    .filter(|&k| !gone.contains(ak_rows.row(k).as_ref()))
                    .map(|k| k as u32)
                    .collect();
                // Paimon rebuilds a hash map: a key repeated in the accumulator keeps its last
                // value.
                let kept = take(a.as_ref(), &UInt32Array::from(survivors), None).map_err(arrow)?;
                let keep = last_value_per_key(kept.as_struct().column(0))?;
                Ok(Out::New(one_map(&like, &kept, &keep)?))
            }
            CollectionFunc::NestedUpdate(n) => {
                let (a, r) = (list_values(acc)?, list_values(input)?);
                let keep: Vec<u32> = if n.key.is_empty() {
                    // Every accumulator row equal to a retracted row goes.
                    let conv = converter(a.data_type())?;
                    let (ra, rr) = (rows(&conv, &a)?, rows(&conv, &r)?);
                    let gone: HashSet<Vec<u8>> = valid_rows(&r)
                        .into_iter()
                        .map(|k| rr.row(k).as_ref().to_vec())
                        .collect();
                    valid_rows(&a)
                        .into_iter()
                        .filter(|&k| !gone.contains(ra.row(k).as_ref()))
                        .map(|k| k as u32)
                        .collect()
                } else {
                    // One row per key of the accumulator (its last), less the retracted keys.
                    let (ka, kr) = (nested_rows(&a, &n.key)?, nested_rows(&r, &n.key)?);
                    let mut gone: HashSet<Vec<u8>> = HashSet::new();
                    for k in valid_rows(&r) {
                        if n.admits(&r, k)? {
                            gone.insert(kr.row(k).as_ref().to_vec());
                        }
                    }
                    let mut per_key = PerKey::default();
                    for k in valid_rows(&a) {
                        if n.admits(&a, k)? {
                            per_key.set(ka.row(k).as_ref(), k as u32);
                        }
                    }
                    let mut keep = per_key.into_kept();
                    keep.retain(|&k| !gone.contains(ka.row(k as usize).as_ref()));
                    keep
                };
                Ok(Out::New(one_list(&like, &a, &keep)?))
            }
        }
    }
}

impl NestedUpdate {
    /// Whether row `r` of `rows` takes part under the null-key strategy.
    fn admits(&self, rows: &ArrayRef, r: usize) -> Result<bool> {
        self.null_keys.admits(&self.key, rows, r)
    }
}

impl NullKeys {
    /// Whether row `r` of `rows` (a struct array) takes part, given its `key` fields.
    fn admits(self, key: &[usize], rows: &ArrayRef, r: usize) -> Result<bool> {
        let s = rows.as_struct();
        if !key.iter().any(|&f| s.column(f).is_null(r)) {
            return Ok(true);
        }
        match self {
            NullKeys::Merge => Ok(true),
            NullKeys::Ignore => Ok(false),
            NullKeys::Error => Err(Error::unsupported(
                "a nested key holds a null under 'nested-key-null-strategy' = error (Paimon \
                 fails the merge there too)",
            )),
        }
    }
}

/// Whether Paimon's distinct `collect` keeps the accumulator as it is for this element type:
/// nested and binary elements, which it compares with a generated equaliser over a list.
fn keeps_accumulator(element: &DataType) -> bool {
    matches!(
        element,
        DataType::List(_)
            | DataType::LargeList(_)
            | DataType::Map(_, _)
            | DataType::Struct(_)
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::FixedSizeBinary(_)
            | DataType::BinaryView
    )
}

fn arrow(e: arrow_schema::ArrowError) -> Error {
    Error::internal(format!("aggregating a collection: {e}")).with_source(e)
}

fn converter(t: &DataType) -> Result<RowConverter> {
    RowConverter::new(vec![SortField::new(t.clone())]).map_err(|e| {
        Error::unsupported(format!(
            "comparing collection elements of type {t}: {e} (no aggregate over them)"
        ))
    })
}

fn rows(conv: &RowConverter, a: &ArrayRef) -> Result<arrow_row::Rows> {
    conv.convert_columns(std::slice::from_ref(a)).map_err(arrow)
}

/// The elements of a one-row list array.
fn list_values(a: &dyn Array) -> Result<ArrayRef> {
    let list = a
        .as_list_opt::<i32>()
        .ok_or_else(|| Error::internal(format!("expected a list, found {}", a.data_type())))?;
    Ok(list.value(0))
}

/// The entries (a struct of key and value) of a one-row map array.
fn map_entries(a: &dyn Array) -> Result<ArrayRef> {
    let map = a
        .as_map_opt()
        .ok_or_else(|| Error::internal(format!("expected a map, found {}", a.data_type())))?;
    Ok(Arc::new(map.value(0)))
}

/// The first `kept` elements, then the first occurrence of each element not seen before.
fn distinct_after(all: &ArrayRef, kept: usize) -> Result<Vec<u32>> {
    let conv = converter(all.data_type())?;
    let r = rows(&conv, all)?;
    let mut seen = HashSet::new();
    Ok((0..all.len())
        .filter(|&i| seen.insert(r.row(i).as_ref().to_vec()) || i < kept)
        .map(|i| i as u32)
        .collect())
}

/// One chosen entry per key, keys in first-seen order: the bookkeeping of every function that
/// collects into a Java hash map (which keeps a key's place and replaces its value).
#[derive(Default)]
struct PerKey {
    slot: HashMap<Vec<u8>, usize>,
    /// Per place, the chosen entry; a removed key empties its place.
    keep: Vec<Option<u32>>,
}

impl PerKey {
    /// The entry chosen for `key` so far.
    fn get(&self, key: &[u8]) -> Option<u32> {
        self.slot.get(key).and_then(|&s| self.keep[s])
    }

    /// Chooses entry `at` for `key`: in the key's place, or a new place at the end.
    fn set(&mut self, key: &[u8], at: u32) {
        match self.slot.get(key) {
            Some(&s) => self.keep[s] = Some(at),
            None => {
                self.slot.insert(key.to_vec(), self.keep.len());
                self.keep.push(Some(at));
            }
        }
    }

    /// Forgets `key`; set again, it takes a new place at the end.
    fn remove(&mut self, key: &[u8]) {
        if let Some(s) = self.slot.remove(key) {
            self.keep[s] = None;
        }
    }

    /// Keys chosen and not removed.
    fn len(&self) -> usize {
        self.slot.len()
    }

    /// The chosen entries in their keys' places.
    fn into_kept(self) -> Vec<u32> {
        self.keep.into_iter().flatten().collect()
    }
}

/// `acc`'s elements followed by `input`'s (either may be absent), in one array.
fn concat_present(acc: Option<&ArrayRef>, input: Option<&ArrayRef>) -> Result<ArrayRef> {
    let parts: Vec<&dyn Array> = acc.into_iter().chain(input).map(|x| x.as_ref()).collect();
    concat(&parts).map_err(arrow)
}

/// The positions of the non-null entries of `x` (Paimon skips null rows of nested tables).
fn valid_rows(x: &dyn Array) -> Vec<usize> {
    (0..x.len()).filter(|&k| x.is_valid(k)).collect()
}

/// One entry per key: the last entry of the key, at the key's first place.
fn last_value_per_key(keys: &ArrayRef) -> Result<Vec<u32>> {
    let conv = converter(keys.data_type())?;
    let r = rows(&conv, keys)?;
    let mut per_key = PerKey::default();
    for i in 0..keys.len() {
        per_key.set(r.row(i).as_ref(), i as u32);
    }
    Ok(per_key.into_kept())
}

/// The row-format encoding of fields `fields` of every row of `rows` (a struct array):
/// equality for keys, Paimon's order (ascending, null first) for sequences.
fn nested_rows(rows: &ArrayRef, fields: &[usize]) -> Result<arrow_row::Rows> {
    let s = rows.as_struct();
    let columns: Vec<ArrayRef> = fields.iter().map(|&f| s.column(f).clone()).collect();
    let conv = RowConverter::new(
        columns
            .iter()
            .map(|c| SortField::new(c.data_type().clone()))
            .collect(),
    )
    .map_err(|e| Error::unsupported(format!("nested key type: {e}")))?;
    conv.convert_columns(&columns).map_err(arrow)
}

/// A one-row list of type `like` holding `values[keep]`.
fn one_list(like: &DataType, values: &ArrayRef, keep: &[u32]) -> Result<ArrayRef> {
    let DataType::List(field) = like else {
        return Err(Error::internal("a collection result needs a list type"));
    };
    let taken = take(values.as_ref(), &UInt32Array::from(keep.to_vec()), None).map_err(arrow)?;
    let list = ListArray::try_new(
        field.clone(),
        OffsetBuffer::new(ScalarBuffer::from(vec![0i32, taken.len() as i32])),
        taken,
        None,
    )
    .map_err(arrow)?;
    Ok(Arc::new(list))
}

/// A one-row map of type `like` holding `entries[keep]`.
fn one_map(like: &DataType, entries: &ArrayRef, keep: &[u32]) -> Result<ArrayRef> {
    let DataType::Map(field, sorted) = like else {
        return Err(Error::internal("a map result needs a map type"));
    };
    let taken = take(entries.as_ref(), &UInt32Array::from(keep.to_vec()), None).map_err(arrow)?;
    let field: &FieldRef = field;
    let map = MapArray::try_new(
        field.clone(),
        OffsetBuffer::new(ScalarBuffer::from(vec![0i32, taken.len() as i32])),
        taken.as_struct().clone(),
        None,
        *sorted,
    )
    .map_err(arrow)?;
    Ok(Arc::new(map))
}
