//! Avro object container files read record by record, as hostile input: the decoder's
//! allocations are bounded and its panics contained ([`crate::decoder_panics`]). Paimon's
//! metadata files ([`crate::table::avro`]) and its Avro data files
//! ([`crate::rewrite::avro_data`]) are both read through here.

use std::collections::HashMap;
use std::io::Read;

use apache_avro::schema::{Name, RecordSchema};
use apache_avro::types::Value;
use apache_avro::{Reader, Schema};

use crate::decoder_panics::contain;
use crate::error::{Error, Result};

/// Decodes the records of a container file into `T`s, each converted as soon as it is read:
/// one decoded [`Value`] is alive at a time, since a `Value` record (every field name an owned
/// string) is many times the size of the entry it becomes and a manifest can hold hundreds of
/// thousands of them (benches/README.md, "Hostile sizes"). `file` names it in errors.
pub fn read_records<T>(
    bytes: &[u8],
    file: &str,
    mut convert: impl FnMut(&Value) -> Result<T>,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    let mut source = bytes;
    each_record(&mut source, file, &mut |v| {
        out.push(convert(v)?);
        Ok(())
    })?;
    Ok(out)
}

/// Hands the records of the container file read from `source` to `each`, one at a time and in
/// order, holding one block of the file (at most [`MAX_AVRO_LENGTH`]) and one record: a data
/// file is read through here from storage without being held whole. `dyn` on purpose: one
/// instance of apache-avro's reader serves metadata and data files, in the component too.
pub fn each_record(
    source: &mut dyn Read,
    file: &str,
    each: &mut dyn FnMut(&Value) -> Result<()>,
) -> Result<()> {
    limit_allocations();
    contain(file, "Avro", || {
        let reader = Reader::new(source).map_err(|e| {
            Error::corrupt(Some(file), format!("not a readable Avro file: {e}")).with_source(e)
        })?;
        check_nesting(reader.writer_schema()).map_err(|refusal| match refusal {
            Nesting::Recursive(why) => Error::corrupt(Some(file), why),
            Nesting::TooDeep(why) => Error::unsupported(format!("{file}: {why}")),
        })?;
        for r in reader {
            let value = r.map_err(|e| {
                Error::corrupt(Some(file), format!("bad Avro record: {e}")).with_source(e)
            })?;
            each(&value)?;
        }
        Ok(())
    })
}

/// The longest byte string, and the most array items or map entries in one block, that a
/// file may declare. apache-avro reserves room for a declared count before it reads the items
/// (512 Mi by default), so a few hostile bytes could ask for tens of gigabytes, which aborts a
/// process (found by the `avro_metadata` fuzz target, `fuzz/README.md`). Paimon's metadata
/// holds nothing near this: its longest values are statistics and small embedded indexes, its
/// longest arrays one item per column or per data file of a bucket.
const MAX_AVRO_LENGTH: usize = 8 << 20;

/// Sets [`MAX_AVRO_LENGTH`] (apache-avro's limit is process-wide and the first setting wins).
fn limit_allocations() {
    static SET: std::sync::Once = std::sync::Once::new();
    SET.call_once(|| {
        apache_avro::util::max_allocation_bytes(MAX_AVRO_LENGTH);
    });
}

/// The deepest nesting of an Avro writer schema this crate decodes: records, arrays, maps and
/// unions inside each other, named records referred to counted where they are used. apache-avro
/// decodes a value by recursion over its schema, one stack frame per level; Paimon writes its
/// manifests about five levels deep and a data file's nested types at about two levels per
/// SQL type.
pub const MAX_AVRO_NESTING: usize = 64;

/// Why a writer schema is refused ([`check_nesting`]).
#[derive(Debug, PartialEq, Eq)]
enum Nesting {
    /// A record that contains itself: its values nest without end (a damaged or hostile file;
    /// no Paimon writer makes one).
    Recursive(String),
    /// Nested deeper than [`MAX_AVRO_NESTING`].
    TooDeep(String),
}

/// Checks that values of `schema` nest at most [`MAX_AVRO_NESTING`] levels deep before
/// apache-avro decodes one. A record that refers to itself (directly, through a union, an
/// array or a map) makes apache-avro 0.21 recurse as long as the bytes last, or for ever when
/// a level takes no byte, until the stack overflows: a process abort natively, a trap in the
/// component (found by the `avro_metadata` fuzz target, `fuzz/README.md`).
fn check_nesting(schema: &Schema) -> std::result::Result<(), Nesting> {
    let mut records = HashMap::new();
    collect_records(schema, &mut records, 0);
    let mut walk = NestingWalk {
        records,
        depths: HashMap::new(),
        open: Vec::new(),
    };
    walk.depth(schema, 0).map(|_| ())
}

/// Every record defined in `schema`, by full name (the schema's JSON nests at most 128 levels,
/// serde_json's limit, so this recursion is bounded; `level` stops it at that depth anyway).
fn collect_records<'a>(
    schema: &'a Schema,
    out: &mut HashMap<String, &'a RecordSchema>,
    level: usize,
) {
    if level > 2 * MAX_AVRO_NESTING {
        return;
    }
    match schema {
        Schema::Record(record) => {
            out.entry(full_name(&record.name)).or_insert(record);
            for field in &record.fields {
                collect_records(&field.schema, out, level + 1);
            }
        }
        Schema::Array(array) => collect_records(&array.items, out, level + 1),
        Schema::Map(map) => collect_records(&map.types, out, level + 1),
        Schema::Union(union) => {
            for variant in union.variants() {
                collect_records(variant, out, level + 1);
            }
        }
        _ => {}
    }
}

