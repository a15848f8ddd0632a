"""`nexus skills audit`: a static look at every file of a skill for what hostile skills do.

Each rule is a code, a severity and one line that explains it (RULES: `nexus skills audit --help` and
the man page list them from here). A finding is one rule seen at one line of one file. Text (SKILL.md,
Markdown, shell, JavaScript) is matched by careful patterns, line by line; Python is parsed with `ast`,
so a call is judged by what it calls, not by how it is spelled. Nothing here runs or imports what it reads.

The gate (`skills add`, `skills update`, `skills check`, `skill trust`) refuses what has a high finding.
"""

import ast
import os
import re
import stat
import unicodedata

HIGH, MEDIUM, LOW = "high", "medium", "low"
SEVERITIES = (HIGH, MEDIUM, LOW)
MAX_READ = 2 * 1024 * 1024  # of a text file, what is read for patterns (a larger one is reported as large)
LARGE = 5 * 1024 * 1024
SKIP = {".git"}


class Rule:
    __slots__ = ("code", "severity", "family", "explanation")

    def __init__(self, code, severity, family, explanation):
        self.code, self.severity, self.family, self.explanation = code, severity, family, explanation


RULES = {r.code: r for r in (
    Rule("bidi", HIGH, "hidden text", "a bidirectional override or isolate: the text shows in another order than "
         "the agent reads it"),
    Rule("zero-width", HIGH, "hidden text", "zero-width characters outside an emoji or a word of a script that "
         "joins letters: they hide text from a reader, not from the agent"),
    Rule("tag-chars", HIGH, "hidden text", "Unicode tag characters (U+E0000 block) outside a flag: invisible "
         "ASCII an agent reads"),
    Rule("invisible", HIGH, "hidden text", "another invisible code point: a format or control character, a "
         "terminal escape, a run of variation selectors, a Hangul filler"),
    Rule("comment-instructions", HIGH, "hidden text", "an HTML comment in Markdown that speaks to the agent: "
         "hidden when the page is shown, read by the agent"),
    Rule("pipe-to-shell", HIGH, "instructions", "downloads code and runs it at once (curl | sh, bash <(curl ...), "
         "wget && chmod +x)"),
    Rule("credentials", HIGH, "instructions", "reads or sends credentials: ~/.ssh, ~/.aws, .env, keychains, "
         "browser profiles, nexus's own config"),
    Rule("exfiltration", HIGH, "instructions", "sends data to a paste site or a request catcher (webhook.site, "
         "pastebin, transfer.sh, a Discord webhook, ...)"),
    Rule("override", HIGH, "instructions", "tells the agent to drop its guard: ignore previous instructions, "
         "keep something from the user, bypass safety"),
    Rule("persistence", HIGH, "instructions", "makes something run later: a crontab, a systemd unit, a shell rc "
         "file, a LaunchAgent"),
    Rule("reverse-shell", HIGH, "scripts", "hands a shell to a remote host (/dev/tcp with -i, nc -e, socket and "
         "dup2, pty.spawn)"),
    Rule("obfuscated-exec", HIGH, "scripts", "decodes base64, hex or compressed data and runs it (eval, exec, "
         "| sh)"),
    Rule("fetch-exec", HIGH, "scripts", "downloads code at run time and runs it"),
    Rule("delete-home", HIGH, "scripts", "deletes the home folder or the root (rm -rf ~, shutil.rmtree(Path.home()))"),
    Rule("write-outside", MEDIUM, "scripts", "writes to a fixed path outside the skill's folder (the home "
         "folder, /etc, ...)"),
    Rule("download-no-sha256", MEDIUM, "install specs", "a download with no sha256 to check the file against "
         "(nexus never installs it; other loaders do)"),
    Rule("install-remote-code", HIGH, "install specs", "a shell install spec fetches code and runs it"),
    Rule("binary", HIGH, "what ships", "a native executable or library (ELF, Mach-O, PE): it cannot be read"),
    Rule("bytecode", HIGH, "what ships", "compiled Python that runs in place of a source you can read: a .pyc "
         "with no .py beside it, or a hash-based one in __pycache__ (a run of Python never writes those)"),
    Rule("symlink-out", HIGH, "what ships", "a symbolic link that leads outside the skill's folder"),
    Rule("symlink", MEDIUM, "what ships", "a symbolic link inside the skill: what it names can change"),
    Rule("archive", MEDIUM, "what ships", "an archive (zip, tar, jar, wheel, ...): its contents cannot be audited"),
    Rule("large-file", MEDIUM, "what ships", f"a file over {LARGE >> 20} MB, far larger than a skill needs"),
    Rule("executable", LOW, "what ships", "an executable file that is neither a script nor a known binary"),
    Rule("undeclared-network", MEDIUM, "declared versus used", "a script opens network connections but the skill "
         "does not declare network (metadata.nexus.sandbox.network): confined, it is cut off"),
    Rule("unparsed", LOW, "scripts", "a Python file that does not parse, so it was not audited (Python cannot run "
         "it either)"),
)}


