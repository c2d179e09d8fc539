//! Build `data/summeval_paired.jsonl` (docs/model.md §6 example) from `data/summeval_pools.jsonl`:
//! every SummEval summary becomes a base with a `terse` rendering (the original text) and a
//! content-free `elaborated` one (filler opening + original + filler closing).
//!
//! Run from the project root: `cargo run --example make_paired`.

use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let pools = topk_judge::store::pool_file::read_pools(Path::new("data/summeval_pools.jsonl"))?;
    let text = topk_judge::analysis::design::paired_pools_jsonl(&pools);
    std::fs::write("data/summeval_paired.jsonl", &text)?;
    println!("wrote data/summeval_paired.jsonl: {} pools, {} bytes", pools.len(), text.len());
    Ok(())
}
