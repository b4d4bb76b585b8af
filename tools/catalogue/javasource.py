"""Messages on failure paths read from Java source (a bare git directory, read at one commit), with tree-sitter.

The same sinks as the class-file reader, in source form: `throw`/`new XException("..." + v + "...")` (and
`super("...")` in an exception's constructor), `String.format`, loggers' `error` / `warn` / `fatal` with `{}`,
`Preconditions.checkX(cond, "fmt %s", ...)` / `Objects.requireNonNull(x, "...")`, `System.err.print*`, and the
message strings of error-code enums (Kafka's `Errors`). A message is followed through string concatenation,
local variables and `static final String` constants of the same file; anything else is a hole.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field

import tree_sitter_java
from tree_sitter import Language, Node, Parser

from . import classfiles as cf
from . import template as tpl
from .candidate import Candidate

JAVA = Language(tree_sitter_java.language())
LOGGER_NAME = re.compile(r"^(?:log|LOG|logger|LOGGER|Log|Logger|[a-zA-Z_]*(?:Log|LOG|Logger|LOGGER))$")
JAVA_ESCAPE = re.compile(r"\\(u+[0-9a-fA-F]{4}|[0-7]{1,3}|[tnrbfs\"'\\]|\n)")
JAVA_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "b": "\b", "f": "\f", "s": " ", '"': '"', "'": "'", "\\": "\\",
                "\n": ""}  # fmt: skip
CHECK_OBJECTS = {"Preconditions", "Validate", "Objects", None}
JAVA_LANG = {
    "Exception", "RuntimeException", "Error", "Throwable", "IllegalStateException", "IllegalArgumentException",
    "NullPointerException", "UnsupportedOperationException", "IndexOutOfBoundsException", "ArithmeticException",
    "ClassCastException", "InterruptedException", "SecurityException", "OutOfMemoryError", "AssertionError",
    "NumberFormatException", "ClassNotFoundException", "CloneNotSupportedException", "IllegalMonitorStateException",
    "ArrayIndexOutOfBoundsException", "StringIndexOutOfBoundsException", "NegativeArraySizeException",
    "ReflectiveOperationException", "NoSuchFieldException", "NoSuchMethodException", "InstantiationException",
    "IllegalAccessException", "LinkageError", "NoClassDefFoundError", "StackOverflowError", "InternalError",
    "ExceptionInInitializerError", "VirtualMachineError", "TypeNotPresentException", "EnumConstantNotPresentException",
}  # fmt: skip


def decode_literal(text: str) -> str:
    """A Java string literal or text block (with its quotes) to its value."""
    if text.startswith('"""'):
        body = text[3:-3]
        body = body.split("\n", 1)[1] if "\n" in body else body
        lines = body.split("\n")
        indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
        cut = min(indents) if indents else 0
        body = "\n".join(line[cut:].rstrip() for line in lines)
    else:
        body = text[1:-1]

    def one(match: re.Match) -> str:
        code = match.group(1)
        if code[0] == "u":
            return chr(int(code.lstrip("u"), 16))
        if code[0] in "01234567":
            return chr(int(code, 8))
        return JAVA_ESCAPES[code]

    return JAVA_ESCAPE.sub(one, body)


@dataclass
class Value:
    parts: tpl.Template
    raw: bool = True
    text: str | None = None


HOLE = Value((tpl.HOLE,), False)


@dataclass
class FileRead:
    """One source file: its package, imports, the classes it declares (binary name -> superclass as written)."""

    package: str = ""
    imports: dict[str, str] = field(default_factory=dict)
    classes: dict[str, str | None] = field(default_factory=dict)
    messages: list[tuple] = field(default_factory=list)  # (Value, style, cls-as-written, level, origin, line, keys)


