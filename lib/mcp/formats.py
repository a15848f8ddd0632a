"""The three formats MCP clients keep their servers in (JSON with or without comments, TOML, YAML), each
able to read a file, and to set or remove one server's entry in its text as an editor would: only that
entry's lines change. The caller re-reads what an edit gives before it writes anything.

Each format has load(text) -> data (ValueError when it is not that format), put(text, key, name, value),
drop(text, key, name) (ValueError when the entry cannot be changed in place) and dump(data), a new file.
"""

from . import jsonc


class Json:
    name = "JSON"

    @staticmethod
    def load(text):
        return jsonc.loads(text) if text.strip() else {}

    @staticmethod
    def dump(data):
        return jsonc.render(data) + "\n"

    @staticmethod
    def _servers(text, key):
        root = jsonc.parse(text)
        if not isinstance(root.data, dict):
            raise ValueError("the document is not an object")
        found = root.member(key)
        if found and not isinstance(found[2].data, dict):
            raise ValueError(f'"{key}" is not an object')
        return root, found[2] if found else None

    @classmethod
    def put(cls, text, key, name, value):
        if not text.strip():
            return cls.dump({key: {name: value}})
        root, servers = cls._servers(text, key)
        return jsonc.put(text, servers, name, value) if servers else jsonc.put(text, root, key, {name: value})

    @classmethod
    def drop(cls, text, key, name):
        if not text.strip():
            return text
        _, servers = cls._servers(text, key)
        return jsonc.drop(text, servers, name) if servers else text


class Toml:
    """Through config.edit, which edits nexus.toml the same way: statement by statement."""

    name = "TOML"

    @staticmethod
    def load(text):
        import tomllib  # each format's library only when a client's file is in that format

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ValueError(str(e)) from None

    @staticmethod
    def dump(data):
        import tomli_w  # as in load

        return tomli_w.dumps(data)

    @classmethod
    def put(cls, text, key, name, value):
        from ..config import edit  # it brings tomllib and tomli-w: only for a TOML file

        if not text.strip():
            return cls.dump({key: {name: value}})
        old = cls.load(text).get(key, {}).get(name)
        gone = [((key, name, k), edit.UNSET) for k in (old if isinstance(old, dict) else {}) if k not in value]
        edits = [((key, name), edit.UNSET)] if old is not None and not isinstance(old, dict) else []
        return cls._edited(text, edits + gone + [((key, name, k), v) for k, v in value.items()])

    @classmethod
    def drop(cls, text, key, name):
        from ..config import edit  # it brings tomllib and tomli-w: only for a TOML file

        new = cls._edited(text, [((key, name), edit.UNSET)])
        at = next((i for i, (a, b) in enumerate(zip(text, new)) if a != b), len(new))
        if new[:at].endswith("\n\n") and new[at:].startswith("\n"):  # the blank line that set the table apart
            new = new[:at] + new[at + 1:]
        return new

    @staticmethod
    def _edited(text, edits):
        from ..config import edit  # it brings tomllib and tomli-w: only for a TOML file
        from ..errors import NexusError

        try:
            return edit.edited(text, edits)
        except NexusError as e:
            raise ValueError(str(e)) from None


