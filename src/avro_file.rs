//! Avro object container files read record by record, as hostile input: the decoder's
//! allocations are bounded and its panics contained ([`crate::decoder_panics`]). Paimon's
//! metadata files ([`crate::table::avro`]) and its Avro data files
//! ([`crate::rewrite::avro_data`]) are both read through here.

use std::io::Read;

use apache_avro::types::Value;
use apache_avro::Reader;

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
