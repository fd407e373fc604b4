//! The Action kinds (SCHEMA.md §7): the payload of `ActionEvent.action`, told apart by `kind`.
//!
//! Every Action is `extra=forbid` and is written with its fields in declaration order, then
//! `"kind"` last. Optional (`X | null`) fields default to `null` and are left out when `None`
//! (the SDK persists with `exclude_none=True`); every other field is always written.

use indexmap::IndexMap;

use crate::content::TaskItem;
use crate::de::{between, ge, min_length, string_enum};
use crate::macros::model;

string_enum! {
    /// The `command` of [`FileEditorAction`] and [`PlanningFileEditorAction`] (and of their
    /// observations).
    pub enum FileEditorCommand: LiteralError {
        /// `"view"`: show a file or list a directory.
        View = "view",
        /// `"create"`: create a file with `file_text`.
        Create = "create",
        /// `"str_replace"`: replace `old_str` with `new_str`.
        StrReplace = "str_replace",
        /// `"insert"`: insert `new_str` after `insert_line`.
        Insert = "insert",
        /// `"undo_edit"`: revert the last edit of the file.
        UndoEdit = "undo_edit",
    }
}

string_enum! {
    /// The `command` of [`TaskTrackerAction`] (and of its observation).
    pub enum TaskTrackerCommand: LiteralError {
        /// `"view"`: show the task list (the action's default).
        View = "view",
        /// `"plan"`: replace the task list with `task_list`.
        Plan = "plan",
    }
}

string_enum! {
    /// The `command` of [`DelegateAction`] (and of its observation).
    pub enum DelegateCommand: LiteralError {
        /// `"spawn"`: create sub-agents.
        Spawn = "spawn",
        /// `"delegate"`: hand tasks to spawned sub-agents.
        Delegate = "delegate",
    }
}

string_enum! {
    /// The `direction` of [`BrowserScrollAction`].
    pub enum ScrollDirection: LiteralError {
        /// `"up"`: scroll up.
        Up = "up",
        /// `"down"`: scroll down (the default).
        Down = "down",
    }
}

string_enum! {
    /// How a child conversation shares the parent's workspace
    /// ([`StartChildConversationAction`] and its observation).
    pub enum Isolation: LiteralError {
        /// `"worktree"`: a separate git worktree (the action's default).
        Worktree = "worktree",
        /// `"shared"`: the parent's workspace.
        Shared = "shared",
    }
}

model! {
    /// Applies a patch to the workspace (`openhands.tools.apply_patch.definition`).
    pub struct ApplyPatchAction {
        extra: forbid,
        kind: "ApplyPatchAction",
        fields: {
            /// The patch text. Required.
            patch: String = req,
        }
    }
}

model! {
    /// Asks the oracle model a question (`openhands.tools.ask_oracle.definition`).
    pub struct AskOracleAction {
        extra: forbid,
        kind: "AskOracleAction",
        fields: {
            /// The question. Required.
            question: String = req,
            /// Extra context for the oracle. Default `null` (left out).
            context: Option<String> = opt,
        }
    }
}

model! {
    /// The generic browser action, with no fields (`openhands.tools.browser_use.definition`).
    pub struct BrowserAction {
        extra: forbid,
        kind: "BrowserAction",
        fields: {}
    }
}

model! {
    /// Clicks an interactive element of the page (`openhands.tools.browser_use.definition`).
    pub struct BrowserClickAction {
        extra: forbid,
        kind: "BrowserClickAction",
        fields: {
            /// Index of the element to click, `>= 0`. Required.
            index: i64 = req [ge::<i64>(0.0)],
            /// Whether to open the link in a new tab. Default `false`.
            new_tab: bool = default(false),
        }
    }
}

model! {
    /// Closes a browser tab (`openhands.tools.browser_use.definition`).
    pub struct BrowserCloseTabAction {
        extra: forbid,
        kind: "BrowserCloseTabAction",
        fields: {
            /// Id of the tab to close. Required.
            tab_id: String = req,
        }
    }
}

