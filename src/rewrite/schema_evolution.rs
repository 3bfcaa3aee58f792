//! Schema evolution: reading a data file written under an older schema version as rows of the
//! table's latest schema, as Paimon's readers do.
//!
//! Paimon identifies columns by field id, not by name: `ALTER TABLE` may add a column (older
//! files lack it and read as nulls), rename one (older files have the old name) or widen its
//! type (`INT` to `BIGINT`, read with a cast). The caller matches field ids between the file's
//! schema version and the latest one and hands over, for each output column, the file's column
//! name it comes from ([`ColumnMap`]); this module checks that map against the file and applies
//! it to each decoded batch.

use arrow::array::{new_null_array, RecordBatch};
use arrow::datatypes::{DataType, Schema, SchemaRef};

use crate::error::{Error, Result};

/// For each output column, the file's column it is read from (`None`: added since the file was
/// written, read as nulls).
pub type ColumnMap = [Option<String>];

/// How one file becomes rows of the output schema.
#[derive(Clone, Debug)]
pub(crate) struct Evolution {
    /// Per output column: the index of its source column in the file's batches, or `None`.
    sources: Vec<Option<usize>>,
}

impl Evolution {
    /// Checks `map` against the file's schema (`file_schema`, as decoded) and the output:
    /// every mapped column exists, its type can be cast to the output's, and no column added
    /// since is `NOT NULL`.
    pub(crate) fn new(
        path: &str,
        file_schema: &Schema,
        output: &Schema,
        map: &ColumnMap,
    ) -> Result<Self> {
        if map.len() != output.fields().len() {
            return Err(Error::illegal_state(format!(
                "schema evolution map of '{path}' has {} columns, the output {}",
                map.len(),
                output.fields().len()
            )));
        }
        let mut sources = Vec::with_capacity(map.len());
        for (target, from) in output.fields().iter().zip(map) {
            let Some(name) = from else {
                if !target.is_nullable() {
                    return Err(Error::corrupt(
                        Some(path),
                        format!(
                            "column '{}' is NOT NULL in the table but did not exist when the file \
                             was written",
                            target.name()
                        ),
                    ));
                }
                sources.push(None);
                continue;
            };
            let fields = file_schema.fields();
            let index = fields
                .iter()
                .position(|f| f.name() == name)
                .or_else(|| {
                    fields
                        .iter()
                        .position(|f| f.name().eq_ignore_ascii_case(name))
                })
                .ok_or_else(|| {
                    Error::corrupt(
                        Some(path),
                        format!(
                            "schema does not match its schema version: no column '{name}' (for \
                             the table's '{}')",
                            target.name()
                        ),
                    )
                })?;
            let source = value_type(fields[index].data_type());
            if !arrow::compute::can_cast_types(source, target.data_type()) {
                return Err(Error::unsupported(format!(
                    "column '{name}' of '{path}' is {source} and cannot become the table's {}",
                    target.data_type()
                )));
            }
            sources.push(Some(index));
        }
        Ok(Evolution { sources })
    }

    /// The file's column holding output column `column`, if it has one.
    pub(crate) fn source(&self, column: usize) -> Option<usize> {
        self.sources.get(column).copied().flatten()
    }

    /// The rows of `batch` (decoded with the file's own schema) as the output schema.
    pub(crate) fn apply(
        &self,
        batch: &RecordBatch,
        output: &SchemaRef,
        path: &str,
    ) -> Result<RecordBatch> {
        let columns = output
            .fields()
            .iter()
            .zip(&self.sources)
            .map(|(target, source)| match source {
                Some(i) => {
                    let c = batch.column(*i);
                    if c.data_type() == target.data_type() {
                        Ok(c.clone())
                    } else {
                        arrow::compute::cast(c, target.data_type())
                            .map_err(|e| Error::corrupt(Some(path), e))
                    }
                }
                None => Ok(new_null_array(target.data_type(), batch.num_rows())),
            })
            .collect::<Result<Vec<_>>>()?;
        RecordBatch::try_new(output.clone(), columns).map_err(|e| Error::corrupt(Some(path), e))
    }
}

/// A dictionary column's value type (files may be decoded with dictionary arrays).
fn value_type(t: &DataType) -> &DataType {
    match t {
        DataType::Dictionary(_, v) => v,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, Int32Array, Int64Array, StringArray};
    use arrow::datatypes::Field;
    use std::sync::Arc;

    #[test]
    fn added_renamed_and_widened_columns() {
        let file = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("v", DataType::Utf8, true),
            Field::new("n", DataType::Int32, true),
        ]));
        let out = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("label", DataType::Utf8, true),
            Field::new("n", DataType::Int64, true),
            Field::new("extra", DataType::Utf8, true),
        ]));
        let map = [
            Some("id".to_string()),
            Some("v".to_string()),
            Some("n".to_string()),
            None,
        ];
        let e = Evolution::new("f", &file, &out, &map).unwrap();
        let batch = RecordBatch::try_new(
            file,
            vec![
                Arc::new(Int64Array::from(vec![1, 2])),
                Arc::new(StringArray::from(vec![Some("a"), None])),
                Arc::new(Int32Array::from(vec![7, 8])),
            ],
        )
        .unwrap();
        let b = e.apply(&batch, &out, "f").unwrap();
        assert_eq!(b.schema(), out);
        let n = b.column(2).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(n.values(), &[7, 8]);
        assert_eq!(b.column(3).null_count(), 2);
    }

    #[test]
    fn a_missing_column_or_an_added_not_null_one_is_an_error() {
        let file = Schema::new(vec![Field::new("id", DataType::Int64, false)]);
        let out = Schema::new(vec![Field::new("x", DataType::Int64, false)]);
        let e = Evolution::new("f", &file, &out, &[Some("gone".into())]).unwrap_err();
        assert!(e.message.contains("no column 'gone'"), "{e}");
        let e = Evolution::new("f", &file, &out, &[None]).unwrap_err();
        assert!(e.message.contains("NOT NULL"), "{e}");
    }
}
