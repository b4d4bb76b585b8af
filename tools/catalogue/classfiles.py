"""Messages on failure paths read from class files, through the JDK's `javap -c -v -p`.

A string constant alone says nothing about where it is used, so each method's bytecode is run on a small
abstract stack that follows only what makes a message: string constants (`ldc`), StringBuilder chains, Java 9+
concatenation recipes (`makeConcatWithConstants`, read from the class's BootstrapMethods), `String.format`,
arrays of arguments, and local variables holding strings. A message is kept where it reaches a failure path:

- the constructor of a Throwable (`new XException(msg)`, also `super(msg)` in an exception's constructor);
- a logger's error / warn / fatal (SLF4J, Log4j, commons-logging, Akka/Pekko's LoggingAdapter, java.util.logging);
- Flink's, Guava's or commons-lang's precondition checks (`checkState(cond, "fmt %s", ...)`) and
  `Objects.requireNonNull(x, msg)`, with the exception each throws;
- `System.err.print*`;
- the message strings of failure-reason enums (Flink's CheckpointFailureReason and its kind).

Whether a constructed class is a Throwable is decided after every class was read (`Hierarchy`), from the
superclasses javap prints, falling back to the name (`...Exception`, `...Error`) for classes not read.
Control flow is followed only as far as javac's shapes need: the stack at a branch target is the one recorded
at the branch, so `cond ? a : b` does not leave both on the stack.
"""

from __future__ import annotations

import re
import subprocess
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import template as tpl
from .candidate import Candidate

INSTRUCTION = re.compile(r"^\s+(\d+): ([a-z_][a-z0-9_]*)\s*(.*)$")
ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|[tnrbf\"'\\])")
ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "b": "\b", "f": "\f", '"': '"', "'": "'", "\\": "\\"}
DESCRIPTOR_ITEM = re.compile(r"\[*(?:L[^;]+;|[ZBCSIFJD])")
CONFIG_KEY = re.compile(r"^[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)+$")
JAVAP_BATCH = 400  # classes per javap invocation (bounded command line)

LOGGERS = {
    "org/slf4j/Logger",
    "org/apache/logging/log4j/Logger",
    "org/apache/logging/log4j/spi/ExtendedLogger",
    "org/apache/log4j/Logger",
    "org/apache/log4j/Category",
    "org/apache/commons/logging/Log",
    "akka/event/LoggingAdapter",
    "org/apache/pekko/event/LoggingAdapter",
    "java/util/logging/Logger",
}
LOG_LEVELS = {"error": "error", "warn": "warn", "warning": "warn", "fatal": "fatal", "severe": "error"}
QUIET_LEVELS = {"info", "debug", "trace", "fine", "finer", "finest", "config"}
CHECKS = {
    "checkArgument": "java.lang.IllegalArgumentException",
    "checkState": "java.lang.IllegalStateException",
    "checkNotNull": "java.lang.NullPointerException",
    "checkElementIndex": "java.lang.IndexOutOfBoundsException",
    "checkPositionIndex": "java.lang.IndexOutOfBoundsException",
    "isTrue": "java.lang.IllegalArgumentException",
    "notNull": "java.lang.NullPointerException",
    "validState": "java.lang.IllegalStateException",
    "requireNonNull": "java.lang.NullPointerException",
}
CHECK_OWNERS = re.compile(
    r"(?:^|/)(?:org/apache/flink/util/Preconditions|com/google/common/base/Preconditions|"
    r"org/apache/commons/lang3/Validate|java/util/Objects)$"
)
REASON_ENUM = re.compile(r"(?:Failure|Error|Reason)s?$")
ROOTS = {"java.lang.Throwable", "java.lang.Exception", "java.lang.Error", "java.lang.RuntimeException"}
THROWABLE_NAME = re.compile(r"(?:Exception|Error|Throwable)$")
BRANCHES_POP1 = {"ifeq", "ifne", "iflt", "ifge", "ifgt", "ifle", "ifnull", "ifnonnull"}
BRANCHES_POP2 = {"if_icmpeq", "if_icmpne", "if_icmplt", "if_icmpge", "if_icmpgt", "if_icmple", "if_acmpeq", "if_acmpne"}
ENDS = {"goto", "goto_w", "athrow", "return", "areturn", "ireturn", "lreturn", "freturn", "dreturn", "tableswitch",
        "lookupswitch", "ret"}  # fmt: skip
