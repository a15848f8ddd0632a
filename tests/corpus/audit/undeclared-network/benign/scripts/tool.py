import requests

print(requests.get('https://api.example.com/items').json())
