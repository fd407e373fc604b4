//! The skills a member may turn on (issue 25; OpenHands' `GET /api/v1/skills/search`):
//! global skills, the same for everyone, and the user's own, read from the operator's skills
//! directory (`switchboard serve --skills-dir DIR`) at every search, as OpenHands reads its
//! directories.
//!
//! Layout: `DIR/global/**/*.md` are global skills, `DIR/users/<user id>/**/*.md` the skills
//! of that user (the UUID `GET /api/v1/users/me` answers). A skill is a markdown file that
//! opens with a YAML front matter block (`---` lines) — OpenHands' legacy microagent files and
//! the AgentSkills format's `SKILL.md` alike; `README.md` files and files without front
//! matter are not skills (OpenHands' rule). From the front matter: `name` (else the file's
//! stem), `type` (else `knowledge`) and `triggers` (a list, inline `[a, b]` or one `- item` a
//! line). Only those top-level keys are read ([`front_matter`]), so the rest of the YAML may
//! hold anything.
//!
//! OpenHands reads the global skills from its own repository and the user skills from the
//! server's home directory (one set for every user of the server); Switchboard keeps a set
//! per user. Skills the agent server loads in a conversation's sandbox (the workspace's, the
//! sandbox user's) are `GET /api/v1/app-conversations/{id}/skills`.

use std::path::{Path, PathBuf};

use crate::UserId;
use crate::cursor::Keyset;

/// Most files read in one directory tree (a larger tree is read in part, in path order).
pub const MAX_SKILL_FILES: usize = 1000;
/// Most bytes of a file read for its front matter.
pub const MAX_FRONT_MATTER_BYTES: u64 = 64 * 1024;
/// Deepest directory level searched below `global/` or `users/<id>/`.
const MAX_DEPTH: usize = 8;

/// One skill as the search lists it (OpenHands' `SkillInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillInfo {
    /// The skill's name.
    pub name: String,
    /// `knowledge`, `repo` or `task` (the front matter's `type`).
    pub kind: String,
    /// `global` or `user`.
    pub source: &'static str,
    /// The words that trigger it, when it has any.
    pub triggers: Option<Vec<String>>,
}

/// A position in the skill list: the last skill of the previous page, by (source, name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillCursor {
    /// `global` or `user`.
    pub source: String,
    /// The skill's name.
    pub name: String,
}

impl Keyset for SkillCursor {
    const VERSION: &'static str = "k1";

    fn to_fields(&self) -> Vec<String> {
        vec![self.source.clone(), hex(self.name.as_bytes())]
    }

    fn from_fields(fields: &[&str]) -> Option<Self> {
        match fields {
            [source @ ("global" | "user"), name] => Some(SkillCursor {
                source: (*source).to_owned(),
                name: String::from_utf8(unhex(name)?).ok()?,
            }),
            _ => None,
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The operator's skills directory (`None`: no skills beyond the sandboxes').
#[derive(Clone, Debug, Default)]
pub struct SkillLibrary {
    root: Option<PathBuf>,
}

impl SkillLibrary {
    /// The skills under `root` (see the module docs).
    pub fn new(root: Option<PathBuf>) -> SkillLibrary {
        SkillLibrary { root }
    }

    /// Up to `limit` skills of `user` and the global ones, after `after`, ordered by source
    /// (`global` first) then name, and whether more follow. A directory that is missing or
    /// unreadable holds no skills; a file that is not a skill is skipped.
    pub fn search(
        &self,
        user: UserId,
        after: Option<&SkillCursor>,
        limit: usize,
    ) -> (Vec<SkillInfo>, bool) {
        let Some(root) = &self.root else {
            return (Vec::new(), false);
        };
        let mut skills = load(&root.join("global"), "global");
        skills.extend(load(&root.join("users").join(user.0.to_string()), "user"));
        skills.sort_by(|a, b| (a.source, &a.name).cmp(&(b.source, &b.name)));
        let rest: Vec<SkillInfo> = skills
            .into_iter()
            .filter(|s| {
                after.is_none_or(|c| {
                    (s.source, s.name.as_str()) > (c.source.as_str(), c.name.as_str())
                })
            })
            .collect();
        let more = rest.len() > limit;
        (rest.into_iter().take(limit).collect(), more)
    }
}

/// The skills of one tree, in path order, at most [`MAX_SKILL_FILES`] files read.
fn load(dir: &Path, source: &'static str) -> Vec<SkillInfo> {
    let mut files = Vec::new();
    walk(dir, 0, &mut files);
    files.sort();
    files
        .into_iter()
        .take(MAX_SKILL_FILES)
        .filter_map(|path| {
            let stem = path.file_stem()?.to_str()?.to_owned();
            let text = read_head(&path)?;
            let fm = front_matter(&text)?;
            Some(SkillInfo {
                name: fm.name.unwrap_or(stem),
                kind: fm.kind.unwrap_or_else(|| "knowledge".to_owned()),
                source,
                triggers: fm.triggers.filter(|t| !t.is_empty()),
            })
        })
        .collect()
}

fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > MAX_DEPTH || out.len() >= MAX_SKILL_FILES * 2 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            walk(&path, depth + 1, out);
        } else if kind.is_file()
            && path.extension().is_some_and(|e| e == "md")
            && path.file_name().is_some_and(|n| n != "README.md")
        {
            out.push(path);
        }
    }
}

