//! k6 TypeScript scripts (`pado run script.ts`, and every `.ts` module a script
//! imports): the types are blanked in place, as k6 strips them (with esbuild)
//! before it runs a script, and nothing is type-checked (k6 checks nothing
//! either).
//!
//! oxc parses the file (a TypeScript syntax error names its file, line and
//! column) and its semantic analysis says which imported names are used only
//! as types (`import { Options } from "k6/options"`: `k6/options` has no
//! runtime module, so such an import must go, as esbuild drops it). Every
//! TypeScript-only span is then replaced by spaces, line breaks kept, so the
//! JavaScript QuickJS compiles has each of the user's tokens on the same line
//! and column as in the `.ts` file: an exception's `file:line:column` and the
//! source line pado shows are the user's own, with no source map.
//!
//! An `enum` is the one construct that is code, not a type: it becomes the
//! object TypeScript makes of it, written within the enum's own lines.
//! Namespaces, parameter properties (`constructor(private x)`) and
//! `import x = require(...)` need a compiler's rewriting and are refused with
//! the file and line, as Node's own type stripping refuses them.

use std::path::Path;

use oxc_allocator::Allocator;
use oxc_ast::ast::{
    Class, ClassElement, Declaration, ExportDefaultDeclaration, ExportDefaultDeclarationKind,
    ExportNamedDeclaration, Expression, FormalParameter, Function, ImportDeclaration,
    ImportDeclarationSpecifier, ModuleExportName, PropertyKey, TSEnumDeclaration, TSEnumMemberName,
    UnaryOperator,
};
use oxc_ast_visit::{walk, Visit};
use oxc_semantic::{Scoping, SemanticBuilder, SymbolFlags};
use oxc_span::{GetSpan, SourceType, Span};

use crate::error::ScriptError;

/// Whether `path` (a file or a module's URL) is TypeScript, which k6 strips
/// before it runs: `.ts` (and `.mts`).
pub(crate) fn is_typescript(path: &str) -> bool {
    let ext = Path::new(path).extension().and_then(|e| e.to_str());
    matches!(ext, Some("ts" | "mts"))
}

/// The JavaScript of the TypeScript `source` (the file shown as `shown`): the
/// same text with every type blanked, each token where it was; or the file,
/// line and column of a syntax error or of a construct pado does not strip.
pub(crate) fn strip(shown: &str, source: &str) -> Result<String, ScriptError> {
    let allocator = Allocator::default();
    let parsed = oxc_parser::Parser::new(&allocator, source, SourceType::ts()).parse();
    if let Some(e) = parsed.errors.first() {
        let at = e
            .labels
            .as_ref()
            .and_then(|l| l.first())
            .map_or(0, |l| l.offset());
        return Err(at_offset(
            shown,
            source,
            at,
            format!("SyntaxError: {}", e.message),
        ));
    }
    if parsed.panicked {
        return Err(at_offset(
            shown,
            source,
            0,
            "SyntaxError: the TypeScript parser gave up on this file".into(),
        ));
    }
    let semantic = SemanticBuilder::new().build(&parsed.program).semantic;
    let mut blanker = Blanker {
        src: source,
        scoping: semantic.scoping(),
        edits: Vec::new(),
        refused: None,
    };
    blanker.visit_program(&parsed.program);
    if let Some((offset, why)) = blanker.refused {
        return Err(at_offset(shown, source, offset as usize, why));
    }
    Ok(apply(source, blanker.edits))
}

/// A change to the source: its span blanked (`None`) or replaced by a text that
/// keeps the span's line breaks.
type Edit = (u32, u32, Option<String>);

/// Walks a TypeScript program and notes what to blank.
struct Blanker<'s> {
    /// The TypeScript source.
    src: &'s str,
    /// Symbols and references, to tell types from values.
    scoping: &'s Scoping,
    /// What to change, in no particular order.
    edits: Vec<Edit>,
    /// The first construct refused: its offset and why.
    refused: Option<(u32, String)>,
}

