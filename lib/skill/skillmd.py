"""Parse one SKILL.md: YAML frontmatter between '---' lines, then the Markdown body (the prompt).

The parser never raises for bad content: it returns what it could read and a list of problems,
each with a line number, so loading (lenient) and checking (strict) share one reading of a file.
"""

import errno
import functools
import os
import stat

from .. import fastjson
from ..errors import NexusError
from ..paths import is_valid_name, name_problem

MAX_BYTES = 256 * 1024
MAX_DESCRIPTION, MAX_COMPATIBILITY = 1024, 500  # characters, as YAML gives the value (the Agent Skills limits)
MAX_REPAIRS = 20  # unquoted ': ' values read as text; past this, the file is reported, not re-parsed again
PRODUCT_KEYS = ("nexus", "openclaw", "clawdbot")


FILE_NAMES = ("SKILL.md", "skill.md")  # the second read as the reference validator reads it; check warns


def file_in(skill_dir):
    """The skill file of a folder: its SKILL.md, else a lowercase skill.md, else the SKILL.md it lacks."""
    for name in FILE_NAMES:
        path = os.path.join(skill_dir, name)
        if os.path.lexists(path):
            return path
    return os.path.join(skill_dir, FILE_NAMES[0])


class Problem:
    def __init__(self, severity, message, line=None, code=None):
        self.severity, self.message, self.line, self.code = severity, message, line, code

    def format(self, path, label_errors=False):
        """`path:line: message`, with `warning: ` before a warning's message (and an error's, if asked)."""
        where = f"{path}:{self.line}" if self.line else path
        label = f"{self.severity}: " if label_errors or self.severity != "error" else ""
        return f"{where}: {label}{self.message}"

    def as_dict(self, path):
        return {"path": path, "line": self.line, "severity": self.severity, "code": self.code,
                "message": self.message}


class SkillFile:
    """What one SKILL.md says. `ok` is False when the skill cannot be loaded."""

    def __init__(self, path):
        self.path = path
        self.frontmatter = {}
        self.lines = {}  # frontmatter key -> line number
        self.body = ""
        self.sha256 = None
        self.mtime_ns = None  # of the file opened, taken before it was read
        self.meta = {}  # the product object of metadata (nexus, or openclaw / clawdbot)
        self.meta_key = None
        self.name = None
        self.parsed = False  # the frontmatter was read as a mapping
        self.problems = []

    @property
    def ok(self):
        return not any(p.severity == "error" for p in self.problems)

    def error(self, message, line=None, code=None):
        self.problems.append(Problem("error", message, line, code))

    def warn(self, message, line=None, code=None):
        self.problems.append(Problem("warning", message, line, code))


def read(path, folder_name=None):
    """Read and parse the SKILL.md at `path`; `folder_name` is the skill folder's name."""
    skill = SkillFile(path)
    data = _read_bytes(skill)
    if data is None:
        return skill
    import hashlib  # only for a SKILL.md that is read: the gateway's way reads the manifest instead

    skill.sha256 = hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        skill.error(f"not UTF-8: byte 0x{data[e.start]:02x} at offset {e.start}", code="encoding")
        return skill
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    split = _split(skill, text)
    if split is None:
        return skill
    frontmatter_text, skill.body = split
    _parse_frontmatter(skill, frontmatter_text)
    if skill.parsed:
        _read_metadata(skill)
        _check_identity(skill, folder_name or os.path.basename(os.path.dirname(path)))
    return skill


