fn main() {
    std::process::exit(pado_cli::main())
}
