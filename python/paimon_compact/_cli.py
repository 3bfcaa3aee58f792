"""The bundled CLI: where it is, how to call it, and its errors as Python exceptions."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

# Exit statuses the CLI documents: 0 done or nothing to do, 3 some bucket left uncompacted
# (the report says which), 1 a typed error (nothing committed), 2 a usage or host error.
_REPORT_CODES = (0, 3)


class PaimonCompactError(RuntimeError):
    """A failed command. ``kind`` is the error kind (``conflict``, ``io``, ``corrupt-input``,
    ``illegal-state``, ... or ``host`` for usage and host errors); branch on it, never on the
    message. After ``commit-unknown`` the snapshot may exist: keep the job's files."""

    def __init__(self, kind: str, message: str, details: Optional[dict] = None):
        super().__init__(message)
        self.kind = kind
        self.details = details or {}


def binary() -> str:
    """The CLI to run: ``$PAIMON_COMPACT_CLI`` when set, else the one inside this package."""
    env = os.environ.get("PAIMON_COMPACT_CLI")
    if env:
        return env
    here = Path(__file__).resolve().parent / "bin" / "paimon-compact"
    if not here.exists():
        raise PaimonCompactError("host", f"no paimon-compact binary at {here}; set PAIMON_COMPACT_CLI")
    return str(here)


def run_cli(args: Sequence[str], *, engine: Optional[str] = None, env: Optional[Mapping[str, str]] = None) -> Any:
    """Runs ``paimon-compact <args> --json`` and returns the parsed JSON document. Raises
    ``PaimonCompactError`` with the error's kind when the command fails."""
    cmd = [binary()]
    if engine:
        cmd += ["--engine", engine]
    cmd += list(args) + ["--json"]
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    p = subprocess.run(cmd, capture_output=True, text=True, env=full_env)
    doc = None
    if p.stdout.strip():
        try:
            doc = json.loads(p.stdout)
        except json.JSONDecodeError:
            doc = None
    if p.returncode in _REPORT_CODES and doc is not None:
        return doc
    if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
        err = doc["error"]
        raise PaimonCompactError(err.get("kind", "host"), err.get("message", p.stderr.strip()), err)
    line = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit status {p.returncode}"
    raise PaimonCompactError("host", line)


def scope_args(
    *,
    full: bool = False,
    partitions: Iterable[str] = (),
    where: Optional[str] = None,
    buckets: Optional[str] = None,
    options: Optional[Mapping[str, Any]] = None,
    skip_maintenance: bool = False,
    no_lease: bool = False,
) -> list:
    """The CLI flags of a job's scope and run settings."""
    args = []
    if full:
        args.append("--full")
    for p in partitions:
        args += ["--partition", p]
    if where:
        args += ["--where", where]
    if buckets:
        args += ["--buckets", buckets]
    for k, v in (options or {}).items():
        args += ["--option", f"{k}={v}"]
    if skip_maintenance:
        args.append("--skip-maintenance")
    if no_lease:
        args.append("--no-lease")
    return args


def compact_table(
    uri: str,
    *,
    parallelism: Optional[int] = None,
    engine: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    **scope: Any,
) -> dict:
    """Compacts the table at ``uri`` and commits one COMPACT snapshot, then runs the table's
    maintenance (unless ``skip_maintenance=True``). Scope: ``full``, ``partitions``, ``where``,
    ``buckets``, ``options`` (dynamic table options), ``no_lease``. ``parallelism``: buckets at
    once in this machine's threads (default: its cores). Returns the job's report."""
    args = ["compact", str(uri)] + scope_args(**scope)
    if parallelism is not None:
        args += ["--parallelism", str(int(parallelism))]
    return run_cli(args, engine=engine, env=env)