def _read_bytes(skill):
    try:
        fd = os.open(skill.path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the scan
    except FileNotFoundError:
        reason = "dangling symlink" if os.path.islink(skill.path) else "no such file"
        skill.error(reason, code="unreadable")
        return None
    except OSError as e:
        reason = "symlink loop" if e.errno == errno.ELOOP else f"cannot read: {e.strerror}"
        skill.error(reason, code="unreadable")
        return None
    try:
        info = os.fstat(fd)
        skill.mtime_ns = info.st_mtime_ns
        if not stat.S_ISREG(info.st_mode):
            skill.error("not a regular file", code="unreadable")
            return None
        size = info.st_size
        if size <= MAX_BYTES:
            data = os.read(fd, size + 1)  # one byte more than its size: all of it, unless it grew meanwhile
            while len(data) != size and len(data) <= MAX_BYTES and (chunk := os.read(fd, 65536)):
                data += chunk  # it grew, or the read was short (a network file system may give less)
            size = max(size, len(data))
        if size > MAX_BYTES:
            skill.error(f"too large: {size} bytes (the limit is {MAX_BYTES // 1024} KB)", code="too-large")
            return None
        return data
    except OSError as e:
        skill.error(f"cannot read: {e.strerror}", code="unreadable")
        return None
    finally:
        os.close(fd)


def _split(skill, text):
    if not text.strip():
        skill.error("empty file", code="frontmatter")
        return None
    start = text.find("\n")
    if text[:start if start >= 0 else len(text)].rstrip() != "---":
        skill.error("no frontmatter: the file must start with a '---' line", 1, "frontmatter")
        return None
    end = start
    while start >= 0 and (end := text.find("\n---", end)) >= 0:  # the next line that starts with ---
        line_end = text.find("\n", end + 1)
        line_end = len(text) if line_end < 0 else line_end
        if text[end + 1:line_end].rstrip() == "---":
            # The frontmatter keeps its last line break: a `|` value ends with it, as other loaders read it.
            return text[start + 1:end + 1], text[line_end + 1:].lstrip("\n")
        end = line_end
    skill.error("unterminated frontmatter: no closing '---' line", 1, "frontmatter")
    return None


def body(path):
    """The prompt of a SKILL.md: everything after its frontmatter (no YAML parsing)."""
    skill = SkillFile(path)
    data = _read_bytes(skill)
    text = data.decode("utf-8", "replace").removeprefix("\ufeff").replace("\r\n", "\n") if data else ""
    split = _split(skill, text) if data else None
    if split is None:
        raise OSError(skill.problems[0].message if skill.problems else "cannot read")
    return split[1]


def frontmatter_text(data):
    """The frontmatter of a SKILL.md's bytes, as `read` splits it; None when they are not UTF-8 or have none."""
    try:
        text = data.decode("utf-8").removeprefix("\ufeff").replace("\r\n", "\n")
    except UnicodeDecodeError:
        return None
    split = _split(SkillFile(None), text)
    return split and split[0]


def prompt(entry):
    """A skill's instructions with {baseDir} resolved; NexusError when its SKILL.md cannot be read."""
    try:
        return body(entry["filePath"]).replace("{baseDir}", entry["dir"])
    except OSError as e:
        raise NexusError(f"cannot read '{entry['filePath']}': {e}") from None


def _loader_class(text):
    """PyYAML's C loader when it is installed, else its Python one; for a text with a tab, always the
    Python one taught to read a tab between tokens as the C one does (_tab_loader): libyaml accepts
    `key:<tab>value`, which PyYAML's own scanner refuses, and a verdict must not depend on which is
    installed."""
    import yaml  # 20-45 ms: only where a SKILL.md is read, never on the gateway's way

    if "\t" in text:
        return _tab_loader()
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def _tab_loader():
    import yaml  # 20-45 ms: only where a SKILL.md is read, never on the gateway's way

    class TabLoader(yaml.SafeLoader):
        """SafeLoader, with a tab within a line read as a space is, as libyaml reads it: between tokens
        (not as indentation, nor right after a block's '-', '?' or ':'), and inside a plain value."""

        BREAKS = "\0\r\n\x85\u2028\u2029"

        def scan_to_next_token(self):
            if self.index == 0 and self.peek() == "\ufeff":
                self.forward()
            while True:
                while self.peek() == " " or self.peek() == "\t" and self._tab_separates():
                    self.forward()
                if self.peek() == "#":
                    while self.peek() not in self.BREAKS:
                        self.forward()
                if not self.scan_line_break():
                    return
                if not self.flow_level:
                    self.allow_simple_key = True

        def _tab_separates(self):
            before = self.buffer[self.pointer - self.column:self.pointer].strip(" ")
            return bool(self.flow_level or before and before not in ("-", "?", ":"))

        def scan_plain_spaces(self, indent, start_mark):
            length = 0
            while self.peek(length) in " \t":
                length += 1
            if "\t" not in self.prefix(length):
                return super().scan_plain_spaces(indent, start_mark)
            if self.peek(length) not in self.BREAKS + "#":
                run = self.prefix(length)  # blanks inside the value: kept as they are
                self.forward(length)
                return [run]
            self.forward(length)  # blanks that end a line are dropped, as spaces are
            return super().scan_plain_spaces(indent, start_mark)

    return TabLoader


def _parse_frontmatter(skill, text):
    """Read the frontmatter mapping; a plain top-level value with an unquoted ': ' is read as if quoted."""
    simple = simple_frontmatter(text)
    if simple:
        for key, value, line in simple:
            if key in skill.frontmatter:
                skill.warn(f"duplicate key '{key}': the last one wins", line, "duplicate-key")
            skill.lines[key], skill.frontmatter[key] = line, value
        skill.parsed = True
        return
    import yaml  # 20-45 ms: only where a SKILL.md is read, never on the gateway's way

    for repairs in range(MAX_REPAIRS + 1):  # each repair quotes one more line
        try:
            _read_mapping(skill, text)
            return
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            problem = getattr(e, "problem", None) or str(e)
            colon = "mapping values are not allowed" in problem
            repaired = _quote_value(text, mark.line) if colon and mark and repairs < MAX_REPAIRS else None
            if repaired is None:
                line = mark.line + 2 if mark else None
                skill.error(f"invalid YAML in frontmatter: {problem}{_hint(text, mark, colon)}", line, "yaml")
                return
            text, key = repaired
            skill.warn(f"the value of '{key}' has an unquoted ': ', which other loaders reject; "
                       "it was read as text: quote the value", mark.line + 2, "colon")


_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_YAML_WORDS = frozenset(("yes", "no", "true", "false", "on", "off", "null"))  # keys YAML reads as not text
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")  # a plain scalar starting with one means something else


def simple_frontmatter(text):
    """[(key, value, line)] when every line of the frontmatter is blank, a comment, or `key: value`
    that YAML reads just as it stands: a plain or simply quoted value (kept as text, as YAML's are
    here), or a JSON mapping on one line. None for anything else, which YAML reads instead: most
    skills need no YAML machinery, and tests/test_check.py holds both readings to the same result."""
    found = []
    for number, line in enumerate(text.split("\n"), 2):
        if not line.isprintable():  # tabs, and what YAML takes for a line break
            return None
        if not line or line[0] == "#":
            continue
        key, colon, rest = line.partition(":")
        if (not colon or rest[:1] not in ("", " ") or not key or key[0] in "-0123456789"
                or not _KEY_CHARS.issuperset(key) or key.lower() in _YAML_WORDS):
            return None
        value = _simple_value(rest.strip(" "))
        if value is None:
            return None
        found.append((key, value, number))
    return found or None


def _simple_value(text):
    if not text:
        return ""
    first, inner = text[0], text[1:-1]
    if first == "{":  # JSON, where YAML's flow mapping reads it the same: no escapes, no floats
        try:
            value = fastjson.loads(text)
        except ValueError:
            return None
        return value if isinstance(value, dict) and "\\" not in text and not _has_float(value) else None
    if first in "\"'":
        return inner if len(text) > 1 and text[-1] == first and first not in inner and "\\" not in inner else None
    if first in _INDICATORS or ": " in text or text[-1] == ":" or " #" in text:
        return None
    return text


def _has_float(value):
    """YAML 1.1 reads JSON's 1e5 as text: a float is left to YAML."""
    todo = [value]
    while todo:
        value = todo.pop()
        if type(value) is float:
            return True
        if type(value) is dict:
            todo.extend(value.values())
        elif type(value) is list:
            todo.extend(value)
    return False


def _has_alias(text):
    """True when the YAML uses an alias: expanding nested aliases can cost exponential time and memory."""
    if "*" not in text:
        return False
    import yaml  # 20-45 ms: only where a SKILL.md is read, never on the gateway's way

    try:
        return any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, Loader=_loader_class(text)))
    except yaml.YAMLError:
        return False  # the parse that follows reports it


