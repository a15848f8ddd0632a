"""The shape ARCHITECTURE.md describes: one command table behind help, man pages and completions; one
table of paths; tools that build on the library only; one parse of `skill run` that agrees with docopt."""

import ast
import os
import pathlib
import re

import pytest

from helpers import console_scripts

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_every_command_is_in_the_help_the_man_page_and_every_completion(script_runner):
    from nexus.tools.commands import COMMANDS, GROUPS

    overview = unwrapped(script_runner.run(["nexus", "--help"]).stdout)
    groups = {group: script_runner.run(["nexus", group, "--help"]) for group in GROUPS}
    groups = {group: shown.returncode == 0 and unwrapped(shown.stdout) for group, shown in groups.items()}
    man = (ROOT / "man" / "nexus.1").read_text()
    bash, zsh, fish = ((ROOT / "completions" / name).read_text() for name in ("nexus.bash", "_nexus", "nexus.fish"))
    for command in COMMANDS:
        *group, last = command.words.split()
        assert re.search(rf"^  {re.escape(command.words)} +{re.escape(command.summary)}$", overview, re.M), command.words
        if group:
            assert re.search(rf"^  {last} +{re.escape(command.summary)}$", groups[group[0]], re.M), command.words
        assert f'.SS "{command.words}"' in man
        parent = " ".join(["nexus", *group])
        for text in (bash, zsh):
            assert re.search(rf"'{parent}'\) subcommands='[^']*\b{last}\b", text), (command.words, "bash/zsh")
        at = " ".join(["__nexus_at", *group])
        assert re.search(rf"complete -c nexus(?: -n '{at}')? -a '[^']*\b{last}\b", fish), (command.words, "fish")


def test_every_row_has_a_known_output_kind_a_function_and_options_its_usage_names():
    from nexus.cli.output import KINDS
    from nexus.tools.commands import HIDDEN, TABLE

    assert len({c.words for c in TABLE + HIDDEN}) == len(TABLE + HIDDEN)
    for command in TABLE + HIDDEN:
        assert command.output in KINDS and callable(command.function()), command.words
        named = set(re.findall(r"(?<![\w-])--?[a-z][\w-]*", " ".join(command.usage)))
        flags = {f for option in command.options for f in (option.flag, option.short) if f}
        assert named <= flags, (command.words, named - flags)  # each flag of the usage is a record
        assert flags - {"-h", "--help"} <= named or not command.usage[0], (command.words, flags - named)
        placeholders = set(re.findall(r"(?<![\w-])([A-Z][A-Z_=]*)(?![\w-])",
                                      re.sub(r"--?[a-z][\w-]* [A-Z][\w=-]*", "", " ".join(command.usage))))
        assert placeholders == set(command.arguments), (command.words, placeholders, set(command.arguments))


def test_the_console_scripts_are_the_plumbing_rows_and_nexus_each_installed_as_is():
    import tomllib

    from nexus.tools.commands import PLUMBING_TOOLS

    scripts = console_scripts(ROOT)
    starts = {"nexus": "nexus.tools.nexus", "nexus-run": "nexus.tools.plumbing.run"}  # the gateway: its row alone
    assert scripts == {**{tool.words: "nexus.tools.commands" for tool in PLUMBING_TOOLS}, **starts}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "scripts" not in project["project"]  # an entry point's launcher is the installer's, not ours
    assert sorted(project["tool"]["setuptools"]["script-files"]) == [f"tools/bin/{name}" for name in scripts]
    for name in scripts:  # what an installer rewrites (#!python) and what it keeps as it is
        lines = (ROOT / "tools" / "bin" / name).read_text().splitlines()
        start = ([f"from {starts[name]} import main", "sys.exit(main())"] if name in starts else
                 ["from nexus.tools.commands import script", f'sys.exit(script("{name}")())'])
        assert lines[0] == "#!python" and [line for line in lines[1:] if line] == [
            "import gc", "import sys", "gc.disable()  # while the command loads: nexus.cli.command.call turns it on again",
            *start], name


