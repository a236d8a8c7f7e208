//! The module graph of `src/`: no import cycle anywhere, and no arrow that
//! runs up the layers (ARCHITECTURE.md: transport → protocol → surface → ops
//! → broker → lsp). Each file is a node; an edge is any path a file names
//! that leads into another file: `use` items (groups, globs and renames
//! expanded), and paths in code and in macro bodies (`crate::…`, `super::…`,
//! `self::…`, or a child module's name). Test code (`#[cfg(test)]` items) is
//! left out: a test may reach anywhere.
//!
//! The source is read as Rust tokens (proc-macro2), so comments and string
//! literals never count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use proc_macro2::{Delimiter, TokenStream, TokenTree};

type ModPath = Vec<String>;

/// Every module file of the library crate, by module path (`lib.rs` is `[]`).
fn module_files(src: &Path) -> BTreeMap<ModPath, PathBuf> {
    let mut files = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap().with_extension("");
            let mut parts: ModPath = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            // The binary is a crate of its own: `crate::` there is not the library.
            if parts == ["main"] || parts.first().map(String::as_str) == Some("bin") {
                continue;
            }
            if parts == ["lib"] {
                parts.clear();
            } else if parts.last().map(String::as_str) == Some("mod") {
                parts.pop();
            }
            files.insert(parts, path);
        }
    }
    files
}

/// What one file names.
struct Scan<'a> {
    files: &'a BTreeMap<ModPath, PathBuf>,
    /// The file's own module.
    file_module: ModPath,
    /// Modules this file reaches, with one path that reaches each.
    reached: BTreeMap<ModPath, String>,
}

fn is_punct(t: Option<&TokenTree>, c: char) -> bool {
    matches!(t, Some(TokenTree::Punct(p)) if p.as_char() == c)
}

fn is_path_sep(tokens: &[TokenTree], i: usize) -> bool {
    is_punct(tokens.get(i), ':') && is_punct(tokens.get(i + 1), ':')
}

fn ident(t: Option<&TokenTree>) -> Option<String> {
    match t {
        Some(TokenTree::Ident(i)) => Some(i.to_string()),
        _ => None,
    }
}

/// Whether an attribute group `[…]` is `cfg(test)`.
fn is_cfg_test(group: &TokenStream) -> bool {
    let text = group.to_string().replace(' ', "");
    text == "cfg(test)"
}

/// The paths of a `use` tree (the tokens between `use` and `;`).
fn use_paths(tokens: &[TokenTree], prefix: &[String], out: &mut Vec<ModPath>) {
    let mut path: ModPath = prefix.to_vec();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Ident(id) if id == "as" => {
                // A rename: the path so far is what is used.
                i += 2;
                continue;
            }
            TokenTree::Ident(id) => path.push(id.to_string()),
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => {
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                for part in inner.split(|t| is_punct(Some(t), ',')) {
                    use_paths(part, &path, out);
                }
                return;
            }
            TokenTree::Punct(p) if p.as_char() == '*' => break,
            TokenTree::Punct(p) if p.as_char() == ',' => {
                out.push(std::mem::replace(&mut path, prefix.to_vec()));
            }
            _ => {}
        }
        i += 1;
    }
    if path.len() > prefix.len() || !prefix.is_empty() {
        out.push(path);
    }
}

