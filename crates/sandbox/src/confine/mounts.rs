//! The file system of a confined sandbox: `bwrap`'s mount arguments for a [`Plan`], the paths
//! its command needs ([`command_paths`]) and its `/etc` overrides ([`write_etc`]).

use std::ffi::OsString;
use std::fs;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use switchboard_domain::sandboxes::workspace_dirs::SANDBOX_WORKSPACE_DIR;

use super::plan::{Plan, is_executable};

/// Host directories bound read-only at the same path when they are directories, or recreated
/// as the same symbolic link (merged-`/usr` systems).
const SYSTEM: [&str; 8] = [
    "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// `bwrap` mount arguments, and the (canonical) host trees they make visible.
#[derive(Default)]
struct Mounts {
    args: Vec<OsString>,
    visible: Vec<PathBuf>,
}

impl Mounts {
    fn push(&mut self, parts: &[&std::ffi::OsStr]) {
        self.args.extend(parts.iter().map(|p| p.to_os_string()));
    }

    /// `--dir` for every ancestor of `path` (so they exist, mode 0755, before a mount on it).
    fn parents(&mut self, path: &Path) {
        let mut at = PathBuf::from("/");
        let parts: Vec<Component<'_>> = path.components().collect();
        for c in parts.iter().take(parts.len().saturating_sub(1)) {
            if let Component::Normal(name) = c {
                at.push(name);
                self.push(&["--dir".as_ref(), at.as_os_str()]);
            }
        }
    }

    fn ro_bind(&mut self, path: &Path) {
        self.parents(path);
        self.push(&["--ro-bind".as_ref(), path.as_os_str(), path.as_os_str()]);
        self.visible
            .push(fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()));
    }

    fn shows(&self, path: &Path) -> bool {
        self.visible.iter().any(|v| path.starts_with(v))
    }
}

/// The mount arguments of `plan`, in the order `bwrap` must apply them: the system read-only,
/// `/proc`, `/dev`, private `/dev/shm` and `/tmp`, the read-only paths (parents first), the
/// hidden paths covered where a visible tree holds them, the `/etc` overrides, the
/// sandbox's directory read-write, and its workspace read-write at `/workspace`.
pub(super) fn mount_args(plan: &Plan, hidden: &[PathBuf]) -> Vec<OsString> {
    let mut m = Mounts::default();
    for sys in SYSTEM {
        let path = Path::new(sys);
        match fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(target) = fs::read_link(path) {
                    m.push(&["--symlink".as_ref(), target.as_os_str(), path.as_os_str()]);
                }
            }
            Ok(meta) if meta.is_dir() => m.ro_bind(path),
            _ => {}
        }
    }
    // A resolver configuration kept outside /etc (systemd-resolved's /run/...).
    if let Ok(real) = fs::canonicalize("/etc/resolv.conf")
        && !m.shows(&real)
    {
        m.ro_bind(&real);
    }
    m.push(&[
        "--proc".as_ref(),
        "/proc".as_ref(),
        "--dev".as_ref(),
        "/dev".as_ref(),
    ]);
    for tmp in ["/dev/shm", "/tmp"] {
        m.push(&[
            "--perms".as_ref(),
            "1777".as_ref(),
            "--tmpfs".as_ref(),
            tmp.as_ref(),
        ]);
    }
    let mut read_only: Vec<PathBuf> = plan
        .read_only
        .iter()
        .filter_map(|p| fs::canonicalize(p).ok())
        .collect();
    read_only.sort_by_key(|p| (p.components().count(), p.clone()));
    read_only.dedup();
    for path in read_only {
        if !m.shows(&path) && path != Path::new("/") {
            m.ro_bind(&path);
        }
    }
    for path in hidden {
        let Ok(real) = fs::canonicalize(path) else {
            continue;
        };
        if !m.shows(&real) {
            continue; // not visible: nothing to cover
        }
        if real.is_dir() {
            m.push(&["--tmpfs".as_ref(), real.as_os_str()]);
        } else {
            m.push(&["--ro-bind".as_ref(), "/dev/null".as_ref(), real.as_os_str()]);
        }
    }
    if let Some(etc) = &plan.etc {
        for name in ["passwd", "group"] {
            let file = etc.join(name);
            if file.is_file() {
                let dest = Path::new("/etc").join(name);
                m.push(&["--ro-bind".as_ref(), file.as_os_str(), dest.as_os_str()]);
            }
        }
    }
    if !plan.sandbox_dir.as_os_str().is_empty() {
        m.parents(&plan.sandbox_dir);
        let dir = plan.sandbox_dir.as_os_str();
        m.push(&["--bind".as_ref(), dir, dir]);
    }
    if let Some(workspace) = &plan.workspace {
        // The same directory at OpenHands' `/workspace` (a mount point made on bwrap's root).
        m.push(&[
            "--bind".as_ref(),
            workspace.as_os_str(),
            SANDBOX_WORKSPACE_DIR.as_ref(),
        ]);
    }
    m.args
}

