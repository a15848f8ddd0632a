import json
import sys
import urllib.request

print(json.loads(urllib.request.urlopen(sys.argv[1]).read()))