model! {
    /// Reads the page content (`openhands.tools.browser_use.definition`).
    pub struct BrowserGetContentAction {
        extra: forbid,
        kind: "BrowserGetContentAction",
        fields: {
            /// Whether to include the page's links. Default `false`.
            extract_links: bool = default(false),
            /// Character offset to start from, `>= 0`. Default `0`.
            start_from_char: i64 = default(0) [ge::<i64>(0.0)],
        }
    }
}

model! {
    /// Reads the page state (`openhands.tools.browser_use.definition`).
    pub struct BrowserGetStateAction {
        extra: forbid,
        kind: "BrowserGetStateAction",
        fields: {
            /// Whether to include a screenshot. Default `false`.
            include_screenshot: bool = default(false),
        }
    }
}

model! {
    /// Reads the browser's cookies and storage (`openhands.tools.browser_use.definition`).
    pub struct BrowserGetStorageAction {
        extra: forbid,
        kind: "BrowserGetStorageAction",
        fields: {}
    }
}

model! {
    /// Goes back in the browser history (`openhands.tools.browser_use.definition`).
    pub struct BrowserGoBackAction {
        extra: forbid,
        kind: "BrowserGoBackAction",
        fields: {}
    }
}

model! {
    /// Lists the open browser tabs (`openhands.tools.browser_use.definition`).
    pub struct BrowserListTabsAction {
        extra: forbid,
        kind: "BrowserListTabsAction",
        fields: {}
    }
}

model! {
    /// Opens a URL (`openhands.tools.browser_use.definition`).
    pub struct BrowserNavigateAction {
        extra: forbid,
        kind: "BrowserNavigateAction",
        fields: {
            /// The URL to open. Required.
            url: String = req,
            /// Whether to open it in a new tab. Default `false`.
            new_tab: bool = default(false),
        }
    }
}

model! {
    /// Scrolls the page (`openhands.tools.browser_use.definition`).
    pub struct BrowserScrollAction {
        extra: forbid,
        kind: "BrowserScrollAction",
        fields: {
            /// `"up"` or `"down"`. Default `"down"`.
            direction: ScrollDirection = default(ScrollDirection::Down),
        }
    }
}

model! {
    /// Sets the browser's cookies and storage (`openhands.tools.browser_use.definition`).
    pub struct BrowserSetStorageAction {
        extra: forbid,
        kind: "BrowserSetStorageAction",
        fields: {
            /// The storage state, a free-form object kept in input order. Required.
            storage_state: serde_json::Map<String, serde_json::Value> = req,
        }
    }
}

model! {
    /// Starts recording the browser session (`openhands.tools.browser_use.definition`).
    pub struct BrowserStartRecordingAction {
        extra: forbid,
        kind: "BrowserStartRecordingAction",
        fields: {}
    }
}

model! {
    /// Stops recording the browser session (`openhands.tools.browser_use.definition`).
    pub struct BrowserStopRecordingAction {
        extra: forbid,
        kind: "BrowserStopRecordingAction",
        fields: {}
    }
}

model! {
    /// Switches to another browser tab (`openhands.tools.browser_use.definition`).
    pub struct BrowserSwitchTabAction {
        extra: forbid,
        kind: "BrowserSwitchTabAction",
        fields: {
            /// Id of the tab to switch to. Required.
            tab_id: String = req,
        }
    }
}

model! {
    /// Types text into an element of the page (`openhands.tools.browser_use.definition`).
    pub struct BrowserTypeAction {
        extra: forbid,
        kind: "BrowserTypeAction",
        fields: {
            /// Index of the element to type into, `>= 0`. Required.
            index: i64 = req [ge::<i64>(0.0)],
            /// The text to type. Required.
            text: String = req,
        }
    }
}

model! {
    /// Classifies the task and switches to the matching LLM, with no fields
    /// (`openhands.sdk.tool.builtins.classify_and_switch_llm`).
    pub struct ClassifyAndSwitchLLMAction {
        extra: forbid,
        kind: "ClassifyAndSwitchLLMAction",
        fields: {}
    }
}

