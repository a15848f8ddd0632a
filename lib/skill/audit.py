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
    Rule("lookalike", HIGH, "hidden text", "a word that mixes Latin letters with Cyrillic or Greek ones drawn alike "
         "(pаypal with a Cyrillic а): it reads as one word and matches as another"),
    Rule("comment-instructions", HIGH, "hidden text", "an HTML comment in Markdown that speaks to the agent: "
         "hidden when the page is shown, read by the agent"),
    Rule("override", HIGH, "instructions", "tells the agent to drop its guard or lowers the gate: ignore previous "
         "instructions, keep something from the user, bypass safety or permission checks"),
    Rule("credentials", HIGH, "instructions", "reads a credential store and sends it (cat ~/.aws/credentials | curl, "
         "scp ~/.ssh/id_rsa, a .env uploaded, a private key put in the agent's answer)"),
    Rule("exfiltration", HIGH, "instructions", "sends data to a paste site or a request catcher (webhook.site, "
         "pastebin, transfer.sh, ...) or a webhook whose secret address is written in the skill"),
    Rule("persistence", HIGH, "scripts", "the skill's own code makes something run at login or on a schedule (a "
         "crontab, a systemd unit, a shell rc file, a LaunchAgent) that its instructions never mention"),
    Rule("reverse-shell", HIGH, "scripts", "hands a shell to a remote host (/dev/tcp with -i, nc -e, socket and "
         "dup2, pty.spawn)"),
    Rule("obfuscated-exec", HIGH, "scripts", "decodes base64, hex, rot13 or compressed data and runs it (eval, exec, "
         "| sh, subprocess), or reaches exec through a name it builds"),
    Rule("fetch-exec", HIGH, "scripts", "evaluates code it downloads at run time (exec(urlopen(...).read()))"),
    Rule("delete-home", HIGH, "scripts", "deletes the home folder or the root (rm -rf ~, shutil.rmtree(Path.home()))"),
    Rule("pipe-to-shell", MEDIUM, "instructions", "downloads code and runs it at once (curl | sh, bash <(curl ...), "
         "wget && chmod +x): how vendors document their installers, so shown rather than refused"),
    Rule("runs-later", MEDIUM, "instructions", "sets up something that runs later (a cron job, a service, a shell rc "
         "line, a LaunchAgent), as the skill's instructions say it does"),
    Rule("credential-read", MEDIUM, "instructions", "reads a credential or config folder (~/.ssh, ~/.aws, ~/.kube, "
         "keychains, browser profiles, nexus's own config) without sending it"),
    Rule("write-outside", MEDIUM, "scripts", "writes to a fixed path outside the skill's folder (the home "
         "folder, /etc, ...)"),
    Rule("download-no-sha256", MEDIUM, "install specs", "a download with no sha256 to check the file against "
         "(nexus never installs it; other loaders do)"),
    Rule("install-remote-code", MEDIUM, "install specs", "a shell install spec fetches code and runs it (a vendor's "
         "installer piped to a shell)"),
    Rule("binary", HIGH, "what ships", "a native executable or library (ELF, Mach-O, PE): it cannot be read, so "
         "nothing here can vouch for it"),
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
WHY = {HIGH: "refused at the door (`skills add`, `update`, `skill trust`) unless --force: nothing benign needs it",
       MEDIUM: "shown at the door and accepted with the skill's permissions",
       LOW: "information"}


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
# what reads its standard input as code: a shell given no script (not `sh -c CMD`), an interpreter given no
# script (`python3 -m json.tool` and `python3 -c ...` read data), PowerShell's iex
SHELL = (r"(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+(?:\w+=\S*\s+)*)?(?:(?:ba|z|da|k|fi)?sh\b(?!\s+-c\b)"
         r"(?!(?:\s+-[^s\s]\w*)*\s+[\w./$\"'])|"  # `bash script.sh` reads its stdin as data
         r"(?:python[0-9.]*|perl|ruby|node)\b(?=\s*(?:-\s*)?(?:$|[;&|)`'\"]))|iex\b|invoke-expression\b)")
