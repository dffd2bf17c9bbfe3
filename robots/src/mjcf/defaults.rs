//! `<default>` classes: attribute values that elements take when they do not set them.
//!
//! The top-level `<default>` is the class `main`; a nested `<default class="c">` starts from a
//! copy of its parent's values and overrides them with its own element children
//! (`<default class="c"><joint damping="1"/></default>` sets `damping` for joints of class
//! `c`). An element takes its class from its `class` attribute, else from the `childclass` of
//! its nearest enclosing body that has one, else `main`.
//!
//! Actuators: MuJoCo keeps one actuator record per class that all actuator shortcuts write
//! to. Here an actuator element looks up its own tag first (`<position>` reads
//! `<default><position kp>`), then `general` and then the other shortcuts, which covers
//! the Menagerie pattern of a class holding `<general … ctrlrange forcerange>` for
//! `<general>`/`<position>` actuators.

use std::collections::HashMap;

use roxmltree::Node;

/// An attribute's text and the byte offset where it starts (for error lines).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Val<'a> {
    pub text: &'a str,
    pub pos: usize,
}

/// The tags whose defaults an actuator element of the given tag also consults, in order.
const ACTUATOR_TAGS: [&str; 4] = ["general", "motor", "position", "velocity"];

/// Resolved classes: for each class, `(element tag, attribute) → value`.
#[derive(Debug, Default)]
pub(crate) struct Defaults<'a> {
    classes: HashMap<&'a str, HashMap<(&'a str, &'a str), Val<'a>>>,
    /// Line-free record of where each class was defined (byte offset), for duplicate errors.
    defined_at: HashMap<&'a str, usize>,
}

/// Something wrong with the `<default>` tree: (byte offset, message).
pub(crate) type DefaultsError = (usize, String);

impl<'a> Defaults<'a> {
    /// Reads the top-level `<default>` elements (`None`: the model has none).
    pub fn read<'i: 'a>(roots: impl Iterator<Item = Node<'a, 'i>>) -> Result<Self, DefaultsError> {
        let mut defaults = Defaults::default();
        defaults.classes.insert("main", HashMap::new());
        for root in roots {
            // A top-level <default> may name itself `main` or nothing.
            match root.attribute("class") {
                None | Some("main") => {}
                Some(other) => {
                    return Err((
                        root.range().start,
                        format!("the top-level <default> must be class \"main\", not \"{other}\""),
                    ));
                }
            }
            defaults.class(root, "main", None)?;
        }
        Ok(defaults)
    }

    fn class<'i: 'a>(
        &mut self,
        node: Node<'a, 'i>,
        name: &'a str,
        parent: Option<&'a str>,
    ) -> Result<(), DefaultsError> {
        if name != "main" {
            if self.defined_at.contains_key(name) {
                return Err((node.range().start, format!("default class \"{name}\" is defined twice")));
            }
            let inherited = parent.and_then(|p| self.classes.get(p)).cloned().unwrap_or_default();
            self.classes.insert(name, inherited);
        }
        self.defined_at.insert(name, node.range().start);
        // The class's own values first, so that nested classes inherit them wherever they are
        // written in the element.
        let (nested, own): (Vec<Node<'a, 'i>>, Vec<Node<'a, 'i>>) =
            node.children().filter(Node::is_element).partition(|c| c.has_tag_name("default"));
        let values = self.classes.get_mut(name).expect("inserted above");
        for child in own {
            let tag = child.tag_name().name();
            for a in child.attributes() {
                values.insert((tag, a.name()), Val { text: a.value(), pos: a.range().start });
            }
        }
        for child in nested {
            let Some(child_name) = child.attribute("class") else {
                return Err((child.range().start, "a nested <default> needs a `class` attribute".to_string()));
            };
            self.class(child, child_name, Some(name))?;
        }
        Ok(())
    }

    pub fn has_class(&self, class: &str) -> bool {
        self.classes.contains_key(class)
    }

    /// The default of `attribute` for an element `tag` of `class`.
    pub fn get(&self, class: &str, tag: &str, attribute: &str) -> Option<Val<'a>> {
        let values = self.classes.get(class)?;
        if let Some(v) = values.get(&(tag, attribute)) {
            return Some(*v);
        }
        if ACTUATOR_TAGS.contains(&tag) {
            return ACTUATOR_TAGS.iter().find_map(|t| values.get(&(*t, attribute)).copied());
        }
        None
    }
}
