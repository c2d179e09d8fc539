//! Integration tests: one binary, one module per area (ripgrep layout).

mod common;
mod ident;
mod run_cli;