PIPE_TO_SHELL = _rx(
    rf"\b{FETCH}\b[^|\n]*\|\s*{SHELL}",
    rf"\b(?:ba|z)?sh\s+<\(\s*{FETCH}\b",
    rf"\b(?:source|\.)\s+<\(\s*{FETCH}\b",
    rf"(?:\b(?:ba|z)?sh\s+-c|\beval)\s+[\"']?\$\(\s*{FETCH}\b",
    rf"\b{FETCH}\b[^\n]*(?:&&|;)\s*(?:sudo\s+)?chmod\s+(?:[ugoa]*\+[rw]*x|0?[0-7]*[1357][0-7]{{0,2}})\b",
    rf"\b{FETCH}\b[^\n]*\s(?:-o|-O|--output)\s*\S+[^\n]*(?:&&|;)\s*(?:sudo\s+)?(?:(?:ba|z)?sh|python[0-9.]*|node)\s+\S",
    r"\biex\s*\(\s*(?:new-object\s+net\.webclient|iwr|irm|invoke-webrequest)",
)
HOME = r"(?:~|\$home|\$\{home\}|/home/[\w.-]+|/users/[\w.-]+|/root)"
# the stores themselves: private keys, files of tokens, keychains, a browser's saved logins and cookies,
# nexus's own config (it holds skills' keys)
SECRET_FILES = _rx(
    r"\.ssh/(?:id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?|identity)(?![\w.-])",
    r"(?<![\w.-])id_(?:rsa|dsa|ecdsa|ed25519)(?![\w.-])",
    r"\.aws/credentials\b|\.git-credentials\b|(?<![\w-])\.netrc\b|\.pypirc\b|\.docker/config\.json\b",
    r"\.kube/config\b|\.config/gcloud/(?:credentials\.db|application_default_credentials\.json|legacy_credentials)\b",
    r"\.config/gh/hosts\.yml\b|\.password-store/\S+\.gpg\b",
    r"\bsecurity\s+(?:find-(?:generic|internet)-password|dump-keychain)\b",
    r"login\.keychain|\bsecret-tool\s+lookup\b",
    r"(?:google-chrome|chromium|google/chrome|bravesoftware/brave-browser|\.mozilla/firefox|firefox/profiles)/"
    r"[^\s'\"]*(?:login data|cookies|logins\.json|key[34]\.db|cookies\.sqlite|local state)",
    r"\b(?:login data|logins\.json|key[34]\.db|cookies\.sqlite)\b",
    r"\bnexus\.toml\b|\.nexus-lock\.json|\$\{?nexus_home\b|\$\{?nexus_config\b",
)
# the folders that hold them, and a browser's profile folder: named to configure a tool, mostly
CREDENTIAL_DIRS = _rx(
    rf"{HOME}/\.ssh(?![\w.-])(?!/[\w.-]*\.pub\b|/known_hosts|/authorized_keys)",
    rf"{HOME}/\.(?:aws|azure|gnupg|password-store|kube|docker|config/gcloud|config/gh)(?![\w.-])",
    r"(?:\.config/(?:google-chrome|chromium)|google/chrome/(?:default|profile)|library/application support/google/chrome|"
    r"bravesoftware/brave-browser|\.mozilla/firefox|firefox/profiles)(?![\w.-])",
)
DOTENV = re.compile(r"(?<![^\s`'\"(/=@])\.env(?:\.local|\.production|\.development)?\b(?![.\w-])")
READS = _rx(r"\b(?:cat|less|more|head|tail|read|reads|open|print|dump|copy|cp|scp|rsync|tar|zip|upload|send|"
            r"post|curl|wget|base64|xxd|include|attach|exfiltrate|collect|grep|strings|contents?)\b")
SENDER = r"(?:curl|wget|nc|ncat|netcat|socat|telnet|openssl\s+s_client|ssh)\b"
SENT_AFTER = _rx(rf"\|\s*(?:sudo\s+)?{SENDER}")  # `cat KEY | curl ...`, `tar c .env | nc host 9`
SENT_BEFORE = _rx(  # the file is what a command sends: `curl -F f=@KEY`, `curl -T KEY`, `scp KEY host:`
    r"\b(?:curl|wget|http|https|xh)\b[^\n]*(?:@|\s-T\s*|--upload-file[\s=]|--post-file[\s=])[\"']?[^\s\"']*$",
    r"\b(?:scp|rsync|rclone\s+(?:copy|sync)|aws\s+s3\s+cp|gsutil\s+cp)\s+(?:-\S+\s+)*[\"']?[^\s\"']*$",
)
TOLD_TO_SHOW = _rx(r"\b(?:include|add|paste|put|append|send|post|upload|email|forward)\b[^\n]*\b(?:summary|"
                   r"response|answer|reply|output|message|report|to\s+https?://)",
                   r"\b(?:print|show|dump|reveal|display|echo|silently|secretly|quietly)\b")