PUSH1 = {"aconst_null", "bipush", "sipush", "jsr", "ldc2_w"} | {
    f"{t}const_{n}" for t, ns in (("i", ("m1", "0", "1", "2", "3", "4", "5")), ("l", "01"), ("f", "012"), ("d", "01"))
    for n in ns
}  # fmt: skip
POP2_PUSH1 = {
    op
    for t in "ilfd"
    for op in (f"{t}add", f"{t}sub", f"{t}mul", f"{t}div", f"{t}rem", f"{t}shl", f"{t}shr", f"{t}ushr",
               f"{t}and", f"{t}or", f"{t}xor")
} | {"lcmp", "fcmpl", "fcmpg", "dcmpl", "dcmpg", "iaload", "laload", "faload", "daload", "aaload", "baload",
     "caload", "saload"}  # fmt: skip
POP1_PUSH1 = {"ineg", "lneg", "fneg", "dneg", "i2l", "i2f", "i2d", "l2i", "l2f", "l2d", "f2i", "f2l", "f2d",
              "d2i", "d2l", "d2f", "i2b", "i2c", "i2s", "checkcast", "instanceof", "arraylength", "newarray",
              "getfield"}  # fmt: skip
POP1 = {"pop", "pop2", "monitorenter", "monitorexit"} | BRANCHES_POP1
CONFIG_OPTION = "Lorg/apache/flink/configuration/ConfigOption;"
# calls that put their string arguments into an exception's message (Flink's enrichment of OutOfMemoryErrors)
ENRICHERS = {("org/apache/flink/util/ExceptionUtils", "tryEnrichOutOfMemoryError"): "java.lang.OutOfMemoryError"}
POP3 = {"iastore", "lastore", "fastore", "dastore", "bastore", "castore", "sastore"}


def decode(text: str) -> str:
    """A string as javap prints it (Java escapes) back to its value."""
    return ESCAPE.sub(lambda m: chr(int(m.group(1)[1:], 16)) if m.group(1)[0] == "u" else ESCAPES[m.group(1)], text)


# -- values on the abstract stack --------------------------------------------------------------------------------


class Unknown:
    __slots__ = ()


UNKNOWN = Unknown()


class Err:  # System.err
    __slots__ = ()


ERR = Err()


@dataclass
class Str:
    parts: tpl.Template
    raw: bool = True  # placeholders in the constant parts not read yet ({} or %s: the sink decides)
    text: str | None = None  # the source text, when the string is one constant
    keys: tuple[str, ...] = ()  # configuration keys inserted into it (a key, or "@Owner.FIELD" of a ConfigOption)


@dataclass
class OptionKey:
    """A Flink ConfigOption being built in this class (ConfigOptions.key("...")...), or a reference to one in
    another class's static field ("@owner.FIELD", resolved once every class is read)."""

    key: str


@dataclass
class Builder:
    parts: list = field(default_factory=list)
    keys: list = field(default_factory=list)


@dataclass
class Arr:
    items: list = field(default_factory=list)


@dataclass
class New:
    cls: str


@dataclass
class Alt:
    """Either of two strings (`cond ? "a" : "b"`): a sink gets each."""

    options: list


def _as_parts(value) -> tpl.Template:
    return value.parts if isinstance(value, Str) else (tpl.HOLE,)


def _keys_of(value) -> tuple[str, ...]:
    if isinstance(value, Str):
        return value.keys
    if isinstance(value, OptionKey):
        return (value.key,)
    if isinstance(value, Arr):
        return tuple(k for item in value.items for k in _keys_of(item))
    return ()


