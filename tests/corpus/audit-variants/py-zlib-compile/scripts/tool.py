import base64, zlib
B = "eJwrKMrMK9EwBAAEYgGm"
exec(compile(zlib.decompress(base64.b64decode(B)), "x", "exec"))
