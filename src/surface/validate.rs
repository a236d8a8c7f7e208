//! The checks the generated argument validators call (`VALIDATORS`, written by
//! codegen/src/validators.rs from each tool's input schema), and [`run`], which
//! runs one and turns what it found into a [`ParseError`].
//!
//! A violation says where (a JSON pointer into `arguments`) and, in JSON
//! Schema's words, which rule the value broke: `/line: "3" is not of type
//! "integer"`, `"path" is a required property`. The texts are the ones the
//! `jsonschema` crate gives for the same schema (the server used it until the
//! validators were generated; tests/schema_agreement.rs keeps the two in
//! agreement, pointers and texts included), except an undeclared field, which
//! is pointed at itself rather than at its object.

use std::fmt::{self, Write};

use serde_json::{Map, Value};

use super::{ParseError, Violation};

/// One generated validator: it appends the violations of `value` to `out`.
pub type Check = fn(&Value, &At<'_>, &mut Vec<Violation>);

/// Run `check` on `instance`; on failure list every violation with its pointer.
pub fn run(check: Check, instance: &Value) -> Result<(), ParseError> {
    let mut violations = Vec::new();
    check(instance, &At::Root, &mut violations);
    if violations.is_empty() {
        Ok(())
    } else {
        Err(ParseError::Invalid(violations))
    }
}

/// Where a value sits in the arguments, kept as a chain of borrowed segments
/// and written out as a JSON pointer only when something is wrong there.
#[derive(Debug, Clone, Copy)]
pub enum At<'a> {
    Root,
    Key(&'a At<'a>, &'a str),
    Index(&'a At<'a>, usize),
}

impl<'a> At<'a> {
    pub fn key(&'a self, name: &'a str) -> At<'a> {
        At::Key(self, name)
    }

    pub fn index(&'a self, i: usize) -> At<'a> {
        At::Index(self, i)
    }

    fn pointer(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            At::Root => {}
            At::Key(parent, name) => {
                parent.write(out);
                out.push('/');
                push_escaped(out, name);
            }
            At::Index(parent, i) => {
                parent.write(out);
                let _ = write!(out, "/{i}");
            }
        }
    }
}

fn push_escaped(out: &mut String, segment: &str) {
    for c in segment.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
}

fn report(out: &mut Vec<Violation>, at: &At<'_>, reason: String) {
    out.push(Violation {
        pointer: at.pointer(),
        reason,
    });
}

/// The JSON types the tables' schemas use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    Object,
    Array,
    String,
    Integer,
    Boolean,
}

impl Type {
    const fn name(self) -> &'static str {
        match self {
            Type::Object => "object",
            Type::Array => "array",
            Type::String => "string",
            Type::Integer => "integer",
            Type::Boolean => "boolean",
        }
    }

    fn admits(self, value: &Value) -> bool {
        match (self, value) {
            (Type::Object, Value::Object(_))
            | (Type::Array, Value::Array(_))
            | (Type::String, Value::String(_))
            | (Type::Boolean, Value::Bool(_)) => true,
            // JSON Schema counts `2.0` as an integer (`surface::lenient`
            // makes serde agree).
            (Type::Integer, Value::Number(n)) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        }
    }
}

/// `type`.
pub fn type_(value: &Value, ty: Type, at: &At<'_>, out: &mut Vec<Violation>) {
    if !ty.admits(value) {
        report(out, at, format!("{value} is not of type \"{}\"", ty.name()));
    }
}

/// `enum` of strings.
pub fn one_of(value: &Value, options: &[&str], at: &At<'_>, out: &mut Vec<Violation>) {
    if value.as_str().is_some_and(|s| options.contains(&s)) {
        return;
    }
    report(
        out,
        at,
        format!("{value} is not one of {}", Options(options)),
    );
}

/// The options of an enum as jsonschema lists them: all of up to three
/// (`"a", "b" or "c"`), else the first two and how many others.
struct Options<'a>(&'a [&'a str]);

impl fmt::Display for Options<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 3;
        let options = self.0;
        let quoted = |s: &str| Value::from(s).to_string();
        if options.len() <= SHOWN {
            for (i, option) in options.iter().enumerate() {
                let sep = match i {
                    0 => "",
                    _ if i == options.len() - 1 => " or ",
                    _ => ", ",
                };
                write!(f, "{sep}{}", quoted(option))?;
            }
        } else {
            for (i, option) in options.iter().take(SHOWN - 1).enumerate() {
                write!(f, "{}{}", if i == 0 { "" } else { ", " }, quoted(option))?;
            }
            write!(f, " or {} other candidates", options.len() - (SHOWN - 1))?;
        }
        Ok(())
    }
}

/// `minimum` (an integer bound; only numbers are bounded).
pub fn minimum(value: &Value, min: i64, at: &At<'_>, out: &mut Vec<Violation>) {
    let Value::Number(n) = value else { return };
    let below = if let Some(u) = n.as_u64() {
        i128::from(u) < i128::from(min)
    } else if let Some(i) = n.as_i64() {
        i < min
    } else {
        n.as_f64().is_some_and(|f| f < min as f64)
    };
    if below {
        report(
            out,
            at,
            format!("{value} is less than the minimum of {min}"),
        );
    }
}

/// `required` (only objects have members).
pub fn required(value: &Value, names: &[&str], at: &At<'_>, out: &mut Vec<Violation>) {
    let Value::Object(members) = value else {
        return;
    };
    for name in names {
        if !members.contains_key(*name) {
            report(
                out,
                at,
                format!("{} is a required property", Value::from(*name)),
            );
        }
    }
}

/// `additionalProperties: false`: each undeclared member is its own violation,
/// pointed at itself rather than at its object.
pub fn closed(value: &Value, declared: &[&str], at: &At<'_>, out: &mut Vec<Violation>) {
    let Value::Object(members) = value else {
        return;
    };
    for name in undeclared(members, declared) {
        report(
            out,
            &at.key(name),
            format!("undeclared field `{name}` (additionalProperties is false)"),
        );
    }
}

fn undeclared<'a>(
    members: &'a Map<String, Value>,
    declared: &'a [&str],
) -> impl Iterator<Item = &'a str> {
    members
        .keys()
        .map(String::as_str)
        .filter(|name| !declared.contains(name))
}
