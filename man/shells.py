"""Shell completions (bash, zsh, fish) from the command table's records; used by generate.py.

A record's usage lines give the command words and which flags go where; the types of its options and
arguments say what a value is (a skill, a session, a job, a capability, a config key, a file, a folder,
one of a few words). Names come from hidden commands that read what nexus keeps, never rescanning:
`nexus --list-skills` (the manifest), `--list-keys` (the keys nexus knows, and those of each skill),
`--list-sessions` (the usage logs), `--list-jobs` and `--list-capabilities` (the manifest).
"""

import re

FLAG = re.compile(r"(--?[a-z][\w-]*)")
PLACEHOLDER = re.compile(r"\b([A-Z][A-Z_=]*)(\.\.\.)?")
DASHDASH = re.compile(r"(?:^|(?<=[\s\[]))--(?=[\s\]]|$)")  # `[-- ARGS...]`, `[--]`: the rest is not ours


def model(rows, top, groups):
    """{program and command words: {'commands', 'flags', 'values', 'args', 'dashdash', 'about'}} from the
    table's rows, (prog, Command) each: the words from its usage lines, what a flag's value is and what
    its arguments are from the types of its records, and `about`, what each command word and flag is (a
    summary, a group's from `groups`, an option's help). `top`: the first words of nexus's commands,
    which `nexus help` completes."""
    summaries = {prog: command.summary for prog, command in rows} | {f"nexus {g}": about for g, about in groups.items()}
    found = {"nexus": {"commands": [], "flags": ["--help", "--version"], "values": {}, "args": "", "dashdash": False,
                       "about": {"--help": "Show the help.", "--version": "Print the version."}}}
    for prog, command in rows:
        for line in command.usage_lines(prog)[:-1]:  # the (-h | --help) line: every command gets --help below
            words = re.match(r"[a-z][\w-]*(?: [a-z][\w-]*)*", line).group(0).split()
            rest = line[len(" ".join(words)):]
            for depth in range(1, len(words) + 1):  # the program, each group of commands, then the command
                node = found.setdefault(" ".join(words[:depth]), {"commands": [], "flags": [], "values": {},
                                                                   "args": "", "dashdash": False, "about": {}})
                if depth < len(words) and words[depth] not in node["commands"]:
                    node["commands"].append(words[depth])
                    if " ".join(words[:depth + 1]) in summaries:
                        node["about"][words[depth]] = summaries[" ".join(words[:depth + 1])]
            for flag in FLAG.findall(DASHDASH.sub("", rest)):  # node is now this line's command
                option = command.option(flag)
                if option.flag not in node["flags"]:
                    node["flags"].append(option.flag)
                    node["about"][option.flag] = option.help
                if option.value:
                    node["values"][option.flag] = offered(option.type.completes, top)
            node["dashdash"] = node["dashdash"] or DASHDASH.search(rest) is not None
            positional = PLACEHOLDER.search(DASHDASH.sub("", re.sub(r"--?[a-z][\w-]*(?: [A-Z][A-Z_=-]*)?", "", rest)))
            if positional and not node["args"]:
                kind = command.arguments[positional.group(1)].completes
                node["args"] = offered(kind, top) + (positional.group(2) or "")
    for node in found.values():
        if "--help" not in node["flags"]:
            node["flags"].append("--help")
            node["about"]["--help"] = "Show this help."
    return found


def offered(kind, top):
    """A type's `completes`, with `command` spelled out as the words nexus's commands begin with."""
    return "words " + " ".join(dict.fromkeys(w.split()[0] for w in top)) if kind == "command" else kind


def shell_functions(found):
    """What bash and zsh share: the command table, and _nexus_kind, which reads the words typed so far."""
    spec, values = [], {}
    for key, node in found.items():
        parts = [f"subcommands='{' '.join(node['commands'])}'"] if node["commands"] else []
        parts.append(f"flags='{' '.join(node['flags'])}'")
        parts += [f"args='{node['args']}'"] if node["args"] else []
        parts += ["dashdash=1"] if node["dashdash"] else []
        spec.append(f"        '{key}') {'; '.join(parts)} ;;")
        for flag, kind in node["values"].items():
            values.setdefault(kind, []).append(f"'{key} {flag}'")
    value_cases = [f"        {'|'.join(keys)}) echo '{kind}' ;;" for kind, keys in values.items()]
    return SHARED.format(spec="\n".join(spec), values="\n".join(value_cases))


