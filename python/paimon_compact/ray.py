"""One table's compaction spread over Ray workers, committed once (``docs/fanout.md``).

The driver plans the job into tasks (``paimon-compact tasks``) and holds the partitions' leases,
renewing them while the tasks run; each task runs as a Ray task on any worker
(``paimon-compact run-task``: it writes only new files and returns a result); the driver then
commits one result per task as one COMPACT snapshot (``commit-tasks``). A worker that dies is
retried by Ray as a new attempt, whose files never collide with the first's; the commit takes
one result per task and deletes what the other attempts wrote. If a task fails for good, the
job is aborted (``abort-tasks``): every file its tasks wrote is deleted and the leases go back.

Every worker needs this package installed (it carries the CLI binary) and the storage
credentials in its environment (``AWS_*`` for S3; pass ``runtime_env={"env_vars": ...}`` to
``ray.init`` on a remote cluster). Task and result documents travel as JSON strings: a task is
a few kilobytes per bucket, and data files never pass through Ray.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from ._cli import PaimonCompactError, run_cli, scope_args


def _run_task(task_json: str, engine: Optional[str], env: Optional[Mapping[str, str]]) -> str:
    """Runs one task in this process's worker: a fresh attempt. Returns the result JSON."""
    with tempfile.TemporaryDirectory(prefix="paimon-compact-task-") as d:
        task_file = Path(d) / "task.json"
        result_file = Path(d) / "result.json"
        task_file.write_text(task_json)
        run_cli(["run-task", str(task_file), "--out", str(result_file)], engine=engine, env=env)
        return result_file.read_text()


def compact_table(
    uri: str,
    num_workers: Optional[int] = None,
    *,
    engine: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    progress: Optional[Callable[[int, int], None]] = None,
    max_retries: int = 2,
    lease_renewal_s: float = 120.0,
    work_dir: Optional[str] = None,
    **scope: Any,
) -> dict:
    """Compacts the table at ``uri`` on Ray and commits one COMPACT snapshot; returns the job's
    report (``docs/report.md``). ``num_workers``: tasks in flight at once (default: the
    cluster's CPUs). ``progress(done, total)`` is called on the driver as tasks finish. Scope
    and settings as ``paimon_compact.compact_table`` (``full``, ``partitions``, ``where``,
    ``buckets``, ``options``, ``skip_maintenance``). Ray must be initialized (``ray.init``)."""
    import ray

    remote = ray.remote(num_cpus=1, max_retries=max_retries)(_run_task)
    skip_maintenance = bool(scope.pop("skip_maintenance", False))
    own_dir = work_dir is None
    d = Path(work_dir or tempfile.mkdtemp(prefix="paimon-compact-job-"))
    try:
        plan = run_cli(["tasks", str(uri), "--out", str(d)] + scope_args(**scope), engine=engine, env=env)
        total = int(plan["tasks"])
        stop = threading.Event()
        renew_error: list = []

        def renew() -> None:
            while not stop.wait(lease_renewal_s):
                try:
                    run_cli(["renew-leases", str(d)], engine=engine, env=env)
                except PaimonCompactError as e:  # the commit's conflict check still guards
                    renew_error.append(e)
                    return

        renewer = threading.Thread(target=renew, daemon=True)
        if plan.get("leases"):
            renewer.start()
        try:
            width = num_workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
            pending = {}
            next_task = 0
            done = 0
            failure: Optional[BaseException] = None
            while next_task < total or pending:
                while next_task < total and len(pending) < width and failure is None:
                    text = (d / f"task-{next_task}.json").read_text()
                    pending[remote.remote(text, engine, env)] = next_task
                    next_task += 1
                if not pending:
                    break
                ready, _ = ray.wait(list(pending), num_returns=1)
                index = pending.pop(ready[0])
                try:
                    result = json.loads(ray.get(ready[0]))
                except Exception as e:  # a task that failed for good, after Ray's retries
                    failure = failure or e
                    continue
                result["table_uri"] = plan_uri(d)
                tmp = d / f".result-{index}.json.tmp"
                tmp.write_text(json.dumps(result))
                os.replace(tmp, d / f"result-{index}.json")
                done += 1
                if progress:
                    progress(done, total)
        finally:
            stop.set()
        if failure is not None:
            try:
                run_cli(["abort-tasks", str(d)], engine=engine, env=env)
            finally:
                raise failure
        args = ["commit-tasks", str(d)] + (["--skip-maintenance"] if skip_maintenance else [])
        return run_cli(args, engine=engine, env=env)
    finally:
        if own_dir:
            shutil.rmtree(d, ignore_errors=True)


def plan_uri(d: Path) -> str:
    """The table URI a task directory's job names."""
    return json.loads((d / "job.json").read_text())["table_uri"]
