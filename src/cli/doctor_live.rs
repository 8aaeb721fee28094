//! `switchboard doctor`: what a running gateway using this `DATA_DIR` has
//! loaded from the operator's files (its `loaded.json`, see
//! `switchboard::loaded`), and the versions it refused.

use std::path::Path;

/// One line of the report: `Err` for a refusal still in force (the file on
/// disk is not what the gateway uses).
pub(super) type Line = Result<String, String>;

/// The lines for the gateway that last wrote `data_dir/loaded.json`; none
/// when no gateway has run with it.
pub(super) fn lines(data_dir: &Path) -> Vec<Line> {
    let Some(report) = switchboard::loaded::read_report(data_dir) else {
        return Vec::new();
    };
    let alive = Path::new(&format!("/proc/{}", report.pid)).exists();
    let mut out = vec![Ok(format!(
        "live settings of the gateway (pid {}{}):",
        report.pid,
        if alive { "" } else { ", no longer running" }
    ))];
    for s in &report.sources {
        let file = s
            .path
            .as_ref()
            .map_or_else(String::new, |p| format!(" {}", p.display()));
        out.push(Ok(format!(
            "  {}{file}: {} (loaded {})",
            s.source,
            s.items,
            s.loaded_at.format("%Y-%m-%d %H:%M:%S UTC")
        )));
        if let Some(r) = &s.refused {
            let when = r.at.format("%Y-%m-%d %H:%M:%S UTC");
            let text = format!("  {} refused at {when}: {}", s.source, r.message);
            // Refused after the version in force was loaded: the file on
            // disk is not what the gateway uses.
            out.push(if r.at >= s.loaded_at && alive {
                Err(text)
            } else {
                Ok(text)
            });
        }
    }
    out
}
