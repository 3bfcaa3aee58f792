#![no_main]
//! `paimon_compact::fuzz_targets::avro_metadata` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| paimon_compact::fuzz_targets::avro_metadata(data));
