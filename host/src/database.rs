//! `compact-database`: one job per table of a warehouse, each with its own commit and report,
//! as Paimon's compact-database action runs them ("divided" mode). A table that fails is
//! reported and the others go on.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use paimon_compact::maintenance::maintain::JobReport;
use paimon_compact::table::JobStatus;
use paimon_compact_host::location::Location;
use paimon_compact_host::object_storage::ObjectStorage;
use paimon_compact_host::{Compactor, HostError};
use regex::Regex;

use crate::table::{self, JobArgs, INCOMPLETE_EXIT};

/// Which tables: one database or all, `database.table` names included and excluded by
/// regular expressions matching the whole name (exclusion wins).
pub struct TableFilter {
    database: Option<String>,
    including: Option<Regex>,
    excluding: Option<Regex>,
}

impl TableFilter {
    pub fn new(
        database: Option<&str>,
        including: Option<&str>,
        excluding: Option<&str>,
    ) -> Result<Self, String> {
        let compile = |flag: &str, re: Option<&str>| {
            re.map(|r| {
                Regex::new(&format!("^(?:{r})$"))
                    .map_err(|e| format!("--{flag} '{r}' is not a regular expression: {e}"))
            })
            .transpose()
        };
        Ok(TableFilter {
            database: database.map(str::to_string),
            including: compile("including-tables", including)?,
            excluding: compile("excluding-tables", excluding)?,
        })
    }

    fn accepts(&self, database: &str, table: &str) -> bool {
        let name = format!("{database}.{table}");
        self.database.as_deref().is_none_or(|d| d == database)
            && self.including.as_ref().is_none_or(|r| r.is_match(&name))
            && !self.excluding.as_ref().is_some_and(|r| r.is_match(&name))
    }
}

/// One table's outcome.
#[derive(serde::Serialize)]
pub struct TableOutcome {
    /// `database.table`.
    pub table: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<JobReport>,
    /// The error that stopped this table's job (nothing of it was committed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<serde_json::Value>,
}

/// Every table's outcome, in name order.
#[derive(serde::Serialize)]
pub struct DatabaseReport {
    pub schema_version: u32,
    pub tables: Vec<TableOutcome>,
    pub compacted: usize,
    pub nothing_to_do: usize,
    pub incomplete: usize,
    pub refused: usize,
    pub failed: usize,
}

impl DatabaseReport {
    /// 1 when any table failed, else 3 when any was left incomplete or refused, else 0.
    pub fn exit_code(&self) -> ExitCode {
        if self.failed > 0 {
            ExitCode::FAILURE
        } else if self.incomplete + self.refused > 0 {
            ExitCode::from(INCOMPLETE_EXIT)
        } else {
            ExitCode::SUCCESS
        }
    }
}

/// The tables under `warehouse` (`<db>.db/<table>/schema/`), as (database, table, path).
fn discover(warehouse: &Path) -> Result<Vec<(String, String, PathBuf)>, String> {
    let arg = warehouse.to_string_lossy();
    if let Location::Object(uri) = Location::parse(&arg) {
        return discover_in_store(&uri);
    }
    let mut out = Vec::new();
    let dbs = std::fs::read_dir(warehouse)
        .map_err(|e| format!("cannot list warehouse {}: {e}", warehouse.display()))?;
    for db in dbs.flatten() {
        let name = db.file_name().to_string_lossy().into_owned();
        let Some(database) = name.strip_suffix(".db") else {
            continue;
        };
        let Ok(tables) = std::fs::read_dir(db.path()) else {
            continue;
        };
        for t in tables.flatten() {
            if t.path().join("schema").is_dir() {
                let table = t.file_name().to_string_lossy().into_owned();
                out.push((database.to_string(), table, t.path()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The tables of a warehouse in an object store (`s3://bucket/warehouse`): every
/// `<database>.db/<table>/` holding a `schema/` directory, found by delimiter listings.
fn discover_in_store(uri: &str) -> Result<Vec<(String, String, PathBuf)>, String> {
    let uri = uri.trim_end_matches('/');
    let store =
        ObjectStorage::open(uri).map_err(|e| format!("cannot open warehouse {uri}: {e}"))?;
    let list = |dir: &str| {
        store
            .list_directories(dir)
            .map_err(|e| format!("cannot list warehouse {uri}: {e}"))
    };
    let mut out = Vec::new();
    for db in list("")? {
        let Some(database) = db.strip_suffix(".db") else {
            continue;
        };
        for table in list(&db)? {
            if list(&format!("{db}/{table}"))?
                .iter()
                .any(|d| d == "schema")
            {
                out.push((
                    database.to_string(),
                    table.clone(),
                    PathBuf::from(format!("{uri}/{db}/{table}")),
                ));
            }
        }
    }
    out.sort();
    Ok(out)
}

pub fn compact_database(
    compactor: &Compactor,
    warehouse: &Path,
    filter: &TableFilter,
    job: &JobArgs,
    allow_external: &[PathBuf],
) -> Result<DatabaseReport, String> {
    let tables: Vec<_> = discover(warehouse)?
        .into_iter()
        .filter(|(d, t, _)| filter.accepts(d, t))
        .collect();
    if tables.is_empty() {
        return Err(format!(
            "no table of {} matches the database and table filters",
            warehouse.display()
        ));
    }
    let mut report = DatabaseReport {
        schema_version: paimon_compact::table::REPORT_SCHEMA_VERSION,
        tables: Vec::new(),
        compacted: 0,
        nothing_to_do: 0,
        incomplete: 0,
        refused: 0,
        failed: 0,
    };
    for (database, name, path) in tables {
        let outcome = table::compact(compactor, &path, job, false, allow_external);
        let mut o = TableOutcome {
            table: format!("{database}.{name}"),
            report: None,
            error: None,
        };
        match outcome {
            Ok(r) => {
                match r.compaction.status {
                    JobStatus::Complete => report.compacted += 1,
                    JobStatus::NothingToDo => report.nothing_to_do += 1,
                    JobStatus::Incomplete => report.incomplete += 1,
                    JobStatus::Refused => report.refused += 1,
                }
                o.report = Some(r);
            }
            Err(e) => {
                report.failed += 1;
                o.error = Some(error_json(&e));
            }
        }
        report.tables.push(o);
    }
    Ok(report)
}

fn error_json(e: &HostError) -> serde_json::Value {
    match e {
        HostError::Core(c) => serde_json::to_value(c).unwrap_or_default(),
        other => serde_json::json!({ "kind": "host", "message": other.to_string() }),
    }
}

/// One block per table, then the counts.
pub fn describe(r: &DatabaseReport) -> String {
    let mut out = String::new();
    for t in &r.tables {
        out.push_str(&format!("== {}\n", t.table));
        if let Some(rep) = &t.report {
            out.push_str(&table::describe_job(rep));
        }
        if let Some(e) = &t.error {
            out.push_str(&format!(
                "  failed: {}\n",
                e["message"].as_str().unwrap_or("unknown error")
            ));
        }
    }
    out.push_str(&format!(
        "{} table(s): {} compacted, {} nothing to do, {} incomplete, {} refused, {} failed\n",
        r.tables.len(),
        r.compacted,
        r.nothing_to_do,
        r.incomplete,
        r.refused,
        r.failed
    ));
    out
}