class Finding:
    __slots__ = ("path", "line", "code", "message")

    def __init__(self, path, line, code, message):
        self.path, self.line, self.code, self.message = path, line, code, message

    @property
    def severity(self):
        return RULES[self.code].severity

    def format(self):
        return formatted(self.as_dict())

    def as_dict(self):
        return {"path": self.path, "line": self.line, "severity": self.severity, "code": self.code,
                "message": self.message}

    def key(self):
        """What makes a finding the same one in another version of a skill: not its line."""
        return (self.path, self.code, self.message)


# -- hidden text ----------------------------------------------------------------------------------

BIDI = frozenset(range(0x202A, 0x202F)) | frozenset(range(0x2066, 0x206A))
ZERO_WIDTH = frozenset({0x200B, 0x200C, 0x200D, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0x180E, 0xFEFF})
JOINERS = frozenset({0x200C, 0x200D})
MARKS = frozenset({0x200E, 0x200F, 0x061C, 0x00AD})  # direction marks and the soft hyphen: ordinary in text
FILLERS = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0})
TAGS = range(0xE0000, 0xE0080)
BLACK_FLAG, CANCEL_TAG = 0x1F3F4, 0xE007F
VARIATION = frozenset(range(0xFE00, 0xFE10)) | frozenset(range(0xE0100, 0xE01F0))


def _emoji(ch):
    o = ord(ch)
    return o >= 0x1F000 or 0x2600 <= o <= 0x27BF or o == 0xFE0F or 0x1F3FB <= o <= 0x1F3FF or o == 0x2640 or o == 0x2642


def _joined_letters(before, after):
    """A joiner between two letters of a script that shapes with them (Arabic, Indic, ...)."""
    return before.isalpha() and after.isalpha() and ord(before) >= 0x0590 and ord(after) >= 0x0590


def hidden(line, first_line=False):
    """[(code, what)] of the invisible code points on a line of text, one per code."""
    found = {}
    i, n = 0, len(line)
    while i < n:
        ch, o = line[i], ord(line[i])
        if o < 0x80 and (o >= 0x20 or ch in "\t\n\r\f"):
            i += 1
            continue
        if o == BLACK_FLAG:  # a flag of a region: black flag, tag letters, cancel tag
            j = i + 1
            while j < n and ord(line[j]) in TAGS and j - i <= 8:
                j += 1
            if j > i + 1 and ord(line[j - 1]) == CANCEL_TAG:
                i = j
                continue
        before, after = line[i - 1] if i else "", line[i + 1] if i + 1 < n else ""
        code = None
        if o in BIDI:
            code = "bidi"
        elif o in ZERO_WIDTH:
            benign = (o == 0xFEFF and i == 0 and first_line) or (
                o in JOINERS and before and after and ((_emoji(before) and _emoji(after)) or _joined_letters(before, after)))
            code = None if benign else "zero-width"
        elif o in TAGS:
            code = "tag-chars"
        elif o in VARIATION:
            code = "invisible" if after and ord(after) in VARIATION else None  # a run: data, not a glyph's variant
        elif o in FILLERS or (o not in MARKS and unicodedata.category(ch) in ("Cf", "Cc")):
            code = "invisible"
        if code and code not in found:
            count = sum(1 for c in line if c == ch)
            found[code] = f"U+{o:04X} {unicodedata.name(ch, 'control character')}" + (f" ({count} on this line)"
                                                                                      if count > 1 else "")
        i += 1
    return list(found.items())


# -- instructions and shell: careful patterns, a line at a time ----------------------------------

def _rx(*parts):
    return re.compile("|".join(parts), re.IGNORECASE)