def _hint(text, mark, colon):
    if colon:
        return " (a value with ': ' in it must be quoted)"
    lines = text.split("\n")
    if mark and mark.line < len(lines) and "\t" in lines[mark.line]:
        return " (indent with spaces, not tabs)"
    return ""


def _quote_value(text, index):
    """`text` with line `index`, a plain top-level `key: value`, quoted as `key: "value"`; else None."""
    lines = text.split("\n")
    key, sep, value = lines[index].partition(": ")
    value = value.strip()
    plain_key = key.replace("-", "").replace("_", "").isalnum()
    if not sep or not plain_key or not value or value[0] in "\"'[]{}|>&*!%@`#,?":  # not a plain scalar
        return None
    lines[index] = f"{key}: {fastjson.dumps(value)}"
    return "\n".join(lines), key


def _read_mapping(skill, text):
    import yaml  # 20-45 ms: only where a SKILL.md is read, never on the gateway's way

    if _has_alias(text):
        skill.error("YAML aliases (*name) are not allowed in frontmatter", None, "yaml")
        return
    loader = _loader_class(text)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            skill.error("empty frontmatter", 2, "frontmatter")
            return
        if not isinstance(node, yaml.MappingNode):
            skill.error("frontmatter is not a mapping of keys to values", node.start_mark.line + 2, "frontmatter")
            return
        source_lines = text.split("\n")
        for key_node, value_node in node.value:
            key = str(loader.construct_object(key_node, deep=True))
            line = key_node.start_mark.line + 2
            if key in skill.frontmatter:
                skill.warn(f"duplicate key '{key}': the last one wins", line, "duplicate-key")
            skill.lines[key] = line
            if isinstance(value_node, yaml.ScalarNode):
                # Top-level scalars keep their text: 'name: off' is "off", 'version: 1.10' is "1.10".
                skill.frontmatter[key] = value_node.value
                if not value_node.style:  # plain (the C loader says "", the Python one None)
                    _warn_comment(skill, key, value_node, source_lines)
            else:
                skill.frontmatter[key] = _jsonable(loader.construct_object(value_node, deep=True))
        skill.parsed = True
    finally:
        loader.dispose()


