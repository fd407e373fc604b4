//! Tool definitions listed by `SystemPromptEvent.tools` (SCHEMA.md §9).

use serde::Serialize;
use serde::ser::SerializeMap;

use crate::content::ToolAnnotations;
use crate::de::{ErrExt, FromJson, Loc, Res, expect_object, missing, string_enum};
use crate::error::ErrorType;
use crate::json::Json;
use crate::{Action, Observation};

string_enum! {
    /// The kind of a tool definition (SCHEMA.md §9). Each has a tool name, used as the
    /// computed `title` when the annotations give none.
    pub enum ToolKind: ValueError {
        /// `apply_patch`
        ApplyPatchTool = "ApplyPatchTool",
        /// `ask_oracle`
        AskOracleTool = "AskOracleTool",
        /// `browser_click`
        BrowserClickTool = "BrowserClickTool",
        /// `browser_close_tab`
        BrowserCloseTabTool = "BrowserCloseTabTool",
        /// `browser_get_content`
        BrowserGetContentTool = "BrowserGetContentTool",
        /// `browser_get_state`
        BrowserGetStateTool = "BrowserGetStateTool",
        /// `browser_get_storage`
        BrowserGetStorageTool = "BrowserGetStorageTool",
        /// `browser_go_back`
        BrowserGoBackTool = "BrowserGoBackTool",
        /// `browser_list_tabs`
        BrowserListTabsTool = "BrowserListTabsTool",
        /// `browser_navigate`
        BrowserNavigateTool = "BrowserNavigateTool",
        /// `browser_scroll`
        BrowserScrollTool = "BrowserScrollTool",
        /// `browser_set_storage`
        BrowserSetStorageTool = "BrowserSetStorageTool",
        /// `browser_start_recording`
        BrowserStartRecordingTool = "BrowserStartRecordingTool",
        /// `browser_stop_recording`
        BrowserStopRecordingTool = "BrowserStopRecordingTool",
        /// `browser_switch_tab`
        BrowserSwitchTabTool = "BrowserSwitchTabTool",
        /// `browser_tool_set`
        BrowserToolSet = "BrowserToolSet",
        /// `browser_type`
        BrowserTypeTool = "BrowserTypeTool",
        /// `route_task_to_model`
        ClassifyAndSwitchLLMTool = "ClassifyAndSwitchLLMTool",
        /// named by `client_tool_name`
        ClientTool = "ClientTool",
        /// `edit`
        EditTool = "EditTool",
        /// `file_editor`
        FileEditorTool = "FileEditorTool",
        /// `finish`
        FinishTool = "FinishTool",
        /// `glob`
        GlobTool = "GlobTool",
        /// `grep`
        GrepTool = "GrepTool",
        /// `invoke_skill`
        InvokeSkillTool = "InvokeSkillTool",
        /// `list_directory`
        ListDirectoryTool = "ListDirectoryTool",
        /// named by `mcp_tool.name`
        MCPToolDefinition = "MCPToolDefinition",
        /// `planning_file_editor`
        PlanningFileEditorTool = "PlanningFileEditorTool",
        /// `read_file`
        ReadFileTool = "ReadFileTool",
        /// `sleeptime_compute`
        SleeptimeComputeTool = "SleeptimeComputeTool",
        /// `start_child_conversation`
        StartChildConversationTool = "StartChildConversationTool",
        /// `switch_llm`
        SwitchLLMTool = "SwitchLLMTool",
        /// `task`
        TaskTool = "TaskTool",
        /// `task_tool_set`
        TaskToolSet = "TaskToolSet",
        /// `task_tracker`
        TaskTrackerTool = "TaskTrackerTool",
        /// `terminal`
        TerminalTool = "TerminalTool",
        /// `think`
        ThinkTool = "ThinkTool",
        /// `tom_consult`
        TomConsultTool = "TomConsultTool",
        /// `inspect_image_with_vision`
        VisionInspectTool = "VisionInspectTool",
        /// `workflow`
        WorkflowTool = "WorkflowTool",
        /// `workflow_tool_set`
        WorkflowToolSet = "WorkflowToolSet",
        /// `write_file`
        WriteFileTool = "WriteFileTool",
    }
}

