//! The plugin-root variables berth expands to the plugin's store path.

/// The variables that name the plugin's own folder.
pub const ROOT_VARIABLES: [&str; 3] = ["${CLAUDE_PLUGIN_ROOT}", "${PLUGIN_ROOT}", "${SKILL_ROOT}"];

/// `text` with every plugin-root variable replaced by `root`. Other `${VAR}`s stay, for
/// the agent to fill from its secrets and environment when it starts a server.
pub fn expand_roots(text: &str, root: &str) -> String {
    if !text.contains("${") {
        return text.to_owned();
    }
    let mut out = text.to_owned();
    for var in ROOT_VARIABLES {
        out = out.replace(var, root);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::expand_roots;

    #[test]
    fn only_root_variables_expand() {
        assert_eq!(
            expand_roots(
                "${CLAUDE_PLUGIN_ROOT}/a ${PLUGIN_ROOT} ${SKILL_ROOT} ${HOME} $PLUGIN_ROOT",
                "/s"
            ),
            "/s/a /s /s ${HOME} $PLUGIN_ROOT"
        );
    }
}