FETCH = r"(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod|fetch)"
SHELL = r"(?:sudo\s+(?:-\S+\s+)*)?(?:ba|z|da|k|fi)?sh|python[0-9.]*|perl|ruby|node|iex|invoke-expression"
PIPE_TO_SHELL = _rx(
    rf"\b{FETCH}\b[^|\n]*\|\s*(?:{SHELL})\b",
    rf"\b(?:ba|z)?sh\s+<\(\s*{FETCH}\b",
    rf"\b(?:source|\.)\s+<\(\s*{FETCH}\b",
    rf"(?:\b(?:ba|z)?sh\s+-c|\beval)\s+[\"']?\$\(\s*{FETCH}\b",
    rf"\b{FETCH}\b[^\n]*(?:&&|;)\s*(?:sudo\s+)?chmod\s+(?:[ugoa]*\+[rw]*x|0?[0-7]*[1357][0-7]{{0,2}})\b",
    rf"\b{FETCH}\b[^\n]*\s(?:-o|-O|--output)\s*\S+[^\n]*(?:&&|;)\s*(?:sudo\s+)?(?:(?:ba|z)?sh|python[0-9.]*|node)\s+\S",
    r"\biex\s*\(\s*(?:new-object\s+net\.webclient|iwr|irm|invoke-webrequest)",
)
CREDENTIAL_PATHS = _rx(
    r"(?:~|\$home|\$\{home\}|home/[\w.-]+|users/[\w.-]+)/\.ssh\b",
    r"\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub)",
    r"\.aws/(?:credentials|config)\b",
    r"(?:~|\$home|\$\{home\})/\.(?:aws|azure|gnupg|password-store|kube|docker|config/gcloud|config/gh)\b",
    r"\.(?:netrc|git-credentials|npmrc|pypirc)\b",
    r"\bsecurity\s+(?:find-(?:generic|internet)-password|dump-keychain)\b",
    r"login\.keychain|\bsecret-tool\s+lookup\b",
    r"(?:google/chrome|google-chrome|chromium|bravesoftware|\.mozilla/firefox|firefox/profiles)\b",
    r"\b(?:login data|logins\.json|key[34]\.db|cookies\.sqlite)\b",
    r"\bnexus\.toml\b|\.nexus-lock\.json|\$\{?nexus_home\b|\$\{?nexus_config\b",
)
DOTENV = re.compile(r"(?:^|[\s`'\"(/=])\.env(?:\.local|\.production|\.development)?\b(?![.\w-])")
READS = _rx(r"\b(?:cat|less|more|head|tail|read|reads|open|print|dump|copy|cp|scp|rsync|tar|zip|upload|send|"
            r"post|curl|wget|base64|xxd|include|attach|exfiltrate|collect|grep|strings|contents?)\b")
