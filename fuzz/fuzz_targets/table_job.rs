#![no_main]
//! `paimon_compact::fuzz_targets::table_job` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| paimon_compact::fuzz_targets::table_job(data));