def params(descriptor: str) -> tuple[list[str], str]:
    inner, _, ret = descriptor[1:].partition(")")
    return DESCRIPTOR_ITEM.findall(inner), ret


# -- one class -----------------------------------------------------------------------------------------------------


@dataclass
class RawMessage:
    """A message reaching a sink; `cls` of a constructor is checked to be a Throwable once all classes are read."""

    value: Str
    style: str  # literal | format | slf4j
    cls: str | None
    level: str | None
    origin: str
    where: str
    keys: tuple[str, ...]
    needs_throwable: bool


@dataclass
class ClassInfo:
    name: str = ""  # dotted binary name
    super: str = ""
    is_enum: bool = False
    methods: list[tuple[str, list[tuple[int, str, str]]]] = field(default_factory=list)
    recipes: dict[int, str] = field(default_factory=dict)
    statics: dict[str, object] = field(default_factory=dict)  # static fields <clinit> sets to strings / options


def parse_javap(lines: Iterable[str]) -> Iterator[ClassInfo]:  # noqa: C901 (one case per section of the output)
    """Split javap -c -v -p output into classes: name, superclass, methods' instructions, concat recipes."""
    info: ClassInfo | None = None
    code: list[tuple[int, str, str]] | None = None
    method = ""
    bootstrap: int | None = None
    in_bootstrap = False
    for line in lines:
        if line.startswith("Classfile "):
            if info is not None:
                yield info
            info, code, in_bootstrap = ClassInfo(), None, False
            continue
        if info is None:
            continue
        if in_bootstrap:
            head = re.match(r"^  (\d+): #\d+ (.*)$", line)
            if head:
                bootstrap = int(head.group(1)) if "makeConcatWithConstants" in head.group(2) else None
            elif bootstrap is not None and line.startswith("      #"):
                info.recipes[bootstrap] = decode(line.strip().split(" ", 1)[1] if " " in line.strip() else "")
                bootstrap = None
            continue
        if line.startswith("  this_class:"):
            info.name = line.rsplit("// ", 1)[-1].strip().replace("/", ".")
        elif line.startswith("  super_class:"):
            info.super = line.rsplit("// ", 1)[-1].strip().replace("/", ".")
            info.is_enum = info.super == "java.lang.Enum"
        elif line.startswith("BootstrapMethods:"):
            in_bootstrap, code = True, None
        elif line.startswith("  ") and not line.startswith("   ") and line.rstrip().endswith(";"):
            method, code = line.strip(), None
        elif line == "    Code:":
            code = []
            info.methods.append((method, code))
        elif code is not None:
            m = INSTRUCTION.match(line)
            if m:
                code.append((int(m.group(1)), m.group(2), m.group(3)))
    if info is not None:
        yield info


