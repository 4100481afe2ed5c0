//! The `pado` binary: everything is in `pado-cli`, so the command line can be tested
//! as a library.

fn main() {
    std::process::exit(pado_cli::main())
}
