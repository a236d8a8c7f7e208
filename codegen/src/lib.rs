//! lean-beam-codegen: turns `operations.toml` into the generated half of the tool
//! surface. `build.rs` of the server crate calls [`generate`]; the tests of this
//! crate pin the table checks.

pub mod emit;
pub mod profiles;
pub mod schema;
pub mod table;
pub mod validators;

pub use table::TableError;

/// Read and check the table, and return the Rust source of `operations.rs`.
pub fn generate(source: &str) -> Result<String, TableError> {
    let table = table::read(source)?;
    Ok(emit::emit(&table))
}

/// The tools/list `tools` array as pretty JSON, as the table gives it: the
/// server's build.rs adds each tool's `outputSchema` (derived from its result
/// type), so the golden file holds more.
pub fn catalog_pretty(source: &str) -> Result<String, TableError> {
    let table = table::read(source)?;
    Ok(serde_json::to_string_pretty(&schema::catalog(&table)).expect("catalog json") + "\n")
}
