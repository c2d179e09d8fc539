//! Integration tests: one binary, one module per area (ripgrep layout).

mod audit;
mod common;
mod docs;
mod experiments;
mod honest;
mod ident;
mod layout;
mod live;
mod reports;
mod run_cli;