fn read_head(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut buf = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_FRONT_MATTER_BYTES)
        .read_to_end(&mut buf)
        .ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// The keys of a front matter block a skill listing reads.
#[derive(Debug, Default, PartialEq)]
pub struct FrontMatter {
    /// `name`.
    pub name: Option<String>,
    /// `type`.
    pub kind: Option<String>,
    /// `triggers`.
    pub triggers: Option<Vec<String>>,
}

/// Reads `name`, `type` and `triggers` from the YAML front matter that opens `text` (between a
/// first line `---` and the next `---` line); `None` when `text` has none. Scalars may be
/// plain or quoted; `triggers` a flow list (`[a, "b"]`) or a block list (`- a` lines).
pub fn front_matter(text: &str) -> Option<FrontMatter> {
    let mut lines = text.lines();
    if lines.next()?.trim_end() != "---" {
        return None;
    }
    let mut fm = FrontMatter::default();
    let mut in_triggers = false;
    for line in lines {
        if line.trim_end() == "---" {
            return Some(fm);
        }
        let indented = line.starts_with([' ', '\t']);
        let trimmed = line.trim();
        if in_triggers
            && let Some(item) = trimmed
                .strip_prefix("- ")
                .or((trimmed == "-").then_some(""))
        {
            fm.triggers.get_or_insert_with(Vec::new).push(scalar(item));
            continue;
        }
        if indented || trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        in_triggers = false;
        let Some((key, value)) = trimmed.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "name" if !value.is_empty() => fm.name = Some(scalar(value)),
            "type" if !value.is_empty() => fm.kind = Some(scalar(value)),
            "triggers" => {
                if let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
                    fm.triggers = Some(
                        inner
                            .split(',')
                            .map(str::trim)
                            .filter(|s| !s.is_empty())
                            .map(scalar)
                            .collect(),
                    );
                } else if value.is_empty() {
                    in_triggers = true;
                } else {
                    fm.triggers = Some(vec![scalar(value)]);
                }
            }
            _ => {}
        }
    }
    None
}

/// A plain or quoted YAML scalar's text (a trailing ` # comment` dropped from a plain one).
fn scalar(raw: &str) -> String {
    let raw = raw.trim();
    for q in ['"', '\''] {
        if raw.len() >= 2 && raw.starts_with(q) && raw.ends_with(q) {
            return raw[1..raw.len() - 1].to_owned();
        }
    }
    raw.split(" #").next().unwrap_or(raw).trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_reads_the_three_keys_in_both_list_forms() {
        let fm = front_matter(
            "---\nname: docker\ntype: knowledge\nversion: 1.0.0\ntriggers:\n- docker\n  - \"container\"\ndescription: >\n  name: not this\n---\n# Docker\n",
        )
        .unwrap();
        assert_eq!(fm.name.as_deref(), Some("docker"));
        assert_eq!(fm.kind.as_deref(), Some("knowledge"));
        assert_eq!(fm.triggers, Some(vec!["docker".into(), "container".into()]));
        let fm = front_matter("---\ntriggers: [git, 'pull request']\n---\n").unwrap();
        assert_eq!(fm.name, None);
        assert_eq!(fm.triggers, Some(vec!["git".into(), "pull request".into()]));
        assert_eq!(front_matter("# no front matter\n"), None);
        assert_eq!(front_matter("---\nname: never closed\n"), None);
    }

    #[test]
    fn cursors_carry_any_name() {
        let c = SkillCursor {
            source: "user".into(),
            name: "a:b/ü".into(),
        };
        assert_eq!(SkillCursor::decode(&c.encode()), Some(c));
        assert_eq!(SkillCursor::decode("nonsense"), None);
    }
}
