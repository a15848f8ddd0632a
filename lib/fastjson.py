"""JSON for the hot path, straight from CPython's C accelerator.

The json package's pure-Python half imports `re`, which costs more than the rest of a
`nexus skill run`; the C scanner and encoder it wraps need nothing. Where `_json` is missing
(another Python implementation), the json package stands in.
"""

try:
    import _json
except ImportError:  # pragma: no cover - CPython always has it
    _json = None


class _Decoding:
    """The settings the C scanner reads, as json.JSONDecoder's defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name):
        return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


def loads(data):
    """Parse a JSON document (str or UTF-8 bytes); ValueError when it is not valid JSON."""
    try:
        return _loads(data)
    except RecursionError:  # a hostile document: every reader takes it as one that is not JSON
        raise ValueError("nested too deeply") from None


def _loads(data):
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    if _json is None:
        import json  # without the C accelerator only: the json package brings `re`

        return json.loads(text)
    text = text.strip(" \t\n\r")
    try:
        value, end = _scan(text, 0)
    except StopIteration as e:
        raise ValueError(f"expecting a JSON value at character {e.value}") from None
    except SystemError:
        # The scanner raises its errors as json.decoder.JSONDecodeError, and fails without one when
        # that module is not loaded yet: let the json package parse the bad document and say why.
        import json

        return json.loads(text)
    if end != len(text):
        raise ValueError(f"extra data after the JSON value at character {end}")
    return value


def scanner():
    """scan(text, index) -> (value, end), straight from the C scanner: for a loop over many small
    documents. It raises StopIteration where no value starts, and ValueError for a bad one (import
    json.decoder first: the scanner raises its error from there)."""
    if _json is None:
        import json  # without the C accelerator only: the json package brings `re`

        return json.JSONDecoder().scan_once
    return _scan


NOT_JSON, BLANK = object(), object()  # what values() gives for a line without a JSON document, and for a blank one


def values(lines):
    """The value of each line of JSON Lines (whitespace around its one JSON document aside), NOT_JSON where
    it holds none, BLANK where it holds only whitespace: for a loop over many lines (the usage logs).
    orjson parses a line in about a third of the C scanner's time, where it is installed (the `fast`
    extra); what it refuses and the scanner reads (NaN, integers past 64 bits, lone surrogates) the
    scanner still reads, so the answer is the same with it or without (tests/test_stats.py)."""
    import json.decoder  # noqa: F401 - where the scanner's errors come from

    scan = scanner()

    def scanned(line):
        text = line.strip(" \t\n\r")
        try:
            value, end = scan(text, 0)
        except (StopIteration, ValueError, RecursionError):  # RecursionError: a hostile line, nested past any depth
            return NOT_JSON if text else BLANK
        return value if end == len(text) else NOT_JSON

    try:
        from orjson import loads  # optional, and only where many lines are read: never on the gateway's way
    except ImportError:
        loads = scanned
    for line in lines:
        try:
            yield loads(line)
        except ValueError:  # orjson's JSONDecodeError is one
            yield scanned(line)


def dumps(obj):
    """Compact JSON with non-ASCII kept as is: the form of every file and line nexus writes."""
    if _json is None:
        import json  # without the C accelerator only: the json package brings `re`

        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return "".join(_encode(obj, 0))


if _json is not None:
    _scan = _json.make_scanner(_Decoding())
    _encode = _json.make_encoder(None, _json.encode_basestring, _json.encode_basestring, None, ":", ",",
                                 False, False, True)
