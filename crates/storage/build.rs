//! Rebuild when a migration is added or changed: `embed_migrations!` alone does not notice a
//! new migration folder, which would silently leave it out of the binary.
fn main() {
    println!("cargo::rerun-if-changed=../../migrations");
    for backend in ["sqlite", "postgres"] {
        let dir = std::path::Path::new("../../migrations").join(backend);
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                println!("cargo::rerun-if-changed={}", e.path().display());
            }
        }
    }
}
