//! The conversation page's Plan table: the goal, phase and revision, then
//! each step with its tool, state, observation and retries (masked: a
//! step's text and observation may quote what a tool returned).

use super::mask_text;
use crate::domain::plan::Plan;
use maud::{html, Markup};

/// The plan section of a conversation page.
pub(super) fn section(plan: &Plan) -> Markup {
    let current = plan.current();
    html! {
        section #plan {
            h2 { "Plan" }
            p {
                strong { (mask_text(&plan.goal)) }
                " · revision " (plan.revision) " · "
                span class={ "status " (plan.phase.as_str()) } { (plan.phase.as_str()) }
            }
            @if let Some(q) = &plan.question { p.muted { "asked: " (mask_text(q)) } }
            table.plan {
                thead { tr { th { "#" } th { "step" } th { "tool" } th { "state" } th { "observation" } th { "retries" } } }
                tbody {
                    @for (i, s) in plan.steps.iter().enumerate() {
                        tr class={ @if Some(i) == current { "current" } } {
                            td { (i + 1) }
                            td { (mask_text(&s.text)) @if let Some(e) = &s.expected { br; span.muted { "expects: " (mask_text(e)) } } }
                            td { @if let Some(t) = &s.tool { code { (t) } } @else { "—" } }
                            td { span class={ "status " (s.state.as_str()) } { (s.state.as_str()) } @if s.passed { " (gone past)" } }
                            td { (mask_text(s.observation.as_deref().unwrap_or("—"))) }
                            td { (s.retries) }
                        }
                    }
                }
            }
            @if let Some(reason) = plan.reasons.last() { p.muted { "last update: " (mask_text(reason)) } }
        }
    }
}