impl ToolKind {
    /// The SDK's class-level tool name (`CamelCase` to `snake_case` without `_tool`, or the
    /// class's own `name`); `None` for MCP and client tools, which are named per instance.
    pub fn tool_name(self) -> Option<&'static str> {
        Some(match self {
            ToolKind::ApplyPatchTool => "apply_patch",
            ToolKind::AskOracleTool => "ask_oracle",
            ToolKind::BrowserClickTool => "browser_click",
            ToolKind::BrowserCloseTabTool => "browser_close_tab",
            ToolKind::BrowserGetContentTool => "browser_get_content",
            ToolKind::BrowserGetStateTool => "browser_get_state",
            ToolKind::BrowserGetStorageTool => "browser_get_storage",
            ToolKind::BrowserGoBackTool => "browser_go_back",
            ToolKind::BrowserListTabsTool => "browser_list_tabs",
            ToolKind::BrowserNavigateTool => "browser_navigate",
            ToolKind::BrowserScrollTool => "browser_scroll",
            ToolKind::BrowserSetStorageTool => "browser_set_storage",
            ToolKind::BrowserStartRecordingTool => "browser_start_recording",
            ToolKind::BrowserStopRecordingTool => "browser_stop_recording",
            ToolKind::BrowserSwitchTabTool => "browser_switch_tab",
            ToolKind::BrowserToolSet => "browser_tool_set",
            ToolKind::BrowserTypeTool => "browser_type",
            ToolKind::ClassifyAndSwitchLLMTool => "route_task_to_model",
            ToolKind::ClientTool | ToolKind::MCPToolDefinition => return None,
            ToolKind::EditTool => "edit",
            ToolKind::FileEditorTool => "file_editor",
            ToolKind::FinishTool => "finish",
            ToolKind::GlobTool => "glob",
            ToolKind::GrepTool => "grep",
            ToolKind::InvokeSkillTool => "invoke_skill",
            ToolKind::ListDirectoryTool => "list_directory",
            ToolKind::PlanningFileEditorTool => "planning_file_editor",
            ToolKind::ReadFileTool => "read_file",
            ToolKind::SleeptimeComputeTool => "sleeptime_compute",
            ToolKind::StartChildConversationTool => "start_child_conversation",
            ToolKind::SwitchLLMTool => "switch_llm",
            ToolKind::TaskTool => "task",
            ToolKind::TaskToolSet => "task_tool_set",
            ToolKind::TaskTrackerTool => "task_tracker",
            ToolKind::TerminalTool => "terminal",
            ToolKind::ThinkTool => "think",
            ToolKind::TomConsultTool => "tom_consult",
            ToolKind::VisionInspectTool => "inspect_image_with_vision",
            ToolKind::WorkflowTool => "workflow",
            ToolKind::WorkflowToolSet => "workflow_tool_set",
            ToolKind::WriteFileTool => "write_file",
        })
    }
}

/// Kind-specific fields of a tool definition.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolExtra {
    /// No extra fields.
    None,
    /// `MCPToolDefinition`: the MCP `Tool` object, in MCP wire spelling (`inputSchema`), with a
    /// string `name`.
    Mcp {
        /// The MCP tool object.
        mcp_tool: serde_json::Map<String, serde_json::Value>,
    },
    /// `ClientTool`: a tool executed by the client.
    Client {
        /// The client's tool name.
        client_tool_name: String,
        /// The JSON Schema of its parameters, verbatim.
        input_schema: serde_json::Map<String, serde_json::Value>,
    },
}

/// One tool of a system prompt (SCHEMA.md §9; unknown keys ignored). Written as: its fields,
/// then `kind`, then the computed `title` (ignored on input).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// The tool class.
    pub kind: ToolKind,
    /// The description the LLM reads. Required.
    pub description: String,
    /// The Action kind the tool takes (a known kind or a run-time kind). Required.
    pub action_type: String,
    /// The Observation kind the tool returns.
    pub observation_type: Option<String>,
    /// Behaviour hints.
    pub annotations: Option<ToolAnnotations>,
    /// Free-form metadata.
    pub meta: Option<serde_json::Map<String, serde_json::Value>>,
    /// Fields of MCP and client tools.
    pub extra: ToolExtra,
}

impl ToolDefinition {
    /// The tool's name: `mcp_tool.name`, `client_tool_name`, or the class-level name.
    pub fn name(&self) -> &str {
        match &self.extra {
            ToolExtra::Mcp { mcp_tool } => {
                mcp_tool.get("name").and_then(|n| n.as_str()).unwrap_or("")
            }
            ToolExtra::Client {
                client_tool_name, ..
            } => client_tool_name,
            ToolExtra::None => self.kind.tool_name().unwrap_or(""),
        }
    }

    /// The computed `title`: the annotations' title when set and non-empty, else the name.
    pub fn title(&self) -> &str {
        match self.annotations.as_ref().and_then(|a| a.title.as_deref()) {
            Some(t) if !t.is_empty() => t,
            _ => self.name(),
        }
    }
}

fn object(v: Json<'_>, loc: &Loc<'_>) -> Res<serde_json::Map<String, serde_json::Value>> {
    serde_json::Map::from_json(v, loc)
}

