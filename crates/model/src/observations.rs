//! The Observation kinds (SCHEMA.md §8): the payload of `ObservationEvent.observation`, told
//! apart by `kind`.
//!
//! Every Observation is `extra=forbid`, starts with `content` and `is_error`, and is written
//! with its fields in declaration order, then `"kind"` last. Optional (`X | null`) fields
//! default to `null` and are left out when `None` (the SDK persists with
//! `exclude_none=True`); every other field is always written.

use crate::actions::{DelegateCommand, FileEditorCommand, Isolation, TaskTrackerCommand};
use crate::content::{CmdOutputMetadata, Commit, Content, FileEntry, TaskItem};
use crate::de::string_enum;
use crate::macros::model;

string_enum! {
    /// The `status` of a [`WorkflowObservation`].
    pub enum WorkflowStatus: LiteralError {
        /// `"completed"`: the workflow finished.
        Completed = "completed",
        /// `"error"`: the workflow failed.
        Error = "error",
    }
}

model! {
    /// The result of an `ApplyPatchAction` (`openhands.tools.apply_patch.definition`).
    pub struct ApplyPatchObservation {
        extra: forbid,
        kind: "ApplyPatchObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// A summary message. Default `""`.
            message: String = default(String::new()),
            /// The fuzz factor the patch needed. Default `0`.
            fuzz: i64 = default(0),
            /// The file changes made. Default `null` (left out).
            commit: Option<Commit> = opt,
        }
    }
}

model! {
    /// The oracle's answer (`openhands.tools.ask_oracle.definition`).
    pub struct AskOracleObservation {
        extra: forbid,
        kind: "AskOracleObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
        }
    }
}

model! {
    /// The result of a browser action (`openhands.tools.browser_use.definition`).
    pub struct BrowserObservation {
        extra: forbid,
        kind: "BrowserObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// A base64 screenshot. Default `null` (left out).
            screenshot_data: Option<String> = opt,
            /// Directory where the full output was saved. Default `null` (left out).
            full_output_save_dir: Option<String> = opt,
        }
    }
}

model! {
    /// The result of a `ClassifyAndSwitchLLMAction`
    /// (`openhands.sdk.tool.builtins.classify_and_switch_llm`).
    pub struct ClassifyAndSwitchLLMObservation {
        extra: forbid,
        kind: "ClassifyAndSwitchLLMObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// The class the task was put in. Default `null` (left out).
            chosen_class: Option<String> = opt,
            /// The model chosen for that class. Default `null` (left out).
            model: Option<String> = opt,
            /// The model now active. Default `null` (left out).
            active_model: Option<String> = opt,
        }
    }
}

model! {
    /// The result of a client-side tool (`openhands.sdk.tool.client_tool`).
    pub struct ClientToolObservation {
        extra: forbid,
        kind: "ClientToolObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
        }
    }
}

model! {
    /// The Theory-of-Mind agent's advice (`openhands.tools.tom_consult.definition`).
    pub struct ConsultTomObservation {
        extra: forbid,
        kind: "ConsultTomObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// The suggestions. Default `""`.
            suggestions: String = default(String::new()),
            /// Confidence in the suggestions. Default `null` (left out).
            confidence: Option<f64> = opt,
            /// The reasoning behind them. Default `null` (left out).
            reasoning: Option<String> = opt,
        }
    }
}

model! {
    /// The result of a `DelegateAction` (`openhands.tools.delegate.definition`).
    pub struct DelegateObservation {
        extra: forbid,
        kind: "DelegateObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// `"spawn"` or `"delegate"`. Required.
            command: DelegateCommand = req,
        }
    }
}

model! {
    /// The result of an `EditAction` (`openhands.tools.gemini.edit.definition`).
    pub struct EditObservation {
        extra: forbid,
        kind: "EditObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// The file edited. Default `null` (left out).
            file_path: Option<String> = opt,
            /// Whether the file was created. Default `false`.
            is_new_file: bool = default(false),
            /// How many replacements were made. Default `0`.
            replacements_made: i64 = default(0),
            /// Content before the edit. Default `null` (left out).
            old_content: Option<String> = opt,
            /// Content after the edit. Default `null` (left out).
            new_content: Option<String> = opt,
        }
    }
}

model! {
    /// The result of a `FileEditorAction` (`openhands.tools.file_editor.definition`).
    pub struct FileEditorObservation {
        extra: forbid,
        kind: "FileEditorObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// `view`, `create`, `str_replace`, `insert` or `undo_edit`. Required.
            command: FileEditorCommand = req,
            /// The file or directory. Default `null` (left out).
            path: Option<String> = opt,
            /// Whether the file existed before. Default `true`.
            prev_exist: bool = default(true),
            /// Content before the edit. Default `null` (left out).
            old_content: Option<String> = opt,
            /// Content after the edit. Default `null` (left out).
            new_content: Option<String> = opt,
        }
    }
}