# Valid bash and zsh alike. A kind is skill, key, file, dir, none, or "words W...".
SHARED = """\
_nexus_spec() {{  # $1: a program and command words; sets what they take next
    subcommands= flags= args= dashdash=
    case $1 in
{spec}
        *) return 1 ;;
    esac
}}

_nexus_value() {{  # $1: command words and an option; prints the kind of the value it takes
    case $1 in
{values}
        *) return 1 ;;
    esac
}}

_nexus_offered() {{  # $1: a kind "commands CMD" or "flags CMD"; prints the words CMD takes there
    local subcommands flags args dashdash
    _nexus_spec "${{1#* }}"
    if [[ $1 == commands* ]]; then echo "$subcommands"; else echo "$flags"; fi
}}

_nexus_kind() {{  # "$@": the words up to the cursor, the program first; prints the kind to offer
    local cmd=${{1##*/}} subcommands flags args dashdash kind given=0
    _nexus_spec "$cmd" || return 1
    shift
    while (( $# > 1 )) && [[ -n $subcommands && " $subcommands " == *" $1 "* ]]; do
        cmd+=" $1"
        _nexus_spec "$cmd"
        shift
    done
    while (( $# > 1 )); do  # count the arguments given; after `--` the words are the skill's
        case $1 in
            --) if [[ -n $dashdash ]]; then echo file; return; fi ;;
            -*) if kind=$(_nexus_value "$cmd $1"); then
                    if (( $# == 2 )); then echo "$kind"; return; fi
                    shift
                fi ;;
            *) (( given += 1 )) ;;
        esac
        shift
    done
    if [[ $1 == -* ]]; then
        echo "flags $cmd"
    elif [[ -n $subcommands ]]; then
        echo "commands $cmd"
    elif (( given == 0 )) || [[ $args == *... ]]; then
        echo "${{args%...}}"
    fi
}}
"""

BASH = """\
# bash completion for {programs} ({header}).
# Skill names come from `nexus --list-skills`, which reads the manifest only.

{functions}
_nexus() {{
    local kind cur=${{COMP_WORDS[COMP_CWORD]}}
    COMPREPLY=()
    kind=$(_nexus_kind "${{COMP_WORDS[@]:0:COMP_CWORD+1}}") || return
    case $kind in
{lists}
        file) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
        dir) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
        words\\ *) mapfile -t COMPREPLY < <(compgen -W "${{kind#words }}" -- "$cur") ;;
        commands\\ *|flags\\ *) mapfile -t COMPREPLY < <(compgen -W "$(_nexus_offered "$kind")" -- "$cur") ;;
    esac
}}

complete -F _nexus {programs}
"""

ZSH = """\
#compdef {programs}
# zsh completion for {programs} ({header}).
# Skill names come from `nexus --list-skills`, which reads the manifest only.

{functions}
typeset -gA _nexus_about  # "command words and a word it takes" -> what that word is
_nexus_about=(
{about}
)

_nexus() {{
    local kind w
    local -a offered shown
    kind=$(_nexus_kind "${{(@)words[1,CURRENT]}}") || return 1
    case $kind in
{lists}
        file) _files ;;
        dir) _files -/ ;;
        words\\ *) compadd -- ${{=${{kind#words }}}} ;;
        commands\\ *|flags\\ *)
            offered=(${{=$(_nexus_offered "$kind")}})
            for w in $offered; do shown+=("$w  -- ${{_nexus_about[${{kind#* }} $w]}}"); done
            compadd -l -d shown -- $offered ;;
    esac
}}

_nexus "$@"
"""