/// The TypeScript-only modifiers of a class member (before its name).
const MEMBER_MODIFIERS: &[&str] = &[
    "public",
    "private",
    "protected",
    "readonly",
    "override",
    "abstract",
    "declare",
];

impl Blanker<'_> {
    /// Blank `span`.
    fn blank(&mut self, span: Span) {
        if span.end > span.start {
            self.edits.push((span.start, span.end, None));
        }
    }

    /// Blank `start..end`.
    fn blank_range(&mut self, start: u32, end: u32) {
        self.blank(Span::new(start, end));
    }

    /// Refuse the construct at `offset` (the first one wins).
    fn refuse(&mut self, offset: u32, why: &str) {
        if self.refused.is_none() {
            self.refused = Some((offset, why.to_string()));
        }
    }

    /// Blank `ch` when it is the first character after `from` (past
    /// whitespace) and before `limit`: a `?` or `!` after a name.
    fn blank_mark_after(&mut self, from: u32, limit: u32, ch: char) {
        let limit = (limit as usize).min(self.src.len());
        let Some(rest) = self.src.get(from as usize..limit) else {
            return;
        };
        let skipped = rest.len() - rest.trim_start().len();
        if rest[skipped..].starts_with(ch) {
            let at = from + skipped as u32;
            self.blank_range(at, at + ch.len_utf8() as u32);
        }
    }

    /// Blank each of `words` found as a word in `start..end`.
    fn blank_words(&mut self, start: u32, end: u32, words: &[&str]) {
        let Some(text) = self.src.get(start as usize..end as usize) else {
            return;
        };
        for (i, word) in words_of(text) {
            if words.contains(&word) {
                let at = start + i as u32;
                self.blank_range(at, at + word.len() as u32);
            }
        }
    }

    /// Whether the import binding `symbol` is used as a value (else it names a
    /// type, or nothing, and goes, as esbuild drops it).
    fn used_as_value(&self, symbol: oxc_semantic::SymbolId) -> bool {
        if (self.scoping.symbol_flags(symbol) - SymbolFlags::Import).is_value() {
            return false;
        }
        self.scoping
            .get_resolved_references(symbol)
            .any(|r| !r.is_type())
    }

    /// Whether `export { name }` exports a type only (an interface, a type alias).
    fn exports_a_type(&self, name: &ModuleExportName<'_>) -> bool {
        let ModuleExportName::IdentifierReference(ident) = name else {
            return false;
        };
        let Some(id) = ident.reference_id.get() else {
            return false;
        };
        let reference = self.scoping.get_reference(id);
        reference.symbol_id().is_some_and(|s| {
            reference.is_type() || self.scoping.symbol_flags(s).contains(SymbolFlags::Ambient)
        })
    }

    /// The text of `span`.
    fn text(&self, span: Span) -> &str {
        self.src
            .get(span.start as usize..span.end as usize)
            .unwrap_or("")
    }

    /// An import: type-only imports and names used only as types go.
    fn import(&mut self, it: &ImportDeclaration<'_>) {
        if it.import_kind.is_type() {
            return self.blank(it.span);
        }
        let Some(specifiers) = &it.specifiers else {
            return;
        };
        if specifiers.is_empty() {
            return;
        }
        let kept: Vec<&ImportDeclarationSpecifier<'_>> = specifiers
            .iter()
            .filter(|s| match s {
                ImportDeclarationSpecifier::ImportSpecifier(s) => {
                    !s.import_kind.is_type() && self.used_as_value(s.local.symbol_id())
                }
                ImportDeclarationSpecifier::ImportDefaultSpecifier(s) => {
                    self.used_as_value(s.local.symbol_id())
                }
                ImportDeclarationSpecifier::ImportNamespaceSpecifier(s) => {
                    self.used_as_value(s.local.symbol_id())
                }
            })
            .collect();
        if kept.is_empty() {
            return self.blank(it.span);
        }
        if kept.len() == specifiers.len() {
            return;
        }
        let mut clause = Vec::new();
        let mut named = Vec::new();
        for s in kept {
            match s {
                ImportDeclarationSpecifier::ImportSpecifier(n) => named.push(self.text(n.span)),
                other => clause.push(self.text(other.span()).to_string()),
            }
        }
        if !named.is_empty() {
            clause.push(format!("{{ {} }}", named.join(", ")));
        }
        let text = format!("import {} from ", clause.join(", "));
        self.edits
            .push((it.span.start, it.source.span.start, Some(text)));
    }

    /// A named export: of types only, or of a declaration that is only a type,
    /// it goes; type names leave its list.
    fn export_named(&mut self, it: &ExportNamedDeclaration<'_>) -> bool {
        if it.export_kind.is_type() || it.declaration.as_ref().is_some_and(type_only) {
            self.blank(it.span);
            return false;
        }
        if it.declaration.is_some() || it.specifiers.is_empty() {
            return true;
        }
        let kept: Vec<&str> = it
            .specifiers
            .iter()
            .filter(|s| !s.export_kind.is_type() && !self.exports_a_type(&s.local))
            .map(|s| self.text(s.span))
            .collect();
        if kept.is_empty() {
            self.blank(it.span);
        } else if kept.len() < it.specifiers.len() {
            let list = format!("export {{ {} }}", kept.join(", "));
            match &it.source {
                Some(source) => {
                    let text = format!("{list} from ");
                    self.edits
                        .push((it.span.start, source.span.start, Some(text)));
                }
                None => self
                    .edits
                    .push((it.span.start, it.span.end, Some(list + ";"))),
            }
        }
        false
    }

    /// A class's TypeScript parts: `abstract`, type parameters and arguments,
    /// `implements`.
    fn class_head(&mut self, it: &Class<'_>) {
        let body = it.body.span.start;
        if it.r#abstract {
            let from = it.span.start.saturating_sub(16);
            if let Some(text) = self.src.get(from as usize..body as usize) {
                let class_at = words_of(text)
                    .find(|(_, w)| *w == "class")
                    .map_or(text.len(), |(i, _)| i);
                self.blank_words(from, from + class_at as u32, &["abstract"]);
            }
        }
        if let Some(t) = &it.type_parameters {
            self.blank(t.span);
        }
        if let Some(t) = &it.super_type_arguments {
            self.blank(t.span);
        }
        if let (Some(first), Some(last)) = (it.implements.first(), it.implements.last()) {
            let before = first.span.start;
            let text = self.src.get(it.span.start as usize..before as usize);
            if let Some((i, _)) =
                text.and_then(|t| words_of(t).filter(|(_, w)| *w == "implements").last())
            {
                self.blank_range(it.span.start + i as u32, last.span.end);
            }
        }
    }

    /// A class member's TypeScript parts; whether to walk into it.
    fn class_element(&mut self, it: &ClassElement<'_>) -> bool {
        match it {
            ClassElement::TSIndexSignature(s) => {
                self.blank(s.span);
                false
            }
            ClassElement::MethodDefinition(m) => {
                if m.r#type.is_abstract() || m.value.body.is_none() {
                    self.blank(m.span);
                    return false;
                }
                self.member_head(m.span, &m.decorators, &m.key);
                if m.optional {
                    self.blank_mark_after(m.key.span().end, m.value.params.span.start, '?');
                }
                true
            }
            ClassElement::PropertyDefinition(p) => {
                let abstract_ =
                    p.r#type == oxc_ast::ast::PropertyDefinitionType::TSAbstractPropertyDefinition;
                if abstract_ || p.declare {
                    self.blank(p.span);
                    return false;
                }
                self.member_head(p.span, &p.decorators, &p.key);
                let limit = p
                    .type_annotation
                    .as_ref()
                    .map(|t| t.span.start)
                    .or(p.value.as_ref().map(|v| v.span().start))
                    .unwrap_or(p.span.end);
                if p.optional {
                    self.blank_mark_after(key_end(self.src, &p.key), limit, '?');
                }
                if p.definite {
                    self.blank_mark_after(key_end(self.src, &p.key), limit, '!');
                }
                true
            }
            ClassElement::AccessorProperty(a) => {
                self.member_head(a.span, &a.decorators, &a.key);
                true
            }
            ClassElement::StaticBlock(_) => true,
        }
    }

    /// Blank the TypeScript modifiers before a member's name.
    fn member_head(
        &mut self,
        span: Span,
        decorators: &[oxc_ast::ast::Decorator<'_>],
        key: &PropertyKey<'_>,
    ) {
        let from = decorators.last().map_or(span.start, |d| d.span.end);
        let to = key.span().start;
        if to > from {
            self.blank_words(from, to, MEMBER_MODIFIERS);
        }
    }

    /// A function's TypeScript parts: type parameters, `this` parameter,
    /// return type.
    fn function_parts(&mut self, it: &Function<'_>) {
        if let Some(t) = &it.type_parameters {
            self.blank(t.span);
        }
        if let Some(this) = &it.this_param {
            let next = it
                .params
                .items
                .first()
                .map(|p| p.span.start)
                .or(it.params.rest.as_ref().map(|r| r.span.start))
                .unwrap_or(this.span.end);
            self.blank_range(this.span.start, next);
        }
        if let Some(t) = &it.return_type {
            self.blank(t.span);
        }
    }

    /// An arrow function's return type. Over several lines, blanking it would
    /// leave a line break before `=>`, which JavaScript forbids: the `=>` moves
    /// up to where the type began, and the line breaks go after it (what follows
    /// keeps its line and column).
    fn arrow_return_type(&mut self, span: Span) {
        let typed = self.text(span);
        if !typed.contains('\n') {
            return self.blank(span);
        }
        let rest = self.src.get(span.end as usize..).unwrap_or("");
        let skipped = rest.len() - rest.trim_start().len();
        if rest[skipped..].starts_with("=>") {
            let end = span.end + skipped as u32 + 2;
            self.edits.push((span.start, end, Some("=>".into())));
        } else {
            self.blank(span);
        }
    }

    /// An enum, as the object TypeScript makes of it, within its own lines.
    fn enum_declaration(&mut self, it: &TSEnumDeclaration<'_>) {
        if it.declare {
            return self.blank(it.span);
        }
        let name = it.id.name.as_str();
        let mut body = String::new();
        let mut next: Option<f64> = Some(0.0);
        for m in &it.body.members {
            let key = match &m.id {
                TSEnumMemberName::Identifier(i) => i.name.to_string(),
                TSEnumMemberName::String(s) | TSEnumMemberName::ComputedString(s) => {
                    s.value.to_string()
                }
                TSEnumMemberName::ComputedTemplateString(t) => {
                    return self.refuse(t.span.start, ENUM_WHY);
                }
            };
            let key = serde_json::Value::String(key).to_string();
            let value = match &m.initializer {
                None => match next {
                    Some(n) => Literal::Number(n),
                    None => return self.refuse(m.span.start, ENUM_WHY),
                },
                Some(e) => match literal(e) {
                    Some(l) => l,
                    None => return self.refuse(e.span().start, ENUM_WHY),
                },
            };
            match value {
                Literal::Number(n) => {
                    next = Some(n + 1.0);
                    body.push_str(&format!(
                        "{name}[{name}[{key}] = {}] = {key}; ",
                        js_number(n)
                    ));
                }
                Literal::Text(s) => {
                    next = None;
                    let s = serde_json::Value::String(s).to_string();
                    body.push_str(&format!("{name}[{key}] = {s}; "));
                }
            }
        }
        let text =
            format!("var {name} = (function ({name}) {{ {body}return {name}; }})({name} || {{}});");
        self.edits.push((it.span.start, it.span.end, Some(text)));
    }
}

