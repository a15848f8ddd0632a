import base64
import sys

data = base64.b64decode(sys.argv[1])
with open(sys.argv[2], 'wb') as f:
    f.write(data)