FISH = """\
# fish completion for {programs} ({header}).
# Skill names come from `nexus --list-skills`, which reads the manifest only.

function __nexus_words --description 'The words typed after the program, options left out'
    set -l tokens (commandline -opc)
    string match -v -- '-*' $tokens[2..-1]
end

function __nexus_at --description 'The words typed so far are exactly $argv'
    set -l typed (__nexus_words)
    test "$typed" = "$argv"
end

function __nexus_in --description 'The words typed so far begin with $argv'
    set -l typed (__nexus_words)
    string match -q -- "$argv *" "$typed "
end

function __nexus_after_dashdash --description 'A -- was typed'
    contains -- -- (commandline -opc)
end

{lines}
"""

LISTS = {"skill": "--list-skills", "key": "--list-keys", "session": "--list-sessions", "job": "--list-jobs",
         "capability": "--list-capabilities"}  # the hidden command that lists the names of each kind
FISH_OFFER = {**{kind: f"-a '(nexus {hidden} 2>/dev/null)'" for kind, hidden in LISTS.items()},
              "file": "-F", "dir": "-a '(__fish_complete_directories)'", "none": ""}
BASH_LIST = '        {kind}) mapfile -t COMPREPLY < <(compgen -W "$(nexus {hidden} 2>/dev/null)" -- "$cur") ;;'
ZSH_LIST = '        {kind}) compadd -- ${{(f)"$(_call_program {kind} nexus {hidden} 2>/dev/null)"}} ;;'


def fish_offer(kind):
    return f"-a '{kind[len('words '):]}'" if kind.startswith("words ") else FISH_OFFER[kind]


def zsh_about(found):
    """The lines of zsh's _nexus_about: 'command words and a word' 'what the word is'."""
    quote = lambda text: "'" + text.replace("'", "'\\''") + "'"  # noqa: E731
    return "\n".join(f"    {quote(key + ' ' + word)} {quote(first_sentence(about))}"
                     for key, node in found.items() for word, about in node["about"].items())


def first_sentence(about):
    """The first sentence of a summary or help, without its full stop: what a completion shows."""
    return about.split(". ")[0].split("; ")[0].rstrip(".")


def described(node, word):
    """` -d 'what it is'` for fish: the first sentence of a word's summary or help, quoted for fish."""
    about = node["about"].get(word)
    if not about:
        return ""
    first = first_sentence(about)
    return " -d '" + first.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish_lines(found):
    lines = []
    for key, node in found.items():
        prog, *words = key.split()
        if not words:
            lines.append(f"complete -c {prog} -f")
        at, inside = " ".join(["__nexus_at", *words]), " ".join(["__nexus_in", *words])
        flag_condition = at if node["commands"] else (inside if words else "")
        when = f" -n '{flag_condition}'" if flag_condition else ""
        for word in node["commands"]:
            lines.append(f"complete -c {prog}{when} -a '{word}'{described(node, word)}")
        for flag in node["flags"]:
            name = f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}"
            value = node["values"].get(flag)
            if value is not None:  # -r: takes a value; -x: one that is not a file
                name += (" -r " if value in ("file", "dir") else " -x ") + fish_offer(value)
            lines.append(f"complete -c {prog}{when} {name}".rstrip() + described(node, flag))
        if node["args"]:
            kind = node["args"].removesuffix("...")
            condition = inside if node["args"].endswith("...") else at
            when = f" -n '{condition}'" if condition != "__nexus_in" else ""  # a bare __nexus_in: always
            lines.append(f"complete -c {prog}{when} {fish_offer(kind)}".rstrip())
        if node["dashdash"]:
            lines.append(f"complete -c {prog} -n '{inside}; and __nexus_after_dashdash' -F")
    return "\n".join(lines)


def completions(found, header):
    """{path: text} of the three completion files."""
    programs = " ".join(key for key in found if " " not in key)
    fill = {"programs": programs, "header": header}
    functions = shell_functions(found)
    bash_lists, zsh_lists = ("\n".join(line.format(kind=kind, hidden=hidden) for kind, hidden in LISTS.items())
                             for line in (BASH_LIST, ZSH_LIST))
    return {"completions/nexus.bash": BASH.format(functions=functions, lists=bash_lists, **fill),
            "completions/_nexus": ZSH.format(functions=functions, lists=zsh_lists, about=zsh_about(found), **fill),
            "completions/nexus.fish": FISH.format(lines=fish_lines(found), **fill)}