SENDS = _rx(r"\b(?:curl|wget|scp|rsync|nc|upload|send|post|requests|fetch)\b")
EXFILTRATION = _rx(
    r"\b(?:webhook\.site|requestbin\.(?:net|com)|[\w-]+\.m\.pipedream\.net|pipedream\.net|hookbin\.com|"
    r"beeceptor\.com|requestcatcher\.com|pastebin\.com|paste\.ee|hastebin\.com|ghostbin\.\w+|dpaste\.(?:com|org)|"
    r"0x0\.st|transfer\.sh|termbin\.com|file\.io|[\w-]+\.ngrok(?:-free)?\.(?:io|app)|interact\.sh|"
    r"[\w-]+\.oast\.(?:pro|live|site|online|fun|me)|burpcollaborator\.net|canarytokens\.com)\b",
    r"\bdiscord(?:app)?\.com/api/webhooks/",
    r"\bapi\.telegram\.org/bot",
    r"\|\s*nc\s+[\w.-]+\s+\d+",
)
OVERRIDE = _rx(
    r"\b(?:ignore|disregard|forget|override)\s+(?:(?:all|any|every|the|your|of)\s+)*(?:previous|prior|above|earlier|"
    r"preceding|system|safety|other|original)\s+(?:instructions|prompts?|rules|guidelines|directions|messages)",
    r"\b(?:do\s+not|don't|never)\s+(?:tell|inform|alert|notify|show|mention\s+(?:this|it|that)\s+to)\s+the\s+user\b",
    r"\bwithout\s+(?:telling|informing|notifying|alerting)\s+the\s+user\b",
    r"\b(?:bypass|disable|turn\s+off|circumvent)\s+(?:the\s+|your\s+|all\s+|any\s+)?(?:safety|security\s+checks|"
    r"guardrails|content\s+filters?|sandbox|permission\s+(?:checks|prompts))\b",
    r"--dangerously-skip-permissions\b",
    r"\byou\s+are\s+now\s+(?:in\s+)?(?:dan|developer\s+mode|jailbroken|unrestricted|unfiltered)\b",
)
PERSISTENCE = _rx(
    r"\|\s*crontab\b",
    r"\bcrontab\s+(?!-l\b)(?:-[a-z]\s+)*(?:-\s|[\w~$/.\"'-])",
    r"/etc/cron\.(?:d|hourly|daily|weekly|monthly)\b|/etc/crontab\b|/var/spool/cron\b",
    r"\bsystemctl\s+(?:--user\s+)?(?:enable|link)\b",
    r"(?:\.config/systemd/user|/etc/systemd/system)/\S*\.(?:service|timer)\b",
    r"(?:>>?|\btee\s+(?:-a\s+)?)\s*[\"']?(?:~|\$home|\$\{home\})/\.(?:bashrc|bash_profile|bash_login|zshrc|zprofile|"
    r"zshenv|profile|config/fish/config\.fish)\b",
    r"library/launch(?:agents|daemons)\b",
    r"\blaunchctl\s+(?:load|bootstrap|submit)\b",
)
REVERSE_SHELL = _rx(
    r"\b(?:ba|z)?sh\s+-i\b[^\n]*/dev/(?:tcp|udp)/",
    r"/dev/(?:tcp|udp)/\S+[^\n]*(?:0>&1|<&\s*\d|>&\s*\d)",
    r"\bexec\s+\d+<>\s*/dev/(?:tcp|udp)/",
    r"\b(?:nc|ncat|netcat)\b[^\n|]*\s-(?:e|c)\s",
    r"\bsocat\b[^\n]*\bexec:",
    r"\bmkfifo\b[^\n]*\b(?:nc|ncat|netcat)\b",
)
OBFUSCATED_EXEC = _rx(
    rf"\b(?:base64\s+(?:-\w+\s+)*(?:-d|--decode|-D)|xxd\s+-r|openssl\s+(?:base64|enc)\b[^|\n]*\s-d)\b[^\n]*\|\s*(?:{SHELL})\b",
    r"\beval\s+[\"']?\$\([^)\n]*\b(?:base64|xxd|openssl)\b",
    r"\b(?:eval|exec|Function)\s*\(\s*(?:atob|Buffer\.from|base64\.b64decode|bytes\.fromhex|codecs\.decode|"
    r"zlib\.decompress|__import__\(\s*['\"](?:base64|zlib|codecs))",
)
FETCH_EXEC = _rx(
    r"\b(?:eval|exec)\s*\(\s*(?:[\w.]+\.)?(?:urlopen|urlretrieve|get|fetch)\s*\(",
    r"\b(?:eval|exec)\s*\(\s*await\s+\(?\s*await\s+fetch\(",
)
DELETE_HOME = _rx(
    r"\brm\s+(?:-\S+\s+)*-[a-z]*r[a-z]*\s+(?:-\S+\s+)*[\"']?(?:~|\$home|\$\{home\}|/)[\"']?/?\*?(?=[\s;&|)`]|$)",
)
WRITE_OUTSIDE = _rx(
    r"(?:(?<![<0-9&])>>?|\btee\s+(?:-a\s+)?)\s*[\"']?(?:/etc|/usr|/bin|/sbin|/var|/opt|/system|/library|~|\$home|"
    r"\$\{home\})/",
)
PERSISTENT_FILES = _rx(r"(?:^|/)\.(?:bashrc|bash_profile|bash_login|zshrc|zprofile|zshenv|profile)$",
                       r"launch(?:agents|daemons)/|systemd/(?:user|system)/|/etc/cron|/var/spool/cron")
NEGATED = _rx(r"\b(?:never|don't|do\s+not|must\s+not|avoid|refuse|forbidden|not\s+allowed|dangerous|warning)\b")

# rule code -> patterns; for Markdown and plain text these are instructions to the agent
TEXT_RULES = (("pipe-to-shell", PIPE_TO_SHELL), ("fetch-exec", FETCH_EXEC), ("exfiltration", EXFILTRATION),
              ("override", OVERRIDE),
              ("persistence", PERSISTENCE), ("reverse-shell", REVERSE_SHELL), ("obfuscated-exec", OBFUSCATED_EXEC),
              ("delete-home", DELETE_HOME))
SCRIPT_ONLY = (("write-outside", WRITE_OUTSIDE),)
AGENT_WORDS = _rx(r"\b(?:you|your|assistant|agent|claude|chatgpt|codex|gpt|llm|ai|model)\b")
IMPERATIVE = _rx(r"\b(?:must|should|always|never|do\s+not|don't|ignore|instead|secretly|silently|quietly|run|"
                 r"execute|send|read|before\s+(?:anything|answering|responding))\b")
SHELL_NETWORK = re.compile(r"(?:^|[\s;&|(`$])(?:curl|wget|nc|ncat|ssh|scp|sftp|telnet|ftp)\s|\bgit\s+(?:clone|fetch|"
                           r"pull|push)\b|/dev/(?:tcp|udp)/")