def test_every_help_fits_80_columns_and_nexus_help_breaks_no_word(script_runner):
    from nexus.tools.commands import COMMANDS, GROUPS, PLUMBING_TOOLS

    runs = [["nexus", "--help"], ["nexus"], *(["nexus", group, "--help"] for group in GROUPS),
            *(["nexus", *command.words.split(), "--help"] for command in COMMANDS),
            *([tool.words, "--help"] for tool in PLUMBING_TOOLS)]
    for argv in runs:
        shown = script_runner.run(argv)
        text = shown.stdout or shown.stderr
        wide = [line for line in text.splitlines() if len(line) > 80]
        assert text and not wide, (argv, wide)
    overview = script_runner.run(["nexus", "--help"]).stdout
    summaries = {word for command in COMMANDS for word in command.summary.split()}
    for line in overview.partition("Commands:\n")[2].partition("\n\n")[0].splitlines():
        assert set(line.split()[1 if not line.startswith("    ") else 0:]) <= summaries | {
            w for c in COMMANDS for w in c.words.split()}, line  # whole words only


def test_each_option_value_is_read_by_its_type_with_one_message(script_runner):
    bad = [(["nexus", "skill", "stats", "--days", "0"], "skill stats: --days needs a whole number from 1 to 36,500, not '0'"),
           (["nexus", "skills", "verify", "--all", "--jobs", "x"],
            "skills verify: --jobs needs a whole number from 1 to 256, not 'x'"),
           (["nexus", "skill", "run", "x", "--timeout", "-1"],
            "skill run: --timeout needs a number above 0 up to 100,000,000, not '-1'"),
           (["nexus", "skills", "prompt", "--format", "html"], "skills prompt: --format needs xml or markdown, not 'html'"),
           (["nexus-mcp", "--max-output", "lots"], "--max-output needs a whole number from 1 to"),
           (["nexus", "mcp", "--watch", "-1"], "mcp: --watch needs a number from 0 up to 100,000,000, not '-1'")]
    for argv, message in bad:
        result = script_runner.run(argv)
        lines = result.stderr.splitlines()
        assert result.returncode == 2 and lines[0].startswith(f"{argv[0]}: {message}"), (argv, result.stderr)
        assert lines[1].startswith("usage: " + (f"nexus {message.split(':')[0]}" if argv[0] == "nexus" else argv[0]))


def test_each_row_of_the_files_table_is_the_path_nexus_uses(monkeypatch, tmp_path):
    from nexus import paths

    monkeypatch.setenv("NEXUS_HOME", "/H")
    monkeypatch.setenv("MANAGED_SKILLS_DIR", "/M")
    used = {paths.home(), paths.config_file(), paths.workspace_skills(), paths.managed_skills(),
            paths.managed_lockfile(), paths.manifest_file(), paths.state_file("name"),
            paths.usage_log("name"), paths.skill_lock("name"), paths.config_cache(), paths.links_file(), paths.upgrades_file(),
            paths.cache_dir(), paths.bin_dir(), *paths.sandbox_folders("name"), paths.stages_dir(), paths.set_aside_dir(), paths.probes_file(), paths.listing_cache(), paths.tokens_file(), paths.auth_log(),
            paths.session_folder("ID"), paths.telemetry_cursor(), paths.mcp_lock(), paths.telemetry_lock(), paths.mcp_servers()}
    table = {where.rstrip("/").replace("$NEXUS_HOME", "/H").replace("$MANAGED_SKILLS_DIR", "/M").replace("NAME", "name")
             for where, _ in paths.FILES}
    assert used <= table
    man = (ROOT / "man" / "nexus.1").read_text().replace("\\-", "-")
    for where, _ in paths.FILES:
        assert where in man, where