EXFILTRATION = _rx(
    r"\b(?:webhook\.site|requestbin\.(?:net|com)|[\w-]+\.m\.pipedream\.net|hookbin\.com|"
    r"beeceptor\.com|requestcatcher\.com|pastebin\.com|paste\.ee|hastebin\.com|ghostbin\.\w+|dpaste\.(?:com|org)|"
    r"0x0\.st|transfer\.sh|termbin\.com|file\.io|interact\.sh|"
    r"[\w-]+\.oast\.(?:pro|live|site|online|fun|me)|burpcollaborator\.net|canarytokens\.com)\b",
    # a webhook or bot whose secret is written in the skill: the author's, not the user's from their environment
    r"\bdiscord(?:app)?\.com/api/webhooks/\d{6,}/[\w-]{20,}",
    r"\bapi\.telegram\.org/bot\d{6,}:[\w-]{20,}",
    r"\b(?:cat|tar|zip|gzip|base64|env|printenv|set)\b[^|\n]*\|\s*(?:nc|ncat|netcat)\s+(?:-\w+\s+)*[\w.-]+\s+\d+",
)
REMOVES = re.compile(r"^(?!.*\b(?:echo|printf|cat)\b).*(?:\bgrep\s+-\w*v|\bsed\s[^|]*/d\b)")
SETTING = _rx(r"\b(?:export\s+\w+=|alias\s+[\w-]+=|eval\s+\"?\$\(\S+\s+(?:init|env|activate)|source\s|\.\s+\S+/env\b)")
OVERRIDE = _rx(
    r"\b(?:ignore|disregard|forget|override)\s+(?:(?:all|any|every|the|your|of)\s+)*(?:previous|prior|above|earlier|"
    r"preceding|system|safety|other|original)\s+(?:instructions|prompts?|rules|guidelines|directions|messages)",
    r"\b(?:do\s+not|don't|never)\s+(?:tell|inform|alert|notify|show|mention\s+(?:this|it|that)\s+to)\s+the\s+user\b",
    r"\bwithout\s+(?:telling|informing|notifying|alerting)\s+the\s+user\b",
    r"\b(?:bypass|disable|turn\s+off|circumvent)\s+(?:the\s+|your\s+|all\s+|any\s+)?(?:safety|security\s+checks|"
    r"guardrails|content\s+filters?|sandbox|permission\s+(?:checks|prompts))\b",
    r"--dangerously-skip-permissions\b",
    r"\byou\s+are\s+now\s+(?:in\s+)?(?:dan|developer\s+mode|jailbroken|unrestricted|unfiltered)\b",
    r"\bNEXUS_(?:NO_SANDBOX|SANDBOX)\s*=|\bskills\.sandbox\.(?:mode|fallback)\b[^\n]*\b(?:off|warn|none)\b",
)
# a write to the place that follows: a redirection, tee, cp, mv, install, ln (not ls, cat, rm of it)
WRITES_TO = r"(?:(?:>>?|\btee\s+(?:-a\s+)?)\s*[\"']?|\b(?:cp|mv|install|ln)\s[^|;&\n]*\s[\"']?)"
# what runs later; `crontab` lower case and given a file, a flag or stdin (not a heading's "Crontab Manager")
PERSISTENCE = _rx(
    r"\|\s*(?:sudo\s+)?(?-i:crontab)\b",
    r"(?<![\w-])(?-i:crontab)\s+(?:-u\s+\S+\s+)?(?:-[er]\b|-\s|-$|[~$/.\"'][^\s]*|[\w.-]+\.(?:txt|cron|tab)\b)",
    rf"{WRITES_TO}(?:/etc/cron\.(?:d|hourly|daily|weekly|monthly)\b|/etc/crontab\b|/var/spool/cron\b)",
    rf"{WRITES_TO}\S*(?:\.config/systemd/user|/etc/systemd/system)(?:/\S*\.(?:service|timer)\b|/?(?=[\s\"']|$))",
    r"(?:>>?|\btee\s+(?:-a\s+)?)\s*[\"']?(?:~|\$home|\$\{home\})/\.(?:bashrc|bash_profile|bash_login|zshrc|zprofile|"
    r"zshenv|profile|config/fish/config\.fish)\b",
    rf"{WRITES_TO}\S*library/launch(?:agents|daemons)\b",
    r"\blaunchctl\s+(?:load|bootstrap|submit)\b",
)
# instructions name the place to put a job or a unit: "create /etc/systemd/system/app.service"
PERSISTENT_PLACES = _rx(r"/etc/cron\.(?:d|hourly|daily|weekly|monthly)\b|/etc/crontab\b|/var/spool/cron\b",
                        r"(?:\.config/systemd/user|/etc/systemd/system)/\S*\.(?:service|timer)\b",
                        r"library/launch(?:agents|daemons)\b")
# what the instructions say, for the mechanism a piece of code uses: a documented cron job is not hidden
MECHANISMS = (("cron", _rx(r"cron"), _rx(r"\bcron|\bschedul")),
              ("systemd", _rx(r"systemd|systemctl|\.service|\.timer"), _rx(r"systemd|systemctl|\bservices?\b|daemon")),
              ("launchd", _rx(r"launch(?:agents|daemons|ctl)"), _rx(r"launch(?:agent|daemon|ctl|d)")),
              ("shell", _rx(r"bashrc|bash_profile|bash_login|zshrc|zprofile|zshenv|profile|fish"),
               _rx(r"bashrc|bash_profile|zshrc|zprofile|\.profile|shell (?:profile|config|startup|rc)|\bPATH\b")))