/// The first of `paths` (as given, or once symbolic links are followed) that is
/// `/workspace` or below it: a sandbox's own workspace is mounted there after the read-only
/// paths, and would cover it.
pub fn under_workspace(paths: &[PathBuf]) -> Option<&PathBuf> {
    let workspace = Path::new(SANDBOX_WORKSPACE_DIR);
    paths.iter().find(|p| {
        p.starts_with(workspace) || fs::canonicalize(p).is_ok_and(|r| r.starts_with(workspace))
    })
}

/// What a sandbox's command needs to read besides the system: the installation of its
/// program and of the interpreter its `#!` line names (each followed through symbolic links,
/// and a Python venv's base installation from its `pyvenv.cfg`), and every absolute path
/// among its arguments that exists. An installation is the directory above a `bin/` or
/// `sbin/` that holds `lib/` or `pyvenv.cfg` (a venv, `~/.local`, a pyenv version); else only
/// the file itself. An executable among the arguments counts as a program too. `path_var`
/// is the sandbox's `PATH`, for `#!/usr/bin/env NAME`.
pub fn command_paths(program: &Path, args: &[String], path_var: Option<&str>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let add = |file: &Path, out: &mut Vec<PathBuf>| {
        out.push(installation(file));
        if let Ok(real) = fs::canonicalize(file) {
            out.push(installation(&real));
        }
    };
    add(program, &mut out);
    if let Some(interpreter) = interpreter(program, path_var) {
        add(&interpreter, &mut out);
        if let Some(home) = venv_home(&installation(&interpreter)) {
            add(&home.join("python3"), &mut out);
        }
    }
    for arg in args {
        let p = Path::new(arg);
        if p.is_absolute() && p.exists() {
            out.push(p.to_path_buf());
            if is_executable(p) {
                // A program run by the command (`sh -c '… exec "$0" …' /usr/bin/python3`).
                add(p, &mut out);
            }
        }
    }
    out.retain(|p| p != Path::new("/") && !p.as_os_str().is_empty());
    out.sort();
    out.dedup();
    out
}

/// The installation holding `file` (see [`command_paths`]).
fn installation(file: &Path) -> PathBuf {
    let Some(dir) = file.parent() else {
        return file.to_path_buf();
    };
    if matches!(
        dir.file_name().and_then(|n| n.to_str()),
        Some("bin" | "sbin")
    ) && let Some(prefix) = dir.parent()
        && prefix != Path::new("/")
        && (prefix.join("lib").is_dir() || prefix.join("pyvenv.cfg").is_file())
    {
        return prefix.to_path_buf();
    }
    file.to_path_buf()
}

/// The interpreter named by `program`'s `#!` line (`#!/usr/bin/env NAME` looked up on
/// `path_var`).
fn interpreter(program: &Path, path_var: Option<&str>) -> Option<PathBuf> {
    let mut head = [0u8; 256];
    let n = fs::File::open(program).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = std::str::from_utf8(line.split(|b| *b == b'\n').next()?).ok()?;
    let mut words = line.split_whitespace();
    let first = PathBuf::from(words.next()?);
    if first.file_name().and_then(|n| n.to_str()) != Some("env") {
        return Some(first);
    }
    let name = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
    std::env::split_paths(path_var?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The `home` of a Python venv's `pyvenv.cfg` (the base installation's `bin`).
fn venv_home(prefix: &Path) -> Option<PathBuf> {
    let cfg = fs::read_to_string(prefix.join("pyvenv.cfg")).ok()?;
    cfg.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "home").then(|| PathBuf::from(v.trim()))
    })
}

/// Writes a sandbox's `/etc` overrides into `dir` (created, mode 0755, files 0644, owned by
/// Switchboard): `passwd` and `group`, the host's plus `sandbox`, id `user`, home `home`
/// (programs such as `ssh` refuse to run for a user the user database does not know).
///
/// # Errors
/// Writing fails.
pub fn write_etc(dir: &Path, user: u32, home: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::create_dir_all(dir)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755))?;
    let host = |name: &str| {
        let mut text = fs::read_to_string(Path::new("/etc").join(name)).unwrap_or_default();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text
    };
    let write = |name: &str, text: String| -> io::Result<()> {
        let path = dir.join(name);
        fs::write(&path, text)?;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644))
    };
    let home = home.display();
    write(
        "passwd",
        host("passwd") + &format!("sandbox:x:{user}:{user}:Switchboard sandbox:{home}:/bin/sh\n"),
    )?;
    write("group", host("group") + &format!("sandbox:x:{user}:\n"))
}

