//! File roles: the keys of a dataset's `files:` map, declared by each [`Format`] and checked
//! before anything is read.
//!
//! A campaign names its raw files by role (`files: {questions: q.json, corpus: c.json}`). A
//! format declares which roles it takes ([`Format::roles`]), so the check is one function
//! ([`check_roles`]) the campaign runs when it loads, and a reader gets its paths from a
//! [`Files`], which only exists once that check has passed: a reader never handles a missing or
//! unknown role itself.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use super::Format;

/// One role a format reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Role {
    /// The key under `files:` (`questions`, `corpus`, `qrels`, ...).
    pub name: &'static str,
    /// Whether every dataset of the format must give it.
    pub required: bool,
    /// Whether it takes a list of one or more files (else exactly one file).
    pub many: bool,
}

impl Role {
    /// A required role of exactly one file.
    pub const fn one(name: &'static str) -> Role {
        Role {
            name,
            required: true,
            many: false,
        }
    }

    /// An optional role of exactly one file.
    pub const fn optional(name: &'static str) -> Role {
        Role {
            name,
            required: false,
            many: false,
        }
    }

    /// A required role of one or more files.
    pub const fn list(name: &'static str) -> Role {
        Role {
            name,
            required: true,
            many: true,
        }
    }

    /// What is wrong with giving this role `n` files, if anything.
    fn count_problem(&self, n: usize) -> Option<String> {
        match (self.many, n) {
            (false, 1) => None,
            (false, _) => Some(format!("give exactly one file (found {n})")),
            (true, 0) => Some("give at least one file".to_string()),
            (true, _) => None,
        }
    }
}

/// `questions`, `corpus (optional)`, `qrels (one or more files)`: as listed in messages.
impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)?;
        match (self.required, self.many) {
            (true, false) => Ok(()),
            (false, false) => f.write_str(" (optional)"),
            (true, true) => f.write_str(" (one or more files)"),
            (false, true) => f.write_str(" (optional, one or more files)"),
        }
    }
}

/// A dataset's `files:` do not fit its format: names the role and what is wrong. The caller
/// adds the dataset (`datasets.<name>: files.<role>: ...`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("files.{role}: {problem}")]
pub struct RoleError {
    /// The role at fault.
    pub role: String,
    /// What is wrong with it.
    pub problem: String,
}