class Walker:
    """Walks one file's tree, collecting declared classes and the messages reaching sinks."""

    def __init__(self, source: bytes):
        self.source = source
        self.read = FileRead()
        self.constants: dict[str, Value] = {}
        self.locals: dict[str, Value] = {}

    def text(self, node: Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def walk(self, root: Node) -> FileRead:
        for child in root.children:
            if child.type == "package_declaration":
                name = next((c for c in child.children if c.type in ("scoped_identifier", "identifier")), None)
                self.read.package = self.text(name) if name else ""
            elif child.type == "import_declaration" and "static" not in [c.type for c in child.children]:
                name = next((c for c in child.children if c.type == "scoped_identifier"), None)
                if name is not None:
                    full = self.text(name)
                    self.read.imports[full.rsplit(".", 1)[-1]] = full
        self.collect_constants(root)
        self.visit(root, [])
        return self.read

    def collect_constants(self, root: Node) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type == "field_declaration":
                for decl in node.children_by_field_name("declarator"):
                    name, value = decl.child_by_field_name("name"), decl.child_by_field_name("value")
                    if name is not None and value is not None and value.type in ("string_literal", "binary_expression"):
                        found = self.value(value)
                        if any(p is not tpl.HOLE for p in found.parts):
                            self.constants[self.text(name)] = found
            stack.extend(node.children)

    def visit(self, node: Node, scope: list[tuple[str, str | None]]) -> None:  # noqa: C901
        kind = node.type
        if kind in ("class_declaration", "enum_declaration", "record_declaration", "interface_declaration"):
            name_node = node.child_by_field_name("name")
            name = self.text(name_node) if name_node else "?"
            superclass = node.child_by_field_name("superclass")
            parent = None
            if superclass is not None:
                parent = self.text(superclass.named_children[0]) if superclass.named_children else None
                parent = re.sub(r"<.*", "", parent or "") or None
            outer = ".".join(filter(None, [self.read.package])) + "."
            binary = outer + "$".join([s for s, _ in scope] + [name]) if scope else outer + name
            self.read.classes[binary] = parent
            scope = [*scope, (name, binary)]
            if kind == "enum_declaration" and cf.REASON_ENUM.search(name):
                self.enum_messages(node, binary)
        elif kind in ("method_declaration", "constructor_declaration", "lambda_expression"):
            if kind != "lambda_expression":
                self.locals = {}
        elif kind == "local_variable_declaration":
            for decl in node.children_by_field_name("declarator"):
                name, value = decl.child_by_field_name("name"), decl.child_by_field_name("value")
                if name is not None and value is not None:
                    found = self.value(value)
                    if any(p is not tpl.HOLE for p in found.parts):
                        self.locals[self.text(name)] = found
        elif kind == "object_creation_expression":
            self.created(node, scope)
        elif kind == "explicit_constructor_invocation":
            if scope and node.children and node.children[0].type == "super":
                args = node.child_by_field_name("arguments")
                if args is not None:
                    self.message_arg(args.named_children, scope[-1][1], "throw", scope, node, ctor=True)
        elif kind == "method_invocation":
            self.invoked(node, scope)
        for child in node.children:
            self.visit(child, scope)

    def origin(self, scope: list[tuple[str, str | None]]) -> str:
        return scope[-1][1] or "" if scope else self.read.package

    def created(self, node: Node, scope) -> None:
        type_node = node.child_by_field_name("type")
        args = node.child_by_field_name("arguments")
        if type_node is None or args is None:
            return
        written = re.sub(r"<.*", "", self.text(type_node))
        self.message_arg(args.named_children, written, "throw", scope, node, ctor=True)

    def message_arg(self, args: list[Node], cls: str | None, level: str | None, scope, node: Node, ctor: bool) -> None:
        for i, arg in enumerate(args):
            value = self.value(arg)
            if not any(p is not tpl.HOLE for p in value.parts):
                continue
            style = "literal"
            if (
                ctor
                and i + 1 < len(args)
                and value.raw
                and any(p is not tpl.HOLE and tpl.FORMAT_SPEC.search(p) for p in value.parts)
            ):
                style = "format"
            self.add(value, style, cls, level, scope, node, args[i + 1 :], ctor)
            return

    def add(self, value: Value, style, cls, level, scope, node: Node, extra: list[Node], ctor: bool = False) -> None:
        keys = tuple(
            v.text for v in (self.value(a) for a in extra) if v.text and cf.CONFIG_KEY.match(v.text)
        )  # fmt: skip
        self.read.messages.append((value, style, cls, level, self.origin(scope), node.start_point[0] + 1, keys, ctor))

    def invoked(self, node: Node, scope) -> None:
        name_node, obj = node.child_by_field_name("name"), node.child_by_field_name("object")
        args_node = node.child_by_field_name("arguments")
        if name_node is None or args_node is None:
            return
        name, obj_text = self.text(name_node), self.text(obj) if obj is not None else None
        args = args_node.named_children
        if name in cf.LOG_LEVELS and obj_text and LOGGER_NAME.match(obj_text.rsplit(".", 1)[-1]):
            if args:
                first = 1 if len(args) > 1 and self.value(args[0]).parts == (tpl.HOLE,) else 0  # a Marker first
                value = self.value(args[first])
                if any(p is not tpl.HOLE for p in value.parts):
                    self.add(value, "slf4j", None, cf.LOG_LEVELS[name], scope, node, args[first + 1 :])
        elif name in cf.CHECKS and obj_text in CHECK_OBJECTS and len(args) >= 2:
            value = self.value(args[1])
            if any(p is not tpl.HOLE for p in value.parts):
                style = "format" if len(args) > 2 else "literal"
                self.add(value, style, cf.CHECKS[name], "throw", scope, node, args[2:])
        elif obj_text == "System.err" and name in ("println", "print", "printf", "format") and args:
            value = self.value(args[0])
            if any(p is not tpl.HOLE for p in value.parts):
                self.add(
                    value, "format" if name in ("printf", "format") else "literal", None, "stderr", scope, node, []
                )

    def enum_messages(self, node: Node, binary: str) -> None:
        body = node.child_by_field_name("body")
        for constant in body.named_children if body is not None else []:
            if constant.type != "enum_constant":
                continue
            args = constant.child_by_field_name("arguments")
            for arg in args.named_children if args is not None else []:
                value = self.value(arg)
                if value.text is not None and len(value.parts) == 1:
                    self.read.messages.append((value, "literal", None, None, binary, arg.start_point[0] + 1, (), False))

    def value(self, node: Node) -> Value:  # noqa: C901
        kind = node.type
        if kind == "string_literal":
            text = decode_literal(self.text(node))
            return Value((text,), True, text)
        if kind == "parenthesized_expression" and node.named_children:
            return self.value(node.named_children[0])
        if kind == "binary_expression":
            op = node.child_by_field_name("operator")
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if op is not None and self.text(op) == "+" and left is not None and right is not None:
                a, b = self.value(left), self.value(right)
                if a.parts == (tpl.HOLE,) and b.parts == (tpl.HOLE,):
                    return HOLE
                return Value(tpl.normalise((*a.parts, *b.parts)), a.raw or b.raw)
            return HOLE
        if kind == "identifier":
            name = self.text(node)
            return self.locals.get(name) or self.constants.get(name) or HOLE
        if kind == "method_invocation":
            name_node, obj = node.child_by_field_name("name"), node.child_by_field_name("object")
            args_node = node.child_by_field_name("arguments")
            name = self.text(name_node) if name_node is not None else ""
            obj_text = self.text(obj) if obj is not None else ""
            args = args_node.named_children if args_node is not None else []
            if name in ("format", "formatted") and (obj_text in ("String", "") or name == "formatted"):
                if name == "formatted" and obj is not None:
                    fmt = self.value(obj)
                else:
                    at = 1 if len(args) > 1 and self.text(args[0]).startswith(("Locale", "java.util.Locale")) else 0
                    fmt = self.value(args[at]) if len(args) > at else HOLE
                if fmt.parts == (tpl.HOLE,):
                    return HOLE
                return styled(fmt, "format")
        return HOLE


def styled(value: Value, style: str) -> Value:
    if not value.raw or style == "literal":
        return Value(value.parts, False, value.text)
    parse = tpl.from_format if style == "format" else tpl.from_slf4j
    parts: list[tpl.Part] = []
    for part in value.parts:
        parts.extend((tpl.HOLE,) if part is tpl.HOLE else parse(part) or ("",))
    return Value(tpl.normalise(parts), False, value.text)


# -- a repository ------------------------------------------------------------------------------------------------


@dataclass
class RepoRead:
    messages: list[Candidate]
    exceptions: dict[str, str]  # binary name -> where
    files: int


def git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, *args], capture_output=True, text=True, check=True).stdout


