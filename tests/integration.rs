//! Integration tests: one binary, one module per area (ripgrep layout).

mod audit;
mod common;
mod experiments;
mod faults;
mod ident;
mod layout;
mod live;
mod reports;
mod run_cli;