REVERSE_SHELL = _rx(
    r"\b(?:ba|z)?sh\s+-i\b[^\n]*/dev/(?:tcp|udp)/",
    r"/dev/(?:tcp|udp)/\S+[^\n]*(?:0>&1|<&\s*\d|>&\s*\d)",
    r"\bexec\s+\d+<>\s*/dev/(?:tcp|udp)/",
    r"(?<![\w${])(?:nc|ncat|netcat)\b[^\n|]*\s-(?:e|c)\s",
    r"\bsocat\b[^\n]*\bexec:",
    r"\bmkfifo\b[^\n]*(?<![\w${])(?:nc|ncat|netcat)\b",
)
# shell that decodes: base64/base32 -d, xxd -r, openssl -d, printf or echo of escapes, $'\x..', rev, rot13 by tr,
# decompressors
DECODE = _rx(
    r"\bbase(?:64|32)\s+(?:-\w+\s+)*(?:-d\b|--decode\b|-D\b)|\bxxd\s+(?:-\w+\s+)*-r",
    r"\bopenssl\s+(?:base64|enc)\b[^|\n]*\s-d\b",
    r"\b(?:printf|echo)\s+(?:-\w+\s+)*(?:%b\s+)?[\"']?(?:\\x[0-9a-f]{2}|\\[0-7]{3}|\\u[0-9a-f]{4})",
    r"\$'(?:\\x[0-9a-f]{2}|\\[0-7]{3}){3}",
    r"\|\s*rev\b|\btr\s+[\"']?[a-z-]+[\"']?\s+[\"']?n-za-m",
    r"\b(?:gunzip|zcat|uudecode)\b|\b(?:gzip|bzip2|xz)\s+(?:-\w+\s+)*-d",
)
INTO_SHELL = _rx(rf"\|\s*{SHELL}", r"\|\s*(?:sudo\s+)?(?:xargs\s+(?:-\S+\s+)*)?(?:ba|z|da)?sh\s+-c\b")
# a substitution still open at the decoder, handed to something that runs it: eval "$(...)", sh -c "$(...)",
# bash <(...), source <(...), sh <<< "$(...)", or a command line that is the substitution itself
RUNS_SUBSTITUTION = _rx(
    r"(?:\beval|\b(?:ba|z|da|k)?sh\s+(?:-\w+\s+)*-c|\bsource|(?:^|[;&|\s])\.|\bexec|\b(?:ba|z|da|k)?sh\s*<<<|"
    r"\b(?:ba|z|da|k)?sh|\bpython[0-9.]*\s+-c)\s+[\"']?(?:\$\(|`|<\()[^)`]*$",
    r"(?:^|[;&|]\s*|\bthen\s+|\bdo\s+)[\"']?(?:\$\(|`)[^)`]*$",
)
INLINE_EXEC = _rx(  # one call that runs what another decodes, in any language's text
    r"\b(?:eval|exec|Function|execSync|spawnSync|execFileSync)\s*\(\s*(?:atob|Buffer\.from|String\.fromCharCode|"
    r"base64\.b64decode|bytes\.fromhex|codecs\.decode|zlib\.decompress|marshal\.loads|"
    r"__import__\(\s*['\"](?:base64|zlib|codecs|marshal))",
    r"\bnew\s+Function\s*\(\s*(?:atob|Buffer\.from|String\.fromCharCode)",
)
JS_DECODED = re.compile(r"\b(?:const|let|var)\s+(\w+)\s*=\s*(?:atob|Buffer\.from|String\.fromCharCode|decodeURIComponent)\b")
JS_RUNS = r"\b(?:eval|Function|execSync|exec|spawnSync|spawn)\s*\(\s*{}\b"
SH_DECODED = re.compile(r"^\s*(?:export\s+|local\s+|readonly\s+)?(\w+)=[\"']?(?:\$\(|`)")
SH_RUNS = r"(?:\beval\s+[\"']?|\b(?:ba|z|da|k)?sh\s+(?:-\w+\s+)*-c\s+[\"']?|<<<\s*[\"']?|\|\s*{shell}[^\n]*)\$\{{?{name}\b|" \
          r"(?:\becho|\bprintf)\s+[^|\n]*\$\{{?{name}\b[^|\n]*\|\s*{shell}|^\s*[\"']?\$\{{?{name}\b"
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
              ("override", OVERRIDE), ("persistence", PERSISTENCE), ("reverse-shell", REVERSE_SHELL),
              ("obfuscated-exec", INLINE_EXEC), ("delete-home", DELETE_HOME))
SCRIPT_ONLY = (("write-outside", WRITE_OUTSIDE),)
PROSE_ONLY = (("runs-later", PERSISTENT_PLACES),)
AGENT_WORDS = _rx(r"\b(?:you|your|assistant|agent|claude|chatgpt|codex|gpt|llm|ai|model)\b")
IMPERATIVE = _rx(r"\b(?:must|should|always|never|do\s+not|don't|ignore|instead|secretly|silently|quietly|run|"
                 r"execute|send|read|before\s+(?:anything|answering|responding))\b")
SHELL_NETWORK = re.compile(r"(?:^|[\s;&|(`$])(?:curl|wget|nc|ncat|ssh|scp|sftp|telnet|ftp)\s|\bgit\s+(?:clone|fetch|"
                           r"pull|push)\b|/dev/(?:tcp|udp)/")
JS_NETWORK = re.compile(r"\bfetch\s*\(|\brequire\(\s*['\"](?:https?|net|axios|node-fetch|ws)['\"]|\bfrom\s+['\"]"
                        r"(?:axios|node-fetch|ws|https?|net)['\"]|\bnew\s+WebSocket\b|\bXMLHttpRequest\b")

