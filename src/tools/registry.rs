//! The tool registry: lookup by name and schema export for the model.

use super::spec::Tool;
use crate::llm::ToolDefinition;
use std::collections::HashMap;
use std::sync::Arc;

/// The tools the agent may call, in registration order.
#[derive(Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    by_name: HashMap<String, usize>,
}

impl ToolRegistry {
    pub fn new() -> ToolRegistry {
        ToolRegistry::default()
    }

    /// Adds a tool; a later tool with the same name replaces the earlier one.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> &mut Self {
        let name = tool.spec().name.clone();
        match self.by_name.get(&name) {
            Some(&i) => self.tools[i] = tool,
            None => {
                self.by_name.insert(name, self.tools.len());
                self.tools.push(tool);
            }
        }
        self
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.by_name.get(name).map(|&i| Arc::clone(&self.tools[i]))
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.spec().name.clone()).collect()
    }

    /// The tools' names by source, in source order (built-in, HTTP, script,
    /// MCP by server) and registration order within one; `*` marks a tool
    /// whose calls need an approval.
    pub fn by_source(&self) -> Vec<(super::ToolSource, Vec<String>)> {
        let mut groups: std::collections::BTreeMap<super::ToolSource, Vec<String>> =
            std::collections::BTreeMap::new();
        for t in &self.tools {
            let s = t.spec();
            let mark = if s.requires_approval { "*" } else { "" };
            groups
                .entry(t.source())
                .or_default()
                .push(format!("{}{mark}", s.name));
        }
        groups.into_iter().collect()
    }

    /// The tools as advertised to the model.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools
            .iter()
            .map(|t| {
                let s = t.spec();
                ToolDefinition {
                    name: s.name.clone(),
                    description: t.description(),
                    parameters: s.parameters.clone(),
                }
            })
            .collect()
    }
}
