"""Builds the ``paimon-compact`` wheel: this directory's package plus the CLI binary and the
component that the build already made (no second build).

    python python/build_wheel.py --binary target/release/paimon-compact \
        --component target/wasm32-wasip2/component/paimon_compact.wasm \
        [--precompiled target/precompiled/paimon-compact-*.cwasm] --out target/wheels

The wheel is tagged for this machine's platform (``py3-none-<platform>``): it carries a native
executable and no Python extension, so any Python 3 on the same OS and architecture takes it.
"""

import argparse
import base64
import hashlib
import os
import sysconfig
import zipfile
from pathlib import Path

NAME = "paimon_compact"
VERSION = "0.1.0"
HERE = Path(__file__).resolve().parent


def digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True, help="the paimon-compact executable to ship")
    ap.add_argument("--component", required=True,
                    help="the component (.wasm) the executable runs, shipped beside it")
    ap.add_argument("--precompiled", nargs="*", default=[],
                    help="artifacts of `paimon-compact precompile`, shipped beside the executable "
                         "so that no start compiles the component")
    ap.add_argument("--out", required=True, help="directory for the .whl")
    args = ap.parse_args()
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    tag = f"py3-none-{platform}"
    files = {}
    for p in sorted((HERE / NAME).glob("*.py")):
        files[f"{NAME}/{p.name}"] = (p.read_bytes(), 0o644)
    files[f"{NAME}/bin/paimon-compact"] = (Path(args.binary).read_bytes(), 0o755)
    files[f"{NAME}/bin/paimon_compact.wasm"] = (Path(args.component).read_bytes(), 0o644)
    for p in map(Path, args.precompiled):
        files[f"{NAME}/bin/{p.name}"] = (p.read_bytes(), 0o644)
        # The checksum `precompile` wrote beside it: without it the CLI refuses the artifact
        # and compiles the component on first start.
        sum_file = p.with_name(p.name + ".sha256")
        if not sum_file.is_file():
            raise SystemExit(f"{sum_file} is missing: run `paimon-compact precompile` again")
        files[f"{NAME}/bin/{sum_file.name}"] = (sum_file.read_bytes(), 0o644)
    dist = f"{NAME}-{VERSION}.dist-info"
    files[f"{dist}/METADATA"] = (
        (
            "Metadata-Version: 2.1\n"
            f"Name: paimon-compact\nVersion: {VERSION}\n"
            "Summary: Apache Paimon compaction (the dedicated compaction job) from Python and Ray\n"
            "Requires-Python: >=3.8\n"
            "Provides-Extra: ray\nRequires-Dist: ray; extra == \"ray\"\n"
        ).encode(),
        0o644,
    )
    files[f"{dist}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: paimon-compact build_wheel\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(),
        0o644,
    )
    record = "".join(f"{n},{digest(d)},{len(d)}\n" for n, (d, _) in files.items()) + f"{dist}/RECORD,,\n"
    files[f"{dist}/RECORD"] = (record.encode(), 0o644)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    wheel = out / f"{NAME}-{VERSION}-{tag}.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for n, (d, mode) in files.items():
            info = zipfile.ZipInfo(n, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, d)
    print(wheel)


if __name__ == "__main__":
    main()