class MethodRun:
    """Runs one method's instructions on the abstract stack and collects the messages reaching sinks."""

    def __init__(self, info: ClassInfo, method: str, where: str, read: ClassRead):
        self.info, self.where, self.read = info, where, read
        self.out, self.config_keys = read.messages, read.config_keys
        self.clinit = method.startswith("static {}")
        self.stack: list = []
        self.locals: dict[str, object] = {}
        self.targets: dict[int, list] = {}
        self.joins: dict[int, list] = {}  # the stack a goto carries to its target

    def pop(self, n: int = 1) -> list:
        if n <= 0:
            return []
        taken = self.stack[-n:]
        del self.stack[-n:]
        return [UNKNOWN] * (n - len(taken)) + taken

    def run(self, code: list[tuple[int, str, str]]) -> None:
        ended = False
        for offset, op, rest in code:
            if ended:
                self.stack = list(self.targets.get(offset, []))
                ended = False
            elif offset in self.joins and self.stack:
                other, top = self.joins[offset], self.stack[-1]
                if (
                    len(other) == len(self.stack)
                    and isinstance(other[-1], Str)
                    and isinstance(top, Str)
                    and other[-1] != top
                ):
                    self.stack[-1] = Alt([other[-1], top])
            self.step(op, rest)
            if op in ENDS:
                if op.startswith("goto"):
                    self.joins.setdefault(int(rest.split()[0]), list(self.stack))
                ended = True

    def step(self, op: str, rest: str) -> None:  # noqa: C901 - one branch per kind of instruction
        stack = self.stack
        if op in ("ldc", "ldc_w"):
            comment = rest.partition("// ")[2]
            if comment.startswith("String "):
                text = decode(comment[7:])
                stack.append(Str((text,), True, text))
            else:
                stack.append(UNKNOWN)
        elif op.startswith("invoke"):
            self.invoke(op, rest)
        elif op == "new":
            cls = rest.partition("// class ")[2].strip()
            stack.append(Builder() if cls in ("java/lang/StringBuilder", "java/lang/StringBuffer") else New(cls))
        elif op == "getstatic":
            stack.append(self.static_value(rest))
        elif op == "putstatic":
            self.put_static(rest, self.pop()[0])
        elif op.startswith("aload"):
            stack.append(self.locals.get(_slot(op, rest), UNKNOWN))
        elif op[1:5] == "load":
            stack.append(UNKNOWN)
        elif op.startswith("astore"):
            self.locals[_slot(op, rest)] = self.pop()[0]
        elif op[1:6] == "store":
            self.pop()
        elif op == "anewarray":
            self.pop()
            stack.append(Arr())
        elif op == "aastore":
            arr, _, value = self.pop(3)
            if isinstance(arr, Arr):
                arr.items.append(value)
        elif op == "dup":
            stack.append(stack[-1] if stack else UNKNOWN)
        elif op == "dup_x1":
            a, b = self.pop(2)
            stack.extend((b, a, b))
        elif op == "dup_x2":
            a, b, c = self.pop(3)
            stack.extend((c, a, b, c))
        elif op == "dup2":
            stack.append(stack[-1] if stack else UNKNOWN)
        elif op == "swap":
            a, b = self.pop(2)
            stack.extend((b, a))
        elif op == "putfield":
            self.pop(2)
        elif op in BRANCHES_POP1 or op in BRANCHES_POP2:
            self.pop(2 if op in BRANCHES_POP2 else 1)
            self.targets.setdefault(int(rest.split()[0]), list(stack))
        elif op in PUSH1:
            stack.append(UNKNOWN)
        elif op in POP1_PUSH1:
            self.pop()
            stack.append(UNKNOWN)
        elif op in POP2_PUSH1:
            self.pop(2)
            stack.append(UNKNOWN)
        elif op in POP1 or op in ENDS:
            self.pop()
        elif op in POP3:
            self.pop(3)
        elif op == "multianewarray":
            self.pop(int(rest.split()[-1]) if rest.split()[-1].isdigit() else 1)
            stack.append(UNKNOWN)

    def _field(self, rest: str) -> tuple[str, str, str]:
        member, _, descriptor = rest.partition("// Field ")[2].partition(":")
        owner, _, name = member.rpartition(".")
        return owner or self.info.name.replace(".", "/"), name, descriptor.strip()

    def static_value(self, rest: str):
        if "java/lang/System.err:" in rest:
            return ERR
        owner, name, descriptor = self._field(rest)
        if owner == self.info.name.replace(".", "/") and name in self.info.statics:
            return self.info.statics[name]
        return OptionKey(f"@{owner}.{name}") if descriptor == CONFIG_OPTION else UNKNOWN

    def put_static(self, rest: str, value) -> None:
        owner, name, _ = self._field(rest)
        if owner != self.info.name.replace(".", "/"):
            return
        if isinstance(value, Str) and self.clinit:
            self.info.statics[name] = value
        elif isinstance(value, OptionKey) and not value.key.startswith("@"):
            self.info.statics[name] = value
            self.read.option_fields[f"{owner}.{name}"] = value.key

    def invoke(self, op: str, rest: str) -> None:
        comment = rest.partition("// ")[2]
        kind, _, target = comment.partition(" ")
        if kind == "InvokeDynamic":
            index, _, tail = target[1:].partition(":")
            name, _, descriptor = tail.partition(":")
            args, ret = params(descriptor)
            values = self.pop(len(args))
            if name == "makeConcatWithConstants" and int(index) in self.info.recipes:
                self.stack.append(self.concat(self.info.recipes[int(index)], values))
            elif ret != "V":
                self.stack.append(UNKNOWN)
            return
        member, _, descriptor = target.partition(":")
        owner, _, name = member.rpartition(".")
        owner = owner or self.info.name.replace(".", "/")
        name = name.strip('"')
        args, ret = params(descriptor)
        values = self.pop(len(args))
        receiver = self.pop()[0] if op != "invokestatic" else None
        result = self.call(owner, name, args, values, receiver)
        if ret != "V":
            self.stack.append(result)

    def concat(self, recipe: str, values: list) -> Str:
        parts: list[tpl.Part] = []
        args = iter(values)
        for ch in recipe:
            if ch in "\x01\x02":
                parts.extend(_as_parts(next(args, UNKNOWN)))
            else:
                parts.append(ch)
        return Str(tpl.normalise(parts), keys=tuple(k for v in values for k in _keys_of(v)))

    def call(self, owner: str, name: str, args: list[str], values: list, receiver):  # noqa: C901
        if owner == "java/lang/StringBuilder" or owner == "java/lang/StringBuffer":
            if name == "<init>":
                if isinstance(receiver, Builder) and values and args[0] == "Ljava/lang/String;":
                    receiver.parts = list(_as_parts(values[0]))
                return UNKNOWN
            if name == "append" and isinstance(receiver, Builder):
                receiver.parts.extend(_as_parts(values[0]) if values else ())
                receiver.keys.extend(_keys_of(values[0]) if values else ())
                return receiver
            if name == "toString" and isinstance(receiver, Builder):
                return Str(tpl.normalise(receiver.parts), keys=tuple(receiver.keys))
            return UNKNOWN
        if owner == "java/lang/String":
            if name == "format":
                fmt_at = 1 if args and args[0] == "Ljava/util/Locale;" else 0
                fmt = values[fmt_at] if len(values) > fmt_at else UNKNOWN
                keys = tuple(k for v in values for k in _keys_of(v))
                result = _styled(fmt, "format") if isinstance(fmt, Str) else Str((tpl.HOLE,), False)
                result.keys = keys
                return result
            if name == "valueOf" and values and isinstance(values[0], Str):
                return values[0]
            if name == "concat" and isinstance(receiver, Str):
                return Str(tpl.normalise((*receiver.parts, *_as_parts(values[0]))), receiver.raw and _raw(values[0]))
            return UNKNOWN
        if owner == "org/apache/flink/configuration/ConfigOptions" and name == "key":
            if values and isinstance(values[0], Str) and values[0].text:
                self.config_keys.add(values[0].text)
                return OptionKey(values[0].text)
            return UNKNOWN
        if isinstance(receiver, OptionKey):  # the option's builder chain, or its key()
            if name == "key":
                known = not receiver.key.startswith("@")
                return Str((receiver.key,), True, receiver.key, (receiver.key,)) if known else receiver
            return receiver
        if (owner, name) in ENRICHERS:
            for arg, value in zip(args, values, strict=False):
                if arg == "Ljava/lang/String;":
                    self.emit(value, "literal", ENRICHERS[(owner, name)], "throw", [])
            return UNKNOWN
        if name == "<init>":
            self.constructed(owner, args, values, receiver)
            return UNKNOWN
        if owner in LOGGERS or owner.endswith("/slf4j/Logger"):
            self.logged(name, args, values)
        elif name in CHECKS and CHECK_OWNERS.search(owner):
            self.checked(name, args, values)
        elif isinstance(receiver, Err) and name in ("println", "print", "printf", "format"):
            style = "format" if name in ("printf", "format") else "literal"
            for i, arg in enumerate(args):
                if arg in ("Ljava/lang/String;", "Ljava/lang/Object;"):
                    self.emit(values[i], style, None, "stderr", values[i + 1 :])
                    break
        return UNKNOWN

    def note_keys(self, values: list) -> tuple[str, ...]:
        """Configuration keys among a sink's other arguments: key-like constants and ConfigOptions' keys."""
        found: list[str] = []
        for value in values:
            for item in value.items if isinstance(value, Arr) else [value]:
                if isinstance(item, Str) and item.text and CONFIG_KEY.match(item.text):
                    found.append(item.text)
                found += _keys_of(item)
        return tuple(found)

    def emit(self, value, style: str, cls: str | None, level: str | None, extra: list, throwable: bool = False):
        if isinstance(value, Alt):
            for option in value.options:
                self.emit(option, style, cls, level, extra, throwable)
            return
        if not isinstance(value, Str) or all(part is tpl.HOLE for part in value.parts):
            return
        where = self.where + self.info.name
        keys = self.note_keys(extra) + value.keys
        self.out.append(RawMessage(value, style, cls, level, self.info.name, where, keys, throwable))

    def constructed(self, owner: str, args: list[str], values: list, receiver) -> None:
        cls = owner.replace("/", ".")
        if not isinstance(receiver, New):  # super(...) / this(...) in a constructor: the class being built
            cls = self.info.name
        if self.clinit and self.info.is_enum and owner.replace("/", ".") == self.info.name:
            if REASON_ENUM.search(self.info.name.rsplit(".", 1)[-1].rsplit("$", 1)[-1]):
                for value in [v for a, v in zip(args, values, strict=False) if a == "Ljava/lang/String;"][1:]:
                    self.emit(value, "literal", None, None, [])
            return
        for i, (arg, value) in enumerate(zip(args, values, strict=False)):
            if arg == "Ljava/lang/String;" and isinstance(value, Str):
                style = "format" if i + 1 < len(args) and args[i + 1] == "[Ljava/lang/Object;" else "literal"
                self.emit(value, style, cls, "throw", values[i + 1 :], throwable=True)
                return

    def logged(self, name: str, args: list[str], values: list) -> None:
        level = LOG_LEVELS.get(name)
        if level is None:
            return
        for i, arg in enumerate(args):
            if arg in ("Ljava/lang/String;", "Ljava/lang/Object;"):
                self.emit(values[i], "slf4j", None, level, values[i + 1 :])
                return

    def checked(self, name: str, args: list[str], values: list) -> None:
        if len(args) < 2 or args[1] not in ("Ljava/lang/String;", "Ljava/lang/Object;"):
            return
        style = "format" if len(args) > 2 else "literal"
        self.emit(values[1], style, CHECKS[name], "throw", values[2:])


