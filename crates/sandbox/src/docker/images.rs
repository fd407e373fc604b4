//! Images: whether one is on the Docker host, and pulling it. Never on the request path
//! (issue 12: OpenHands pulls a missing image on first use with the request blocked, reference
//! app-server §4); for `switchboard specs pull` and a background pull when Switchboard starts.

use bollard::query_parameters::CreateImageOptionsBuilder;
use futures_util::StreamExt;

use crate::docker::DockerRuntime;
use crate::docker::error::{DockerError, is_not_found, words};

/// The reference as pulled: `image` itself when it names a tag or a digest, else with
/// `:latest` added (as `docker pull` does; without a tag the engine would pull every tag).
/// `ghcr.io/openhands/agent-server:1.58.2-python` stays; `localhost:5000/x` becomes
/// `localhost:5000/x:latest`.
pub fn normalize_reference(image: &str) -> String {
    let last = image.rsplit('/').next().unwrap_or(image);
    if image.contains('@') || last.contains(':') {
        image.to_owned()
    } else {
        format!("{image}:latest")
    }
}

impl DockerRuntime {
    /// Whether `image` is on the Docker host.
    ///
    /// # Errors
    /// [`DockerError::Api`] when the daemon fails to answer.
    pub fn image_present(&self, image: &str) -> Result<bool, DockerError> {
        self.block_on(async {
            match self.docker.inspect_image(image).await {
                Ok(_) => Ok(true),
                Err(e) if is_not_found(&e) => Ok(false),
                Err(e) => Err(DockerError::Api(format!(
                    "inspecting image {image}: {}",
                    words(&e)
                ))),
            }
        })
    }

    /// Pulls `image` ([`normalize_reference`]) from its registry, anonymously, and returns
    /// once the daemon has it. Blocks for as long as the download takes.
    ///
    /// # Errors
    /// [`DockerError::Pull`] with the registry's or the daemon's words (unknown image,
    /// registry unreachable, authentication required).
    pub fn pull(&self, image: &str) -> Result<(), DockerError> {
        let reference = normalize_reference(image);
        let options = CreateImageOptionsBuilder::default()
            .from_image(&reference)
            .build();
        self.block_on(async {
            let mut progress = self.docker.create_image(Some(options), None, None);
            while let Some(step) = progress.next().await {
                step.map_err(|e| DockerError::Pull {
                    image: reference.clone(),
                    detail: words(&e),
                })?;
            }
            Ok(())
        })
    }

    /// The images of `images` that are not on the Docker host, in order, without repeats:
    /// what a background pull at start fetches.
    ///
    /// # Errors
    /// [`DockerError::Api`] when the daemon fails to answer.
    pub fn missing_images<'a>(
        &self,
        images: impl IntoIterator<Item = &'a str>,
    ) -> Result<Vec<String>, DockerError> {
        let mut missing: Vec<String> = Vec::new();
        for image in images {
            if !missing.iter().any(|m| m == image) && !self.image_present(image)? {
                missing.push(image.to_owned());
            }
        }
        Ok(missing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_without_a_tag_get_latest() {
        let cases = [
            ("alpine", "alpine:latest"),
            ("alpine:3", "alpine:3"),
            (
                "ghcr.io/openhands/agent-server:1.58.2-python",
                "ghcr.io/openhands/agent-server:1.58.2-python",
            ),
            ("localhost:5000/x", "localhost:5000/x:latest"),
            ("localhost:5000/x:1", "localhost:5000/x:1"),
            ("x@sha256:abcd", "x@sha256:abcd"),
        ];
        for (image, expected) in cases {
            assert_eq!(normalize_reference(image), expected);
        }
    }
}