/// Why an enum member is refused.
const ENUM_WHY: &str = "TypeScript enum: pado turns an enum into JavaScript when each member's value \
                        is a number or a string written out (or follows a number); write this one as \
                        a constant object (`const Kind = { A: 1 } as const`)";

/// An enum member's value written out.
enum Literal {
    /// A number.
    Number(f64),
    /// A string.
    Text(String),
}

/// The literal `e` is, if it is one (a number, `-` a number, a string).
fn literal(e: &Expression<'_>) -> Option<Literal> {
    match e {
        Expression::NumericLiteral(n) => Some(Literal::Number(n.value)),
        Expression::StringLiteral(s) => Some(Literal::Text(s.value.to_string())),
        Expression::UnaryExpression(u) if u.operator == UnaryOperator::UnaryNegation => {
            match &u.argument {
                Expression::NumericLiteral(n) => Some(Literal::Number(-n.value)),
                _ => None,
            }
        }
        Expression::ParenthesizedExpression(p) => literal(&p.expression),
        _ => None,
    }
}

/// `n` as JavaScript writes it (`1`, not `1.0`).
fn js_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

/// Where a member's name ends (past the `]` of a computed one).
fn key_end(src: &str, key: &PropertyKey<'_>) -> u32 {
    let end = key.span().end;
    let rest = src.get(end as usize..).unwrap_or("");
    let skipped = rest.len() - rest.trim_start().len();
    if rest[skipped..].starts_with(']') {
        end + skipped as u32 + 1
    } else {
        end
    }
}

