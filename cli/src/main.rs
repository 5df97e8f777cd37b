//! poolcurl (placeholder).
fn main() {}
