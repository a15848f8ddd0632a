import importlib
b = importlib.import_module("base64")
exec(b.b64decode("cHJpbnQoMSk="))