fn full_name(name: &Name) -> String {
    name.fullname(None)
}

/// The nesting of each record, computed once per name, and the records being walked.
struct NestingWalk<'a> {
    records: HashMap<String, &'a RecordSchema>,
    depths: HashMap<String, usize>,
    open: Vec<String>,
}

impl<'a> NestingWalk<'a> {
    /// The levels `schema` takes, at `level` levels deep.
    fn depth(&mut self, schema: &'a Schema, level: usize) -> std::result::Result<usize, Nesting> {
        if level > MAX_AVRO_NESTING {
            return Err(Nesting::TooDeep(format!(
                "its Avro schema nests more than {MAX_AVRO_NESTING} levels deep"
            )));
        }
        Ok(match schema {
            Schema::Record(record) => self.record(record, level)?,
            Schema::Ref { name } => {
                let name = full_name(name);
                match self.records.get(&name).copied() {
                    Some(record) => self.record(record, level)?,
                    // apache-avro resolves every reference when it parses; an unknown one
                    // is left to it.
                    None => 1,
                }
            }
            Schema::Array(array) => 1 + self.depth(&array.items, level + 1)?,
            Schema::Map(map) => 1 + self.depth(&map.types, level + 1)?,
            Schema::Union(union) => {
                let mut deepest = 0;
                for variant in union.variants() {
                    deepest = deepest.max(self.depth(variant, level + 1)?);
                }
                1 + deepest
            }
            _ => 1,
        })
    }

    fn record(
        &mut self,
        record: &'a RecordSchema,
        level: usize,
    ) -> std::result::Result<usize, Nesting> {
        let name = full_name(&record.name);
        if self.open.contains(&name) {
            return Err(Nesting::Recursive(format!(
                "its Avro schema's record {name} contains itself"
            )));
        }
        let depth = match self.depths.get(&name) {
            Some(&depth) => depth,
            None => {
                self.open.push(name.clone());
                let mut deepest = 0;
                for field in &record.fields {
                    deepest = deepest.max(self.depth(&field.schema, level + 1)?);
                }
                self.open.pop();
                self.depths.insert(name, 1 + deepest);
                1 + deepest
            }
        };
        if level + depth > MAX_AVRO_NESTING + 1 {
            return Err(Nesting::TooDeep(format!(
                "its Avro schema nests more than {MAX_AVRO_NESTING} levels deep"
            )));
        }
        Ok(depth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Schema {
        Schema::parse_str(json).unwrap()
    }

    /// `levels` arrays inside each other, of longs.
    fn arrays(levels: usize) -> String {
        let mut json = "\"long\"".to_string();
        for _ in 0..levels {
            json = format!(r#"{{"type":"array","items":{json}}}"#);
        }
        json
    }

    /// A record whose fields define records `n0` to `n{last}` side by side, each holding the
    /// one before it: shallow JSON, but a value of `n{k}` nests `k + 1` records deep.
    fn chain(last: usize) -> String {
        let fields: Vec<String> = (0..=last)
            .map(|k| {
                let inner = if k == 0 { "\"long\"".to_string() } else { format!("\"n{}\"", k - 1) };
                format!(
                    r#"{{"name":"f{k}","type":{{"type":"record","name":"n{k}","fields":[{{"name":"x","type":{inner}}}]}}}}"#
                )
            })
            .collect();
        format!(
            r#"{{"type":"record","name":"top","fields":[{}]}}"#,
            fields.join(",")
        )
    }

    #[test]
    fn a_record_that_contains_itself_is_refused() {
        for json in [
            r#"{"type":"record","name":"A","fields":[{"name":"x","type":"A"}]}"#,
            r#"{"type":"record","name":"A","fields":[{"name":"x","type":["null","A"]}]}"#,
            r#"{"type":"record","name":"A","fields":[{"name":"x","type":{"type":"array","items":"A"}}]}"#,
            r#"{"type":"record","name":"A","namespace":"p","fields":[{"name":"b","type":
                {"type":"record","name":"B","fields":[{"name":"m","type":{"type":"map","values":"p.A"}}]}}]}"#,
        ] {
            match check_nesting(&parse(json)) {
                Err(Nesting::Recursive(why)) => assert!(why.contains("contains itself"), "{why}"),
                other => panic!("{json}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_record_used_twice_is_not_recursive_and_deep_nests_are_refused() {
        let twice = r#"{"type":"record","name":"A","fields":[
            {"name":"b","type":{"type":"record","name":"B","fields":[{"name":"v","type":"long"}]}},
            {"name":"c","type":"B"},
            {"name":"d","type":{"type":"array","items":["null","B"]}}]}"#;
        assert_eq!(check_nesting(&parse(twice)), Ok(()));
        assert_eq!(check_nesting(&parse(&arrays(MAX_AVRO_NESTING - 1))), Ok(()));
        assert!(matches!(
            check_nesting(&parse(&arrays(MAX_AVRO_NESTING + 1))),
            Err(Nesting::TooDeep(_))
        ));
        // Records referred to by name count where they are used.
        assert_eq!(check_nesting(&parse(&chain(MAX_AVRO_NESTING - 3))), Ok(()));
        assert!(matches!(
            check_nesting(&parse(&chain(MAX_AVRO_NESTING + 5))),
            Err(Nesting::TooDeep(_))
        ));
    }
}
