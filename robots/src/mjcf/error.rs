//! [`MjcfError`]: what is wrong with an MJCF model, and where.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::urdf::UrdfErrorKind;

/// An invalid, unsupported or unreadable MJCF model: what is wrong ([`kind`](Self::kind)) and
/// where. Displays as `FILE:LINE: ELEMENT: MESSAGE`, like [`UrdfError`](crate::UrdfError).
#[derive(Debug)]
pub struct MjcfError(Box<ErrorInner>);

#[derive(Debug)]
struct ErrorInner {
    file: Option<PathBuf>,
    line: Option<u32>,
    element: Option<String>,
    kind: MjcfErrorKind,
}

impl MjcfError {
    pub(super) fn new(line: Option<u32>, kind: MjcfErrorKind) -> Self {
        Self(Box::new(ErrorInner { file: None, line, element: None, kind }))
    }

    /// Names the enclosing named element (e.g. `body "link1"`), unless one is named already.
    pub(super) fn within(mut self, tag: &str, name: &str) -> Self {
        self.0.element.get_or_insert_with(|| format!("{tag} \"{name}\""));
        self
    }

    /// The file, when read with [`load_mjcf`](super::load_mjcf) or named with [`in_file`](Self::in_file).
    pub fn file(&self) -> Option<&Path> {
        self.0.file.as_deref()
    }

    /// The same error, attributed to `path`.
    pub fn in_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.0.file = Some(path.into());
        self
    }

    /// The 1-based line of the offending attribute or element.
    pub fn line(&self) -> Option<u32> {
        self.0.line
    }

    /// The named element the problem is in, as `body "link1"` or `actuator "shoulder"`.
    pub fn element(&self) -> Option<&str> {
        self.0.element.as_deref()
    }

    /// What is wrong.
    pub fn kind(&self) -> &MjcfErrorKind {
        &self.0.kind
    }
}

impl fmt::Display for MjcfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ErrorInner { file, line, element, kind } = &*self.0;
        match (file, line) {
            (Some(file), Some(line)) => write!(f, "{}:{line}: ", file.display())?,
            (Some(file), None) => write!(f, "{}: ", file.display())?,
            (None, Some(line)) => write!(f, "line {line}: ")?,
            (None, None) => {}
        }
        if let Some(element) = element {
            write!(f, "{element}: ")?;
        }
        write!(f, "{kind}")
    }
}

impl std::error::Error for MjcfError {}

/// What is wrong with an MJCF model (the message of an [`MjcfError`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MjcfErrorKind {
    /// The file could not be read.
    #[error("cannot read the file: {0}")]
    Read(io::Error),
    /// The text is not well-formed XML.
    #[error("XML syntax error: {0}")]
    Xml(roxmltree::Error),
    /// The document element is not `<mujoco>`.
    #[error("the document element is <{0}>, expected <mujoco>")]
    NotMujoco(String),
    /// An element embodia cannot represent.
    #[error("<{element}> is not supported: {reason}")]
    Unsupported {
        /// The element's tag.
        element: String,
        /// Why, and what to do instead.
        reason: String,
    },
    /// An attribute value embodia cannot represent or MJCF does not define.
    #[error("<{tag} {attribute}=\"{value}\">: {allowed}")]
    UnsupportedValue {
        /// The element.
        tag: String,
        /// The attribute.
        attribute: String,
        /// Its text.
        value: String,
        /// What is allowed.
        allowed: String,
    },
    /// A required attribute is absent.
    #[error("<{tag}> has no `{attribute}` attribute")]
    MissingAttribute {
        /// The element.
        tag: String,
        /// The attribute.
        attribute: String,
    },
    /// An attribute is not the expected numbers.
    #[error("<{tag} {attribute}=\"{value}\">: expected {expected}")]
    InvalidNumber {
        /// The element.
        tag: String,
        /// The attribute.
        attribute: String,
        /// Its text.
        value: String,
        /// What was expected, e.g. `3 finite numbers`.
        expected: String,
    },
    /// A number outside its allowed range.
    #[error("<{tag} {attribute}>: {message}, got {}", crate::urdf::readable_number(*.value))]
    OutOfRange {
        /// The element.
        tag: String,
        /// The attribute.
        attribute: String,
        /// The value found.
        value: f64,
        /// The rule, e.g. `must be > 0`.
        message: &'static str,
    },
    /// `class` or `childclass` names no `<default>` class.
    #[error("default class \"{0}\" is not defined")]
    UnknownClass(String),
    /// A reference to a mesh, material, body or joint that does not exist.
    #[error("{what} \"{name}\" is not defined")]
    Undefined {
        /// `mesh`, `material`, `body` or `joint`.
        what: &'static str,
        /// The name.
        name: String,
    },
    /// A name used twice.
    #[error("{what} name \"{name}\" is already used on line {first_line}")]
    DuplicateName {
        /// `body`, `joint`, `mesh`, `material`, `site` or `actuator`.
        what: &'static str,
        /// The name.
        name: String,
        /// Line of the first use.
        first_line: u32,
    },
    /// The model's structure does not fit a `RobotModel` (message says how).
    #[error("{0}")]
    Structure(String),
    /// A mesh that could not be found or read (the same checks as URDF meshes).
    #[error("{0}")]
    Mesh(UrdfErrorKind),
}
