# Sourced by the CI scripts: the PyPI requirements of the test stages, pinned in one place, so
# the background installs (.ci/installs.sh) and each stage's own install never disagree.
# shellcheck shell=bash
# datasketches (the C++ library's Python binding): HLL sketches for the Java peer's hll_sketch table.
PYPAIMON_REQS=("pypaimon==2.1.0" "pytest>=7" "datasketches==5.2.0")  # stages 50, 52, 55 (target/pypaimon-venv)
S3_REQS=("moto[server]==5.2.5" "ray==2.52.1")         # stage 52, same venv
RUST_READER_REQ="pypaimon-rust==0.4.0"                # stage 50, same venv, where it installs
MERGE_REQS=("pyroaring>=1.0" "pytest>=7")             # stage 25 (target/merge-venv)
