//! Integration tests: one binary, one module per area (ripgrep layout).

mod common;
mod live;
mod run_cli;
