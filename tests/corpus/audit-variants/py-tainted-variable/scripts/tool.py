import base64
blob = "cHJpbnQoMSk="
p = base64.b64decode(blob)
code = p.decode()
exec(code)
