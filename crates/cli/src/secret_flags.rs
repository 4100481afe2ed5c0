//! The `pado run` flags that would copy a credential where other people read it
//! (a Kubernetes Job's arguments, the jobs agents are sent), refused: the rules
//! are `pado_outputs::credential_flags`'; this hands them `pado run`'s flags.

use pado_outputs::credential_flags::CredentialFlags;
pub(crate) use pado_outputs::credential_flags::Destination;

use crate::args::RunArgs;
use crate::exit::Failure;

/// Refuses the flags in `run` that would copy a credential to `dest` (invalid
/// usage, naming the flag and its replacement).
pub(crate) fn refuse_credentials(run: &RunArgs, dest: Destination<'_>) -> Result<(), Failure> {
    let flags = CredentialFlags {
        headers: &run.load.headers,
        proxy: run.load.proxy.as_deref(),
        outputs: &run.outputs,
    };
    pado_outputs::credential_flags::refuse_credentials(&flags, dest)
        .map_err(|e| Failure::invalid(e.0))
}