def unwrapped(text):
    """A help text with each wrapped definition on one line again."""
    return re.sub(r"\n {6,}", " ", text)


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield ("." * node.level) + node.module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def test_no_tool_imports_another_and_the_library_imports_no_tool():
    """A tool imports no other tool, nor the command table, which names them (in strings, and imports
    them when they run): the scripts of tools/bin/ start a tool through the table. No two modules of
    tools/ name each other, by an import or a string."""
    for path in [*(ROOT / "tools" / "plumbing").glob("*.py"), *(ROOT / "tools" / "porcelain").glob("*.py")]:
        own = ".".join(["nexus", *path.relative_to(ROOT).with_suffix("").parts])  # the gateway's rows name it
        named = [*_imports(path), *(m for _, m in named_modules(path))]
        assert not [m for m in named if m.startswith(("nexus.tools", ".")) and m != own], path
    modules = {".".join(["nexus", *p.relative_to(ROOT).with_suffix("").parts]).removesuffix(".__init__"): p
               for p in (ROOT / "tools").rglob("*.py")}
    names = {name: {m for m in [*_imports(path), *(m for _, m in named_modules(path))] if m in modules} - {name}
             for name, path in modules.items()}
    assert sorted((a, b) for a in names for b in names[a] if a in names.get(b, ()) and a < b) == []
    for path in (ROOT / "lib").rglob("*.py"):
        if "skills" not in path.relative_to(ROOT / "lib").parts:  # the bundled skills' scripts are not nexus
            assert not [m for m in _imports(path) if "tools" in m.split(".")], path
            assert not [m for _, m in named_modules(path) if "tools" in m.split(".")], path  # not even in a string


def test_the_import_rules_see_a_module_named_in_a_string(tmp_path):
    """A module named by a string is imported all the same, later (the command table's "module:function"):
    the rules of imports read such strings too, whole or begun in an f-string."""
    probe = tmp_path / "probe.py"
    probe.write_text('TARGET = "nexus.tools.porcelain.skill:verify_skill"\nBASE = f"nexus.tools.{1}"\n'
                     'NAMES = ("nexus.gateway.call", "nexus.skill.type", "not nexus.style")\n')
    assert [m for _, m in named_modules(probe)] == ["nexus.tools.porcelain.skill", "nexus.tools", "nexus.gateway.call"]


@pytest.mark.parametrize("argv", [
    ["tmux"], ["tmux", "--", "ls", "-la"], ["tmux", "--json", "--", "a"], ["tmux", "--timeout", "5", "--", "x", "--y"],
    ["tmux", "--dry-run", "--no-verify", "--no-log"], ["tmux", "--timeout=2.5"], ["tmux", "--", "--"], ["tmux", "--"],
    ["tmux", "--var", "A=1", "--var=B=2", "--", "x"], ["tmux", "--var", "A=1"],
])
def test_the_gateways_own_parser_agrees_with_docopt(argv):
    from docopt import docopt

    from nexus.tools.commands import find

    command = find("nexus-run")
    expected = docopt(command.doc(), argv=argv, default_help=False)
    assert command.parser(command, argv) == dict(expected)


def usages():
    """(record, its usage text, words before the arguments) of every command and tool."""
    from nexus.cli.records import PORCELAIN
    from nexus.tools.commands import TABLE

    return [(command, command.doc(), command.words.split() if command.category == PORCELAIN else [])
            for command in TABLE]


def argvs(doc, words):
    """Every argv made of a usage line's words and arguments (as "x") and up to two of the flags the
    usage names, and a few that no usage allows."""
    import itertools

    from nexus.cli.command import _tokens

    flags = sorted(set(re.findall(r"--[a-z][a-z-]*", doc)) - {"--help"}) + ["--nope"]
    usage = doc.partition("Usage:")[2].split("\n\n")[0].strip().splitlines()
    for line in usage:
        depth, base = 0, []
        for token in _tokens(line):
            depth += {"[": 1, "(": 1, "]": -1, ")": -1}.get(token, 0)
            if depth == 0 and token not in "[]()|..." and not token.startswith("-"):
                base.append("x" if token.isupper() else token)
        for n in range(3):
            for chosen in itertools.combinations(flags, n):
                yield [*base, *chosen] if not words else base[:len(words)] + [*base[len(words):], *chosen]


def test_quick_parse_agrees_with_docopt_on_every_form_it_answers():
    from docopt import DocoptExit, docopt

    from nexus.cli.command import quick_parse

    answered = 0
    for command, doc, words in usages():
        for argv in argvs(doc, words):
            quick = quick_parse(command, argv)
            if quick is None:
                continue
            answered += 1
            try:
                expected = dict(docopt(doc, argv=argv, default_help=False))
            except (DocoptExit, SystemExit):
                expected = "a usage error"
            assert quick == expected, (argv, doc.partition("Usage:")[2][:200])
    assert answered > 100
    for argv in (["skills", "list"], ["skills", "list", "--json"], ["status"], ["status", "--json"],
                 ["skills", "list", "--ready", "--json"], ["skills", "verify", "--all"], ["skill", "show", "gog"]):
        command = next(command for command, doc, words in usages() if words and argv[:len(words)] == words)
        assert quick_parse(command, argv) is not None, argv