def java_files(git_dir: str, commit: str, include: list[str], exclude: list[str]) -> list[str]:
    names = git(git_dir, "ls-tree", "-r", "--name-only", commit).splitlines()
    inc = re.compile("|".join(include))
    exc = re.compile("|".join(exclude)) if exclude else None
    return sorted(n for n in names if n.endswith(".java") and inc.search(n) and not (exc and exc.search(n)))


def blobs(git_dir: str, commit: str, paths: list[str]) -> Iterator[tuple[str, bytes]]:
    """The bytes of `paths` at `commit`, through one `git cat-file --batch`."""
    request = "".join(f"{commit}:{p}\n" for p in paths).encode()
    proc = subprocess.run(["git", "--git-dir", git_dir, "cat-file", "--batch"], input=request, capture_output=True,
                          check=True)  # fmt: skip
    data, pos = proc.stdout, 0
    for path in paths:
        end = data.index(b"\n", pos)
        header = data[pos:end].split()
        pos = end + 1
        if len(header) < 3 or header[1] != b"blob":
            continue
        size = int(header[2])
        yield path, data[pos : pos + size]
        pos += size + 1


def _hierarchy(files: list[tuple[str, FileRead]]) -> tuple[dict[str, str], set[str], cf.Hierarchy]:
    """The class hierarchy over the whole repository: simple name -> binary name, every binary name, supers."""
    simple_to_binary: dict[str, str] = {}
    for _, fr in files:
        for binary in fr.classes:
            simple_to_binary.setdefault(binary.rsplit(".", 1)[-1].rsplit("$", 1)[-1], binary)
    every = {binary for _, fr in files for binary in fr.classes}
    supers = {
        binary: resolve(parent, fr, simple_to_binary, every)
        for _, fr in files
        for binary, parent in fr.classes.items()
        if parent
    }
    return simple_to_binary, every, cf.Hierarchy(supers)


