//! The sandbox specs (reference app-server §4): the operator's, in order, searched and read
//! by id; none when this server runs no sandboxes.

use crate::batch::Batch;
use crate::cursor::Keyset;
use crate::error::DomainError;
use crate::sandboxes::records::{Page, SpecCursor};
use crate::sandboxes::specs::SandboxSpec;
use crate::services::sandboxes::SandboxService;

impl SandboxService {
    /// The configured sandbox specs, in order, from the cursor's position (reference
    /// app-server §4); none when this server runs no sandboxes.
    pub fn search_specs(&self, after: Option<SpecCursor>, limit: u32) -> Page<SandboxSpec> {
        let specs = self
            .managed
            .as_ref()
            .map_or(&[][..], |m| &m.m.settings.specs[..]);
        let from = after.map_or(0, |c| c.next).min(specs.len());
        let to = (from + limit as usize).min(specs.len());
        Page {
            items: specs[from..to].to_vec(),
            next_page_id: (to < specs.len()).then(|| SpecCursor { next: to }.encode()),
        }
    }

    /// The specs with these ids, in request order, `None` for unknown ones.
    ///
    /// # Errors
    /// [`DomainError::TooManyIds`] over [`Batch::SANDBOX_SPECS`]' most.
    pub fn get_specs(&self, ids: &[String]) -> Result<Vec<Option<SandboxSpec>>, DomainError> {
        Batch::SANDBOX_SPECS.check(ids.len())?;
        Ok(ids
            .iter()
            .map(|id| {
                self.managed
                    .as_ref()
                    .and_then(|m| m.m.settings.spec(id).cloned())
            })
            .collect())
    }
}