model! {
    /// The result of a `FinishAction` (`openhands.sdk.tool.builtins.finish`).
    pub struct FinishObservation {
        extra: forbid,
        kind: "FinishObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
        }
    }
}

model! {
    /// The files a `GlobAction` found (`openhands.tools.glob.definition`).
    pub struct GlobObservation {
        extra: forbid,
        kind: "GlobObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// The matching files. Required.
            files: Vec<String> = req,
            /// The glob pattern. Required.
            pattern: String = req,
            /// The directory searched. Required.
            search_path: String = req,
            /// Whether the list was cut short. Default `false`.
            truncated: bool = default(false),
        }
    }
}

model! {
    /// The matches a `GrepAction` found (`openhands.tools.grep.definition`).
    pub struct GrepObservation {
        extra: forbid,
        kind: "GrepObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// The matching files. Required.
            matches: Vec<String> = req,
            /// The regular expression. Required.
            pattern: String = req,
            /// The directory searched. Required.
            search_path: String = req,
            /// Glob of the files included. Default `null` (left out).
            include_pattern: Option<String> = opt,
            /// Whether the list was cut short. Default `false`.
            truncated: bool = default(false),
        }
    }
}

model! {
    /// The result of an `InvokeSkillAction` (`openhands.sdk.tool.builtins.invoke_skill`).
    pub struct InvokeSkillObservation {
        extra: forbid,
        kind: "InvokeSkillObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// The skill invoked. Required.
            skill_name: String = req,
        }
    }
}

model! {
    /// A directory listing (`openhands.tools.gemini.list_directory.definition`).
    pub struct ListDirectoryObservation {
        extra: forbid,
        kind: "ListDirectoryObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// The directory listed. Default `null` (left out).
            dir_path: Option<String> = opt,
            /// The entries. Default `[]`.
            entries: Vec<FileEntry> = default(Vec::new()),
            /// Total number of entries. Default `0`.
            total_count: i64 = default(0),
            /// Whether the listing was cut short. Default `false`.
            is_truncated: bool = default(false),
        }
    }
}

model! {
    /// The result of an MCP tool call (`openhands.sdk.mcp.definition`).
    pub struct MCPToolObservation {
        extra: forbid,
        kind: "MCPToolObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// The MCP tool called. Required.
            tool_name: String = req,
        }
    }
}

model! {
    /// The result of a `PlanningFileEditorAction`
    /// (`openhands.tools.planning_file_editor.definition`).
    pub struct PlanningFileEditorObservation {
        extra: forbid,
        kind: "PlanningFileEditorObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// `view`, `create`, `str_replace`, `insert` or `undo_edit`. Required.
            command: FileEditorCommand = req,
            /// The file or directory. Default `null` (left out).
            path: Option<String> = opt,
            /// Whether the file existed before. Default `true`.
            prev_exist: bool = default(true),
            /// Content before the edit. Default `null` (left out).
            old_content: Option<String> = opt,
            /// Content after the edit. Default `null` (left out).
            new_content: Option<String> = opt,
        }
    }
}

model! {
    /// The content of a file read (`openhands.tools.gemini.read_file.definition`).
    pub struct ReadFileObservation {
        extra: forbid,
        kind: "ReadFileObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// The file read. Required.
            file_path: String = req,
            /// The text read. Default `""`.
            file_content: String = default(String::new()),
            /// Whether the text was cut short. Default `false`.
            is_truncated: bool = default(false),
            /// First and last line shown, a 2-element array. Default `null` (left out).
            lines_shown: Option<(i64, i64)> = opt,
            /// Number of lines in the file. Default `null` (left out).
            total_lines: Option<i64> = opt,
        }
    }
}

model! {
    /// The result of a `SleeptimeComputeAction` (`openhands.tools.tom_consult.definition`).
    pub struct SleeptimeComputeObservation {
        extra: forbid,
        kind: "SleeptimeComputeObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// A summary message. Default `""`.
            message: String = default(String::new()),
            /// How many sessions were processed. Default `0`.
            sessions_processed: i64 = default(0),
        }
    }
}

model! {
    /// The child conversation started (`openhands.tools.child_conversation.definition`).
    pub struct StartChildConversationObservation {
        extra: forbid,
        kind: "StartChildConversationObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// The child's conversation id. Default `null` (left out).
            conversation_id: Option<String> = opt,
            /// The parent's conversation id. Default `null` (left out).
            parent_conversation_id: Option<String> = opt,
            /// The child's status. Default `null` (left out).
            status: Option<String> = opt,
            /// The child's title. Default `null` (left out).
            title: Option<String> = opt,
            /// The child's URL. Default `null` (left out).
            url: Option<String> = opt,
            /// The child's workspace. Default `null` (left out).
            workspace: Option<String> = opt,
            /// `"worktree"` or `"shared"`. Default `null` (left out).
            isolation: Option<Isolation> = opt,
        }
    }
}

