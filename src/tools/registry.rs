//! The tool registry: lookup by name and schema export for the model. Most
//! tools are registered once at start; [`DynamicTools`] (an MCP server's)
//! come and go while the gateway runs.

use super::spec::{Tool, ToolSource};
use crate::llm::ToolDefinition;
use std::collections::HashMap;
use std::sync::Arc;

/// Tools whose set changes while the gateway runs (a server that comes up
/// late or changes its tool list).
pub trait DynamicTools: Send + Sync + 'static {
    /// The tools now, leaving out any whose name is in `taken`.
    fn current(&self, taken: &[String]) -> Vec<Arc<dyn Tool>>;
}

/// The tools the agent may call, in registration order.
#[derive(Default, Clone)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    by_name: HashMap<String, usize>,
    dynamic: Vec<Arc<dyn DynamicTools>>,
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

    /// Adds a changing set of tools, offered after the registered ones; a
    /// name a registered tool has is never taken from it.
    pub fn register_dynamic(&mut self, tools: Arc<dyn DynamicTools>) -> &mut Self {
        self.dynamic.push(tools);
        self
    }

    fn static_names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.spec().name.clone()).collect()
    }

    /// Every tool now: the registered ones, then the dynamic ones.
    fn all(&self) -> Vec<Arc<dyn Tool>> {
        let mut all = self.tools.clone();
        if !self.dynamic.is_empty() {
            let mut taken = self.static_names();
            for d in &self.dynamic {
                let more = d.current(&taken);
                taken.extend(more.iter().map(|t| t.spec().name.clone()));
                all.extend(more);
            }
        }
        all
    }

    /// The tools `keep` lets through, as a registry of their own (a chat's
    /// tool policy; the dynamic tools as they are now).
    pub fn restricted(&self, keep: &dyn Fn(&str) -> bool) -> ToolRegistry {
        let mut out = ToolRegistry::new();
        for tool in self.all() {
            if keep(&tool.spec().name) {
                out.register(tool);
            }
        }
        out
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        if let Some(&i) = self.by_name.get(name) {
            return Some(Arc::clone(&self.tools[i]));
        }
        if self.dynamic.is_empty() {
            return None;
        }
        self.all().into_iter().find(|t| t.spec().name == name)
    }

    pub fn names(&self) -> Vec<String> {
        self.all().iter().map(|t| t.spec().name.clone()).collect()
    }

    /// The tools' names by source, in source order (built-in, HTTP, script,
    /// MCP by server) and registration order within one; `*` marks a tool
    /// whose calls need an approval.
    pub fn by_source(&self) -> Vec<(ToolSource, Vec<String>)> {
        let mut groups: std::collections::BTreeMap<ToolSource, Vec<String>> =
            std::collections::BTreeMap::new();
        for t in self.all() {
            let s = t.spec();
            let mark = if s.requires_approval { "*" } else { "" };
            groups
                .entry(t.source())
                .or_default()
                .push(format!("{}{mark}", s.name));
        }
        groups.into_iter().collect()
    }

    /// The fields each tool's results keep through compaction, by tool name
    /// (tools that name none are left out).
    pub fn key_fields(&self) -> std::collections::HashMap<String, Vec<String>> {
        self.all()
            .iter()
            .map(|t| t.spec())
            .filter(|s| !s.key_fields.is_empty())
            .map(|s| (s.name.clone(), s.key_fields.clone()))
            .collect()
    }

    /// The tools as advertised to the model.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.all()
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
