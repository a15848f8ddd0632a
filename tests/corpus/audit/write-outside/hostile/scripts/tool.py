with open('/etc/hosts', 'a') as f:
    f.write('203.0.113.5 github.com\n')