impl FromJson for ToolDefinition {
    fn from_json(v: Json<'_>, loc: &Loc<'_>) -> Res<Self> {
        let pairs = expect_object(v, loc, "ToolDefinition")?;
        let kind = match crate::union::find_kind(&pairs) {
            Ok(k) => ToolKind::from_name(k).ok_or_else(|| k.to_owned()),
            Err(shown) => Err(shown),
        };
        let kind = kind.map_err(|shown| {
            loc.err(
                ErrorType::ValueError,
                format!(
                    "Value error, Unexpected kind '{shown}' for ToolDefinition. Expected one of: {}",
                    ToolKind::NAMES.join(", ")
                ),
            )
            .with_input(serde_json::Value::String(shown))
        })?;
        let (mut description, mut action_type, mut observation_type) = (None, None, None);
        let (mut annotations, mut meta, mut mcp_tool, mut client_tool_name, mut input_schema) =
            (None, None, None, None, None);
        for (k, v) in pairs {
            match &*k {
                "description" => description = Some(v),
                "action_type" => action_type = Some(v),
                "observation_type" => observation_type = Some(v),
                "annotations" => annotations = Some(v),
                "meta" => meta = Some(v),
                "mcp_tool" => mcp_tool = Some(v),
                "client_tool_name" => client_tool_name = Some(v),
                "input_schema" => input_schema = Some(v),
                _ => {}
            }
        }
        let description = match description {
            Some(v) => String::from_json(v, &Loc::Key(loc, "description"))?,
            None => return Err(missing(loc, "description")),
        };
        let action_type = match action_type {
            Some(v) => crate::union::check_kind_name(
                v,
                &Loc::Key(loc, "action_type"),
                "openhands.sdk.tool.schema.Action",
                Action::KINDS,
            )?,
            None => return Err(missing(loc, "action_type")),
        };
        let observation_type = match observation_type {
            None | Some(Json::Null) => None,
            Some(v) => Some(crate::union::check_kind_name(
                v,
                &Loc::Key(loc, "observation_type"),
                "openhands.sdk.tool.schema.Observation",
                Observation::KINDS,
            )?),
        };
        let annotations = match annotations {
            Some(v) => Option::<ToolAnnotations>::from_json(v, &Loc::Key(loc, "annotations"))?,
            None => None,
        };
        let meta = match meta {
            Some(v) => Option::<serde_json::Map<_, _>>::from_json(v, &Loc::Key(loc, "meta"))?,
            None => None,
        };
        let extra = match kind {
            ToolKind::MCPToolDefinition => {
                let l = Loc::Key(loc, "mcp_tool");
                let tool = object(mcp_tool.ok_or_else(|| missing(loc, "mcp_tool"))?, &l)?;
                match tool.get("name") {
                    Some(serde_json::Value::String(_)) => {}
                    Some(other) => {
                        return Err(Loc::Key(&l, "name")
                            .err(ErrorType::StringType, "Input should be a valid string")
                            .with_input(other.clone()));
                    }
                    None => return Err(missing(&l, "name")),
                }
                ToolExtra::Mcp { mcp_tool: tool }
            }
            ToolKind::ClientTool => ToolExtra::Client {
                client_tool_name: String::from_json(
                    client_tool_name.ok_or_else(|| missing(loc, "client_tool_name"))?,
                    &Loc::Key(loc, "client_tool_name"),
                )?,
                input_schema: object(
                    input_schema.ok_or_else(|| missing(loc, "input_schema"))?,
                    &Loc::Key(loc, "input_schema"),
                )?,
            },
            _ => ToolExtra::None,
        };
        Ok(ToolDefinition {
            kind,
            description,
            action_type,
            observation_type,
            annotations,
            meta,
            extra,
        })
    }
}

impl Serialize for ToolDefinition {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("description", &self.description)?;
        map.serialize_entry("action_type", &self.action_type)?;
        if let Some(o) = &self.observation_type {
            map.serialize_entry("observation_type", o)?;
        }
        if let Some(a) = &self.annotations {
            map.serialize_entry("annotations", a)?;
        }
        if let Some(m) = &self.meta {
            map.serialize_entry("meta", m)?;
        }
        match &self.extra {
            ToolExtra::None => {}
            ToolExtra::Mcp { mcp_tool } => map.serialize_entry("mcp_tool", mcp_tool)?,
            ToolExtra::Client {
                client_tool_name,
                input_schema,
            } => {
                map.serialize_entry("client_tool_name", client_tool_name)?;
                map.serialize_entry("input_schema", input_schema)?;
            }
        }
        map.serialize_entry("kind", self.kind.as_str())?;
        map.serialize_entry("title", self.title())?;
        map.end()
    }
}
