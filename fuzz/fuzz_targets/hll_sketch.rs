#![no_main]
//! `paimon_compact::fuzz_targets::hll_sketch` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| paimon_compact::fuzz_targets::hll_sketch(data));
