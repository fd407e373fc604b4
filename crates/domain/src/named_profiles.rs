//! One collection of named profiles (issue 37): the rules a member's LLM profiles, an
//! organization's LLM profiles and agent profiles share. Names are unique in a collection,
//! kept in name order; a new name past the collection's limit is a 409 (judged before
//! anything else of a save); a rename keeps the item (and the active pointer that names it),
//! is a 404 for an unknown name and a 409 for a taken one, and changes nothing for the same
//! name; a delete is idempotent; a 404 is worded with the collection's noun
//! (`Profile 'x' not found`, `Agent profile 'x' not found`). Each resource keeps the shape of
//! its items and what activating one does; the routes of all three are the API's generic
//! handlers (`crates/api/src/named_profiles.rs`).

use crate::error::DomainError;

/// An item of a collection: known by its name.
pub trait Named {
    /// Its name.
    fn name(&self) -> &str;
    /// Gives it the name `name`.
    fn set_name(&mut self, name: &str);
}

/// A collection's words and bound.
#[derive(Clone, Copy, Debug)]
pub struct Collection {
    /// The noun of its messages: `Profile`, `Agent profile`.
    pub noun: &'static str,
    /// At most this many items.
    pub limit: usize,
    /// The 409's message when a new name would pass [`Collection::limit`].
    pub full: fn() -> String,
}

impl Collection {
    /// The 404 of a name no item has: `<noun> '<name>' not found`.
    pub fn not_found(&self, name: &str) -> DomainError {
        DomainError::NotFound(format!("{} '{name}' not found", self.noun))
    }

    /// The item named `name`.
    pub fn find<'a, T: Named>(items: &'a [T], name: &str) -> Option<&'a T> {
        items.iter().find(|p| p.name() == name)
    }

    /// The item named `name`, to be replaced by a save; `None` when the name is new and
    /// there is room for it.
    ///
    /// # Errors
    /// [`DomainError::AlreadyExists`] (409, [`Collection::full`]) for a new name when the
    /// collection holds [`Collection::limit`] items.
    pub fn room_for<'a, T: Named>(
        &self,
        items: &'a [T],
        name: &str,
    ) -> Result<Option<&'a T>, DomainError> {
        let existing = Self::find(items, name);
        if existing.is_none() && items.len() >= self.limit {
            return Err(DomainError::AlreadyExists((self.full)()));
        }
        Ok(existing)
    }

    /// Stores `item`, replacing its namesake, in name order (after [`Collection::room_for`]).
    pub fn put<T: Named>(items: &mut Vec<T>, item: T) {
        items.retain(|p| p.name() != item.name());
        items.push(item);
        items.sort_by(|a, b| a.name().cmp(b.name()));
    }

    /// Renames item `name` to `new_name`, in name order. Returns whether anything changed
    /// (the same name changes nothing).
    ///
    /// # Errors
    /// [`Collection::not_found`] (404) when there is no `name`;
    /// [`DomainError::AlreadyExists`] (409, `<noun> '<new_name>' already exists`) when
    /// another item is `new_name`.
    pub fn rename<T: Named>(
        &self,
        items: &mut [T],
        name: &str,
        new_name: &str,
    ) -> Result<bool, DomainError> {
        if Self::find(items, name).is_none() {
            return Err(self.not_found(name));
        }
        if name == new_name {
            return Ok(false);
        }
        if Self::find(items, new_name).is_some() {
            return Err(DomainError::AlreadyExists(format!(
                "{} '{new_name}' already exists",
                self.noun
            )));
        }
        for p in items.iter_mut().filter(|p| p.name() == name) {
            p.set_name(new_name);
        }
        items.sort_by(|a, b| a.name().cmp(b.name()));
        Ok(true)
    }

    /// Removes item `name` (idempotent). Returns it when there was one.
    pub fn remove<T: Named>(items: &mut Vec<T>, name: &str) -> Option<T> {
        let at = items.iter().position(|p| p.name() == name)?;
        Some(items.remove(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Item(String, u32);

    impl Named for Item {
        fn name(&self) -> &str {
            &self.0
        }
        fn set_name(&mut self, name: &str) {
            name.clone_into(&mut self.0);
        }
    }

    const THINGS: Collection = Collection {
        noun: "Thing",
        limit: 2,
        full: || "full".to_owned(),
    };

    fn item(name: &str, n: u32) -> Item {
        Item(name.to_owned(), n)
    }

    #[test]
    fn a_collection_keeps_names_unique_ordered_and_bounded() {
        let mut items = Vec::new();
        assert_eq!(THINGS.room_for(&items, "b").unwrap(), None);
        Collection::put(&mut items, item("b", 1));
        Collection::put(&mut items, item("a", 1));
        assert_eq!(items, [item("a", 1), item("b", 1)]);
        // A namesake is replaced even when full; a new name is not stored.
        assert_eq!(THINGS.room_for(&items, "b").unwrap(), Some(&item("b", 1)));
        Collection::put(&mut items, item("b", 2));
        assert_eq!(items, [item("a", 1), item("b", 2)]);
        let full = THINGS.room_for(&items, "c").unwrap_err();
        assert!(matches!(full, DomainError::AlreadyExists(m) if m == "full"));
    }

    #[test]
    fn renames_and_removals_follow_the_rules() {
        let mut items = vec![item("a", 1), item("b", 2)];
        assert!(!THINGS.rename(&mut items, "a", "a").unwrap());
        assert!(matches!(
            THINGS.rename(&mut items, "a", "b"),
            Err(DomainError::AlreadyExists(m)) if m == "Thing 'b' already exists"
        ));
        assert!(matches!(
            THINGS.rename(&mut items, "x", "y"),
            Err(DomainError::NotFound(m)) if m == "Thing 'x' not found"
        ));
        assert!(THINGS.rename(&mut items, "a", "c").unwrap());
        assert_eq!(items, [item("b", 2), item("c", 1)]);
        assert_eq!(Collection::remove(&mut items, "c"), Some(item("c", 1)));
        assert_eq!(Collection::remove(&mut items, "c"), None);
        assert_eq!(items, [item("b", 2)]);
    }
}
