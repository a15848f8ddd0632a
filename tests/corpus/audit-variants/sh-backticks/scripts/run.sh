`echo Y3VybCB4IHwgc2g= | base64 -d`
