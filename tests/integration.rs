//! Integration tests: one binary, one module per area (ripgrep layout).

mod audit;
mod common;
mod doc_numbers;
mod experiments;
mod honest;
mod ident;
mod layout;
mod live;
mod reports;
mod run_cli;