def _raw(value) -> bool:
    return isinstance(value, Str) and value.raw


def _slot(op: str, rest: str) -> str:
    return op.rsplit("_", 1)[1] if "_" in op else rest.split()[0]


def _styled(value: Str, style: str) -> Str:
    """Read the placeholders of a string's constant parts the way its sink does."""
    if not value.raw or style == "literal":
        return Str(value.parts, False, value.text, value.keys)
    parse = tpl.from_format if style == "format" else tpl.from_slf4j
    parts: list[tpl.Part] = []
    for part in value.parts:
        parts.extend((tpl.HOLE,) if part is tpl.HOLE else parse(part) or ("",))
    return Str(tpl.normalise(parts), False, value.text, value.keys)


# -- many classes --------------------------------------------------------------------------------------------------


@dataclass
class ClassRead:
    """What the class files of one source say: messages, the classes they define, superclasses, config keys."""

    messages: list[RawMessage] = field(default_factory=list)
    classes: dict[str, str] = field(default_factory=dict)  # dotted name -> where
    supers: dict[str, str] = field(default_factory=dict)
    config_keys: set[str] = field(default_factory=set)
    option_fields: dict[str, str] = field(default_factory=dict)  # "owner/Class.FIELD" of a ConfigOption -> its key
    count: int = 0


