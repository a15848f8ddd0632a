import base64
run, dec = exec, base64.b64decode
r = exec
r(dec("cHJpbnQoMSk="))
