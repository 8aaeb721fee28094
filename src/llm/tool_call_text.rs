//! Parsing `<tool_call>` text from weak models (being written).
