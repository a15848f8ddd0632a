"""URLs as nexus keeps and shows them. Credentials are recognised in any spelling before anything prints a
URL or writes it down: the scheme in any case, a user (and password) before the host, a token in the query
string or the fragment, git's scp-like `user:password@host:path`."""


def split(text):
    """(scheme lowercased, userinfo, host and port, path, query and fragment) of `text`; scheme None for
    git's scp-like form (`user@host:path`), everything but path None for what is not a URL at all."""
    scheme, sep, rest = text.partition("://")
    if sep and scheme and all(c.isalnum() or c in "+-." for c in scheme):
        scheme = scheme.lower()
    else:
        at = text.find("@")
        if at < 0 or "/" in text[:at] or ":" not in text[at:]:
            return None, None, None, text, None
        userinfo, after = text[:at], text[at + 1:]
        host, _, path = after.partition(":")
        return None, userinfo, host, path, None
    cut = min((i for i in (rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    rest, query = rest[:cut], rest[cut:] or None
    authority, slash, path = rest.partition("/")
    userinfo, at, host = authority.rpartition("@")
    return scheme, userinfo if at else None, host, slash + path, query


def credentials(text):
    """What in `text` would be a credential ("a password", "a user name", "a query string"), or None. A
    user alone is one over http(s): https://TOKEN@host is how a token is put in a URL."""
    scheme, userinfo, _, _, query = split(text)
    if userinfo is not None and (":" in userinfo or scheme in ("http", "https")):
        return "a password" if ":" in userinfo else "a token before the host"
    if query is not None:
        return "a query string"
    return None


def shown(text):
    """`text` fit to print: its user information and its query string (with the fragment) as ***."""
    scheme, userinfo, host, path, query = split(text)
    if host is None:
        return text
    if scheme is None:
        return f"{'***' if ':' in userinfo else userinfo}@{host}:{path}"
    secret = userinfo is not None and (":" in userinfo or scheme in ("http", "https"))
    user = "***@" if secret else "" if userinfo is None else userinfo + "@"
    return f"{scheme}://{user}{host}{path}{query[0] + '***' if query else ''}"
