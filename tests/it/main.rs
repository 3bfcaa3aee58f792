//! Every integration test of the core, in one binary (one link of arrow/parquet instead of
//! one per file). Each module is one former test file; `cargo test --test it <module>::`
//! runs one of them.

mod append_support;
mod merge_support;
mod table_support;

mod append_rewrite;
mod append_rewrite_errors;
mod conformance;
mod dedicated_job;
mod fanout;
mod fuzz_smoke;
mod host_codec;
mod hostile_metadata;
mod maintenance_expire;
mod maintenance_orphans;
mod maintenance_partitions_tags;
mod merge_aggregates;
mod merge_changelog_dedup;
mod merge_collections;
mod merge_dictionary_reads;
mod merge_dv_export;
mod merge_errors;
mod merge_properties;
mod merge_record_expiry;
mod merge_run_spill;
mod merge_sequence_groups;
mod merge_sequence_order;
mod merge_sorted_chunks;
mod merge_table;
mod orc_avro_table;
mod planner_properties;
mod postpone;
mod schema_evolution_table;
mod short_repetition_levels;
mod simulator;
mod table_demo;
mod table_job;