def read_repo(git_dir: str, commit: str, label: str, include: list[str], exclude: list[str]) -> RepoRead:
    """Every message and exception class of the Java files of `git_dir` at `commit` that `include` selects."""
    parser = Parser(JAVA)
    files: list[tuple[str, FileRead]] = []
    for path, data in blobs(git_dir, commit, java_files(git_dir, commit, include, exclude)):
        files.append((path, Walker(data).walk(parser.parse(data).root_node)))
    simple_to_binary, every, hierarchy = _hierarchy(files)
    messages: list[Candidate] = []
    for path, fr in files:
        for value, style, written, level, origin, line, keys, ctor in fr.messages:
            cls = resolve(written, fr, simple_to_binary, every) if written else None
            if ctor and (cls is None or not hierarchy.throwable(cls)):
                continue
            final = styled(value, style)
            text = final.text if final.text is not None else tpl.render(final.parts)
            where = f"{label}:{path}:{line}"
            messages.append(Candidate("message", text, final.parts, cls, level, origin, where, keys))
    exceptions = {}
    for path, fr in files:
        for binary in fr.classes:
            if hierarchy.throwable(binary):
                exceptions[binary] = f"{label}:{path}"
    return RepoRead(messages, exceptions, len(files))


def resolve(written: str, fr: FileRead, known: dict[str, str], every: set[str]) -> str:
    """A class name as written in a file to its binary name: import, same package, java.lang, the repository."""
    if written.startswith(("java.", "javax.", "org.", "com.", "io.")) and "." in written:
        return written
    head, _, tail = written.partition(".")
    if head in fr.imports:
        base = fr.imports[head]
    elif head in JAVA_LANG:
        base = "java.lang." + head
    elif f"{fr.package}.{head}" in every:
        base = f"{fr.package}.{head}"
    elif head in known:
        base = known[head]
    else:
        base = head
    return base + ("$" + tail.replace(".", "$") if tail else "")
