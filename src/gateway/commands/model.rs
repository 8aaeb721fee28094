//! `/model`: the model this session uses and those the operator lets users
//! choose (`MODELS_USER_SELECTABLE`); `/model <name>` switches this session,
//! `/model default` goes back.

use crate::gateway::commands::Command;
use crate::gateway::Inner;
use crate::store::{SessionId, SessionKey, StoreError};

/// Shows or switches the session's model.
pub(crate) async fn run(
    inner: &Inner,
    cmd: &Command<'_>,
    key: &SessionKey,
    session: &SessionId,
) -> Result<String, StoreError> {
    let choosable = inner.features.models.choosable().await;
    let names: Vec<String> = choosable.iter().map(|m| format!("`{}`", m.name)).collect();
    let Some(arg) = cmd.args.first() else {
        let selected = crate::gateway::chat::select(inner, key, session, None).await;
        let m = selected.model.provider.model();
        let route = selected
            .model
            .provider
            .route()
            .map(|r| format!("\n{r}."))
            .unwrap_or_default();
        let choice = if names.len() > 1 {
            format!(
                "\nModels you can use: {}. Switch with `/model <name>`; `/model default` goes back.",
                names.join(", ")
            )
        } else {
            "\nThe operator has not allowed switching models here.".to_owned()
        };
        return Ok(format!(
            "Model: `{}` · context window {} tokens.{route}{choice}",
            m.name, m.context_window
        ));
    };
    if arg.eq_ignore_ascii_case("default") {
        inner.store.set_session_model(session, None).await?;
        let now = crate::gateway::chat::select(inner, key, session, None).await;
        return Ok(format!(
            "This chat is back on the default model: `{}`.",
            now.name
        ));
    }
    if !inner.features.models.may_choose(arg).await {
        let offer = if names.is_empty() {
            "The operator has not allowed switching models.".to_owned()
        } else {
            format!("You can use: {}.", names.join(", "))
        };
        return Ok(format!(
            "`{}` is not a model you may use. {offer}",
            arg.replace('`', "'")
        ));
    }
    inner.store.set_session_model(session, Some(arg)).await?;
    let now = crate::gateway::chat::select(inner, key, session, None).await;
    if now.name != *arg {
        return Ok(format!(
            "`{arg}` cannot be reached with its settings (see the gateway's log); this chat stays on `{}`.",
            now.name
        ));
    }
    Ok(format!("This chat now uses `{arg}`."))
}
