//! Budgets at the door as overlay options (`plan::door`): a tool result over its tool's
//! cap becomes a head/tail preview with its handle, media beyond the newest N or over the
//! request's byte ceiling a placeholder. Off unless `door` is true or one of the numbers
//! is given; `door: false` turns it off whatever else is given.

use super::error::OverlayError;
use super::overlay::OptionsOverlay;
use crate::plan::DoorRules;

impl OptionsOverlay {
    /// The door's rules, or `None` when it is off.
    ///
    /// # Errors
    /// [`OverlayError::Door`] for numbers that make no door (a cap of 0, a preview not
    /// shorter than the smallest cap).
    pub fn door_rules(&self) -> Result<Option<DoorRules>, OverlayError> {
        let d = self;
        let tuned = d.door_tool_cap.is_some()
            || d.door_tool_cap_for.as_ref().is_some_and(|caps| !caps.is_empty())
            || d.door_preview_chars.is_some()
            || d.door_keep_media.is_some()
            || d.door_max_request_bytes.is_some();
        if !d.door.unwrap_or(tuned) {
            return Ok(None);
        }
        let mut rules = DoorRules::default();
        if let Some(v) = d.door_tool_cap {
            rules = rules.with_default_cap(v);
        }
        for (name, tokens) in d.door_tool_cap_for.iter().flatten() {
            rules = rules.with_tool_cap(name.clone(), *tokens);
        }
        if let Some(v) = d.door_preview_chars {
            rules = rules.with_preview_chars(v);
        }
        if let Some(v) = d.door_keep_media {
            rules = rules.with_keep_media(v);
        }
        if let Some(v) = d.door_max_request_bytes {
            rules = rules.with_max_request_bytes(v);
        }
        match rules.problem() {
            Some(problem) => Err(OverlayError::Door(problem)),
            None => Ok(Some(rules)),
        }
    }
}
