//! Compiles `proto/echo.proto` with protox (no system `protoc`) into tonic's server
//! code and the descriptor set the reflection service serves.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/echo.proto");
    let fds = protox::compile(["echo.proto"], ["proto"])?;
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    // New files, never written in place: a target directory seeded by hard
    // links shares these files' inodes with other checkouts, and writing
    // through one would change (and break) the others' generated code.
    for f in ["echo_descriptor.bin", "pado.echo.rs"] {
        let _ = std::fs::remove_file(out.join(f));
    }
    std::fs::write(
        out.join("echo_descriptor.bin"),
        prost::Message::encode_to_vec(&fds),
    )?;
    tonic_prost_build::configure()
        .build_client(false)
        .compile_fds(fds)?;
    Ok(())
}