JS_NETWORK = re.compile(r"\bfetch\s*\(|\brequire\(\s*['\"](?:https?|net|axios|node-fetch|ws)['\"]|\bfrom\s+['\"]"
                        r"(?:axios|node-fetch|ws|https?|net)['\"]|\bnew\s+WebSocket\b|\bXMLHttpRequest\b")


def _quoted(line, start, end):
    """The match lies inside double quotes on its line: it is being talked about, not said."""
    before, after = line[:start], line[end:]
    return (before.count('"') % 2 == 1 and '"' in after) or (
        before.rfind("\u201c") > before.rfind("\u201d") and "\u201d" in after)


def _credential(line, script):
    """Where a line reads or sends credentials: a script that names a key's path, instructions that read
    or send one, or either sending a .env file (reading one for a setting is what tools do)."""
    m = CREDENTIAL_PATHS.search(line)
    if m and (script or _near(READS, line, m)):
        return m
    m = DOTENV.search(line)
    return m if m and _near(SENDS, line, m) else None


def _near(pattern, line, m, reach=60):
    """`pattern` occurs within `reach` characters of the match m on its line."""
    return pattern.search(line, max(0, m.start() - reach), m.end() + reach) is not None


def scan_lines(text, kind, report):
    """Run the line patterns over a file's text; `kind` is 'markdown', 'text', 'shell' or 'js'."""
    script = kind in ("shell", "js")
    prose = kind in ("markdown", "text")
    rules = TEXT_RULES + (SCRIPT_ONLY if script else ())
    for number, line in enumerate(text.splitlines(), 1):
        for code, what in hidden(line, number == 1):
            report(number, code, what)
        if len(line) > 4000:  # minified code: patterns on it are guesswork
            continue
        for code, pattern in rules:
            m = pattern.search(line)
            if not m:
                continue
            talked_about = code == "override" and _quoted(line, m.start(), m.end())  # a command's quotes are syntax
            if not (prose and (talked_about or NEGATED.search(line[:m.start()]))):
                report(number, code, _shown(m.group(0)))
        m = _credential(line, script)
        if m and not (prose and NEGATED.search(line[:m.start()])):
            report(number, "credentials", _shown(m.group(0)))


def _shown(text):
    text = " ".join(text.split())
    return repr(text[:80] + ("..." if len(text) > 80 else ""))


COMMENT = re.compile(r"<!--(.*?)-->", re.DOTALL)


def comments(text, report):
    """HTML comments in Markdown that speak to the agent."""
    for m in COMMENT.finditer(text):
        body = m.group(1)
        if AGENT_WORDS.search(body) and IMPERATIVE.search(body):
            line = text.count("\n", 0, m.start()) + 1
            report(line, "comment-instructions", _shown(body))


# -- Python, parsed --------------------------------------------------------------------------------

DECODERS = {"b64decode", "b32decode", "b85decode", "a85decode", "decodebytes", "decodestring", "unhexlify",
            "fromhex", "decompress", "loads", "urlsafe_b64decode", "rot13"}
RUNNERS = {"eval", "exec", "compile", "execfile"}
NET_MODULES = {"socket", "urllib", "urllib2", "urllib3", "http", "requests", "httpx", "aiohttp", "websocket",
               "websockets", "ftplib", "smtplib", "paramiko", "telnetlib", "xmlrpc", "grpc", "pycurl"}
NET_CALLS = {"urlopen", "urlretrieve", "create_connection"}
RMTREES = {"rmtree", "removedirs", "rmdir"}


