//! The routing rules (seeds/001 §6.1, "dual-model routing"): a message with
//! images goes to a vision model when the session's model cannot see one;
//! one asking for fresh information (or with a link) to a search-capable
//! model; short chit-chat to a cheap model. The first rule that applies wins.

use super::Routes;

/// Which rule chose a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Vision,
    Search,
    Cheap,
}

impl Route {
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Vision => "vision",
            Route::Search => "search",
            Route::Cheap => "cheap",
        }
    }

    /// Why, for the activity line.
    pub fn reason(self) -> &'static str {
        match self {
            Route::Vision => "the message has an image",
            Route::Search => "the message asks for fresh information",
            Route::Cheap => "a short message",
        }
    }
}

/// What a rule looks at.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    pub text: &'a str,
    pub images: bool,
}

/// The rule that applies to `input` and its model, if any; `sees` is
/// whether the session's own model takes images.
pub fn choose(routes: &Routes, input: &Input<'_>, sees: bool) -> Option<(Route, String)> {
    if input.images && !sees {
        if let Some(model) = &routes.vision {
            return Some((Route::Vision, model.clone()));
        }
    }
    if let (Some(model), Some(pattern)) = (&routes.search, &routes.search_pattern) {
        if pattern.is_match(input.text) {
            return Some((Route::Search, model.clone()));
        }
    }
    if let Some(model) = &routes.cheap {
        let text = input.text.trim();
        if !input.images && !text.is_empty() && text.chars().count() <= routes.cheap_max_chars {
            return Some((Route::Cheap, model.clone()));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routes() -> Routes {
        Routes {
            vision: Some("eyes".into()),
            search: Some("web".into()),
            search_pattern: regex::Regex::new(super::super::config::DEFAULT_SEARCH_PATTERN).ok(),
            cheap: Some("mini".into()),
            cheap_max_chars: 40,
        }
    }

    fn pick(text: &str, images: bool, sees: bool) -> Option<Route> {
        choose(&routes(), &Input { text, images }, sees).map(|(r, _)| r)
    }

    #[test]
    fn each_rule_applies_in_order() {
        assert_eq!(pick("what is this?", true, false), Some(Route::Vision));
        // A model that sees keeps its images; a short caption is not chit-chat.
        assert_eq!(pick("what is this?", true, true), None);
        assert_eq!(
            pick("any news about the launch today?", false, false),
            Some(Route::Search)
        );
        assert_eq!(
            pick("summarize https://example.com/post", false, false),
            Some(Route::Search)
        );
        // The seed's Chinese cues route to search too.
        for asked in ["今天有什么科技新闻？", "茅台的实时股价是多少", "最新的汇率"]
        {
            assert_eq!(pick(asked, false, false), Some(Route::Search), "{asked}");
        }
        assert_ne!(
            pick("帮我把这段代码重构一下，变量名改得清楚一些", false, false),
            Some(Route::Search)
        );
        assert_eq!(pick("thanks!", false, false), Some(Route::Cheap));
        assert_eq!(
            pick(
                "please refactor the parser module so that errors carry spans",
                false,
                false
            ),
            None
        );
        let off = Routes::default();
        assert_eq!(
            choose(
                &off,
                &Input {
                    text: "hi",
                    images: true
                },
                false
            ),
            None
        );
    }
}