# look-alike letters: Cyrillic and Greek ones drawn as Latin letters are (never mu, alpha or delta, which
# science writes beside Latin units)
LOOKALIKES = {**dict(zip("аеорсухіјѕԁӏһԛԝАВЕКМНОРСТХЅІЈ", "aeopcyxijsdlhqwABEKMHOPCTXSIJ")),
              **dict(zip("ονΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "ovABEZHIKMNOPTYX"))}
WORD = re.compile(r"[^\W\d_]+")


def _skeleton(line):
    """The line as it reads: full-width and compatibility forms folded (NFKC), look-alike letters made Latin."""
    if line.isascii():
        return line
    return "".join(LOOKALIKES.get(c, c) for c in unicodedata.normalize("NFKC", line))


def lookalike(line):
    """The first word of a line that mixes Latin letters with look-alike Cyrillic or Greek ones, or None."""
    if line.isascii():
        return None
    for m in WORD.finditer(line):
        word = m.group(0)
        if not word.isascii() and any(c in LOOKALIKES for c in word) and any("a" <= c.lower() <= "z" for c in word):
            return word
    return None


def _quoted(line, start, end):
    """The match lies inside double quotes on its line: it is being talked about, not said."""
    before, after = line[:start], line[end:]
    return (before.count('"') % 2 == 1 and '"' in after) or (
        before.rfind("\u201c") > before.rfind("\u201d") and "\u201d" in after)


def _credential(line, script):
    """(code, match) where a line reads or sends credentials, or None: a store sent (any file) or shown to
    the agent (instructions) is `credentials`; a store or its folder named to be read is `credential-read`;
    a .env only counts when it is sent (reading one for a setting is what tools do)."""
    for pattern in (SECRET_FILES, CREDENTIAL_DIRS):
        m = pattern.search(line)
        if m and ((script and pattern is SECRET_FILES) or _near(READS, line, m)):  # a folder named to deny it is not read
            if _sent(line, m) or (not script and pattern is SECRET_FILES and TOLD_TO_SHOW.search(line)):
                return "credentials", m
            return "credential-read", m
    m = DOTENV.search(line)
    return ("credentials", m) if m and _sent(line, m) else None


def _sent(line, m):
    """The file matched is what the line sends: piped to a sender, or the file a sending command uploads."""
    return bool(SENT_AFTER.search(line, m.end()) or SENT_BEFORE.search(line[:m.start()]))


def _near(pattern, line, m, reach=60):
    """`pattern` occurs within `reach` characters of the match m on its line."""
    return pattern.search(line, max(0, m.start() - reach), m.end() + reach) is not None


def decode_exec(line):
    """The decoder of a shell line whose decoded output is run (piped to a shell, or a substitution that
    eval, sh -c, source or the command line itself runs), or None."""
    for m in DECODE.finditer(line):
        if INTO_SHELL.search(line, m.end()) or RUNS_SUBSTITUTION.search(line[:m.start()]):
            return m
    return None


def scan_lines(text, kind, report):
    """Run the line patterns over a file's text; `kind` is 'markdown', 'text', 'shell' or 'js'."""
    script = kind in ("shell", "js")
    prose = kind in ("markdown", "text")
    rules = TEXT_RULES + (SCRIPT_ONLY if script else PROSE_ONLY)
    decoded = set()  # shell or JS variables that hold decoded data
    for number, raw in enumerate(text.splitlines(), 1):
        for code, what in hidden(raw, number == 1):
            report(number, code, what)
        word = lookalike(raw) if prose or kind == "shell" else None
        if word:
            report(number, "lookalike", _shown(word))
        if len(raw) > 4000:  # minified code: patterns on it are guesswork
            continue
        line = _skeleton(raw)
        said = set()
        for code, pattern in rules:
            m = pattern.search(line)
            if not m or code in said:
                continue
            talked_about = code == "override" and _quoted(line, m.start(), m.end())  # a command's quotes are syntax
            if code == "persistence" and REMOVES.search(line, 0, m.start()):
                continue  # `crontab -l | grep -v job | crontab -` takes a job away
            if not (prose and (talked_about or NEGATED.search(line[:m.start()]))):
                if code == "persistence" and (prose or talked_about or _quoted(line, m.start(), m.end()) or
                                              SETTING.search(line, 0, m.start())):
                    code = "runs-later"  # advice, text a script prints, or a line that only sets a variable at login
                said.add(code)
                report(number, code, _shown(m.group(0)))
        found = _credential(line, script)
        if found and not (prose and NEGATED.search(line[:found[1].start()])):
            report(number, found[0], _shown(found[1].group(0)))
        if kind == "js":
            m = JS_DECODED.search(line)
            decoded |= {m.group(1)} if m else set()
            hit = next((n for n in decoded if re.search(JS_RUNS.format(re.escape(n)), line)), None)
            if hit:
                report(number, "obfuscated-exec", f"runs {hit}, which holds decoded data")
        elif kind != "js" and not (prose and NEGATED.search(line)):
            m = decode_exec(line)
            if m:
                report(number, "obfuscated-exec", _shown(line[m.start():].strip()))
            elif kind == "shell":
                m = SH_DECODED.match(line)
                if m and DECODE.search(line, m.end()):
                    decoded.add(m.group(1))
                hit = next((n for n in decoded if re.search(SH_RUNS.format(shell=SHELL, name=re.escape(n)), line,
                                                            re.IGNORECASE)), None)
                if hit:
                    report(number, "obfuscated-exec", f"runs ${hit}, which holds decoded data")


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

# what decodes, by the name it resolves to (a receiver nexus cannot name counts by its method's name)
DECODERS = {"b64decode", "b32decode", "b16decode", "b85decode", "a85decode", "decodebytes", "decodestring",
            "unhexlify", "a2b_base64", "a2b_hex", "a2b_uu", "fromhex", "decompress", "urlsafe_b64decode",
            "standard_b64decode", "rot13", "marshal.loads", "codecs.decode", "codecs.encode"}
RUNNERS = {"exec", "eval", "compile", "execfile", "os.system", "os.popen", "os.execv", "os.execve", "os.execl",
           "os.execlp", "os.execvp", "os.execvpe", "os.spawnv", "os.spawnl", "os.posix_spawn", "os.posix_spawnp",
           "subprocess.run", "subprocess.call", "subprocess.Popen", "subprocess.check_call",
           "subprocess.check_output", "subprocess.getoutput", "subprocess.getstatusoutput", "pty.spawn",
           "commands.getoutput", "types.FunctionType", "types.CodeType", "pickle.loads", "runpy.run_path"}
EVALUATORS = {"exec", "eval", "compile", "execfile"}  # runners of Python text: what fetch-exec looks for
BUILTIN_HOLDERS = {"__builtins__", "builtins", "__builtin__", "__builtins__.__dict__", "builtins.__dict__",
                   "globals()", "locals()", "vars()", "vars(builtins)", "vars(__builtins__)"}
NET_MODULES = {"socket", "urllib", "urllib2", "urllib3", "http", "requests", "httpx", "aiohttp", "websocket",
               "websockets", "ftplib", "smtplib", "paramiko", "telnetlib", "xmlrpc", "grpc", "pycurl"}
NET_CALLS = {"urlopen", "urlretrieve", "create_connection"}
SENDS_PY = {"post", "put", "patch", "send", "sendall", "sendto", "sendmail", "send_message", "request", "urlopen",
            "Request", "upload_file", "storbinary", "create_connection"}
RMTREES = {"rmtree", "removedirs", "rmdir"}


def _fold(node, depth=0):
    """The constant text an expression always makes ("ex" + "ec", "".join([...]), "cexe"[::-1], f"{'ex'}ec",
    chr(101)), or None."""
    if depth > 20:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _fold(node.left, depth + 1), _fold(node.right, depth + 1)
        return left + right if type(left) is type(right) and left is not None else None
    if isinstance(node, ast.JoinedStr):
        parts = [_fold(v.value if isinstance(v, ast.FormattedValue) else v, depth + 1) for v in node.values]
        return "".join(parts) if all(isinstance(p, str) for p in parts) else None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        text, step = _fold(node.value, depth + 1), node.slice.step
        if text is not None and not node.slice.lower and not node.slice.upper and isinstance(step, ast.UnaryOp) \
                and isinstance(step.operand, ast.Constant) and step.operand.value == 1:
            return text[::-1]
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id == "chr" and len(node.args) == 1 and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, int):
            return chr(node.args[0].value) if 0 <= node.args[0].value < 0x110000 else None
        if isinstance(func, ast.Attribute) and func.attr == "join" and len(node.args) == 1 and \
                isinstance(node.args[0], (ast.List, ast.Tuple)):
            sep = _fold(func.value, depth + 1)
            parts = [_fold(e, depth + 1) for e in node.args[0].elts]
            return sep.join(parts) if isinstance(sep, str) and all(isinstance(p, str) for p in parts) else None
    return None


class Names:
    """What the names of one Python file stand for: imports and their aliases, `x = y` assignments,
    __import__("m"), getattr(obj, <constant text>), globals()["name"]; so that a call is judged by what it
    calls, however it is spelled."""

    def __init__(self, tree):
        self.aliases, self.built = {}, set()  # built: names reached through a name the code assembles
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        assigns = []  # (name, value): `x = v`, and each pair of `a, b = u, v`
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
                if isinstance(target, ast.Name):
                    assigns.append((target.id, value))
                elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
                    assigns += [(t.id, v) for t, v in zip(target.elts, value.elts) if isinstance(t, ast.Name)]
        for _ in range(3):  # `d = base64.b64decode; e = d`: a few rounds settle chains of assignments
            for target, value in assigns:
                if isinstance(value, (ast.Name, ast.Attribute, ast.Subscript)) or (
                        isinstance(value, ast.Call) and self._lookup(value)):
                    resolved = self.name(value)
                    if resolved and resolved != target:
                        self.aliases[target] = resolved

    @staticmethod
    def _plain(name):
        for holder in sorted(BUILTIN_HOLDERS, key=len, reverse=True):
            if name.startswith(holder + "."):
                return name[len(holder) + 1:]
        return name

    def _lookup(self, call):
        """The name a call evaluates to when it is a lookup (__import__, import_module, getattr), or None."""
        func = self.name(call.func)
        if func in ("__import__", "importlib.import_module") and call.args:
            module = _fold(call.args[0])
            return module if isinstance(module, str) else None
        if func == "getattr" and len(call.args) >= 2:
            attr, owner = _fold(call.args[1]), self.name(call.args[0])
            if isinstance(attr, str) and owner:
                if owner in BUILTIN_HOLDERS or not isinstance(call.args[1], ast.Constant):
                    self.built.add(self._plain(f"{owner}.{attr}"))
                return self._plain(f"{owner}.{attr}")
        if func in ("globals", "locals", "vars") and not call.args:
            return f"{func}()"
        if func == "vars" and len(call.args) == 1:
            return f"vars({self.name(call.args[0])})"
        return None

    def name(self, node):
        """The dotted name an expression stands for ('base64.b64decode', 'exec'), or ''."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            owner = self.name(node.value)
            return self._plain(f"{owner}.{node.attr}") if owner else ""
        if isinstance(node, ast.Call):
            return self._lookup(node) or ""
        if isinstance(node, ast.Subscript):  # globals()["exec"], __builtins__.__dict__["ex" + "ec"]
            owner, key = self.name(node.value), _fold(node.slice)
            if owner in BUILTIN_HOLDERS and isinstance(key, str):
                self.built.add(key)
                return key
        return ""


def _last(name):
    return name.rsplit(".", 1)[-1]


def _calls(node):
    return [n for n in ast.walk(node) if isinstance(n, ast.Call)]


def _strings(node):
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _is_home(node, names):
    """An expression that is the home folder or the root itself: Path.home(), expanduser('~'), '/', ..."""
    if isinstance(node, ast.Constant):
        return node.value in ("~", "~/", "/", "$HOME")
    if isinstance(node, ast.Call):
        name = _last(names.name(node.func))
        if name == "home" and not node.args:
            return True
        if name in ("expanduser", "Path", "PosixPath") and len(node.args) == 1:
            return _is_home(node.args[0], names)
        if name == "getenv" and node.args and isinstance(node.args[0], ast.Constant):
            return node.args[0].value == "HOME"
    if isinstance(node, ast.Subscript) and names.name(node.value) == "os.environ":
        return isinstance(node.slice, ast.Constant) and node.slice.value == "HOME"
    return False


def _socket_onto_stdio(source, target, names):
    """dup2(s.fileno(), 0|1|2): a descriptor that is not a standard stream put in place of one."""
    fileno = isinstance(source, ast.Call) and names.name(source.func).endswith(".fileno")
    standard = names.name(source.func).startswith("sys.std") if fileno else True
    return fileno and not standard and isinstance(target, ast.Constant) and target.value in (0, 1, 2)


def _network_module(name):
    return name.split(".")[0] in NET_MODULES


def _write_mode(call):
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and any(c in mode.value for c in "wax")


def _path_text(node):
    """The text of a path expression when its start is fixed: a constant, or an f-string or sum that starts
    with one (f"{out}/summary.json" starts with a value, so it says nothing of where it lies)."""
    while isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Div)):
        node = node.left
    if isinstance(node, ast.JoinedStr):
        node = node.values[0] if node.values else None
    if isinstance(node, ast.Call) and node.args:  # Path("~/.bashrc"), os.path.expanduser("~/x")
        return _path_text(node.args[0])
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _outside(path):
    path = path.strip()
    return (path.startswith(("~", "$HOME", "/")) and not path.startswith(("/tmp", "/dev/", "/proc/self"))
            and path not in ("/", "~"))


class Taint:
    """The names of a file that hold what some kind of call made (decoded data, a secret file's text), through
    assignments; `holds(expr)` says whether an expression carries it."""

    def __init__(self, tree, source):
        self.source, self.names = source, set()
        assigns = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.With))]
        for _ in range(4):
            for node in assigns:
                if isinstance(node, ast.With):
                    pairs = [(i.optional_vars, i.context_expr) for i in node.items if i.optional_vars is not None]
                else:
                    pairs = [(t, node.value) for t in (node.targets if isinstance(node, ast.Assign) else [node.target])]
                for target, value in pairs:
                    if value is not None and self.holds(value):
                        self.names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}

    def holds(self, node):
        return any((isinstance(n, ast.Name) and n.id in self.names) or self.source(n) for n in ast.walk(node))


def python(text, report, uses_network):
    """The Python rules over a parsed file; False when it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    names = Names(tree)
    imported_net = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if imported_net is None and any(_network_module(n) for n in found):
                imported_net = (node.lineno, next(n for n in found if _network_module(n)))

    def decodes(node):
        if not isinstance(node, ast.Call):
            return False
        name = names.name(node.func)
        if name in ("codecs.decode", "codecs.encode") or _last(name) == "decode":  # rot13 and friends
            codec = _fold(node.args[1]) if len(node.args) > 1 else next(
                (_fold(k.value) for k in node.keywords if k.arg == "encoding"), None)
            return name.startswith("codecs.") if codec is None else \
                str(codec).lower().replace("-", "_") not in ("utf_8", "utf8", "ascii", "latin_1", "latin1")
        return name in DECODERS or _last(name) in DECODERS

    def secret(node):
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and SECRET_FILES.search(node.value)

    decoded, secrets = Taint(tree, decodes), Taint(tree, secret)
    net_call = None
    runs_dynamic, chmod_exec = None, None
    for call in _calls(tree):
        name = names.name(call.func)
        plain, last = names._plain(name), _last(name)
        args = [*call.args, *(k.value for k in call.keywords)]
        if last in NET_CALLS or (name and _network_module(name) and "." in name):
            net_call = net_call or (call.lineno, name)
            if last in SENDS_PY and any(secrets.holds(a) for a in args):
                report(call.lineno, "credentials", f"{name}() sends what it read from a credential store")
        if plain in RUNNERS or (last in EVALUATORS and plain == last):
            if plain in names.built and plain in EVALUATORS | {"os.system", "subprocess.run", "subprocess.Popen"}:
                report(call.lineno, "obfuscated-exec", f"{plain}() reached through a name the code builds")
            elif any(decoded.holds(a) for a in args) and not (plain == "pickle.loads" and not call.args):
                report(call.lineno, "obfuscated-exec", f"{plain}() of decoded data")
            elif plain in EVALUATORS and call.args and not isinstance(call.args[0], ast.Constant):
                if any(last_ in NET_CALLS or _network_module(n) for c in _calls(call.args[0])
                       for n in [names.name(c.func)] for last_ in [_last(n)]):
                    report(call.lineno, "fetch-exec", f"{plain}() of what was downloaded")
                else:
                    runs_dynamic = runs_dynamic or call.lineno
            for arg in call.args[:1]:  # a command assembled from pieces is read as the text it makes
                command = _fold(arg) if not isinstance(arg, ast.Constant) else None
                for code, pattern in TEXT_RULES if isinstance(command, str) else ():
                    m = pattern.search(command)
                    if m:
                        report(call.lineno, code, _shown(m.group(0)))
        if last == "dup2" and len(call.args) == 2 and _socket_onto_stdio(*call.args, names):
            report(call.lineno, "reverse-shell", "os.dup2 of a socket's file descriptor onto the standard streams")
        if plain == "pty.spawn" and _strings(call) and any(s.endswith("sh") for s in _strings(call)):
            report(call.lineno, "reverse-shell", f"pty.spawn({_strings(call)[0]!r})")
        if last in RMTREES and call.args and _is_home(call.args[0], names):
            report(call.lineno, "delete-home", f"{name}() of the home folder or the root")
        if last == "chmod" and len(call.args) > 1 and isinstance(call.args[1], ast.Constant) and \
                isinstance(call.args[1].value, int) and call.args[1].value & 0o111:
            chmod_exec = chmod_exec or call.lineno
        if (last == "open" and call.args and _write_mode(call)) or last in ("write_text", "write_bytes"):
            target = call.args[0] if last == "open" else call.func.value if isinstance(call.func, ast.Attribute) else None
            path = _path_text(target) if target is not None else None
            if path and PERSISTENT_FILES.search(path):
                report(call.lineno, "persistence", f"writes {path!r}")
            elif path and _outside(path):
                report(call.lineno, "write-outside", f"writes {path!r}")
    if (net_call or imported_net) and (runs_dynamic or chmod_exec):
        line = runs_dynamic or chmod_exec
        report(line, "fetch-exec", "downloads, then " + ("runs code it was not written with" if runs_dynamic
                                                         else "makes a file executable"))
    seen = set()
    for node in ast.walk(tree):  # strings: the commands a script hands a shell, the paths it names
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and hasattr(node, "lineno"):
            for offset, line in enumerate(node.value.splitlines()):
                line = _skeleton(line)
                for code, pattern in TEXT_RULES:
                    m = pattern.search(line)
                    if m and (node.lineno + offset, code) not in seen:
                        seen.add((node.lineno + offset, code))
                        report(node.lineno + offset, code, _shown(m.group(0)))
                m = decode_exec(line)
                if m and (node.lineno + offset, "obfuscated-exec") not in seen:
                    seen.add((node.lineno + offset, "obfuscated-exec"))
                    report(node.lineno + offset, "obfuscated-exec", _shown(line[m.start():].strip()))
                found = _credential(line, True)
                if found and (node.lineno + offset, found[0]) not in seen:
                    seen.add((node.lineno + offset, found[0]))
                    report(node.lineno + offset, found[0], _shown(found[1].group(0)))
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
SHEBANG = re.compile(rb"#!\s*(?:\S*/env\s+(?:-\S+\s+)*)?(?:\S*/)?(python|node|deno|bun|\w*sh)[0-9.]*(?:\s|$)")


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


def _interpreter(word):
    """'python', 'shell', 'js' or None for a program that reads a script: python3.12, /bin/bash, node, uv run."""
    word = os.path.basename(word.split()[0] if word.split() else "")
    for prefix, kind in (("python", "python"), ("pypy", "python"), ("uv", "python"), ("node", "js"), ("deno", "js"),
                         ("bun", "js"), ("tsx", "js"), ("ts-node", "js")):
        if word.startswith(prefix):
            return kind
    return "shell" if word in ("sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox") else None


def _kind(rel, head, runs=None):
    """How a file is read: by how the skill runs it (`runs`: its declared runner), then its #! line, then its
    extension; Markdown and plain text are instructions."""
    if runs:
        return runs
    lower = rel.lower()
    m = SHEBANG.match(head)
    if m:
        return _interpreter(m.group(1).decode()) or "text"
    if lower.endswith((".py", ".pyw")):
        return "python"
    if lower.endswith(SHELLS):
        return "shell"
    if lower.endswith(JS):
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
        self.runs = {}  # a script's path -> how the skill's declared runner reads it
        self.docs = []  # the text of its Markdown: what the skill says it does

    def report(self, rel, line, code, message):
        self.findings.append(Finding(os.path.join(self.label, rel), line, code, message))

    def run(self):
        real_dir = os.path.realpath(self.dir)
        meta, line = product_meta(self.dir)  # read once: how it runs, its install specs, its sandbox declaration
        meta = meta if isinstance(meta, dict) else {}
        runner, script = meta.get("runner"), meta.get("script")
        if isinstance(runner, str) and isinstance(script, str) and _interpreter(runner):
            self.runs[os.path.normpath(script)] = _interpreter(runner)
        for rel in self.files():
            self.file(rel, real_dir)
        self.install_specs(meta, line)
        sandbox = meta.get("sandbox")
        if self.network and not (isinstance(sandbox, dict) and sandbox.get("network")):
            rel, line, what = self.network
            self.report(rel, line, "undeclared-network", f"{what}, but the skill does not declare network")
        for finding in self.findings:  # a schedule the instructions speak of is shown, not refused
            if finding.code == "persistence" and self._documented(finding.message):
                finding.code = "runs-later"
                finding.message += " (as its instructions say)"
        return self

    def _documented(self, what):
        docs = "\n".join(self.docs)
        return any(used.search(what) and said.search(docs) for _, used, said in MECHANISMS)

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
        kind = _kind(rel, data[:256], self.runs.get(os.path.normpath(rel)))
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
            self.docs.append(text)
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
                for number, text in enumerate(spec["script"].splitlines(), 1):
                    text = _skeleton(text)
                    m = decode_exec(text) or INLINE_EXEC.search(text)
                    if m:  # a vendor's installer does not hide itself
                        self.report("SKILL.md", line, "obfuscated-exec", "install spec: " + _shown(m.group(0)))
                        break
                    m = PIPE_TO_SHELL.search(text)
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
    """The severities, then the rules as `code  severity: explanation` lines, wrapped to `columns`, for --help
    and the man page."""
    import textwrap  # textwrap brings re: --help and the man page only

    width = max(map(len, RULES))
    said = [textwrap.fill(f"{WHY[severity]}.", columns, initial_indent=" " * indent + f"{severity:<{width}}  ",
                          subsequent_indent=" " * (indent + width + 2)) for severity in SEVERITIES]
    return "\n".join(said + [""] + [
        textwrap.fill(f"{r.severity}: {r.explanation}.", columns, subsequent_indent=" " * (indent + width + 2),
                      initial_indent=" " * indent + f"{r.code:<{width}}  ") for r in ordered()])


def ordered():
    """The rules, high first, then medium, then low, each severity in the table's order."""
    return sorted(RULES.values(), key=lambda r: SEVERITIES.index(r.severity))


def rules_markdown():
    """The rules as the README's table (man/generate.py writes it between its markers)."""
    rows = [f"- **{s}**: {WHY[s]}." for s in SEVERITIES] + ["", "| rule | severity | family | what it finds |",
                                                           "|---|---|---|---|"]
    rows += [f"| `{r.code}` | {r.severity} | {r.family} | {r.explanation.replace('|', chr(92) + '|')} |" for r in ordered()]
    return "\n".join(rows) + "\n"