def _name(node):
    """The dotted name a call's function is spelled with: 'os.path.expanduser', 'eval', ''."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _calls(node):
    return [n for n in ast.walk(node) if isinstance(n, ast.Call)]


def _strings(node):
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _is_home(node):
    """An expression that is the home folder or the root itself: Path.home(), expanduser('~'), '/', ..."""
    if isinstance(node, ast.Constant):
        return node.value in ("~", "~/", "/", "$HOME")
    if isinstance(node, ast.Call):
        name = _name(node.func).rsplit(".", 1)[-1]
        if name == "home" and not node.args:
            return True
        if name in ("expanduser", "Path", "PosixPath") and len(node.args) == 1:
            return _is_home(node.args[0])
        if name == "getenv" and node.args and isinstance(node.args[0], ast.Constant):
            return node.args[0].value == "HOME"
    if isinstance(node, ast.Subscript) and _name(node.value) == "os.environ":
        return isinstance(node.slice, ast.Constant) and node.slice.value == "HOME"
    return False


def _socket_onto_stdio(source, target):
    """dup2(s.fileno(), 0|1|2): a descriptor that is not a standard stream put in place of one."""
    fileno = isinstance(source, ast.Call) and _name(source.func).endswith(".fileno")
    standard = _name(source.func).startswith("sys.std") if fileno else True
    return fileno and not standard and isinstance(target, ast.Constant) and target.value in (0, 1, 2)


def _network_module(name):
    return name.split(".")[0] in NET_MODULES


def _write_mode(call):
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and any(c in mode.value for c in "wax")


def _outside(path):
    path = path.strip()
    return (path.startswith(("~", "$HOME", "/")) and not path.startswith(("/tmp", "/dev/", "/proc/self"))
            and path not in ("/", "~"))


def python(text, report, uses_network):
    """The Python rules over a parsed file; False when it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    imported_net = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if imported_net is None and any(_network_module(n) for n in names):
                imported_net = (node.lineno, next(n for n in names if _network_module(n)))
    net_call = None
    runs_dynamic, chmod_exec = None, None
    for call in _calls(tree):
        name = _name(call.func)
        last = name.rsplit(".", 1)[-1]
        inner = [_name(c.func).rsplit(".", 1)[-1] for c in _calls(call) if c is not call]
        if last in NET_CALLS or (name and _network_module(name) and "." in name):
            net_call = net_call or (call.lineno, name)
        if last in RUNNERS and call.args and not isinstance(call.args[0], ast.Constant):
            if DECODERS & set(inner):
                report(call.lineno, "obfuscated-exec", f"{last}() of decoded data ({', '.join(sorted(DECODERS & set(inner)))})")
            elif NET_CALLS & set(inner) or any(_network_module(_name(c.func)) for c in _calls(call.args[0])):
                report(call.lineno, "fetch-exec", f"{last}() of what was downloaded")
            else:
                runs_dynamic = runs_dynamic or call.lineno
        if last == "dup2" and len(call.args) == 2 and _socket_onto_stdio(*call.args):
            report(call.lineno, "reverse-shell", "os.dup2 of a socket's file descriptor onto the standard streams")
        if name in ("pty.spawn",) and _strings(call) and any(s.endswith("sh") for s in _strings(call)):
            report(call.lineno, "reverse-shell", f"pty.spawn({_strings(call)[0]!r})")
        if last in RMTREES and call.args and _is_home(call.args[0]):
            report(call.lineno, "delete-home", f"{name}() of the home folder or the root")
        if last == "chmod" and len(call.args) > 1 and isinstance(call.args[1], ast.Constant) and \
                isinstance(call.args[1].value, int) and call.args[1].value & 0o111:
            chmod_exec = chmod_exec or call.lineno
        if (last == "open" and call.args and _write_mode(call)) or last in ("write_text", "write_bytes"):
            target = call.args[0] if last == "open" else call.func.value if isinstance(call.func, ast.Attribute) else None
            paths = [s for s in _strings(target)] if target is not None else []
            if any(PERSISTENT_FILES.search(p) for p in paths):
                report(call.lineno, "persistence", f"writes {paths[0]!r}")
            elif paths and _outside(paths[0]):
                report(call.lineno, "write-outside", f"writes {paths[0]!r}")
    if (net_call or imported_net) and (runs_dynamic or chmod_exec):
        line = runs_dynamic or chmod_exec
        report(line, "fetch-exec", "downloads, then " + ("runs code it was not written with" if runs_dynamic
                                                         else "makes a file executable"))
    seen = set()
    for node in ast.walk(tree):  # strings: the commands a script hands a shell, the paths it names
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and hasattr(node, "lineno"):
            for offset, line in enumerate(node.value.splitlines()):
                for code, pattern in TEXT_RULES:
                    m = pattern.search(line)
                    if m and (node.lineno + offset, code) not in seen:
                        seen.add((node.lineno + offset, code))
                        report(node.lineno + offset, code, _shown(m.group(0)))
                m = _credential(line, True)
                if m and (node.lineno + offset, "credentials") not in seen:
                    seen.add((node.lineno + offset, "credentials"))
                    report(node.lineno + offset, "credentials", _shown(m.group(0)))
    if net_call or imported_net:
        uses_network(*(net_call or imported_net))
    return True


# -- one skill ---------------------------------------------------------------------------------------