/// Where a binding's name ends: an identifier's span may take in the `?` or
/// `!` after it, so the mark is looked for right after the name.
fn name_end(kind: &oxc_ast::ast::BindingPatternKind<'_>) -> u32 {
    match kind {
        oxc_ast::ast::BindingPatternKind::BindingIdentifier(id) => {
            id.span.start + id.name.len() as u32
        }
        other => other.span().end,
    }
}

/// Whether a declaration is only a type (nothing of it runs).
fn type_only(d: &Declaration<'_>) -> bool {
    match d {
        Declaration::VariableDeclaration(v) => v.declare,
        Declaration::FunctionDeclaration(f) => f.is_typescript_syntax(),
        Declaration::ClassDeclaration(c) => c.declare,
        Declaration::TSTypeAliasDeclaration(_) | Declaration::TSInterfaceDeclaration(_) => true,
        Declaration::TSEnumDeclaration(e) => e.declare,
        Declaration::TSModuleDeclaration(m) => m.declare,
        Declaration::TSGlobalDeclaration(_) => true,
        Declaration::TSImportEqualsDeclaration(i) => i.import_kind.is_type(),
    }
}

/// The words of `text` (identifier characters) with their byte offsets.
fn words_of(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        let word_char = c.is_alphanumeric() || c == '_' || c == '$';
        match (word_char, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, &text[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &text[s..]));
    }
    out.into_iter()
}