model! {
    /// Consults the Theory-of-Mind agent (`openhands.tools.tom_consult.definition`).
    pub struct ConsultTomAction {
        extra: forbid,
        kind: "ConsultTomAction",
        fields: {
            /// Why the agent is consulting. Required.
            reason: String = req,
            /// Whether to use the user's last message as the query. Default `true`.
            use_user_message: bool = default(true),
            /// A custom query. Default `null` (left out).
            custom_query: Option<String> = opt,
        }
    }
}

model! {
    /// Spawns sub-agents or delegates tasks to them (`openhands.tools.delegate.definition`).
    pub struct DelegateAction {
        extra: forbid,
        kind: "DelegateAction",
        fields: {
            /// `"spawn"` or `"delegate"`. Required.
            command: DelegateCommand = req,
            /// Sub-agent ids. Default `null` (left out).
            ids: Option<Vec<String>> = opt,
            /// Agent types of the spawned sub-agents. Default `null` (left out).
            agent_types: Option<Vec<String>> = opt,
            /// Tasks by sub-agent id, in input order. Default `null` (left out).
            tasks: Option<IndexMap<String, String>> = opt,
        }
    }
}

model! {
    /// Replaces text in a file (`openhands.tools.gemini.edit.definition`).
    pub struct EditAction {
        extra: forbid,
        kind: "EditAction",
        fields: {
            /// The file. Required.
            file_path: String = req,
            /// The text to replace. Required.
            old_string: String = req,
            /// The replacement. Required.
            new_string: String = req,
            /// How many replacements are expected, `>= 0`. Default `1`.
            expected_replacements: i64 = default(1) [ge::<i64>(0.0)],
        }
    }
}

model! {
    /// Views, creates or edits a file (`openhands.tools.file_editor.definition`).
    pub struct FileEditorAction {
        extra: forbid,
        kind: "FileEditorAction",
        fields: {
            /// `view`, `create`, `str_replace`, `insert` or `undo_edit`. Required.
            command: FileEditorCommand = req,
            /// Absolute path of the file or directory. Required.
            path: String = req,
            /// Content of the file to create. Default `null` (left out).
            file_text: Option<String> = opt,
            /// Text to replace. Default `null` (left out).
            old_str: Option<String> = opt,
            /// Replacement or inserted text. Default `null` (left out).
            new_str: Option<String> = opt,
            /// Line after which to insert, `>= 0`. Default `null` (left out).
            insert_line: Option<i64> = opt [ge::<Option<i64>>(0.0)],
            /// Line range to view. Default `null` (left out).
            view_range: Option<Vec<i64>> = opt,
        }
    }
}

model! {
    /// Ends the task with a message (`openhands.sdk.tool.builtins.finish`).
    pub struct FinishAction {
        extra: forbid,
        kind: "FinishAction",
        fields: {
            /// The final message. Required.
            message: String = req,
        }
    }
}

model! {
    /// Finds files by glob pattern (`openhands.tools.glob.definition`).
    pub struct GlobAction {
        extra: forbid,
        kind: "GlobAction",
        fields: {
            /// The glob pattern. Required.
            pattern: String = req,
            /// Directory to search. Default `null` (left out).
            path: Option<String> = opt,
        }
    }
}

model! {
    /// Searches file contents by regular expression (`openhands.tools.grep.definition`).
    pub struct GrepAction {
        extra: forbid,
        kind: "GrepAction",
        fields: {
            /// The regular expression. Required.
            pattern: String = req,
            /// Directory to search. Default `null` (left out).
            path: Option<String> = opt,
            /// Glob of the files to include. Default `null` (left out).
            include: Option<String> = opt,
        }
    }
}

model! {
    /// Invokes a skill by name (`openhands.sdk.tool.builtins.invoke_skill`).
    pub struct InvokeSkillAction {
        extra: forbid,
        kind: "InvokeSkillAction",
        fields: {
            /// The skill name. Required.
            name: String = req,
        }
    }
}

