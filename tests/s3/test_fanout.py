"""Fan-out on S3 (moto, loopback): one job planned by the CLI, its tasks run in separate
processes (at once, one of them twice, one failing on injected server errors and then
retried), committed once; an aborted job leaves the table as it was; `--parallelism 2`
commits what one thread commits. pypaimon reads every result back."""

import json
import subprocess

import pyarrow as pa

from conftest import CLI, ENGINE, cli_env
from faults import FaultProxy, Rule

PK = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


def table(wh, name):
    wh.create(name, PK, partition_keys=["dt"], primary_keys=["k", "dt"],
              options={"bucket": "3", "write-only": "true"})
    for i in range(4):
        wh.write(name, [{"k": j, "dt": f"d{j % 2}", "v": f"v{i}-{j}"}
                        for j in range(i * 30, i * 30 + 90)], PK)
    return wh.read(name)


def compacts(wh, name):
    return [s for s in wh.snapshots(name) if s["commitKind"] == "COMPACT"]


def plan(wh, name, d):
    p = wh.cli("tasks", wh.uri(name), "--full", "--out", str(d), "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["tasks"] >= 4, doc
    return doc


def run_tasks_at_once(wh, files, endpoint=None):
    """Starts one `run-task` process per file at once; returns their exit statuses."""
    env = cli_env(endpoint or wh.endpoint)
    procs = [subprocess.Popen([CLI, "--engine", ENGINE, "run-task", str(f), "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for f in files]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        out.append((p.returncode, stdout, stderr))
    return out


def no_orphans(wh, name):
    """remove-orphan-files finds nothing: every object the job left is referenced."""
    p = wh.cli("remove-orphan-files", wh.uri(name), "--older-than", "0 s", "--dry-run", "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_tasks_in_separate_processes_one_retried_one_failed_commit_once(s3wh, moto, tmp_path):
    before = table(s3wh, "t")
    d = tmp_path / "job"
    job = plan(s3wh, "t", d)
    tasks = sorted(d.glob("task-*.json"))
    # Task 1 first fails: every PUT of a data file answers 500 until its retries give up.
    with FaultProxy(moto) as proxy:
        proxy.add(Rule("status", method="PUT", path_contains=".parquet", status=500, times=10**6))
        [(code, _, err)] = run_tasks_at_once(s3wh, [tasks[1]], endpoint=proxy.endpoint)
    assert code == 1, err
    assert not (d / "result-1.json").exists()
    # Every task at once, task 0 twice (a duplicated straggler).
    runs = run_tasks_at_once(s3wh, tasks + [tasks[0]])
    assert all(code == 0 for code, _, _ in runs), [e for _, _, e in runs]
    p = s3wh.cli("commit-tasks", str(d), "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    report = json.loads(p.stdout)
    assert report["snapshot_after"] == job["planned_on"] + 1, report
    assert len(compacts(s3wh, "t")) == 1
    assert s3wh.read("t") == before
    # No file of the job is left unreferenced: not the failed attempt's, not the duplicate's.
    tag = job["job_id"][:8] + "-" + job["job_id"][8:12]
    stray = [p for p in no_orphans(s3wh, "t")["orphans"]["deleted"] if tag in p]
    assert stray == [], stray
    # Committing again is refused and changes nothing.
    objects = s3wh.objects("t")
    p = s3wh.cli("commit-tasks", str(d), "--json")
    assert p.returncode == 1
    assert json.loads(p.stdout)["error"]["kind"] == "illegal-state"
    assert s3wh.objects("t") == objects
    # pypaimon keeps writing on top.
    s3wh.write("t", [{"k": 1, "dt": "d1", "v": "new"}], PK)
    assert {"k": 1, "dt": "d1", "v": "new"} in s3wh.read("t")


def test_an_aborted_job_leaves_the_table_as_it_was(s3wh, tmp_path):
    table(s3wh, "t")
    objects = s3wh.objects("t")
    d = tmp_path / "job"
    plan(s3wh, "t", d)
    tasks = sorted(d.glob("task-*.json"))
    assert all(code == 0 for code, _, _ in run_tasks_at_once(s3wh, tasks[:2]))
    p = s3wh.cli("abort-tasks", str(d), "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.loads(p.stdout)
    assert r["leases_released"] == 2 and r["deleted"], r
    assert s3wh.objects("t") == objects
    assert compacts(s3wh, "t") == []


def test_parallel_buckets_commit_what_one_thread_commits(s3wh):
    before = table(s3wh, "a")
    table(s3wh, "b")
    pa_, ra = s3wh.compact("a", "--full", "--parallelism", "1")
    pb, rb = s3wh.compact("b", "--full", "--parallelism", "3")
    assert pa_.returncode == 0 and pb.returncode == 0, pa_.stderr + pb.stderr
    for key in ("files_before", "files_after", "files_removed", "files_added", "rows_written"):
        assert ra["totals"][key] == rb["totals"][key], (key, ra["totals"], rb["totals"])
    assert s3wh.read("a") == before == s3wh.read("b")
    assert len(compacts(s3wh, "b")) == 1


def test_compact_database_walks_a_warehouse_on_s3(s3wh):
    before_a = table(s3wh, "a")
    before_b = table(s3wh, "b")
    p = s3wh.cli("compact-database", s3wh.root, "--full", "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.loads(p.stdout)
    assert sorted(t["table"] for t in r["tables"]) == ["db.a", "db.b"], r
    assert r["compacted"] == 2, r
    assert s3wh.read("a") == before_a and s3wh.read("b") == before_b
    assert len(compacts(s3wh, "a")) == 1 and len(compacts(s3wh, "b")) == 1
