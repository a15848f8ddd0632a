import os

with open(os.path.join(os.path.dirname(__file__), 'cache.json'), 'w') as f:
    f.write('{}')