/// The git configuration a sandbox starts with in its home (`~/.gitconfig`, its own to change):
/// `safe.directory = *`. The operator's local repositories belong to another user, and git
/// refuses to read a repository of another user otherwise; inside a sandbox every repository
/// of another user is read-only.
pub const GITCONFIG: &str = "[safe]\n\tdirectory = *\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_venv_program_brings_its_venv_and_base_python() {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().join("pyenv/versions/3.12.1");
        fs::create_dir_all(base.join("bin")).unwrap();
        fs::create_dir_all(base.join("lib")).unwrap();
        fs::write(base.join("bin/python3.12"), "").unwrap();
        let venv = root.path().join("venv");
        fs::create_dir_all(venv.join("bin")).unwrap();
        fs::write(
            venv.join("pyvenv.cfg"),
            format!("home = {}\n", base.join("bin").display()),
        )
        .unwrap();
        std::os::unix::fs::symlink(base.join("bin/python3.12"), venv.join("bin/python")).unwrap();
        let program = venv.join("bin/agent-server");
        fs::write(
            &program,
            format!("#!{}\nimport x\n", venv.join("bin/python").display()),
        )
        .unwrap();
        let script = root.path().join("script.py");
        fs::write(&script, "").unwrap();
        let paths = command_paths(
            &program,
            &[script.display().to_string(), "relative".into()],
            None,
        );
        let canonical = |p: &Path| fs::canonicalize(p).unwrap();
        assert!(paths.contains(&venv), "{paths:?}");
        assert!(paths.contains(&canonical(&base)), "{paths:?}");
        assert!(paths.contains(&script), "{paths:?}");
        assert!(!paths.iter().any(|p| p.ends_with("relative")));
    }

    #[test]
    fn paths_under_workspace_are_found() {
        let paths = |v: &[&str]| v.iter().map(PathBuf::from).collect::<Vec<_>>();
        assert_eq!(
            under_workspace(&paths(&["/usr/lib", "/workspace/venv", "/opt"])),
            Some(&PathBuf::from("/workspace/venv"))
        );
        assert!(under_workspace(&paths(&["/workspace"])).is_some());
        assert_eq!(
            under_workspace(&paths(&["/workspaces/x", "/srv/workspace", "/usr"])),
            None
        );
    }

    #[test]
    fn a_bin_directory_without_lib_gives_only_the_file() {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir_all(root.path().join("home/bin")).unwrap();
        let program = root.path().join("home/bin/tool");
        fs::write(&program, "#!/usr/bin/env sh\n").unwrap();
        let paths = command_paths(&program, &[], Some("/usr/bin:/bin"));
        assert!(paths.contains(&program), "{paths:?}");
        assert!(!paths.contains(&root.path().join("home")), "{paths:?}");
    }

    #[test]
    fn hidden_paths_are_covered_only_where_visible_and_the_sandbox_comes_last() {
        let root = tempfile::tempdir().unwrap();
        let tree = fs::canonicalize(root.path()).unwrap();
        let data = tree.join("data");
        fs::create_dir_all(data.join("sandboxes/x")).unwrap();
        let key = tree.join("llm.key");
        fs::write(&key, "k").unwrap();
        let plan = Plan {
            sandbox_dir: data.join("sandboxes/x"),
            workspace: Some(data.join("sandboxes/x/workspace")),
            cwd: data.join("sandboxes/x"),
            command: Vec::new(),
            read_only: vec![tree.clone()],
            etc: None,
            user: None,
            join_groups: Vec::new(),
        };
        let args: Vec<String> = mount_args(&plan, &[data.clone(), key.clone(), "/nope".into()])
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let at = |needle: &[&str]| {
            args.windows(needle.len())
                .position(|w| w == needle)
                .unwrap_or_else(|| panic!("{needle:?} not in {args:?}"))
        };
        let tree = tree.display().to_string();
        let data = data.display().to_string();
        let key = key.display().to_string();
        let sandbox = format!("{data}/sandboxes/x");
        let bound = at(&["--ro-bind", &tree, &tree]);
        let covered = at(&["--tmpfs", &data]);
        let nulled = at(&["--ro-bind", "/dev/null", &key]);
        let own = at(&["--bind", &sandbox, &sandbox]);
        let workspace = at(&["--bind", &format!("{sandbox}/workspace"), "/workspace"]);
        assert!(at(&["--ro-bind", "/usr", "/usr"]) < bound);
        assert!(at(&["--perms", "1777", "--tmpfs", "/tmp"]) < bound);
        assert!(
            bound < covered && covered < own && bound < nulled && own < workspace,
            "{args:?}"
        );
        assert!(!args.iter().any(|a| a == "/nope"));
    }
}