model! {
    /// The result of a `SwitchLLMAction` (`openhands.sdk.tool.builtins.switch_llm`).
    pub struct SwitchLLMObservation {
        extra: forbid,
        kind: "SwitchLLMObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// The profile switched to. Required.
            profile_name: String = req,
            /// Why. Default `null` (left out).
            reason: Option<String> = opt,
            /// The model now active. Default `null` (left out).
            active_model: Option<String> = opt,
        }
    }
}

model! {
    /// The result of a sub-agent task (`openhands.tools.task.definition`).
    pub struct TaskObservation {
        extra: forbid,
        kind: "TaskObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// The task id. Required.
            task_id: String = req,
            /// The sub-agent that ran it. Required.
            subagent: String = req,
            /// The task status (free-form). Required.
            status: String = req,
        }
    }
}

model! {
    /// The task list after a `TaskTrackerAction` (`openhands.tools.task_tracker.definition`).
    pub struct TaskTrackerObservation {
        extra: forbid,
        kind: "TaskTrackerObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// `"view"` or `"plan"`. Required.
            command: TaskTrackerCommand = req,
            /// The task list. Default `[]`.
            task_list: Vec<TaskItem> = default(Vec::new()),
        }
    }
}

model! {
    /// The output of a terminal command (`openhands.tools.terminal.definition`).
    ///
    /// `command` is required but nullable: it is always written, as `null` if need be, so
    /// Python can reload it (SCHEMA.md §5).
    pub struct TerminalObservation {
        extra: forbid,
        kind: "TerminalObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// The command run, or `null`. Required (may be `null`).
            command: Option<String> = req_nullable,
            /// The exit code. Default `null` (left out).
            exit_code: Option<i64> = opt,
            /// Whether the command timed out. Default `false`.
            timeout: bool = default(false),
            /// Output metadata. Default `{"exit_code":-1,"pid":-1,"prefix":"","suffix":""}`.
            metadata: CmdOutputMetadata = default(CmdOutputMetadata::default()),
            /// Directory where the full output was saved. Default `null` (left out).
            full_output_save_dir: Option<String> = opt,
        }
    }
}

model! {
    /// The result of a `ThinkAction` (`openhands.sdk.tool.builtins.think`).
    pub struct ThinkObservation {
        extra: forbid,
        kind: "ThinkObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
        }
    }
}

model! {
    /// The vision model's answer (`openhands.sdk.tool.builtins.vision_inspect`).
    pub struct VisionInspectObservation {
        extra: forbid,
        kind: "VisionInspectObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// Index of the image inspected (no bound on the observation). Required.
            image_index: i64 = req,
            /// The question asked. Required.
            question: String = req,
            /// The LLM profile used. Default `null` (left out).
            profile_name: Option<String> = opt,
            /// The model used. Default `null` (left out).
            model: Option<String> = opt,
            /// The model's base URL. Default `null` (left out).
            base_url: Option<String> = opt,
            /// The answer. Default `null` (left out).
            answer: Option<String> = opt,
        }
    }
}

model! {
    /// The result of a `WorkflowAction` (`openhands.tools.workflow.definition`).
    pub struct WorkflowObservation {
        extra: forbid,
        kind: "WorkflowObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// The workflow name. Required.
            name: String = req,
            /// `"completed"` or `"error"`. Required.
            status: WorkflowStatus = req,
        }
    }
}

model! {
    /// The result of a `WriteFileAction` (`openhands.tools.gemini.write_file.definition`).
    pub struct WriteFileObservation {
        extra: forbid,
        kind: "WriteFileObservation",
        fields: {
            /// Content blocks shown to the LLM. Default `[]`.
            content: Vec<Content> = default(Vec::new()),
            /// Whether the action failed. Default `false`.
            is_error: bool = default(false),
            /// The file written. Default `null` (left out).
            file_path: Option<String> = opt,
            /// Whether the file was created. Default `false`.
            is_new_file: bool = default(false),
            /// Content before. Default `null` (left out).
            old_content: Option<String> = opt,
            /// Content after. Default `null` (left out).
            new_content: Option<String> = opt,
        }
    }
}

/// Every Observation `kind` of SCHEMA.md §8, in its order (one model of this module each).
pub const OBSERVATION_KINDS: [&str; 27] = [
    "ApplyPatchObservation",
    "AskOracleObservation",
    "BrowserObservation",
    "ClassifyAndSwitchLLMObservation",
    "ClientToolObservation",
    "ConsultTomObservation",
    "DelegateObservation",
    "EditObservation",
    "FileEditorObservation",
    "FinishObservation",
    "GlobObservation",
    "GrepObservation",
    "InvokeSkillObservation",
    "ListDirectoryObservation",
    "MCPToolObservation",
    "PlanningFileEditorObservation",
    "ReadFileObservation",
    "SleeptimeComputeObservation",
    "StartChildConversationObservation",
    "SwitchLLMObservation",
    "TaskObservation",
    "TaskTrackerObservation",
    "TerminalObservation",
    "ThinkObservation",
    "VisionInspectObservation",
    "WorkflowObservation",
    "WriteFileObservation",
];
