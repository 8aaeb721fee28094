//! The overview's "Loaded settings": each of the operator's files as the
//! gateway holds it now (live reload), and the last version refused.

use super::layout::when;
use super::WebState;
use maud::{html, Markup};

/// The section, or nothing when the console was built without the board.
pub(crate) fn section(state: &WebState) -> Markup {
    let Some(loaded) = &state.settings.loaded else {
        return html! {};
    };
    let sources = loaded.snapshot();
    html! {
        section #loaded data-live {
            h2 { "Loaded settings" }
            p.empty { "Re-read on SIGHUP and when a file changes; a bad file is refused and the settings in force stay." }
            table {
                thead { tr { th { "source" } th { "file" } th { "loaded at (UTC)" } th { "holds" } th { "last refusal" } } }
                tbody {
                    @for s in &sources {
                        tr {
                            td { code { (s.source) } }
                            td { @match &s.path { Some(p) => { code { (p.display()) } } None => { "—" } } }
                            td { (when(s.loaded_at)) }
                            td { (s.items) }
                            td.refusal {
                                @match &s.refused {
                                    Some(r) => { (when(r.at)) ": " (super::mask_text(&r.message)) }
                                    None => { "—" }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
