//! The Parquet rewriters (in progress).
