//! The sub-agent roles as a live set (live reload of `SUBAGENTS_FILE`): the
//! `delegate_to_<role>` tools rebuilt whole from the roles offered, so a role
//! added to the file is offered from the next turn and one removed is gone.

use super::{delegate_tools, AgentConfig, Role};
use crate::llm::Provider;
use crate::loaded::Live;
use crate::store::Store;
use crate::tools::{DynamicTools, Tool, ToolRegistry};
use std::sync::Arc;

/// The delegate tools now, and what they are built from.
pub struct LiveDelegates {
    provider: Arc<dyn Provider>,
    /// The agent's tools without the delegates (a sub-agent's are taken
    /// from these).
    base: ToolRegistry,
    config: AgentConfig,
    store: Store,
    models: Option<Arc<crate::models::Models>>,
    tools: Live<Vec<Arc<dyn Tool>>>,
}

impl LiveDelegates {
    /// The delegates of `roles` over the tools of `base`.
    pub fn new(
        roles: &[Role],
        provider: Arc<dyn Provider>,
        base: ToolRegistry,
        config: AgentConfig,
        store: Store,
        models: Option<Arc<crate::models::Models>>,
    ) -> LiveDelegates {
        let live = LiveDelegates {
            provider,
            base,
            config,
            store,
            models,
            tools: Live::new(Vec::new()),
        };
        live.offer(roles);
        live
    }

    /// Puts the delegates of `roles` (and only those) in force.
    pub fn offer(&self, roles: &[Role]) {
        self.tools.set(delegate_tools(
            roles,
            &self.provider,
            &self.base,
            &self.config,
            &self.store,
            self.models.as_ref(),
        ));
    }

    /// The roles offered now, by name.
    pub fn offered(&self) -> Vec<String> {
        self.tools
            .get()
            .iter()
            .map(|t| t.spec().name.clone())
            .collect()
    }
}

impl DynamicTools for LiveDelegates {
    fn current(&self, taken: &[String]) -> Vec<Arc<dyn Tool>> {
        self.tools
            .get()
            .iter()
            .filter(|t| !taken.contains(&t.spec().name))
            .cloned()
            .collect()
    }
}
