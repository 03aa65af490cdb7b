//! The command line, declared with clap.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Cycle-level simulator, memory planner and sync checker for Ascend-like NPU cores.
#[derive(Parser, Debug)]
#[command(name = "npusim", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Validate a program against a config and print every problem found.
    Check {
        #[command(flatten)]
        input: Input,
    },
    /// Plan every on-chip buffer of a program to an address and print the plan.
    Plan {
        #[command(flatten)]
        input: Input,
        /// Output format.
        #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
        format: PlanFormat,
        /// Write the output to FILE (written only if everything succeeded).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Plan and execute a program cycle by cycle; report where every cycle of every pipe went.
    Run {
        #[command(flatten)]
        input: Input,
        /// Output format.
        #[arg(long, value_enum, default_value_t = RunFormat::Text)]
        format: RunFormat,
        /// Write the report to FILE (written only if the program ran).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// List the built-in chip configs.
    Configs,
}

/// The program and the machine it runs on.
#[derive(Args, Debug)]
pub struct Input {
    /// The kernel program (YAML).
    #[arg(value_name = "PROGRAM")]
    pub program: PathBuf,
    /// A built-in config name (see `npusim configs`) or a config file.
    #[arg(long, value_name = "NAME|FILE", default_value = sim::builtin::DEFAULT)]
    pub config: String,
    /// Override a program param: `--param n=4096`. May be repeated.
    #[arg(long = "param", value_name = "NAME=INT", value_parser = parse_param)]
    pub params: Vec<(String, i64)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    Text,
    Yaml,
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RunFormat {
    Text,
    Json,
}

/// Parses `NAME=INT`.
pub fn parse_param(s: &str) -> Result<(String, i64), String> {
    let Some((name, value)) = s.split_once('=') else {
        return Err(format!("expected NAME=INTEGER (e.g. n=4096), found `{s}`"));
    };
    let name = name.trim();
    let valid_name = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid_name {
        return Err(format!(
            "`{name}` is not a param name (letters, digits and `_`, not starting with a digit)"
        ));
    }
    let value = value.trim();
    let v: i64 = value
        .parse()
        .map_err(|_| format!("the value of `{name}` must be an integer, found `{value}`"))?;
    Ok((name.to_string(), v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn params_parse() {
        assert_eq!(parse_param("n=4096"), Ok(("n".into(), 4096)));
        assert_eq!(parse_param("tiles=-1"), Ok(("tiles".into(), -1)));
        assert!(parse_param("n").is_err());
        assert!(parse_param("n=4k").is_err());
        assert!(parse_param("=4").is_err());
        assert!(parse_param("1n=4").is_err());
    }
}