impl Scan<'_> {
    /// The file a path named in `module` leads into, if it names a module of
    /// this crate.
    fn resolve(&self, module: &[String], path: &[String]) -> Option<ModPath> {
        let first = path.first()?;
        let (mut base, rest): (ModPath, &[String]) = match first.as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (module.to_vec(), &path[1..]),
            "super" => {
                let mut base = module.to_vec();
                let mut rest = path;
                while rest.first().map(String::as_str) == Some("super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
                (base, rest)
            }
            _ => {
                let mut child = module.to_vec();
                child.push(first.clone());
                if !self.files.contains_key(&child) {
                    return None;
                }
                (module.to_vec(), path)
            }
        };
        for segment in rest {
            let mut next = base.clone();
            next.push(segment.clone());
            if self.files.contains_key(&next) {
                base = next;
            } else {
                break;
            }
        }
        // The nearest file module at or above `base` (inline modules live in
        // their file).
        while !self.files.contains_key(&base) {
            base.pop()?;
        }
        Some(base)
    }

    fn note(&mut self, module: &[String], path: &[String]) {
        if let Some(target) = self.resolve(module, path) {
            if !target.starts_with(&self.file_module) {
                self.reached
                    .entry(target)
                    .or_insert_with(|| path.join("::"));
            }
        }
    }

    fn scan(&mut self, stream: TokenStream, module: &[String]) {
        let tokens: Vec<TokenTree> = stream.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            // `#[cfg(test)]`: skip the item it is on.
            if is_punct(tokens.get(i), '#') {
                if let Some(TokenTree::Group(g)) = tokens.get(i + 1) {
                    if g.delimiter() == Delimiter::Bracket && is_cfg_test(&g.stream()) {
                        i += 2;
                        while i < tokens.len() {
                            match &tokens[i] {
                                TokenTree::Punct(p) if p.as_char() == ';' => break,
                                TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => break,
                                _ => i += 1,
                            }
                        }
                        i += 1;
                        continue;
                    }
                }
            }
            match &tokens[i] {
                TokenTree::Ident(id) if id == "mod" => {
                    if let (Some(name), Some(TokenTree::Group(body))) =
                        (ident(tokens.get(i + 1)), tokens.get(i + 2))
                    {
                        if body.delimiter() == Delimiter::Brace {
                            let mut inner = module.to_vec();
                            inner.push(name);
                            self.scan(body.stream(), &inner);
                            i += 3;
                            continue;
                        }
                    }
                    i += 1;
                }
                TokenTree::Ident(id) if id == "use" => {
                    let end = (i + 1..tokens.len())
                        .find(|&j| is_punct(tokens.get(j), ';'))
                        .unwrap_or(tokens.len());
                    let mut paths = Vec::new();
                    use_paths(&tokens[i + 1..end], &[], &mut paths);
                    for path in paths {
                        self.note(module, &path);
                    }
                    i = end + 1;
                }
                TokenTree::Ident(id) if is_path_sep(&tokens, i + 1) => {
                    // `a::b::c`: the longest run of `::`-separated names.
                    let mut path = vec![id.to_string()];
                    let mut j = i + 1;
                    while is_path_sep(&tokens, j) {
                        match ident(tokens.get(j + 2)) {
                            Some(next) => path.push(next),
                            None => break,
                        }
                        j += 3;
                    }
                    // `$crate::…` in a macro is the macro's crate, named at its use.
                    let dollar = i > 0 && is_punct(tokens.get(i - 1), '$');
                    if !dollar {
                        self.note(module, &path);
                    }
                    i = j;
                }
                TokenTree::Group(g) => {
                    self.scan(g.stream(), module);
                    i += 1;
                }
                _ => i += 1,
            }
        }
    }
}

/// The file graph: every module file and the files it reaches.
fn graph() -> (
    BTreeMap<ModPath, PathBuf>,
    BTreeMap<ModPath, BTreeMap<ModPath, String>>,
) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = module_files(&src);
    let mut edges = BTreeMap::new();
    for (module, file) in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let stream = TokenStream::from_str(&text)
            .unwrap_or_else(|e| panic!("{} does not lex: {e:?}", file.display()));
        let mut scan = Scan {
            files: &files,
            file_module: module.clone(),
            reached: BTreeMap::new(),
        };
        scan.scan(stream, module);
        edges.insert(module.clone(), scan.reached);
    }
    (files, edges)
}

fn name(module: &ModPath) -> String {
    if module.is_empty() {
        "crate".into()
    } else {
        module.join("::")
    }
}

