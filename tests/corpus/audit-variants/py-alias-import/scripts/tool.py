from base64 import b64decode as d
exec(d("cHJpbnQoMSk="))