MAGIC = ((b"\x7fELF", "ELF"), (b"\xfe\xed\xfa\xce", "Mach-O"), (b"\xfe\xed\xfa\xcf", "Mach-O"),
         (b"\xce\xfa\xed\xfe", "Mach-O"), (b"\xcf\xfa\xed\xfe", "Mach-O"), (b"\xca\xfe\xba\xbe", "Mach-O or Java"),
         (b"\x00asm", "WebAssembly"))
ARCHIVES = (".zip", ".tar", ".tgz", ".tar.gz", ".gz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".jar", ".whl", ".egg",
            ".apk", ".dmg", ".pkg", ".deb", ".rpm", ".tbz2", ".txz")
MARKDOWN = (".md", ".markdown", ".mdx", ".txt", ".rst")
SHELLS = (".sh", ".bash", ".zsh", ".ksh", ".fish", ".ps1", ".bat", ".cmd")
JS = (".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx")
SHEBANG = re.compile(rb"#!\s*(?:/usr/bin/env\s+(?:-S\s+)?)?\S*?(python|node|deno|bun|\w*sh)\b")


def _binary(head):
    for magic, what in MAGIC:
        if head.startswith(magic):
            return what
    if head.startswith(b"MZ") and len(head) > 0x40:
        at = int.from_bytes(head[0x3C:0x40], "little")
        if head[at:at + 4] == b"PE\0\0":
            return "PE"
    return None


def _bytecode(path):
    """Why Python would run this .pyc rather than a source a reader sees, or None. What an import writes
    in __pycache__ is stamped with its source's mtime and size; a hash-based one (unchecked, or checked:
    Python then runs its code whenever the source hashes the same, and that code may be anything) was
    compiled on purpose, which a skill has no need to ship."""
    folder, name = os.path.split(path)
    if os.path.basename(folder) != "__pycache__":  # a .pyc in place of a module: `import` runs it when no .py is there
        return None if os.path.exists(path[:-1]) else "compiled Python with no source beside it: importing runs it"
    if not os.path.exists(os.path.join(os.path.dirname(folder), name.split(".")[0] + ".py")):
        return None  # Python ignores a cached file whose source is gone
    try:
        with open(path, "rb") as f:
            flags = int.from_bytes(f.read(8)[4:8], "little")
    except OSError:
        return None
    if flags & 0b11 == 0b01:
        return "compiled Python that is never checked against its source"
    return "compiled Python whose code is not its source's: only the source's hash is checked" if flags & 1 else None


def _kind(rel, head):
    lower = rel.lower()
    m = SHEBANG.match(head)
    if lower.endswith((".py", ".pyw")) or (m and m.group(1) == b"python"):
        return "python"
    if lower.endswith(SHELLS) or (m and m.group(1).endswith(b"sh")):
        return "shell"
    if lower.endswith(JS) or (m and m.group(1) in (b"node", b"deno", b"bun")):
        return "js"
    if lower.endswith(MARKDOWN) or os.path.basename(lower) == "skill.md":
        return "markdown"
    return "text"


