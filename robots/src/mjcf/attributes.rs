//! Attribute access for the parser: values with their `<default>` class fallback, numbers,
//! keywords and MuJoCo's `*limited` flags, and errors located at the offending attribute.

use roxmltree::Node;

use super::defaults::Val;
use super::{MjcfError, MjcfErrorKind, Parser, Result, Skipped};

impl<'a, 'i> Parser<'a, 'i> {
    // ---- attribute access (with <default> classes) ---------------------------------------

    /// The class an element takes its defaults from (see [`defaults`]).
    pub(super) fn class_of(&self, node: Node<'a, 'i>) -> Result<&'a str> {
        let explicit = node.attribute_node("class").map(|a| (a.value(), a.range().start));
        let inherited = || {
            node.ancestors()
                .skip(1)
                .filter(|n| n.has_tag_name("body"))
                .find_map(|n| n.attribute_node("childclass").map(|a| (a.value(), a.range().start)))
        };
        let Some((class, pos)) = explicit.or_else(inherited) else { return Ok("main") };
        if self.defaults.has_class(class) {
            Ok(class)
        } else {
            Err(self.error_at(pos, MjcfErrorKind::UnknownClass(class.to_string())))
        }
    }

    /// Attribute `name` of `node`, or its class default.
    pub(super) fn get(&self, node: Node<'a, 'i>, name: &str) -> Result<Option<Val<'a>>> {
        if let Some(a) = node.attribute_node(name) {
            return Ok(Some(Val { text: a.value(), pos: a.range().start }));
        }
        Ok(self.defaults.get(self.class_of(node)?, node.tag_name().name(), name))
    }

    pub(super) fn attr(&self, node: Node<'a, 'i>, name: &str) -> Result<&'a str> {
        match self.get(node, name)? {
            Some(v) => Ok(v.text),
            None => Err(self.missing(node, name)),
        }
    }

    pub(super) fn missing(&self, node: Node, name: &str) -> MjcfError {
        let kind = MjcfErrorKind::MissingAttribute { tag: node.tag_name().name().into(), attribute: name.into() };
        self.error(node, kind)
    }

    /// Attribute `name` as whitespace-separated finite numbers, `None` when absent.
    pub(super) fn number_list(&self, node: Node<'a, 'i>, name: &str) -> Result<Option<Vec<f64>>> {
        self.number_list_of(node, name, None)
    }

    /// [`number_list`](Self::number_list) holding exactly `count` numbers when `count` is set.
    pub(super) fn number_list_of(
        &self,
        node: Node<'a, 'i>,
        name: &str,
        count: Option<usize>,
    ) -> Result<Option<Vec<f64>>> {
        let Some(v) = self.get(node, name)? else { return Ok(None) };
        let parsed: Option<Vec<f64>> = v.text.split_whitespace().map(|t| t.parse().ok()).collect();
        match parsed {
            Some(list)
                if list.iter().all(|x: &f64| x.is_finite())
                    && !list.is_empty()
                    && count.is_none_or(|n| n == list.len()) =>
            {
                Ok(Some(list))
            }
            _ => {
                let expected = match count {
                    Some(1) => "a finite number".to_string(),
                    Some(n) => format!("{n} finite numbers"),
                    None => "finite numbers".to_string(),
                };
                Err(self.invalid_number(node, name, v, expected))
            }
        }
    }

    pub(super) fn invalid_number(&self, node: Node, name: &str, v: Val, expected: String) -> MjcfError {
        let kind = MjcfErrorKind::InvalidNumber {
            tag: node.tag_name().name().into(),
            attribute: name.into(),
            value: v.text.into(),
            expected,
        };
        self.error_at(v.pos, kind)
    }

    /// Attribute `name` as exactly `N` finite numbers, `None` when absent.
    pub(super) fn numbers<const N: usize>(&self, node: Node<'a, 'i>, name: &str) -> Result<Option<[f64; N]>> {
        let Some(list) = self.number_list_of(node, name, Some(N))? else { return Ok(None) };
        let mut out = [0.0; N];
        out.copy_from_slice(&list);
        Ok(Some(out))
    }

    pub(super) fn number(&self, node: Node<'a, 'i>, name: &str) -> Result<Option<f64>> {
        Ok(self.numbers::<1>(node, name)?.map(|[x]| x))
    }

    /// Attribute `name` as a number that must satisfy `ok` (`rule` says how), default `default`.
    pub(super) fn checked(
        &self,
        node: Node<'a, 'i>,
        name: &str,
        default: f64,
        ok: fn(f64) -> bool,
        rule: &'static str,
    ) -> Result<f64> {
        let value = self.number(node, name)?.unwrap_or(default);
        if ok(value) {
            Ok(value)
        } else {
            let kind = MjcfErrorKind::OutOfRange {
                tag: node.tag_name().name().into(),
                attribute: name.into(),
                value,
                message: rule,
            };
            let pos = self.get(node, name)?.map_or(node.range().start, |v| v.pos);
            Err(self.error_at(pos, kind))
        }
    }

    pub(super) fn non_negative(&self, node: Node<'a, 'i>, name: &str, default: f64) -> Result<f64> {
        self.checked(node, name, default, |x| x >= 0.0, "must be ≥ 0")
    }

    /// `true`/`false` attribute, `None` when absent.
    pub(super) fn boolean(&self, node: Node<'a, 'i>, name: &str) -> Result<Option<bool>> {
        self.keyword(node, name, &[("true", true), ("false", false)])
    }

    /// An attribute that must be one of `choices`, `None` when absent.
    pub(super) fn keyword<T: Copy>(&self, node: Node<'a, 'i>, name: &str, choices: &[(&str, T)]) -> Result<Option<T>> {
        let Some(v) = self.get(node, name)? else { return Ok(None) };
        match choices.iter().find(|(k, _)| *k == v.text) {
            Some(&(_, value)) => Ok(Some(value)),
            None => {
                let allowed = choices.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ");
                Err(self.error_at(
                    v.pos,
                    MjcfErrorKind::UnsupportedValue {
                        tag: node.tag_name().name().into(),
                        attribute: name.into(),
                        value: v.text.into(),
                        allowed: format!("expected one of {allowed}"),
                    },
                ))
            }
        }
    }

    /// MuJoCo's `*limited` flags: `true`, `false`, or `auto` (limited when the range is given
    /// and the compiler's `autolimits` is on).
    pub(super) fn limited(&self, node: Node<'a, 'i>, flag: &str, range: &str) -> Result<bool> {
        #[derive(Clone, Copy)]
        enum L {
            Yes,
            No,
            Auto,
        }
        let flag_value = self.keyword(node, flag, &[("true", L::Yes), ("false", L::No), ("auto", L::Auto)])?;
        Ok(match flag_value.unwrap_or(L::Auto) {
            L::Yes => true,
            L::No => false,
            L::Auto => self.compiler.autolimits && self.get(node, range)?.is_some(),
        })
    }

    /// `rgba` as four numbers in [0, 1], `None` when absent.
    pub(super) fn rgba(&self, node: Node<'a, 'i>) -> Result<Option<[f32; 4]>> {
        let Some(rgba) = self.numbers::<4>(node, "rgba")? else { return Ok(None) };
        if rgba.iter().any(|c| !(0.0..=1.0).contains(c)) {
            let v = self.get(node, "rgba")?.unwrap_or(Val { text: "", pos: node.range().start });
            return Err(self.invalid_number(node, "rgba", v, "4 numbers in [0, 1]".into()));
        }
        Ok(Some(rgba.map(|c| c as f32)))
    }

    // ---- errors ---------------------------------------------------------------------------

    pub(super) fn line_at(&self, pos: usize) -> u32 {
        self.doc.text_pos_at(pos).row
    }

    pub(super) fn line(&self, node: Node) -> u32 {
        self.line_at(node.range().start)
    }

    pub(super) fn error(&self, node: Node, kind: MjcfErrorKind) -> MjcfError {
        MjcfError::new(Some(self.line(node)), kind)
    }

    pub(super) fn error_at(&self, pos: usize, kind: MjcfErrorKind) -> MjcfError {
        MjcfError::new(Some(self.line_at(pos)), kind)
    }

    pub(super) fn error_at_attr(&self, node: Node, name: &str, kind: MjcfErrorKind) -> MjcfError {
        self.error_at(node.attribute_node(name).map_or(node.range().start, |a| a.range().start), kind)
    }

    pub(super) fn unsupported(&self, node: Node, reason: &str) -> MjcfError {
        let kind = MjcfErrorKind::Unsupported { element: node.tag_name().name().into(), reason: reason.into() };
        self.error(node, kind)
    }

    pub(super) fn duplicate(&self, node: Node, what: &'static str, name: &str, first: Node) -> MjcfError {
        let kind = MjcfErrorKind::DuplicateName { what, name: name.into(), first_line: self.line(first) };
        self.error(node, kind)
    }

    pub(super) fn skip(&mut self, node: Node, reason: &'static str) {
        let tag = node.tag_name().name();
        let element = match node.attribute("name") {
            Some(name) => format!("<{tag} name=\"{name}\">"),
            None => format!("<{tag}>"),
        };
        self.skipped.push(Skipped { element, line: self.line(node), reason });
    }
}