/// Checks the roles a dataset gives (role name, number of files) against `format`'s: every
/// given role must be one the format declares, with the right number of files, and every
/// required role must be given. Unknown roles are reported first (a typo explains the missing
/// role it was meant to be), then file counts, then missing roles in declaration order.
pub fn check_roles<'a>(
    format: &Format,
    given: impl IntoIterator<Item = (&'a str, usize)>,
) -> Result<(), RoleError> {
    let declared = format.roles();
    let given: Vec<(&str, usize)> = given.into_iter().collect();
    let err = |role: &str, problem: String| RoleError {
        role: role.to_string(),
        problem,
    };
    for &(name, _) in &given {
        if !declared.iter().any(|r| r.name == name) {
            let takes = if declared.is_empty() {
                "no files".to_string()
            } else {
                declared
                    .iter()
                    .map(Role::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(err(
                name,
                format!("unknown role (format {} takes: {takes})", format.name()),
            ));
        }
    }
    for &(name, n) in &given {
        let role = declared.iter().find(|r| r.name == name).expect("checked");
        if let Some(problem) = role.count_problem(n) {
            return Err(err(name, problem));
        }
    }
    for role in declared.iter().filter(|r| r.required) {
        if !given.iter().any(|&(name, _)| name == role.name) {
            return Err(err(
                role.name,
                format!("required by format {}", format.name()),
            ));
        }
    }
    Ok(())
}

/// A dataset's raw file paths by role, checked against its format by [`Files::new`] (the only
/// way to make one), so a reader's lookups cannot fail on input. Asking for a role the format
/// does not declare, or in the wrong arity, is a bug in the reader and panics.
#[derive(Debug, Clone)]
pub struct Files {
    roles: &'static [Role],
    by_role: BTreeMap<String, Vec<PathBuf>>,
}

impl Files {
    /// The paths of a dataset of `format`, by role ([`check_roles`] first).
    pub fn new(
        format: &Format,
        by_role: BTreeMap<String, Vec<PathBuf>>,
    ) -> Result<Files, RoleError> {
        check_roles(format, by_role.iter().map(|(r, p)| (r.as_str(), p.len())))?;
        Ok(Files {
            roles: format.roles(),
            by_role,
        })
    }

    fn declared(&self, name: &str, many: bool) -> &Role {
        let role = self
            .roles
            .iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("the format declares no role `{name}`"));
        assert_eq!(role.many, many, "role `{name}`: wrong arity");
        role
    }

    /// The file of the required single-file role `name`.
    pub fn one(&self, name: &str) -> &Path {
        let role = self.declared(name, false);
        assert!(role.required, "role `{name}` is optional: use `optional`");
        &self.by_role[name][0]
    }

    /// The file of the optional single-file role `name`, if given.
    pub fn optional(&self, name: &str) -> Option<&Path> {
        self.declared(name, false);
        self.by_role.get(name).map(|p| p[0].as_path())
    }

    /// Every file given, role by role (for messages about the dataset as a whole).
    pub fn paths(&self) -> Vec<String> {
        self.by_role
            .values()
            .flatten()
            .map(|p| p.display().to_string())
            .collect()
    }

    /// The files of the list role `name`, in the order given (empty when optional and absent).
    pub fn list(&self, name: &str) -> &[PathBuf] {
        self.declared(name, true);
        self.by_role.get(name).map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RawDataset;
    use crate::Result;

    const TEST: Format = Format {
        name: "test",
        roles: &[
            Role::one("questions"),
            Role::optional("corpus"),
            Role::list("qrels"),
        ],
        read: |_| Ok(RawDataset::default()),
        protocol: crate::protocol::Protocol::TEXT,
    };

    fn check(given: &[(&str, usize)]) -> Result<(), String> {
        check_roles(&TEST, given.iter().copied()).map_err(|e| e.to_string())
    }

    #[test]
    fn roles_are_checked() {
        check(&[("questions", 1), ("qrels", 3)]).unwrap();
        check(&[("questions", 1), ("corpus", 1), ("qrels", 1)]).unwrap();
        assert_eq!(
            check(&[("questions", 1), ("qrels", 1), ("corpuz", 1)]).unwrap_err(),
            "files.corpuz: unknown role (format test takes: questions, corpus (optional), qrels (one or more files))"
        );
        assert_eq!(
            check(&[("qrels", 1)]).unwrap_err(),
            "files.questions: required by format test"
        );
        assert_eq!(
            check(&[]).unwrap_err(),
            "files.questions: required by format test"
        );
        assert_eq!(
            check(&[("questions", 2), ("qrels", 1)]).unwrap_err(),
            "files.questions: give exactly one file (found 2)"
        );
        assert_eq!(
            check(&[("questions", 1), ("qrels", 0)]).unwrap_err(),
            "files.qrels: give at least one file"
        );
        // an unknown role is reported before the missing one it was probably meant to be
        assert!(check(&[("question", 1), ("qrels", 1)])
            .unwrap_err()
            .starts_with("files.question: unknown role"));
    }

    #[test]
    fn files_give_checked_paths() {
        let by_role = |pairs: &[(&str, &[&str])]| {
            pairs
                .iter()
                .map(|(r, ps)| (r.to_string(), ps.iter().map(PathBuf::from).collect()))
                .collect::<BTreeMap<_, _>>()
        };
        let f = Files::new(
            &TEST,
            by_role(&[("questions", &["q.json"]), ("qrels", &["a.tsv", "b.tsv"])]),
        )
        .unwrap();
        assert_eq!(f.one("questions"), Path::new("q.json"));
        assert_eq!(f.optional("corpus"), None);
        assert_eq!(
            f.list("qrels"),
            [PathBuf::from("a.tsv"), PathBuf::from("b.tsv")]
        );
        let e = Files::new(&TEST, by_role(&[("qrels", &["a.tsv"])])).unwrap_err();
        assert_eq!(e.role, "questions");
    }

    #[test]
    #[should_panic(expected = "declares no role `corpus_file`")]
    fn asking_for_an_undeclared_role_is_a_bug() {
        let f = Files::new(
            &TEST,
            [
                ("questions".to_string(), vec![PathBuf::from("q")]),
                ("qrels".to_string(), vec![PathBuf::from("r")]),
            ]
            .into_iter()
            .collect(),
        )
        .unwrap();
        f.optional("corpus_file");
    }
}