def _warn_comment(skill, key, node, source_lines):
    end = node.end_mark
    rest = source_lines[end.line][end.column:] if end.line < len(source_lines) else ""
    if rest.lstrip().startswith("#"):
        skill.warn(f"'{key}' was cut at ' #', which starts a YAML comment; quote the value to keep it",
                   end.line + 2, "comment")


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


jsonable = _jsonable  # what YAML gave, as JSON has it: the Skills extension sends frontmatter so too


def yaml12(text):
    """What a YAML 1.2 parser (its core schema: the JavaScript `yaml` of MCP hosts) makes of a plain scalar."""
    import re  # the hosts' reading only: `nexus skills check` and publishing over MCP

    if text in ("", "~", "null", "Null", "NULL"):
        return None
    if text in ("true", "True", "TRUE", "false", "False", "FALSE"):
        return text[0] in "tT"
    if re.fullmatch(r"[-+]?[0-9]+", text):
        return int(text, 10)
    if re.fullmatch(r"0o[0-7]+|0x[0-9a-fA-F]+", text):
        return int(text[2:], 8 if text[1] == "o" else 16)
    if re.fullmatch(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?", text):
        return float(text)
    if re.fullmatch(r"[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)", text):
        return float(text.replace(".", "").lower())
    return text


def host_differences(text):
    """[(line, what)] of a frontmatter's text that a YAML 1.2 host reads other than PyYAML (YAML 1.1) does,
    or rejects: a plain scalar 1.1 alone resolves (`yes`, `off`, `0755`, `1_000`, `1:30`, a timestamp) or
    1.2 alone does (`0o17`, `1e3`), and a key given twice in one mapping. [] when YAML cannot read it at all
    (which is said elsewhere)."""
    import yaml  # 20-45 ms: only where a SKILL.md is read, never on the gateway's way

    loader = _loader_class(text)(text)
    try:
        todo, found = [loader.get_single_node()], []
        while todo:
            node = todo.pop()
            if isinstance(node, yaml.MappingNode):
                seen = set()
                for key, value in node.value:
                    if isinstance(key, yaml.ScalarNode) and key.value in seen:
                        found.append((key.start_mark.line + 2, f"the key '{key.value}' is given twice in one "
                                                               "mapping, which YAML 1.2 hosts reject"))
                    seen.add(getattr(key, "value", None))
                    todo += [value, key]
            elif isinstance(node, yaml.SequenceNode):
                todo += reversed(node.value)
            elif isinstance(node, yaml.ScalarNode) and not node.style:  # plain: "" (C loader) or None
                old, new = _jsonable(loader.construct_object(node)), yaml12(node.value)
                if (type(old), repr(old)) != (type(new), repr(new)):
                    found.append((node.start_mark.line + 2, f"'{node.value}' is {fastjson.dumps(old)} to YAML 1.1 "
                                  f"(PyYAML) but {fastjson.dumps(new)} to a YAML 1.2 host: quote it"))
        return sorted(found)
    except yaml.YAMLError:
        return []
    finally:
        loader.dispose()


def _read_metadata(skill):
    raw = skill.frontmatter.get("metadata")
    line = skill.lines.get("metadata")
    if raw is None or raw == "":
        return
    # Metadata nexus cannot read is dropped with a warning (an error for `nexus skills check`): the skill
    # still loads, as a prompt skill unless its frontmatter says more.
    if isinstance(raw, str):
        raw = _parse_metadata_text(raw)
        if raw is None:
            skill.warn("metadata is neither a mapping nor valid JSON: it is ignored", line, "metadata")
            return
    if not isinstance(raw, dict):
        skill.warn("metadata must be a mapping: it is ignored", line, "metadata")
        return
    for key in PRODUCT_KEYS:
        if key in raw:
            if not isinstance(raw[key], dict):  # OpenClaw falls back to the next key: so does nexus
                skill.warn(f"metadata.{key} must be a mapping: it is ignored", line, "metadata")
                continue
            skill.meta, skill.meta_key = raw[key], key
            return


def _parse_metadata_text(text):
    """JSON, else YAML flow syntax, which accepts the trailing commas of many published skills."""
    try:
        return fastjson.loads(text)
    except ValueError:
        pass
    import yaml  # 20-45 ms: only where a SKILL.md is read, never on the gateway's way

    if _has_alias(text):
        return None
    try:
        return _jsonable(yaml.load(text, Loader=_loader_class(text)))
    except yaml.YAMLError:
        return None


def _check_identity(skill, folder_name):
    name = skill.frontmatter.get("name")
    line = skill.lines.get("name")
    if name in (None, ""):
        skill.warn(f"no name: using the folder's name '{folder_name}'", code="name")
        name = folder_name
    if isinstance(name, str) and not name.isascii():  # read as the reference validator reads it
        import unicodedata

        name, folder_name = (unicodedata.normalize("NFKC", n.strip()) for n in (name, folder_name))
    if not is_valid_name(name):
        skill.error(f"invalid name {name!r}: {name_problem(name)}", line, "name")
    else:
        if name != folder_name:
            skill.warn(f"name '{name}' differs from its folder '{folder_name}'; using '{name}'", line, "name")
        skill.name = name
    description = skill.frontmatter.get("description")
    if description is not None and not isinstance(description, str):
        skill.error("description must be text, not a list or mapping", skill.lines["description"], "description")
    elif not description or not description.strip():
        skill.error("no description", skill.lines.get("description"), "description")
    elif len(description) > MAX_DESCRIPTION:
        skill.warn(f"description is {len(description)} characters; the limit is {MAX_DESCRIPTION}",
                   skill.lines["description"], "description")
    if "compatibility" in skill.frontmatter:
        value = skill.frontmatter["compatibility"]
        if not isinstance(value, str) or not 0 < len(value) <= MAX_COMPATIBILITY:
            skill.warn(f"compatibility must be text of 1-{MAX_COMPATIBILITY} characters", skill.lines["compatibility"],
                       "compatibility")
