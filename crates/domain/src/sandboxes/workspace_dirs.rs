//! OpenHands' workspace convention in Switchboard's sandboxes (issue 31; docs/API.md,
//! "`/workspace` and the agent server's address in every sandbox"): where a sandbox's
//! workspace and project are, as its processes name them, and which conversation starts a
//! sandbox without a `/workspace` of its own refuses.

#[cfg(doc)]
use super::runtime::RuntimeHandle;

/// The directory every sandbox with a `/workspace` of its own sees as its workspace: the
/// convention of OpenHands' sandboxes (its Docker image's volume, its remote runtime), where
/// the agent server keeps `conversations/` and `bash_events/` and clients put the project.
pub const SANDBOX_WORKSPACE_DIR: &str = "/workspace";
/// The project directory of OpenHands' sandboxes: the SDK's default `working_dir`
/// (`OpenHandsCloudWorkspace` 1.58.2), the working directory of OpenHands' sandbox specs, and
/// where Switchboard's starts work ([`RuntimeHandle::project_dir`]).
pub const SANDBOX_PROJECT_DIR: &str = "/workspace/project";

/// Why a conversation cannot be started with `working_dir` in a sandbox whose project
/// directory is `project_dir` ([`RuntimeHandle::project_dir`]), or `None` when it can. Only a
/// sandbox without a `/workspace` of its own refuses (a process under
/// `--process-isolation none`, whose project directory is a host path): a `working_dir` that
/// is [`SANDBOX_WORKSPACE_DIR`] or below it, which would be the host's `/workspace`, shared by
/// every sandbox (or not creatable: the agent server's 500 `PermissionError`). The text names
/// `working_dir` and the directory to pass instead (docs/API.md, "The conversation's working
/// directory").
pub fn working_dir_refusal(project_dir: Option<&str>, working_dir: &str) -> Option<String> {
    let project = project_dir?;
    let under_workspace = |p: &str| {
        let p = p.trim_end_matches('/');
        p == SANDBOX_WORKSPACE_DIR
            || p.strip_prefix(SANDBOX_WORKSPACE_DIR)
                .is_some_and(|rest| rest.starts_with('/'))
    };
    let lexical: Vec<&str> = working_dir
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    let normal = format!("/{}", lexical.join("/"));
    if under_workspace(project) || !working_dir.starts_with('/') || !under_workspace(&normal) {
        return None;
    }
    Some(format!(
        "working_dir {working_dir:?} is under /workspace, which this sandbox does not have: \
         Switchboard runs process sandboxes without a mount namespace \
         (--process-isolation none), so /workspace would be the host's, shared by every \
         sandbox. Pass working_dir {project:?} (this sandbox's project directory) or a \
         directory below it"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_sandbox_without_a_workspace_refuses_one() {
        let host = Some("/data/sandboxes/x/workspace/project");
        for refused in [
            "/workspace",
            "/workspace/project",
            "/workspace/",
            "//workspace/./project/a",
        ] {
            let text = working_dir_refusal(host, refused).unwrap_or_else(|| panic!("{refused}"));
            assert!(
                text.starts_with(&format!("working_dir {refused:?}"))
                    && text.contains("\"/data/sandboxes/x/workspace/project\""),
                "{text}"
            );
        }
        for allowed in [
            "/data/sandboxes/x/workspace/project",
            "/workspaces/a",
            "/workspace-b",
            "relative",
        ] {
            assert_eq!(working_dir_refusal(host, allowed), None, "{allowed}");
        }
        for own in [Some(SANDBOX_PROJECT_DIR), None] {
            assert_eq!(working_dir_refusal(own, "/workspace/project"), None);
        }
    }
}
