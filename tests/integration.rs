//! Integration tests: one binary, one module per area (ripgrep layout).

mod audit;
mod common;
mod ident;
mod live;
mod run_cli;