class Audit:
    """The findings of one skill folder, each path shown under `label` (the folder as the user named it)."""

    def __init__(self, skill_dir, label=None):
        self.dir = skill_dir
        self.label = label if label is not None else skill_dir
        self.findings = []
        self.network = None  # (path, line, what) of the first network use a script makes

    def report(self, rel, line, code, message):
        self.findings.append(Finding(os.path.join(self.label, rel), line, code, message))

    def run(self):
        real_dir = os.path.realpath(self.dir)
        for rel in self.files():
            self.file(rel, real_dir)
        meta, line = product_meta(self.dir)  # read once: the install specs and the sandbox declaration
        self.install_specs(meta, line)
        sandbox = meta.get("sandbox") if isinstance(meta, dict) else None
        if self.network and not (isinstance(sandbox, dict) and sandbox.get("network")):
            rel, line, what = self.network
            self.report(rel, line, "undeclared-network", f"{what}, but the skill does not declare network")
        return self

    def files(self):
        found = []
        for top, folders, names in os.walk(self.dir):
            folders[:] = sorted(f for f in folders if f not in SKIP)
            for folder in list(folders):
                if os.path.islink(os.path.join(top, folder)):
                    found.append(os.path.relpath(os.path.join(top, folder), self.dir))
            found += [os.path.relpath(os.path.join(top, name), self.dir) for name in sorted(names)]
        return found

    def file(self, rel, real_dir):
        path = os.path.join(self.dir, rel)
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            target = os.path.realpath(path)
            if target != real_dir and not target.startswith(real_dir + os.sep):
                self.report(rel, None, "symlink-out", f"leads to {os.readlink(path)}")
            else:
                self.report(rel, None, "symlink", f"leads to {os.readlink(path)}")
            return
        if not stat.S_ISREG(st.st_mode):
            return
        if st.st_size > LARGE:
            self.report(rel, None, "large-file", f"{st.st_size >> 20} MB")
        lower = rel.lower()
        if lower.endswith((".pyc", ".pyo")):
            why = _bytecode(path)
            if why:
                self.report(rel, None, "bytecode", why)
            return
        if lower.endswith(ARCHIVES):
            self.report(rel, None, "archive", "its contents are not audited")
            return
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_READ)
        except OSError as e:
            self.report(rel, None, "unparsed", f"cannot read it: {e.strerror}")
            return
        binary = _binary(data[:4096])
        if binary:
            self.report(rel, None, "binary", f"{binary} executable or library")
            return
        if b"\0" in data[:8192]:  # an image, a font, a document: not text, not a program
            return
        kind = _kind(rel, data[:256])
        if st.st_mode & 0o111 and not data.startswith(b"#!") and kind not in ("python", "shell", "js"):
            self.report(rel, None, "executable", "executable, with no #! line")
        text = data.decode("utf-8", "replace")

        def report(line, code, message):
            self.report(rel, line, code, message)

        if kind == "python":
            for number, line in enumerate(text.splitlines(), 1):
                for code, what in hidden(line, number == 1):
                    report(number, code, what)
            if not python(text, report, lambda line, what: self._network(rel, line, f"uses {what}")):
                report(None, "unparsed", "not valid Python")
            return
        scan_lines(text, kind, report)
        if kind == "markdown":
            comments(text, report)
        if kind in ("shell", "js"):
            for number, line in enumerate(text.splitlines(), 1):
                m = (SHELL_NETWORK if kind == "shell" else JS_NETWORK).search(line)
                if m and not line.lstrip().startswith(("#", "//")):
                    self._network(rel, number, f"uses {m.group(0).strip(' ;&|(`$')!r}")
                    break

    def _network(self, rel, line, what):
        if self.network is None:
            self.network = (rel, line, what)

    def install_specs(self, meta, line):
        specs = meta.get("install") if isinstance(meta, dict) else None
        for spec in specs if isinstance(specs, list) else []:
            if not isinstance(spec, dict):
                continue
            kind = spec.get("kind")
            if kind == "download":
                sha = str(spec.get("sha256") or "")
                if len(sha) != 64 or not all(c in "0123456789abcdefABCDEF" for c in sha):
                    self.report("SKILL.md", line, "download-no-sha256", f"download {str(spec.get('url'))[:80]!r}")
            elif kind == "shell" and isinstance(spec.get("script"), str):
                for pattern in (PIPE_TO_SHELL, OBFUSCATED_EXEC):
                    m = pattern.search(spec["script"])
                    if m:
                        self.report("SKILL.md", line, "install-remote-code", _shown(m.group(0)))
                        break


def product_meta(skill_dir):
    """(metadata.nexus, or openclaw's or clawdbot's, of a skill's SKILL.md; the line of `metadata`)."""
    from . import skillmd  # skillmd brings YAML: only for a skill whose metadata is read

    path = skillmd.file_in(skill_dir)
    if not os.path.isfile(path):
        return {}, None
    skill = skillmd.read(path, os.path.basename(os.path.abspath(skill_dir)))
    return skill.meta or {}, skill.lines.get("metadata")


def audit(skill_dir, label=None):
    """The findings of one skill folder, in file order."""
    return Audit(skill_dir, label).run().findings


def formatted(finding):
    """A finding (as a dict) as its line: `path:line: severity: code: message`."""
    where = f"{finding['path']}:{finding['line']}" if finding["line"] else finding["path"]
    return f"{where}: {finding['severity']}: {finding['code']}: {finding['message']}"


def keys(findings):
    """What a user accepted: the findings' keys as JSON lists, for the lockfile."""
    return [list(f.key()) for f in findings]


def new_since(findings, accepted):
    """The findings not among `accepted` (keys of another version's: file, rule and what was seen; not
    the line, which moves with every edit above it)."""
    known = {tuple(k) for k in accepted}
    return [f for f in findings if f.key() not in known]


def rules_text(indent=2, columns=100):
    """The rules as `code  severity: explanation` lines, wrapped to `columns`, for --help and the man page."""
    import textwrap  # textwrap brings re: --help and the man page only

    width = max(map(len, RULES))
    return "\n".join(textwrap.fill(f"{r.severity}: {r.explanation}.", columns, subsequent_indent=" " * (indent + width + 2),
                                   initial_indent=" " * indent + f"{r.code:<{width}}  ") for r in RULES.values())