def test_listing_and_status_import_no_docopt(tmp_path):
    import subprocess
    import sys

    env = {**os.environ, "NEXUS_HOME": str(tmp_path)}
    for argv in (["skills", "list", "--json"], ["status"]):
        probe = (f"import sys; from nexus.tools.nexus import main; main({argv!r}); "
                 "print('docopt' in sys.modules, file=sys.stderr)")
        done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
        assert done.stderr.strip().splitlines()[-1] == "False", argv


def test_the_gateway_imports_nothing_heavy_and_loads_without_the_garbage_collector(tmp_path):
    import subprocess
    import sys

    probe = ("import gc, sys; gc.disable(); from nexus.tools.nexus import main; "  # as a script of tools/bin/ does
             "code = main(['skill', 'run', 'filesystem']); "
             "print(gc.isenabled(), gc.get_freeze_count() > 1000, file=sys.stderr); "
             "print(sorted(m for m in ('yaml', 'docopt', 'jsonlines', 'tomllib', 're', 'subprocess', 'threading',"
             " 'opentelemetry', 'nexus.usage.telemetry', 'nexus.upgrade')"
             " if m in sys.modules), file=sys.stderr)")
    env = {**os.environ, "NEXUS_HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, check=True)  # the first run scans
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert done.stderr.strip().splitlines()[-1] == "[]"
    # on again, what the modules made frozen, once the command runs; importing them leaves it alone
    assert done.stderr.strip().splitlines()[-2] == "True True"
    imported = subprocess.run([sys.executable, "-c", "import gc, nexus.tools.nexus, nexus.tools.plumbing.run; "
                               "print(gc.isenabled())"], capture_output=True, text=True, check=True)
    assert imported.stdout == "True\n"


def may_import():
    """{package: the packages and modules it may import} from ARCHITECTURE.md's "may import" table."""
    allowed = {}
    for line in (ROOT / "ARCHITECTURE.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and re.fullmatch(r"`\w+`", cells[0]):
            rule = cells[2].split(";")[0]  # what follows `;` names outside libraries
            allowed[cells[0].strip("`")] = {"foundation"} | {name.strip("` ") for name in rule.split(",")}
    return allowed


def nexus_imports(path):
    """(line, module) of every import of a nexus module in a file of lib/, relative ones resolved."""
    package = ["nexus", *path.relative_to(ROOT / "lib").parent.parts]
    if path.name == "__init__.py":
        package.append("__init__")  # a package's relative imports start from the package itself
        package.pop()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names = [f"{module}.{alias.name}" for alias in node.names]  # a module, or a name in one
            yield from ((node.lineno, name) for name in names if name.startswith("nexus"))
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names if alias.name.startswith("nexus"))
    yield from named_modules(path)


def is_module(name):
    """True when `name` (nexus.a.b) is a module or package of nexus: lib/a/b.py, or tools/ for nexus.tools."""
    parts = name.split(".")[1:]
    where = (ROOT / "tools").joinpath(*parts[1:]) if parts[:1] == ["tools"] else (ROOT / "lib").joinpath(*parts)
    return bool(parts) and (where.with_suffix(".py").is_file() or (where / "__init__.py").is_file())


def named_modules(path):
    """(line, module) of every string in `path` that names a nexus module ("nexus.a.b", "nexus.a.b:NAME", or
    the start of one in an f-string, "nexus.a."), as a table that imports it later does: an import all the
    same, which the rules below see."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = re.fullmatch(r"(nexus(?:\.\w+)+)\.?(?::\w+)?", node.value)
            if named and is_module(named[1]):
                yield node.lineno, named[1]


def test_the_library_keeps_the_import_rules_of_architecture_md():
    allowed = may_import()
    assert {"skill", "state", "catalog", "gateway", "usage", "distribute", "agents", "cli", "mcp"} <= set(allowed)
    foundation = {p.stem for p in (ROOT / "lib").glob("*.py")} - set(allowed) | {"config"}
    broken = []
    for path in sorted((ROOT / "lib").rglob("*.py")):
        if "skills" in path.relative_to(ROOT / "lib").parts:
            continue  # the bundled skills' scripts are not nexus
        parts = path.relative_to(ROOT / "lib").parts
        own = parts[0] if len(parts) > 1 else path.stem if path.stem in allowed else "foundation"
        own = "foundation" if own in foundation and own not in allowed else own
        for line, module in nexus_imports(path):
            target = module.split(".")[1:]
            if target[0] in foundation or not (ROOT / "lib" / target[0]).is_dir():
                continue  # everything may import the foundation (and nexus.__version__)
            if own == "foundation" or not (target[0] == own or target[0] in allowed[own]
                                           or ".".join(target[:2]) in allowed[own]):
                broken.append(f"{path.relative_to(ROOT)}:{line}: {module}")
    assert broken == [], "imports ARCHITECTURE.md's table does not allow:\n" + "\n".join(broken)


def test_no_two_modules_of_the_library_import_each_other():
    """Not even inside a function: a piece that two modules need lives where both can import it
    (catalog.manifest's Record is known to discovery by what it does; config.statements serves config
    and config.edit)."""
    modules = {}
    for path in (ROOT / "lib").rglob("*.py"):
        if "skills" not in path.relative_to(ROOT / "lib").parts:
            name = ".".join(["nexus", *path.relative_to(ROOT / "lib").with_suffix("").parts]).removesuffix(".__init__")
            modules[name] = path
    imports = {}
    for name, path in modules.items():
        found = set()
        for _, module in nexus_imports(path):
            while module not in modules and "." in module:
                module = module.rpartition(".")[0]  # a name in a module: the module
            found.add(module)
        imports[name] = found - {name}
    loops = sorted({tuple(sorted((a, b))) for a in imports for b in imports[a] if a in imports.get(b, ())})
    assert loops == []


def test_an_import_inside_a_function_says_why():
    """Imports go at the top of a module; one inside a function (to keep a heavy module off a fast path,
    or to break a cycle) has a comment that says why, on its line, on its block of imports, or on the
    line that leads to it."""
    unexplained = []
    for path in sorted([*(ROOT / "lib").rglob("*.py"), *(ROOT / "tools").rglob("*.py")]):
        if "skills" in path.relative_to(ROOT).parts:
            continue
        lines = path.read_text().splitlines()
        for function in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    n = node.lineno - 1
                    while n > 0 and (not lines[n - 1].strip() or lines[n - 1].lstrip().startswith(("import ", "from "))):
                        n -= 1  # up through its block of imports
                    if not any("#" in line for line in lines[n - 1:node.lineno]):
                        unexplained.append(f"{path.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert unexplained == [], "imports inside a function without a comment that says why:\n" + "\n".join(unexplained)


def test_every_refusal_code_is_one_the_log_schema_knows():
    """A refusal's code is its log line's `refused`: one of schema.REFUSALS, which readers of the logs
    (stats, health, `status --check`) take as the whole list."""
    from nexus import schema

    codes = set()
    for path in (ROOT / "lib").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Refused"
                    and node.args and isinstance(node.args[0], ast.Constant)):
                codes.add(node.args[0].value)
    assert {"disabled", "scope", "trust", "sandbox"} <= codes <= set(schema.REFUSALS), codes - set(schema.REFUSALS)
    assert schema.POLICY_REFUSALS <= set(schema.REFUSALS)


def test_only_the_cli_layer_and_style_write_to_a_terminal():
    """ARCHITECTURE.md: lib/cli (the layer, its output) and style (progress, the one question) alone write to
    stdout or stderr; the rest of lib/ returns data and says things through a warn function it is given."""
    writers = set()
    for path in (ROOT / "lib").rglob("*.py"):
        if "skills" in path.relative_to(ROOT / "lib").parts:
            continue  # the bundled skills' scripts are programs of their own
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and node.attr in ("stdout", "stderr")
                    and getattr(node.value, "id", None) == "sys") or (
                    isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print"):
                writers.add(str(path.relative_to(ROOT / "lib")))
    assert writers == {"cli/command.py", "cli/output.py", "style.py"}, writers