class Yaml:
    """A block mapping's entry located by the YAML parser's marks: from its key's line to its value's last
    line that is not blank or a comment; an entry is written by PyYAML, indented as its neighbours."""

    name = "YAML"

    MAX_EXPANDED = 100_000  # nodes that aliases may add to a document: a few repeated anchors, not a bomb

    @classmethod
    def load(cls, text):
        import yaml  # 20-45 ms: only for a client whose file is YAML

        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()  # the node graph: an alias is one more edge, not a copy
            if node is not None and cls._expanded(node, {}) > cls._count(node) + cls.MAX_EXPANDED:
                raise ValueError(f"its aliases expand it by more than {cls.MAX_EXPANDED:,} nodes")
            data = None if node is None else loader.construct_document(node)
        except yaml.YAMLError as e:
            raise ValueError(" ".join(str(e).split())) from None
        finally:
            loader.dispose()
        return {} if data is None else data

    @classmethod
    def _expanded(cls, node, sizes):
        """How many nodes `node` stands for with every alias copied out (each shared node counted once per
        reference, each computed once)."""
        if id(node) not in sizes:
            sizes[id(node)] = None  # an alias to a node that holds it: endless
            children = [n for pair in node.value for n in pair] if node.id == "mapping" else \
                node.value if node.id == "sequence" else []
            total = 1
            for child in children:
                size = cls._expanded(child, sizes)
                if size is None:
                    raise ValueError("an alias refers to a node that holds it")
                total += size
            sizes[id(node)] = total
        return sizes[id(node)]

    @staticmethod
    def _count(node):
        """The distinct nodes in the graph."""
        seen, stack = set(), [node]
        while stack:
            item = stack.pop()
            if id(item) not in seen:
                seen.add(id(item))
                stack.extend([n for pair in item.value for n in pair] if item.id == "mapping" else
                             item.value if item.id == "sequence" else [])
        return len(seen)

    @staticmethod
    def dump(data, indent=""):
        import yaml  # 20-45 ms: only for a client whose file is YAML

        text = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)
        return "".join(indent + line if line.strip() else line for line in text.splitlines(keepends=True))

    @staticmethod
    def _pairs(text, key):
        """The lines of `text`, the root's pair for `key` (None when it has none)."""
        import yaml  # 20-45 ms: only for a client whose file is YAML

        root = yaml.compose(text)
        if root is not None and not isinstance(root, yaml.MappingNode):
            raise ValueError("the document is not a mapping")
        pairs = [p for p in (root.value if root else []) if p[0].value == key]
        if len(pairs) > 1:
            raise ValueError(f"'{key}' is given {len(pairs)} times")
        return text.splitlines(keepends=True), pairs[0] if pairs else None

    @staticmethod
    def _span(lines, pair):
        """[first, last] lines of a pair of a block mapping: its key's line to its last line of content."""
        key, value = pair
        last = value.end_mark.line if value.end_mark.column else value.end_mark.line - 1
        last = min(last, len(lines) - 1)
        while last > key.start_mark.line and (not lines[last].strip() or lines[last].lstrip().startswith("#")):
            last -= 1
        return key.start_mark.line, last

    @classmethod
    def put(cls, text, key, name, value):
        import yaml  # 20-45 ms: only for a client whose file is YAML

        nl = "\r\n" if "\r\n" in text else "\n"  # what is written keeps the file's line endings

        def dump(data, indent=""):
            return cls.dump(data, indent).replace("\n", nl)

        lines, pair = cls._pairs(text, key)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += nl
        if pair is None:
            return "".join(lines) + dump({key: {name: value}})
        servers = pair[1]
        if isinstance(servers, yaml.ScalarNode) and servers.tag.endswith(":null"):
            at = cls._span(lines, pair)[1] + 1
            indent = " " * (pair[0].start_mark.column + 2)
            return "".join(lines[:at]) + dump({name: value}, indent) + "".join(lines[at:])
        if isinstance(servers, yaml.MappingNode) and servers.flow_style and not servers.value:  # `{}`: opened
            block = dump({name: value}, " " * (pair[0].start_mark.column + 2)).rstrip("\r\n")
            return text[:servers.start_mark.index].rstrip(" ") + nl + block + text[servers.end_mark.index:]
        if not isinstance(servers, yaml.MappingNode) or servers.flow_style or not servers.value:
            raise ValueError(f"'{key}' is not a block mapping")
        ours = [p for p in servers.value if p[0].value == name]
        if len(ours) > 1:
            raise ValueError(f"'{key}.{name}' is given {len(ours)} times")
        indent = " " * servers.value[0][0].start_mark.column
        block = dump({name: value}, indent)
        if ours:
            first, last = cls._span(lines, ours[0])
            return "".join(lines[:first]) + block + "".join(lines[last + 1:])
        at = cls._span(lines, servers.value[-1])[1] + 1
        return "".join(lines[:at]) + block + "".join(lines[at:])

    @classmethod
    def drop(cls, text, key, name):
        import yaml  # 20-45 ms: only for a client whose file is YAML

        lines, pair = cls._pairs(text, key)
        if pair is None or not isinstance(pair[1], yaml.MappingNode):
            return text
        ours = [p for p in pair[1].value if p[0].value == name]
        if not ours:
            return text
        if pair[1].flow_style or len(ours) > 1:
            raise ValueError(f"'{key}.{name}' is not an entry of its own")
        first, last = cls._span(lines, ours[0])
        return "".join(lines[:first] + lines[last + 1:])
