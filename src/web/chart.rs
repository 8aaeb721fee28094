//! A small bar chart as SVG, drawn on the server (no script, no style
//! attributes: the content security policy allows neither inline).

use maud::{html, Markup};

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 180.0;
const BOTTOM: f64 = 24.0;
const TOP: f64 = 16.0;

/// Bars of `points` (label, value); `unit` formats the values (`$`, `tokens`).
pub(crate) fn bars(label: &str, points: &[(String, f64)], unit: &str) -> Markup {
    let max = points.iter().map(|p| p.1).fold(0.0_f64, f64::max);
    let n = points.len().max(1) as f64;
    let slot = WIDTH / n;
    let bar = (slot * 0.7).max(1.0);
    let plot = HEIGHT - BOTTOM - TOP;
    html! {
        svg.chart xmlns="http://www.w3.org/2000/svg" role="img" aria-label=(label)
            viewBox={ "0 0 " (WIDTH) " " (HEIGHT) } width=(WIDTH) height=(HEIGHT) {
            title { (label) }
            line x1="0" y1=(HEIGHT - BOTTOM) x2=(WIDTH) y2=(HEIGHT - BOTTOM) stroke="#8a8f98" {}
            @for (i, (day, value)) in points.iter().enumerate() {
                @let h = if max > 0.0 { value / max * plot } else { 0.0 };
                @let x = i as f64 * slot + (slot - bar) / 2.0;
                rect x=(fmt(x)) y=(fmt(HEIGHT - BOTTOM - h)) width=(fmt(bar)) height=(fmt(h)) fill="#3b82f6" {
                    title { (day) ": " (amount(*value, unit)) }
                }
                @if points.len() <= 16 {
                    text x=(fmt(x + bar / 2.0)) y=(HEIGHT - 8.0) text-anchor="middle" font-size="10" fill="#555" {
                        (day.get(5..).unwrap_or(day))
                    }
                }
            }
            text x="4" y="12" font-size="11" fill="#555" { "max " (amount(max, unit)) }
        }
    }
}

fn fmt(v: f64) -> String {
    format!("{v:.1}")
}

/// `$1.23` or `12 345 tokens`.
pub(crate) fn amount(value: f64, unit: &str) -> String {
    if unit == "$" {
        format!("${value:.2}")
    } else {
        format!("{} {unit}", crate::text::grouped(value.round() as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_to_the_largest_value_and_escape_labels() {
        let svg = bars(
            "cost <b>",
            &[("2026-01-01".into(), 1.0), ("2026-01-02".into(), 2.0)],
            "$",
        )
        .into_string();
        assert!(svg.contains("height=\"140.0\""), "{svg}");
        assert!(svg.contains("height=\"70.0\""), "{svg}");
        assert!(svg.contains("cost &lt;b&gt;"), "{svg}");
        assert!(!svg.contains("style="), "{svg}");
    }
}
