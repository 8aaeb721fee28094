//! `switchboard extract-document PATH` (hidden): the document reader the
//! gateway starts for each PDF; see `switchboard::media` (`reader`).

use std::path::PathBuf;
use std::process::ExitCode;
use switchboard::media::DocumentLimits;

/// The document and the limits the gateway gives.
#[derive(Debug, clap::Args)]
pub struct ExtractArgs {
    /// Arrays and dictionaries nested deeper than this are refused.
    #[arg(long, default_value_t = switchboard::media::DocumentLimits::new(0).max_depth)]
    max_depth: usize,
    /// More objects than this are refused.
    #[arg(long, default_value_t = switchboard::media::DocumentLimits::new(0).max_objects)]
    max_objects: u64,
    /// Bytes the document's streams may decode to.
    #[arg(long, default_value_t = 128 << 20)]
    max_inflated: u64,
    /// The reader's address space, bytes.
    #[arg(long, default_value_t = 512 << 20)]
    memory: u64,
    /// The reader's CPU time, seconds.
    #[arg(long, default_value_t = 20)]
    cpu_secs: u64,
    /// The PDF.
    path: PathBuf,
}

/// Reads the document and reports on stdout.
pub fn run(args: &ExtractArgs) -> ExitCode {
    let limits = DocumentLimits {
        max_depth: args.max_depth,
        max_objects: args.max_objects,
        max_inflated: args.max_inflated,
    };
    let process = switchboard::media::ProcessLimits {
        memory: args.memory,
        cpu_secs: args.cpu_secs,
    };
    switchboard::media::serve_reader(&args.path, &limits, process)
}
