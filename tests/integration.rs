//! Integration tests: one binary, one module per area (ripgrep layout).

mod common;
mod experiments;
mod reports;
mod run_cli;
