//! `paimon-compact`: the command-line host.

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use paimon_compact::options::Flavor;

mod demo;

#[derive(Parser)]
#[command(
    name = "paimon-compact",
    version,
    about = "Apache Paimon compaction, as a WebAssembly component"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum Engine {
    /// The core compiled into this binary.
    Native,
}

#[derive(Subcommand)]
enum Command {
    /// Run a conformance vectors file through the planner; prints failing cases, then
    /// `N passed, M failed`.
    Conformance {
        /// A file in the schema of compaction-vectors.json.
        vectors: std::path::PathBuf,
        /// Reproduce paimon-cpp where it differs from Java (uses `expected_cpp`).
        #[arg(long)]
        cpp: bool,
        #[arg(long, value_enum, default_value = "native")]
        engine: Engine,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Plan one bucket described by a JSON request (see `BucketPlanRequest`), or `-` for stdin.
    Plan {
        request: std::path::PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Walk through the built-in example bucket: flushes arrive, the planner decides.
    Demo {
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, Box<dyn std::error::Error>> {
    match cli.command {
        Command::Conformance {
            vectors,
            cpp,
            engine: Engine::Native,
            json,
        } => {
            let text = std::fs::read_to_string(&vectors)
                .map_err(|e| format!("cannot read {}: {e}", vectors.display()))?;
            let flavor = if cpp { Flavor::Cpp } else { Flavor::Java };
            let report = paimon_compact::conformance::run_vectors(&text, flavor)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!("{report}");
            }
            Ok(if report.ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Plan { request, json } => {
            let text = if request.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin())?
            } else {
                std::fs::read_to_string(&request)
                    .map_err(|e| format!("cannot read {}: {e}", request.display()))?
            };
            let req: paimon_compact::plan::BucketPlanRequest = serde_json::from_str(&text)?;
            let decision = paimon_compact::plan::plan_bucket(&req)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&decision)?);
            } else {
                println!("{}", demo::describe(&decision));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo { json } => {
            demo::run(json)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