model! {
    /// Lists a directory (`openhands.tools.gemini.list_directory.definition`).
    pub struct ListDirectoryAction {
        extra: forbid,
        kind: "ListDirectoryAction",
        fields: {
            /// The directory. Default `"."`.
            dir_path: String = default(String::from(".")),
            /// Whether to list recursively. Default `false`.
            recursive: bool = default(false),
        }
    }
}

model! {
    /// Calls an MCP tool (`openhands.sdk.mcp.definition`).
    pub struct MCPToolAction {
        extra: forbid,
        kind: "MCPToolAction",
        fields: {
            /// The tool's arguments, a free-form object kept in input order. Default `{}`.
            data: serde_json::Map<String, serde_json::Value> = default(serde_json::Map::new()),
        }
    }
}

model! {
    /// Views, creates or edits a file in planning mode
    /// (`openhands.tools.planning_file_editor.definition`).
    pub struct PlanningFileEditorAction {
        extra: forbid,
        kind: "PlanningFileEditorAction",
        fields: {
            /// `view`, `create`, `str_replace`, `insert` or `undo_edit`. Required.
            command: FileEditorCommand = req,
            /// Absolute path of the file or directory. Required.
            path: String = req,
            /// Content of the file to create. Default `null` (left out).
            file_text: Option<String> = opt,
            /// Text to replace. Default `null` (left out).
            old_str: Option<String> = opt,
            /// Replacement or inserted text. Default `null` (left out).
            new_str: Option<String> = opt,
            /// Line after which to insert, `>= 0`. Default `null` (left out).
            insert_line: Option<i64> = opt [ge::<Option<i64>>(0.0)],
            /// Line range to view. Default `null` (left out).
            view_range: Option<Vec<i64>> = opt,
        }
    }
}

model! {
    /// Reads a file (`openhands.tools.gemini.read_file.definition`).
    pub struct ReadFileAction {
        extra: forbid,
        kind: "ReadFileAction",
        fields: {
            /// The file. Required.
            file_path: String = req,
            /// First line to read, `>= 0`. Default `null` (left out).
            offset: Option<i64> = opt [ge::<Option<i64>>(0.0)],
            /// Number of lines to read, `>= 1`. Default `null` (left out).
            limit: Option<i64> = opt [ge::<Option<i64>>(1.0)],
        }
    }
}

model! {
    /// Runs sleeptime computation over past sessions, with no fields
    /// (`openhands.tools.tom_consult.definition`).
    pub struct SleeptimeComputeAction {
        extra: forbid,
        kind: "SleeptimeComputeAction",
        fields: {}
    }
}

model! {
    /// Starts a child conversation (`openhands.tools.child_conversation.definition`).
    pub struct StartChildConversationAction {
        extra: forbid,
        kind: "StartChildConversationAction",
        fields: {
            /// The child's task. Required.
            task: String = req,
            /// The child's title. Default `null` (left out).
            title: Option<String> = opt,
            /// `"worktree"` or `"shared"`. Default `"worktree"`.
            isolation: Isolation = default(Isolation::Worktree),
        }
    }
}

model! {
    /// Switches to another LLM profile (`openhands.sdk.tool.builtins.switch_llm`).
    pub struct SwitchLLMAction {
        extra: forbid,
        kind: "SwitchLLMAction",
        fields: {
            /// The profile to switch to. Required.
            profile_name: String = req,
            /// Why. Required.
            reason: String = req,
        }
    }
}

model! {
    /// Launches a sub-agent task (`openhands.tools.task.definition`).
    pub struct TaskAction {
        extra: forbid,
        kind: "TaskAction",
        fields: {
            /// A short description of the task. Default `null` (left out).
            description: Option<String> = opt,
            /// The task for the sub-agent. Required.
            prompt: String = req,
            /// The kind of sub-agent. Default `"general-purpose"`.
            subagent_type: String = default(String::from("general-purpose")),
            /// Id of a task to resume. Default `null` (left out).
            resume: Option<String> = opt,
            /// Deprecated (ignored by the SDK) turn limit, `>= 1`. Default `null` (left out).
            max_turns: Option<i64> = opt [ge::<Option<i64>>(1.0)],
        }
    }
}

