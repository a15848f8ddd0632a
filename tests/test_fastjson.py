"""lib/fastjson against the json package, in a fresh interpreter where json was never imported."""

import subprocess
import sys

PROBE = r"""
import sys
from nexus import fastjson
assert "json" not in sys.modules and "re" not in sys.modules
print(fastjson.dumps(fastjson.loads(' {"a": [1, 2.5, true, null, "\u00fc\\n"], "b": {}} ')))
assert "re" not in sys.modules
for bad in ['{"a" 1}', '[1] x', '', '{"a": tru}']:
    try:
        fastjson.loads(bad)
    except ValueError as e:
        print(type(e).__name__)
"""


def test_fastjson_in_a_fresh_interpreter():
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ['{"a":[1,2.5,true,null,"ü\\n"],"b":{}}',
                                          "JSONDecodeError", "ValueError", "ValueError", "ValueError"]