def read_classes(lines: Iterable[str], where: str, read: ClassRead) -> None:
    """Run every method of every class in `lines` (javap output) and add what it finds to `read`."""
    for info in parse_javap(lines):
        if not info.name:
            continue
        read.count += 1
        read.classes.setdefault(info.name, where + info.name)
        if info.super:
            read.supers[info.name] = info.super
        # the static initializer first: the strings and options it puts in static fields are used by the rest
        for method, code in sorted(info.methods, key=lambda m: not m[0].startswith("static {}")):
            MethodRun(info, method, where, read).run(code)


def javap_lines(classpath: Path, names: list[str], javap: str = "javap") -> Iterator[str]:
    """javap -c -v -p over `names` (class names in the classpath), in batches, streamed line by line."""
    for start in range(0, len(names), JAVAP_BATCH):
        batch = names[start : start + JAVAP_BATCH]
        with subprocess.Popen(
            [javap, "-J-Xss4m", "-c", "-v", "-p", "-cp", str(classpath), *batch],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            errors="replace",
        ) as proc:
            assert proc.stdout is not None
            yield from (line.rstrip("\n") for line in proc.stdout)


def jar_classes(jar: Path, keep: Callable[[str], bool]) -> list[str]:
    """The class names in `jar` (not in nested jars) that `keep` accepts, sorted (a stable order of work)."""
    with zipfile.ZipFile(jar) as zf:
        names = [n[:-6].replace("/", ".") for n in zf.namelist() if n.endswith(".class") and "META-INF" not in n]
    return sorted(n for n in names if keep(n.replace(".", "/")))