model! {
    /// Views or plans the task list (`openhands.tools.task_tracker.definition`).
    pub struct TaskTrackerAction {
        extra: forbid,
        kind: "TaskTrackerAction",
        fields: {
            /// `"view"` or `"plan"`. Default `"view"`.
            command: TaskTrackerCommand = default(TaskTrackerCommand::View),
            /// The task list (for `plan`). Default `[]`.
            task_list: Vec<TaskItem> = default(Vec::new()),
        }
    }
}

model! {
    /// Runs a command in the terminal (`openhands.tools.terminal.definition`).
    pub struct TerminalAction {
        extra: forbid,
        kind: "TerminalAction",
        fields: {
            /// The command (or input text). Required.
            command: String = req,
            /// Whether `command` is input to the running process. Default `false`.
            is_input: bool = default(false),
            /// Timeout in seconds, `>= 0`. Default `null` (left out).
            timeout: Option<f64> = opt [ge::<Option<f64>>(0.0)],
            /// Whether to reset the terminal. Default `false`.
            reset: bool = default(false),
        }
    }
}

model! {
    /// Records a thought (`openhands.sdk.tool.builtins.think`).
    pub struct ThinkAction {
        extra: forbid,
        kind: "ThinkAction",
        fields: {
            /// The thought. Required.
            thought: String = req,
        }
    }
}

model! {
    /// Asks a vision model about an attached image
    /// (`openhands.sdk.tool.builtins.vision_inspect`).
    pub struct VisionInspectAction {
        extra: forbid,
        kind: "VisionInspectAction",
        fields: {
            /// Zero-based index of the image in the latest user message, `>= 0`. Required.
            image_index: i64 = req [ge::<i64>(0.0)],
            /// The question, at least one character (the SDK's `min_length=1`). Required.
            question: String = req [min_length(1)],
            /// A vision-capable LLM profile. Default `null` (left out).
            profile_name: Option<String> = opt,
        }
    }
}

model! {
    /// Runs a workflow script (`openhands.tools.workflow.definition`).
    pub struct WorkflowAction {
        extra: forbid,
        kind: "WorkflowAction",
        fields: {
            /// The workflow name. Required.
            name: String = req,
            /// The script. Required.
            script: String = req,
            /// Maximum parallel steps, in `[1, 64]`. Default `8`.
            max_concurrency: i64 = default(8) [between::<i64>(1.0, 64.0)],
        }
    }
}

model! {
    /// Writes a file (`openhands.tools.gemini.write_file.definition`).
    pub struct WriteFileAction {
        extra: forbid,
        kind: "WriteFileAction",
        fields: {
            /// The file. Required.
            file_path: String = req,
            /// The content to write. Required.
            content: String = req,
        }
    }
}

/// Every Action `kind` of SCHEMA.md §7, in its order (one model of this module each).
pub const ACTION_KINDS: [&str; 40] = [
    "ApplyPatchAction",
    "AskOracleAction",
    "BrowserAction",
    "BrowserClickAction",
    "BrowserCloseTabAction",
    "BrowserGetContentAction",
    "BrowserGetStateAction",
    "BrowserGetStorageAction",
    "BrowserGoBackAction",
    "BrowserListTabsAction",
    "BrowserNavigateAction",
    "BrowserScrollAction",
    "BrowserSetStorageAction",
    "BrowserStartRecordingAction",
    "BrowserStopRecordingAction",
    "BrowserSwitchTabAction",
    "BrowserTypeAction",
    "ClassifyAndSwitchLLMAction",
    "ConsultTomAction",
    "DelegateAction",
    "EditAction",
    "FileEditorAction",
    "FinishAction",
    "GlobAction",
    "GrepAction",
    "InvokeSkillAction",
    "ListDirectoryAction",
    "MCPToolAction",
    "PlanningFileEditorAction",
    "ReadFileAction",
    "SleeptimeComputeAction",
    "StartChildConversationAction",
    "SwitchLLMAction",
    "TaskAction",
    "TaskTrackerAction",
    "TerminalAction",
    "ThinkAction",
    "VisionInspectAction",
    "WorkflowAction",
    "WriteFileAction",
];
