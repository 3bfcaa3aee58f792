#![no_main]
//! `paimon_compact::fuzz_targets::avro_data` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| paimon_compact::fuzz_targets::avro_data(data));