def nested_jars(jar: Path, into: Path) -> list[Path]:
    """Jars packed inside `jar` (flink-dist's flink-rpc-akka.jar, the planner loader's planner), unpacked."""
    found = []
    with zipfile.ZipFile(jar) as zf:
        for name in sorted(n for n in zf.namelist() if n.endswith(".jar")):
            target = into / jar.name / Path(name).name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(name))
            found.append(target)
    return found


class Hierarchy:
    """Is a class a Throwable: by the superclasses read, else by its name (JDK and unread library classes)."""

    def __init__(self, supers: dict[str, str]):
        self.supers = supers
        self.memo: dict[str, bool] = {}

    def throwable(self, name: str) -> bool:
        if name in self.memo:
            return self.memo[name]
        seen, current, result = set(), name, False
        while current not in seen:
            seen.add(current)
            if current in self.memo:
                result = self.memo[current]
                break
            if current in ROOTS or current not in self.supers:  # a class not read: its name tells
                result = current in ROOTS or bool(THROWABLE_NAME.search(current))
                break
            current = self.supers[current]
        self.memo[name] = result
        return result


def candidates(read: ClassRead, hierarchy: Hierarchy, rename: Callable[[str], str] = lambda n: n) -> list[Candidate]:
    """The messages of `read` on a failure path, as candidates (constructors of non-Throwables dropped)."""
    out = []
    for raw in read.messages:
        if raw.needs_throwable and (raw.cls is None or not hierarchy.throwable(raw.cls)):
            continue
        value = _styled(raw.value, raw.style)
        text = value.text if value.text is not None else tpl.render(value.parts)
        cls = rename(raw.cls) if raw.cls else None
        keys = tuple(sorted({read.option_fields.get(k[1:], "") if k.startswith("@") else k for k in raw.keys} - {""}))
        out.append(Candidate("message", text, value.parts, cls, raw.level, rename(raw.origin), raw.where, keys))
    return out
