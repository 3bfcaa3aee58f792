#![no_main]
//! `paimon_compact::fuzz_targets::plan_request` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| paimon_compact::fuzz_targets::plan_request(data));