impl<'a> Visit<'a> for Blanker<'_> {
    fn visit_import_declaration(&mut self, it: &ImportDeclaration<'a>) {
        self.import(it);
    }

    fn visit_export_named_declaration(&mut self, it: &ExportNamedDeclaration<'a>) {
        if self.export_named(it) {
            walk::walk_export_named_declaration(self, it);
        }
    }

    fn visit_export_default_declaration(&mut self, it: &ExportDefaultDeclaration<'a>) {
        match &it.declaration {
            ExportDefaultDeclarationKind::TSInterfaceDeclaration(_) => self.blank(it.span),
            ExportDefaultDeclarationKind::FunctionDeclaration(f) if f.body.is_none() => {
                self.blank(it.span);
            }
            _ => walk::walk_export_default_declaration(self, it),
        }
    }

    fn visit_export_all_declaration(&mut self, it: &oxc_ast::ast::ExportAllDeclaration<'a>) {
        if it.export_kind.is_type() {
            self.blank(it.span);
        }
    }

    fn visit_ts_export_assignment(&mut self, it: &oxc_ast::ast::TSExportAssignment<'a>) {
        self.refuse(
            it.span.start,
            "TypeScript `export =` is CommonJS: a k6 script is an ES module; write `export default`",
        );
    }

    fn visit_ts_namespace_export_declaration(
        &mut self,
        it: &oxc_ast::ast::TSNamespaceExportDeclaration<'a>,
    ) {
        self.blank(it.span);
    }

    fn visit_ts_import_equals_declaration(
        &mut self,
        it: &oxc_ast::ast::TSImportEqualsDeclaration<'a>,
    ) {
        if it.import_kind.is_type() {
            return self.blank(it.span);
        }
        self.refuse(
            it.span.start,
            "TypeScript `import x = ...` needs a compiler, not a type stripper (as in Node); \
             write `import x from \"...\"`",
        );
    }

    fn visit_ts_type_alias_declaration(&mut self, it: &oxc_ast::ast::TSTypeAliasDeclaration<'a>) {
        self.blank(it.span);
    }

    fn visit_ts_interface_declaration(&mut self, it: &oxc_ast::ast::TSInterfaceDeclaration<'a>) {
        self.blank(it.span);
    }

    fn visit_ts_module_declaration(&mut self, it: &oxc_ast::ast::TSModuleDeclaration<'a>) {
        if it.declare {
            return self.blank(it.span);
        }
        self.refuse(
            it.span.start,
            "TypeScript namespaces are code a compiler writes, which pado (like Node's type \
             stripping) does not do; use a module (`export` from a file of its own)",
        );
    }

    fn visit_ts_global_declaration(&mut self, it: &oxc_ast::ast::TSGlobalDeclaration<'a>) {
        self.blank(it.span);
    }

    fn visit_ts_enum_declaration(&mut self, it: &TSEnumDeclaration<'a>) {
        self.enum_declaration(it);
    }

    fn visit_variable_declaration(&mut self, it: &oxc_ast::ast::VariableDeclaration<'a>) {
        if it.declare {
            return self.blank(it.span);
        }
        walk::walk_variable_declaration(self, it);
    }

    fn visit_variable_declarator(&mut self, it: &oxc_ast::ast::VariableDeclarator<'a>) {
        if it.definite {
            let limit = it
                .id
                .type_annotation
                .as_ref()
                .map_or(it.span.end, |t| t.span.start);
            self.blank_mark_after(name_end(&it.id.kind), limit, '!');
        }
        walk::walk_variable_declarator(self, it);
    }

    fn visit_binding_pattern(&mut self, it: &oxc_ast::ast::BindingPattern<'a>) {
        if it.optional {
            let limit = it
                .type_annotation
                .as_ref()
                .map_or(u32::MAX, |t| t.span.start);
            self.blank_mark_after(name_end(&it.kind), limit, '?');
        }
        walk::walk_binding_pattern(self, it);
    }

    fn visit_formal_parameter(&mut self, it: &FormalParameter<'a>) {
        if it.accessibility.is_some() || it.readonly || it.r#override {
            self.refuse(
                it.span.start,
                "TypeScript parameter properties (`constructor(private x)`) are code a compiler \
                 writes, which pado (like Node's type stripping) does not do; declare the field \
                 and assign it in the constructor",
            );
        }
        walk::walk_formal_parameter(self, it);
    }

    fn visit_function(&mut self, it: &Function<'a>, flags: oxc_semantic::ScopeFlags) {
        if it.declare || it.body.is_none() {
            return self.blank(it.span);
        }
        self.function_parts(it);
        walk::walk_function(self, it, flags);
    }

    fn visit_arrow_function_expression(&mut self, it: &oxc_ast::ast::ArrowFunctionExpression<'a>) {
        if let Some(t) = &it.type_parameters {
            self.blank(t.span);
        }
        if let Some(t) = &it.return_type {
            self.arrow_return_type(t.span);
        }
        walk::walk_arrow_function_expression(self, it);
    }

    fn visit_class(&mut self, it: &Class<'a>) {
        if it.declare {
            return self.blank(it.span);
        }
        self.class_head(it);
        walk::walk_class(self, it);
    }

    fn visit_class_element(&mut self, it: &ClassElement<'a>) {
        if self.class_element(it) {
            walk::walk_class_element(self, it);
        }
    }

    fn visit_ts_type_annotation(&mut self, it: &oxc_ast::ast::TSTypeAnnotation<'a>) {
        self.blank(it.span);
    }

    fn visit_ts_type_parameter_instantiation(
        &mut self,
        it: &oxc_ast::ast::TSTypeParameterInstantiation<'a>,
    ) {
        self.blank(it.span);
    }

    fn visit_ts_type_parameter_declaration(
        &mut self,
        it: &oxc_ast::ast::TSTypeParameterDeclaration<'a>,
    ) {
        self.blank(it.span);
    }

    fn visit_ts_as_expression(&mut self, it: &oxc_ast::ast::TSAsExpression<'a>) {
        self.blank_range(it.expression.span().end, it.span.end);
        self.visit_expression(&it.expression);
    }

    fn visit_ts_satisfies_expression(&mut self, it: &oxc_ast::ast::TSSatisfiesExpression<'a>) {
        self.blank_range(it.expression.span().end, it.span.end);
        self.visit_expression(&it.expression);
    }

    fn visit_ts_non_null_expression(&mut self, it: &oxc_ast::ast::TSNonNullExpression<'a>) {
        self.blank_range(it.expression.span().end, it.span.end);
        self.visit_expression(&it.expression);
    }

    fn visit_ts_type_assertion(&mut self, it: &oxc_ast::ast::TSTypeAssertion<'a>) {
        self.blank_range(it.span.start, it.expression.span().start);
        self.visit_expression(&it.expression);
    }

    fn visit_ts_instantiation_expression(
        &mut self,
        it: &oxc_ast::ast::TSInstantiationExpression<'a>,
    ) {
        self.blank(it.type_arguments.span);
        self.visit_expression(&it.expression);
    }
}

