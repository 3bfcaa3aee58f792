//! The host's integration tests in one binary: the CLI end to end, and the two engines
//! (native and the component in wasmtime) held to the same answers.

mod big_file;
mod cli;
mod engines;
mod huge_inputs;
mod lease_renewal;