/// Strongly connected components with more than one module (Tarjan).
fn cycles(edges: &BTreeMap<ModPath, BTreeMap<ModPath, String>>) -> Vec<Vec<ModPath>> {
    struct Tarjan<'a> {
        edges: &'a BTreeMap<ModPath, BTreeMap<ModPath, String>>,
        index: BTreeMap<&'a ModPath, usize>,
        low: BTreeMap<&'a ModPath, usize>,
        stack: Vec<&'a ModPath>,
        on_stack: BTreeSet<&'a ModPath>,
        next: usize,
        found: Vec<Vec<ModPath>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a ModPath) {
            self.index.insert(v, self.next);
            self.low.insert(v, self.next);
            self.next += 1;
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.edges[v].keys() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                loop {
                    let w = self.stack.pop().unwrap();
                    self.on_stack.remove(w);
                    component.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut tarjan = Tarjan {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !tarjan.index.contains_key(v) {
            tarjan.visit(v);
        }
    }
    tarjan.found
}

#[test]
fn no_import_cycle_under_src() {
    let (_, edges) = graph();
    let found = cycles(&edges);
    let mut report = String::new();
    for component in &found {
        report.push_str("a cycle among: ");
        report.push_str(&component.iter().map(name).collect::<Vec<_>>().join(", "));
        report.push('\n');
        for from in component {
            for (to, via) in &edges[from] {
                if component.contains(to) {
                    report.push_str(&format!("  {} -> {} (`{via}`)\n", name(from), name(to)));
                }
            }
        }
    }
    assert!(found.is_empty(), "{report}");
}

/// Layers that must not be reached from a part of the crate (module paths:
/// `broker::engine` is that folder and everything under it).
const FORBIDDEN: &[(&str, &[&str])] = &[
    // The broker knows Lean and documents, not MCP: progress and logs leave
    // through `broker::ProgressSink`, errors as `broker::Error`.
    (
        "broker",
        &["mcp", "http", "context", "surface", "ops", "feedback"],
    ),
    // The engine runs documents and Lean; the features drive it, never the
    // other way round (privacy lets a child reach any sibling).
    ("broker::engine", &["broker::features"]),
    // What a tool knows of its request, and the tool adapters, stand below
    // the protocol and its transports.
    ("context", &["mcp", "http"]),
    ("ops", &["mcp", "http", "replica"]),
    // The feedback report stands beside `ops`, which calls it: it reads the
    // tool's arguments (`surface`) and the broker's façade, never the
    // protocol, its transports, or the adapter that calls it.
    ("feedback", &["mcp", "http", "replica", "context", "ops"]),
    (
        "lsp",
        &[
            "broker", "ops", "feedback", "mcp", "http", "context", "surface",
        ],
    ),
    (
        "safe_fs",
        &[
            "broker", "ops", "feedback", "mcp", "http", "context", "surface",
        ],
    ),
];

/// Whether `module` is `part` or lies under it.
fn under(module: &ModPath, part: &str) -> bool {
    let part: Vec<&str> = part.split("::").collect();
    module.len() >= part.len() && module.iter().zip(&part).all(|(m, p)| m == p)
}

#[test]
fn no_arrow_runs_up_the_layers() {
    let (_, edges) = graph();
    let mut broken = Vec::new();
    for (from, reached) in &edges {
        for (part, forbidden) in FORBIDDEN {
            if !under(from, part) {
                continue;
            }
            for (to, via) in reached {
                if forbidden.iter().any(|f| under(to, f)) {
                    broken.push(format!("{} -> {} (`{via}`)", name(from), name(to)));
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// Parts of the crate that import nothing from the rest of it (what privacy
/// cannot say: a private module may still reach up).
const LEAVES: &[&str] = &["lean_source", "wire"];

#[test]
fn leaves_import_nothing_from_the_crate() {
    let (_, edges) = graph();
    let mut broken = Vec::new();
    for (from, reached) in &edges {
        let Some(leaf) = LEAVES
            .iter()
            .find(|leaf| from.first().map(String::as_str) == Some(**leaf))
        else {
            continue;
        };
        for (to, via) in reached {
            if to.first().map(String::as_str) != Some(*leaf) {
                broken.push(format!("{} -> {} (`{via}`)", name(from), name(to)));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_scan_sees_every_kind_of_path() {
    let files: BTreeMap<ModPath, PathBuf> = [
        vec![],
        vec!["a".to_string()],
        vec!["a".to_string(), "b".to_string()],
        vec!["a".to_string(), "c".to_string()],
        vec!["a".to_string(), "b".to_string(), "e".to_string()],
        vec!["d".to_string()],
    ]
    .into_iter()
    .map(|m| (m, PathBuf::new()))
    .collect();
    let source = r#"
        use super::c::{Thing, other as renamed};
        use crate::d;
        fn f() { let x = select! { y = crate::d::g() => y }; }
        // use crate::nowhere; (a comment)
        const S: &str = "crate::d::in_a_string";
        #[cfg(test)]
        mod tests { use crate::a::c::*; }
        mod inline { fn g() { super::super::c::h(); } }
        fn own_child() { e::f(); }
    "#;
    let mut scan = Scan {
        files: &files,
        file_module: vec!["a".into(), "b".into()],
        reached: BTreeMap::new(),
    };
    scan.scan(
        TokenStream::from_str(source).unwrap(),
        &["a".to_string(), "b".to_string()],
    );
    let reached: Vec<String> = scan.reached.keys().map(name).collect();
    assert_eq!(reached, ["a::c", "d"]);
}

/// A file past this many lines has outgrown one idea (CORE-REVIEW-2: split
/// by stage, not by size; a sibling `tests.rs` holds a module's unit tests).
const MAX_FILE_LINES: usize = 700;

#[test]
fn no_source_file_passes_700_lines() {
    let mut long = Vec::new();
    for root in ["src", "codegen/src"] {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(root);
        let mut stack = vec![root];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().and_then(|e| e.to_str()) == Some("rs") {
                    let lines = std::fs::read_to_string(&path).unwrap().lines().count();
                    if lines > MAX_FILE_LINES {
                        long.push(format!("{} ({lines} lines)", path.display()));
                    }
                }
            }
        }
    }
    assert!(
        long.is_empty(),
        "over {MAX_FILE_LINES} lines: {long:?}; split by stage (a pure reading, a plan, the I/O) or move unit tests to a sibling tests.rs"
    );
}