/// The source with `edits` made: blanked spans as spaces (line breaks kept),
/// replaced ones as their text, padded to the span's lines and last column.
/// An edit inside one already made is dropped (the outer one covers it).
fn apply(src: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut out = String::with_capacity(src.len());
    let mut at = 0usize;
    for (start, end, text) in edits {
        let (start, end) = (start as usize, end as usize);
        if start < at || end > src.len() {
            continue;
        }
        out.push_str(&src[at..start]);
        let old = &src[start..end];
        match text {
            None => out.extend(old.chars().map(blank_char)),
            Some(text) => out.push_str(&fill(old, &text)),
        }
        at = end;
    }
    out.push_str(&src[at..]);
    out
}

/// A blanked character: a space, but for line breaks (kept, so lines count).
fn blank_char(c: char) -> char {
    match c {
        '\n' | '\r' | '\u{2028}' | '\u{2029}' => c,
        _ => ' ',
    }
}

/// `text` in place of `old`: as many line breaks, and what follows `old`
/// starts on the same column.
fn fill(old: &str, text: &str) -> String {
    let breaks = old.matches('\n').count();
    let mut out = text.to_string();
    if breaks == 0 {
        let pad = old.chars().count().saturating_sub(text.chars().count());
        out.extend(std::iter::repeat_n(' ', pad));
    } else {
        out.extend(std::iter::repeat_n('\n', breaks));
        let tail = old.rsplit('\n').next().unwrap_or("").chars().count();
        out.extend(std::iter::repeat_n(' ', tail));
    }
    out
}

/// A syntax error (or a refused construct) at byte `offset` of `source`:
/// `file:line:column`, the message, and the line with a caret.
fn at_offset(shown: &str, source: &str, offset: usize, message: String) -> ScriptError {
    let offset = offset.min(source.len());
    let before = source.get(..offset).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    let text = source.lines().nth(line - 1).unwrap_or("");
    let caret = " ".repeat(col - 1);
    ScriptError::Syntax {
        at: format!("{shown}:{line}:{col}"),
        message,
        excerpt: format!("{line:>5} | {text}\n      | {caret}^"),
    }
}
