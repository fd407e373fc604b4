//! A browser client's built files served from Switchboard's own origin (issue 25;
//! `switchboard serve --web-client DIR`, e.g. the `build/` directory of OpenHands' Agent Canvas
//! package), so the client and the API it calls share one origin and need no CORS.
//!
//! After every route and the sandbox proxy, a `GET` or `HEAD` of a path outside `/api/` and
//! `/sockets/` is answered from `DIR`: the file at that path when there is one (confined to
//! `DIR`: no `..`, no symbolic link out of it), else, for a path whose last segment has no `.`
//! (a client-side route such as `/conversations/{id}`), `DIR/index.html`; anything else keeps
//! the API's 404. Files under `assets/` carry hashed names and are cached for a year; the
//! others are revalidated (`no-cache`).

use actix_web::http::{Method, header};
use actix_web::{HttpRequest, HttpResponse, web};
use std::path::{Component, Path, PathBuf};

/// The directory of a browser client's built files.
#[derive(Clone, Debug)]
pub struct WebClient {
    root: PathBuf,
}

impl WebClient {
    /// The client built into the directory `dir` as written (`--web-client DIR`).
    ///
    /// # Errors
    /// As [`WebClient::new`].
    pub fn parse(dir: &str) -> Result<WebClient, String> {
        WebClient::new(Path::new(dir))
    }

    /// The client built into `dir`, which must hold an `index.html`.
    ///
    /// # Errors
    /// A message when `dir` cannot be resolved or has no `index.html`.
    pub fn new(dir: &Path) -> Result<WebClient, String> {
        let root = dir
            .canonicalize()
            .map_err(|e| format!("web client directory {}: {e}", dir.display()))?;
        if !root.join("index.html").is_file() {
            return Err(format!(
                "web client directory {} has no index.html",
                root.display()
            ));
        }
        Ok(WebClient { root })
    }

    /// The directory served (resolved).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file that answers `path` (a request path), if any: the file itself, or
    /// `index.html` for a client-side route.
    fn resolve(&self, path: &str) -> Option<PathBuf> {
        if path.starts_with("/api/") || path == "/api" || path.starts_with("/sockets/") {
            return None;
        }
        let relative = path.trim_start_matches('/');
        let mut candidate = self.root.clone();
        for part in Path::new(relative).components() {
            match part {
                Component::Normal(p) => candidate.push(p),
                _ => return None,
            }
        }
        if relative.is_empty() {
            return Some(self.root.join("index.html"));
        }
        match candidate.canonicalize() {
            Ok(real) if real.starts_with(&self.root) && real.is_file() => Some(real),
            Ok(real) if real.starts_with(&self.root) && real.is_dir() => {
                Some(self.root.join("index.html"))
            }
            _ => {
                let last = relative.rsplit('/').next().unwrap_or_default();
                (!last.contains('.')).then(|| self.root.join("index.html"))
            }
        }
    }

    /// The answer to `req` from the client's files, or `None` when they do not answer it.
    pub async fn answer(&self, req: &HttpRequest) -> Option<HttpResponse> {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            return None;
        }
        let file = self.resolve(req.path())?;
        let immutable = file.starts_with(self.root.join("assets"));
        let content_type = content_type(&file);
        let body = web::block(move || std::fs::read(&file)).await.ok()?.ok()?;
        let mut answer = HttpResponse::Ok();
        answer.insert_header((header::CONTENT_TYPE, content_type));
        answer.insert_header((
            header::CACHE_CONTROL,
            if immutable {
                "public, max-age=31536000, immutable"
            } else {
                "no-cache"
            },
        ));
        answer.insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
        Some(if req.method() == Method::HEAD {
            answer.finish()
        } else {
            answer.body(body)
        })
    }
}

/// The media type of a built client's file, by extension.
fn content_type(path: &Path) -> &'static str {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
    {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "webmanifest" => "application/manifest+json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "ttf" => "font/ttf",
        "txt" => "text/plain; charset=utf-8",
        "xml" => "application/xml",
        "wav" => "audio/wav",
        "mp3" => "audio/mpeg",
        "wasm" => "application/wasm",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_inside_the_directory_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("index.html"), "<html>").unwrap();
        std::fs::create_dir(dir.path().join("assets")).unwrap();
        std::fs::write(dir.path().join("assets/app-1.js"), "x").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "s").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            dir.path().join("link.txt"),
        )
        .unwrap();
        let client = WebClient::new(dir.path()).unwrap();
        let root = dir.path().canonicalize().unwrap();
        let index = root.join("index.html");
        assert_eq!(client.resolve("/"), Some(index.clone()));
        assert_eq!(
            client.resolve("/assets/app-1.js"),
            Some(root.join("assets/app-1.js"))
        );
        assert_eq!(client.resolve("/conversations/abc"), Some(index.clone()));
        assert_eq!(client.resolve("/settings/llm"), Some(index));
        assert_eq!(client.resolve("/assets/missing.js"), None);
        assert_eq!(client.resolve("/../etc/passwd"), None);
        assert_eq!(client.resolve("/link.txt"), None);
        assert_eq!(client.resolve("/api/v1/unknown"), None);
        assert_eq!(client.resolve("/sockets/events/x"), None);
        assert!(WebClient::new(outside.path()).is_err(), "no index.html");
    }
}
