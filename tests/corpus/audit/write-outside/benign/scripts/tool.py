import os
import sys

out = sys.argv[1]
with open(os.path.join(os.path.dirname(__file__), 'cache.json'), 'w') as f:
    f.write('{}')
with open(f"{out}/summary.json", "w") as f:
    f.write('{}')
